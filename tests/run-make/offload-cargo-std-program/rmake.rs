//! A one-file `std` program with kernels (`ws/src/main.rs`: `println!`, a `Vec`,
//! `std::env::args`, no `no_std`, no `cfg` and no profile settings; scenario S27) runs unchanged
//! on the CPU device, whose device sysroot has a `std`: `cargo offload run --offload-arch=host`,
//! in the release and dev profiles, with the length from the command line, every element
//! checked by the program and its counts and last element by this test. One kernel allocates a
//! `Vec` in each work item and prints from work item 0 (the image's allocator shim and `std`'s
//! stdout). A kernel that indexes past its slice panics as `std` does (message and place on
//! stderr), then the CPU device names the kernel and the work item (the image's panic runtime
//! traps). For the GPUs (`gfx90a`, `sm_90`), whose `std` has no platform (patches 0052, 0053),
//! that kernel (it allocates and prints) stops the device pass with an error that names it and
//! the item of `std` through which it reaches `std`'s platform layer, without rustc's
//! `-Zbuild-std` hint; under `--build-std`, which builds `core` only, the device pass names the
//! crate and the two lines that make it build there. A one-file `std` program whose kernels
//! use only what has a device form (`ws-gpu`: `std`'s float methods; a `HashMap` and
//! `println!` on the host) builds unchanged for `gfx90a,sm_90,host`, each image checked by the
//! vendors' tools, and runs right on the CPU device. Kernels that reach the platform layer only
//! through items that `std`'s optimized MIR inlined (`ws-refused`: a `Vec`, `Instant::now`,
//! `Mutex::lock`) are refused for `sm_90`, each with the item it called; an edition-2018
//! program (`ws-2018`), whose `panic!("...")` enters `std`'s `begin_panic`, builds for every
//! device and panics on the CPU device as `std` does.

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
    for arch in ["sm_90", "gfx90a"] {
        let arch_arg = format!("--offload-arch={arch}");
        let stderr = cargo_offload_fails(&ws, &["build", arch_arg.as_str()]).stderr_utf8();
        assert!(
            stderr.contains(
                "error: the offload kernel `from_vec` reaches `std::io::_print`, which \
                             `std` cannot provide on `"
            ) && stderr.contains(
                "needs `std`'s platform layer, which has no form on a GPU: \
                                    `from_vec` -> `std::io::_print` -> "
            ) && !stderr.contains("kernel `scale`")
                && !stderr.contains("-Zbuild-std"),
            "{arch}: {stderr}"
        );
    }
    // Under `--build-std`, which builds `core` only, the device pass names the crate and the
    // lines that make it build there.
    let stderr =
        cargo_offload_fails(&ws, &["build", "--offload-arch=sm_90", "--build-std"]).stderr_utf8();
    assert!(
        stderr.contains("failed: `onefile` (package `path+")
            && stderr
                .contains("cannot find `std`: when `core` is built from source (`--build-std`")
            && stderr.contains("\n\n    #![cfg_attr(offload_device, no_std)]\n\n")
            && !stderr.contains("-Zbuild-std"),
        "{stderr}"
    );
    let ws_gpu = cwd().join("ws-gpu");
    copy_dir(&source_root().join("tests/run-make/offload-cargo-std-program/ws-gpu"), &ws_gpu);
    let build = cargo_offload(&ws_gpu, &["build", "--release", "--offload-arch=gfx90a,sm_90,host"]);
    let stderr = build.stderr_utf8();
    assert!(
        ["image gfx90a: ", "image sm_90: ", "image host: "].iter().all(|l| stderr.contains(l)),
        "{stderr}"
    );
    let run = cargo_offload(&ws_gpu, &["run", "--release", "--offload-arch=host", "--", "1000"]);
    let stdout = run.stdout_utf8();
    assert!(stdout.contains("scale: 0 of 1000 wrong\nnorm: 0 of 1000 wrong\n"), "{stdout}");
    // Kernels that reach the platform layer only through what `std`'s optimized MIR inlines
    // (the allocator, the clock, a lock) are refused too, each with the item of `std` that it
    // called; the kernel that reaches none of it is not named.
    let ws_refused = cwd().join("ws-refused");
    copy_dir(
        &source_root().join("tests/run-make/offload-cargo-std-program/ws-refused"),
        &ws_refused,
    );
    let refused = ["build", "--release", "--offload-arch=sm_90"];
    let stderr = cargo_offload_fails(&ws_refused, &refused).stderr_utf8();
    for (kernel, item) in [
        ("only_vec", "<T as std::vec::spec_from_elem::SpecFromElem>::from_elem"),
        ("only_instant", "std::time::Instant::now"),
        ("only_mutex", "std::sync::Mutex::<T>::lock"),
    ] {
        assert!(
            stderr.contains(&format!(
                "error: the offload kernel `{kernel}` reaches `{item}`, which `std` cannot \
                 provide on `nvptx64-nvidia-cuda`"
            )),
            "{kernel}: {stderr}"
        );
    }
    let inlined = "`only_instant` -> `std::time::Instant::now` (inlined) -> \
                   `std::sys::time::unsupported::Instant::now` (inlined)";
    assert!(stderr.contains(inlined) && !stderr.contains("kernel `plain`"), "{stderr}");
    // Edition 2018's `panic!("...")` enters `std`'s `begin_panic`, which traps on a GPU as every
    // panic there does: the program builds for every device and runs right.
    let ws_2018 = cwd().join("ws-2018");
    copy_dir(&source_root().join("tests/run-make/offload-cargo-std-program/ws-2018"), &ws_2018);
    let build =
        cargo_offload(&ws_2018, &["build", "--release", "--offload-arch=gfx90a,sm_90,host"]);
    let stderr = build.stderr_utf8();
    assert!(
        ["image gfx90a: ", "image sm_90: ", "image host: "].iter().all(|l| stderr.contains(l)),
        "{stderr}"
    );
    let run = cargo_offload(&ws_2018, &["run", "--release", "--offload-arch=host", "--", "1000"]);
    let stdout = run.stdout_utf8();
    assert!(stdout.contains("checked_sqrt: 0 of 1000 wrong\n"), "{stdout}");
    let negative = ["run", "--release", "--offload-arch=host", "--", "1000", "negative"];
    let stderr = cargo_offload_fails(&ws_2018, &negative).stderr_utf8();
    assert!(
        stderr.contains("panicked at src/main.rs:") && stderr.contains("negative input"),
        "{stderr}"
    );
}
