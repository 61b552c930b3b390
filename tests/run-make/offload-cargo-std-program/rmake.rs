//! A one-file `std` program with kernels (`ws/src/main.rs`: `println!`, a `Vec`,
//! `std::env::args`, no `no_std`, no `cfg` and no profile settings; scenario S27) runs unchanged
//! on the CPU device, whose device sysroot has a `std`: `cargo offload run --offload-arch=host`,
//! in the release and dev profiles, with the length from the command line, every element
//! checked by the program and its counts and last element by this test. One kernel allocates a
//! `Vec` in each work item and prints from work item 0 (the image's allocator shim and `std`'s
//! stdout). A kernel that indexes past its slice panics as `std` does (message and place on
//! stderr), then the CPU device names the kernel and the work item (the image's panic runtime
//! traps). For a GPU (`sm_90`) the device pass stops with the one error that names the crate
//! and the two lines that make it build there (a GPU's target has no `std`), without rustc's
//! `-Zbuild-std` hint.

//@ only-x86_64
//@ needs-offload

use run_make_support::offload::{cargo_offload, cargo_offload_fails, copy_dir};
use run_make_support::{cwd, source_root};

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-cargo-std-program/ws"), &ws);
    for (profile, n) in [("--release", 1000usize), ("--profile=dev", 300)] {
        let n_arg = n.to_string();
        let run =
            cargo_offload(&ws, &["run", profile, "--offload-arch=host", "--", n_arg.as_str()]);
        let stdout = run.stdout_utf8();
        let last = 3.0 * (n - 1) as f32;
        assert!(
            stdout.contains(&format!("scale: 0 of {n} wrong, last Some({last:?})"))
                && stdout.contains(&format!("from_vec: work item 0 of {n}\n"))
                && stdout.contains(&format!("from_vec: 0 of {n} wrong")),
            "{profile}: {stdout}"
        );
    }
    // Work items 1000..1024 index past the end; the first of them, in block 3 (whose rows run
    // in order), stops the program.
    let oob = ["run", "--release", "--offload-arch=host", "--", "1000", "oob"];
    let stderr = cargo_offload_fails(&ws, &oob).stderr_utf8();
    assert!(
        stderr.contains("panicked at src/main.rs:")
            && stderr.contains("index out of bounds: the len is 1000 but the index is 1000")
            && stderr.contains(
                "unchecked` stopped the program on the CPU device in work item \
                                block (3, 0, 0) thread (232, 0, 0)"
            ),
        "{stderr}"
    );
    let stderr = cargo_offload_fails(&ws, &["build", "--offload-arch=sm_90"]).stderr_utf8();
    assert!(
        stderr.contains("failed: `onefile` (package `path+")
            && stderr.contains("cannot find `std`: a GPU's device passes compile against `core`")
            && stderr.contains("\n\n    #![cfg_attr(offload_device, no_std)]\n\n")
            && !stderr.contains("-Zbuild-std"),
        "{stderr}"
    );
}
