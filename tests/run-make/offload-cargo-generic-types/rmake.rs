//! A generic kernel instantiated with a type that the kernel's crate does not know (scenario
//! S34 of `src/doc/scenarios.md`): `kernels::scale_all::<T: Scale>`, launched by the library
//! `pixels` with its own `pixels::Twice` (and its `impl Scale`), then also by the program
//! `app` with its own `Plus`. The device passes must compile the crate of each type argument:
//! without it the device pass cannot resolve the manifest's type and calls the manifest stale.
//! - launched by `pixels` alone, the image crate depends on `pixels`: the program runs right
//!   on the CPU device, twice in a row (the second build's device pass finds its image fresh),
//!   and the `gfx90a` and `sm_90` images (vendor-checked) hold one instance of `scale_all`;
//! - launched by `app` too, the program builds the image itself (a type of a program is in no
//!   library): both results right on the CPU device, both instances in each GPU image.

//@ only-x86_64
//@ needs-offload

use std::collections::BTreeSet;
use std::path::Path;

use run_make_support::offload::{
    cargo_offload, code_object_kernels, cubin_kernels, write_workspace,
};
use run_make_support::{cwd, rfs};

const KERNELS: &str = r#"#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};

/// What `scale_all` does to each element.
pub trait Scale: Copy {
    fn scale(self) -> Self;
}

#[offload_kernel]
pub fn scale_all<T: Scale>(y: &mut [T]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < y.len() {
        y[i] = y[i].scale();
    }
}
"#;

const PIXELS: &str = r#"#![feature(gpu_offload)]

/// Doubled by `scale_all`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Twice(pub f32);

impl kernels::Scale for Twice {
    fn scale(self) -> Self {
        Twice(self.0 * 2.0)
    }
}

/// `scale_all::<Twice>` over `y`.
pub fn double(y: &mut [Twice]) {
    core::offload::offload! {
        kernel = kernels::scale_all::<Twice>,
        workgroup_dim = [y.len().div_ceil(64) as u32, 1, 1],
        thread_dim = [64, 1, 1],
        args = (y,),
    }
}
"#;

const APP: &str = r#"#![feature(gpu_offload)]

fn main() {
    let mut y = vec![pixels::Twice(1.5); 1000];
    pixels::double(&mut y);
    let doubled = y.iter().filter(|t| t.0 == 3.0).count();
    println!("doubled {doubled} of {}", y.len());
}
"#;

/// `APP` with a type of its own, launched as well.
const APP_WITH_PLUS: &str = r#"#![feature(gpu_offload)]

/// Plus seven by `scale_all`.
#[derive(Clone, Copy, Debug)]
struct Plus(i32);

impl kernels::Scale for Plus {
    fn scale(self) -> Self {
        Plus(self.0 + 7)
    }
}

fn main() {
    let mut y = vec![pixels::Twice(1.5); 1000];
    pixels::double(&mut y);
    let doubled = y.iter().filter(|t| t.0 == 3.0).count();
    println!("doubled {doubled} of {}", y.len());
    let mut z: Vec<Plus> = (0..300).map(Plus).collect();
    core::offload::offload! {
        kernel = kernels::scale_all::<Plus>,
        workgroup_dim = [5, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&mut z[..],),
    }
    let added = z.iter().enumerate().filter(|(i, p)| p.0 == *i as i32 + 7).count();
    println!("added {added} of {}", z.len());
}
"#;

/// The number of `scale_all` instances in the `gfx90a` code object and in the `sm_90` cubin
/// that `cargo offload build --offload-arch=gfx90a,sm_90` wrote.
fn gpu_instances(ws: &Path) -> (usize, usize) {
    cargo_offload(ws, &["build", "--offload-arch=gfx90a,sm_90"]);
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
    write_workspace(
        &ws,
        &[
            ("kernels", "", "lib.rs", KERNELS),
            ("pixels", "kernels = { path = \"../kernels\" }\n", "lib.rs", PIXELS),
            (
                "app",
                "kernels = { path = \"../kernels\" }\npixels = { path = \"../pixels\" }\n",
                "main.rs",
                APP,
            ),
        ],
    );

    let run = || cargo_offload(&ws, &["run", "--offload-arch=host"]);
    let first = run();
    assert_eq!(first.stdout_utf8().trim(), "doubled 1000 of 1000", "{}", first.stderr_utf8());
    let again = run();
    assert_eq!(again.stdout_utf8().trim(), "doubled 1000 of 1000", "{}", again.stderr_utf8());
    assert!(
        !again.stderr_utf8().contains("Compiling offload-image"),
        "the second build compiled the image crate again:\n{}",
        again.stderr_utf8()
    );
    assert_eq!(gpu_instances(&ws), (1, 1), "`scale_all::<Twice>` in the gfx90a and sm_90 images");

    rfs::write(ws.join("app/src/main.rs"), APP_WITH_PLUS);
    let both = run();
    assert_eq!(
        both.stdout_utf8().trim(),
        "doubled 1000 of 1000\nadded 300 of 300",
        "{}",
        both.stderr_utf8()
    );
    assert_eq!(gpu_instances(&ws), (2, 2), "`scale_all` of `Twice` and of `Plus` in each image");
}
