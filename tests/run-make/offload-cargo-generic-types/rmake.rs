//! A generic kernel instantiated with a type that the kernel's crate does not know (scenario
//! S34 of `src/doc/scenarios.md`). The workspace `ws/`: `kernels::scale_all::<T: Scale>`; the
//! library `pixels`, which launches it with its own `pixels::Twice` (and its `impl Scale`);
//! the package `app`, whose program `app` calls `pixels`, and whose program `plus` does too
//! and also launches `scale_all` with its own type `Plus`. The device passes must compile the
//! crate of each type argument: without it the device pass cannot resolve the manifest's type
//! and calls the manifest stale.
//! - `app` (launched by `pixels` alone): the image crate depends on `pixels`; the program runs
//!   right on the CPU device, twice in a row (the second build's device pass finds its image
//!   fresh), and the `gfx90a` and `sm_90` images (vendor-checked) hold one instance of
//!   `scale_all`;
//! - `plus` (a type of a program is in no library): the program builds the image itself; both
//!   results right on the CPU device, both instances in each GPU image.
//!
//! `./x.py gpu-check` bundles both programs.

//@ only-x86_64
//@ needs-offload

use std::collections::BTreeSet;
use std::path::Path;

use run_make_support::offload::{cargo_offload, code_object_kernels, copy_dir, cubin_kernels};
use run_make_support::{cwd, source_root};

/// The number of `scale_all` instances in the `gfx90a` code object and in the `sm_90` cubin
/// that `cargo offload build --offload-arch=gfx90a,sm_90 --bin PROGRAM` wrote.
fn gpu_instances(ws: &Path, program: &str) -> (usize, usize) {
    cargo_offload(ws, &["build", "--offload-arch=gfx90a,sm_90", "--bin", program]);
    let images = ws.join("target/offload/images");
    let count = |kernels: BTreeSet<String>| {
        kernels.iter().filter(|k| k.starts_with("_offload_kernel_scale_all_")).count()
    };
    (
        count(code_object_kernels(&images.join("gfx90a.so"))),
        count(cubin_kernels(&images.join("sm_90.cubin"))),
    )
}

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-cargo-generic-types/ws"), &ws);

    let run = |program| cargo_offload(&ws, &["run", "--offload-arch=host", "--bin", program]);
    let first = run("app");
    assert_eq!(first.stdout_utf8().trim(), "doubled 1000 of 1000", "{}", first.stderr_utf8());
    let again = run("app");
    assert_eq!(again.stdout_utf8().trim(), "doubled 1000 of 1000", "{}", again.stderr_utf8());
    assert!(
        !again.stderr_utf8().contains("Compiling offload-image"),
        "the second build compiled the image crate again:\n{}",
        again.stderr_utf8()
    );
    assert_eq!(gpu_instances(&ws, "app"), (1, 1), "`scale_all::<Twice>` in each GPU image");

    let both = run("plus");
    assert_eq!(
        both.stdout_utf8().trim(),
        "doubled 1000 of 1000\nadded 300 of 300",
        "{}",
        both.stderr_utf8()
    );
    assert_eq!(gpu_instances(&ws, "plus"), (2, 2), "`scale_all` of `Twice` and `Plus` in each");
}
