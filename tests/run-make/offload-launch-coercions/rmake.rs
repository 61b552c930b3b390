//! Launch arguments get the coercions of a call (scenario S41 of `src/doc/scenarios.md`). The
//! program `ws/src/main.rs` launches kernels with `&Vec<f32>` and `&mut Vec<f32>` for slices,
//! a `&Box<[f32]>`, arrays, a `&String` for `&str`, one `&mut [f32]` in two launches in a row
//! (which compiles only if each launch reborrows it), a kernel declared inside `main`, `if`,
//! `match` and block arguments whose branches have two types (a `&Vec` and an array), a nested
//! tuple of literals for an `(f32, u32, [f32; 4])` parameter, and rustc 1.95's
//! `core::intrinsics::offload` with `Vec`s; each result is compared with the host's. Without
//! the coercions the host pass refuses the first launch (`offload` passes `(f64, &Vec<f32>,
//! &mut Vec<f32>)` to the kernel `saxpy`); with a `Vec`'s header mapped in place of its
//! elements, the results would be wrong. The program runs on the CPU device, and
//! its kernels build for `gfx90a` and `sm_90` (the vendors' tools accept the images).

//@ only-x86_64
//@ needs-offload

use std::collections::BTreeSet;

use run_make_support::offload::{cargo_offload, code_object_kernels, copy_dir, cubin_kernels};
use run_make_support::{cwd, source_root};

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-launch-coercions/ws"), &ws);

    let run = cargo_offload(&ws, &["run", "--offload-arch=host"]);
    let expected = ["vec", "reborrow", "array", "string", "nested", "branches", "intrinsic"]
        .map(|launch| format!("{launch}: right"))
        .join("\n");
    assert_eq!(run.stdout_utf8().trim(), expected, "{}", run.stderr_utf8());

    cargo_offload(&ws, &["build", "--offload-arch=gfx90a,sm_90"]);
    let images = ws.join("target/offload/images");
    let kernels = |names: BTreeSet<String>| {
        let mut found: Vec<&str> = ["saxpy", "byte_sum", "squares", "scaled"]
            .into_iter()
            .filter(|k| names.iter().any(|n| n.starts_with(&format!("_offload_kernel_{k}_"))))
            .collect();
        found.sort();
        found
    };
    let all = vec!["byte_sum", "saxpy", "scaled", "squares"];
    assert_eq!(kernels(code_object_kernels(&images.join("gfx90a.so"))), all, "gfx90a");
    assert_eq!(kernels(cubin_kernels(&images.join("sm_90.cubin"))), all, "sm_90");
}
