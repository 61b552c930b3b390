//! Kernels take slices (issue: kernels over run-time-sized data). `ws/kern` defines kernels
//! whose parameters are `&[f32]`, `&mut [f32]`, `&[u32]`, `&str`, `*mut [f32]` and a generic
//! `&mut [T]`, beside one in rustc 1.95's form (`*mut [f32; 16]`); `ws/app` launches them and
//! compares every result with the same computation on the host:
//! - a saxpy whose length comes from the command line (100,003 elements, then 0);
//! - a sub-slice in the middle of a `Vec` (only its elements change);
//! - empty slices, of a `Vec` and of nothing (the kernel runs, nothing is copied);
//! - two slices of one buffer in one launch: disjoint halves, the same slice twice, one
//!   inside the other (both orders), two that overlap, and empty ones (the kernel sees each
//!   slice's length, elements and aligned data); two raw slices of one buffer that overlap,
//!   the mutable one written by the kernel;
//! - the generic kernel for `u16` and `f64`, the raw slice pointer, the 1.95 form;
//! - upstream's form: a kernel under `#[offload_kernel]` launched by `offload!` with every
//!   field (a block sum in dynamic block-shared memory, `dyn_cache`, `device = 0`), and
//!   launches with the fields in another order and with `kernel` and `args` alone; a launch
//!   on device 99, which the machine lacks, panics naming the kernel and the number;
//!   `core::intrinsics::offload_get_num_devices()` counts the CPU device's four devices (a
//!   launch on the last one runs there, as the report of `OFFLOAD_REPORT=1` says) and 0 in a
//!   program that launches no kernel;
//! - data kept on the device: 100 launches over one 8 MB buffer copy it in and out 100 times
//!   each without the residency pass's keeping (`RUST_OFFLOAD_RESIDENCY=0`), and once each with
//!   it or under a `PreloadMut` (counted in the runtime's `LIBOMPTARGET_INFO`
//!   lines); `offload_sync` brings the results back while the buffer stays; a `Preload` on
//!   device 2 is read-only: a kernel that writes into it there changes nothing on the host,
//!   and nothing is copied back; the report's total of data moved (`OFFLOAD_REPORT`) counts
//!   the bytes and copies each way that the runtime's info lines show; ten Jacobi steps over
//!   two buffers kept with `PreloadMut` move the minimum, 4 MB each way: the temporary is made
//!   without a copy in (`PreloadMut::without_copy_in`) and dropped without a copy back
//!   (`PreloadMut::discard`).
//!
//! On the CPU device (`--offload-arch=host`) the program's own comparison finds no difference
//! and this test recomputes the saxpy's checksum for both lengths. For `gfx90a,sm_90` the same
//! kernels build and pass the vendor tools (`cargo offload` links each image with `ld.lld
//! --no-undefined`, or `ptxas` and `nvlink`), and each GPU kernel takes a slice as two
//! parameters, its data pointer and its length; that program, run here without a GPU, stops at
//! a launch with 1 GiB of `dyn_cache` with a line that names the kernel and the amount.

//@ only-x86_64
//@ needs-offload

use run_make_support::offload::{
    cargo_offload, copies_in_log, copy_dir, ptx_kernels, report_library, reports,
};
use run_make_support::{cmd, cwd, rfs, rustc};

/// The program's checksum of a saxpy over `n` elements, computed here on its own.
fn saxpy_checksum(n: usize) -> u64 {
    (0..n).fold(0u64, |sum, i| {
        let y = 2.0 * (i % 7) as f32 + (i + 1) as f32;
        sum.wrapping_add((i as u64 + 1).wrapping_mul(y as u64))
    })
}

const CASES: [&str; 16] = [
    "saxpy",
    "middle",
    "empty",
    "halves",
    "same",
    "inside",
    "part_first",
    "overlapping",
    "overlapping_mut",
    "views_empty",
    "fill_u16",
    "fill_f64",
    "double_raw",
    "scale16",
    "offload_macro",
    "offload_macro_defaults",
];

fn check(stdout: &str, n: usize) {
    let got = reports(stdout);
    for name in CASES {
        let (mismatches, _) =
            got.get(name).unwrap_or_else(|| panic!("no result `{name}` in:\n{stdout}"));
        assert_eq!(*mismatches, 0, "{name}: elements that differ from the host's (n = {n})");
    }
    assert_eq!(got["saxpy"].1, saxpy_checksum(n), "saxpy checksum (n = {n})");
}

fn main() {
    let ws = cwd().join("ws");
    cargo_offload(&ws, &["build", "--release", "--offload-arch=host"]);
    let exe = ws.join("target/offload/host/x86_64-unknown-linux-gnu/release/app");
    for n in [100_003usize, 0] {
        let run = cmd(&exe).arg(n.to_string()).run();
        check(&run.stdout_utf8(), n);
    }
    // `offload!` with a device that the machine lacks (99): a panic that names the kernel and
    // the number, before anything is launched.
    let failed = cmd(&exe).arg("bad-device").run_fail();
    let stderr = failed.stderr_utf8();
    let expected =
        "the offload launch of kernel `kern::fill<u16>` asks for device 99, but this machine has ";
    assert!(stderr.contains(expected), "{stderr}");

    // `core::intrinsics::offload_get_num_devices()`: the CPU device of LLVM's host plugin
    // counts as four devices, and a launch on the last one runs.
    // The report library (`OFFLOAD_REPORT=1`) names the device that ran it: the last one, 3.
    let run = cmd(&exe).arg("devices").env("LD_PRELOAD", report_library()).run();
    let stdout = run.stdout_utf8();
    assert!(stdout.lines().any(|l| l == "devices: 4"), "{stdout}");
    assert_eq!(reports(&stdout)["last_device"].0, 0, "the launch on the last device:\n{stdout}");
    let ran_on = |stderr: &str, kernel: &str| -> Vec<String> {
        let kernel = format!("kernel `_offload_kernel_{kernel}_");
        let lines =
            stderr.lines().filter(|l| l.starts_with("[offload report]") && l.contains(&kernel));
        lines
            .filter_map(|l| l.split(" ran on device ").nth(1)?.split(' ').next().map(String::from))
            .collect()
    };
    assert_eq!(ran_on(&run.stderr_utf8(), "fill"), ["3"], "{}", run.stderr_utf8());

    // A `Preload` is read-only: a kernel that writes into the kept copy on device 2 changes
    // nothing on the host, and nothing comes back (one 4000-byte copy back: the other slice's).
    let run = cmd(&exe)
        .arg("preload-read-only")
        .env("LIBOMPTARGET_INFO", "32")
        .env("LD_PRELOAD", report_library())
        .run();
    let (stdout, stderr) = (run.stdout_utf8(), run.stderr_utf8());
    assert!(stdout.contains("preload-read-only: 0 1000"), "changed, seen doubled:\n{stdout}");
    let back = stderr.lines().filter(|l| l.contains("Copying data from device to host"));
    assert_eq!(back.filter(|l| l.contains("Size=4000,")).count(), 1, "copies back:\n{stderr}");
    // The report's total at the program's end counts the copies that the runtime's info lines
    // show, each way: `[offload report] data moved: B bytes to devices in C copies, B bytes back
    // in C copies` (`byte`, `copy` for 1) against the sum and count of their `Size=N,`.
    let total = stderr
        .lines()
        .find_map(|l| l.strip_prefix("[offload report] data moved: "))
        .unwrap_or_else(|| panic!("no total of the data moved:\n{stderr}"));
    let numbers: Vec<u64> = total.split(' ').filter_map(|word| word.parse().ok()).collect();
    assert_eq!(numbers, copies_in_log(&stderr), "the report's total:\n{stderr}");
    assert_eq!(ran_on(&stderr, "double_raw"), ["2"], "{stderr}");
    assert_eq!(ran_on(&stderr, "saxpy"), ["2"], "{stderr}");
    // A program that launches no kernel does not link the runtime: 0 devices, no link error.
    rfs::write(
        "no_kernels.rs",
        "#![feature(core_intrinsics)]\n#![allow(internal_features)]\n\
         fn main() { println!(\"devices: {}\", core::intrinsics::offload_get_num_devices()); }\n",
    );
    rustc().input("no_kernels.rs").edition("2024").run();
    let run = cmd(cwd().join("no_kernels")).run();
    assert_eq!(run.stdout_utf8(), "devices: 0\n");

    // 100 launches over one 8 MB buffer: mapped by each launch without the residency pass's
    // keeping (`RUST_OFFLOAD_RESIDENCY=0`), 100 copies in and 100 out; kept across the loop by
    // the launches themselves (the default), or by a `PreloadMut` (and a launch over an empty
    // sub-slice of it, which must leave it kept), one copy in and one out (the runtime's info
    // lines of `LIBOMPTARGET_INFO=32`, one per copy); all leave every element at 100.
    let modes = [("transfers-plain", "0", 100), ("transfers-plain", "1", 1)];
    for (mode, residency, copies) in modes.into_iter().chain([("transfers-preload", "1", 1)]) {
        let run = cmd(&exe)
            .arg(mode)
            .env("LIBOMPTARGET_INFO", "32")
            .env("RUST_OFFLOAD_RESIDENCY", residency)
            .run();
        let (stdout, stderr) = (run.stdout_utf8(), run.stderr_utf8());
        assert!(stdout.contains("transfers: 0"), "{mode}: elements that are not 100:\n{stdout}");
        let count = |direction: &str| {
            let line = format!("Copying data from {direction}");
            stderr.lines().filter(|l| l.contains(&line) && l.contains("Size=8000000")).count()
        };
        assert_eq!(count("host to device"), copies, "{mode}: copies in:\n{stderr}");
        assert_eq!(count("device to host"), copies, "{mode}: copies out:\n{stderr}");
    }
    // Ten Jacobi steps over two 4 MB buffers kept on the device move each byte of the result
    // once each way and nothing of the temporary (`PreloadMut::without_copy_in`, `discard`):
    // 8 MB in all, the minimum.
    let run = cmd(&exe).arg("jacobi-minimum").env("LIBOMPTARGET_INFO", "32").run();
    let (stdout, stderr) = (run.stdout_utf8(), run.stderr_utf8());
    assert!(stdout.contains("jacobi_minimum: 0 "), "the steps' results:\n{stdout}");
    assert!(stdout.contains("b untouched: true"), "the temporary came back:\n{stdout}");
    // Each buffer is 4,000,000 bytes: a copy of either is one line of that size.
    let copies = |direction: &str| {
        let line = format!("Copying data from {direction}");
        stderr.lines().filter(|l| l.contains(&line) && l.contains("Size=4000000,")).count()
    };
    assert_eq!(copies("host to device"), 1, "copies in:\n{stderr}");
    assert_eq!(copies("device to host"), 1, "copies out:\n{stderr}");

    // `offload_sync` brings the device's elements back while the buffer stays there; before
    // it, the host's elements are as they were.
    let run = cmd(&exe).arg("preload-sync").run();
    assert!(run.stdout_utf8().contains("before sync: 0, after sync: 0"), "{}", run.stdout_utf8());

    // The GPU images of the same kernels: `cargo offload` has each pass the vendor tools.
    let gpu = cwd().join("gpu");
    copy_dir(&ws, &gpu);
    cargo_offload(&gpu, &["build", "--release", "--offload-arch=gfx90a,sm_90"]);
    let images = gpu.join("target/offload/images");
    let ptx = ptx_kernels(&rfs::read_to_string(images.join("sm_90.ptx")));
    let saxpy = ptx
        .iter()
        .find(|(symbol, _)| symbol.starts_with("_offload_kernel_saxpy_"))
        .map(|(_, lines)| lines.join("\n"))
        .unwrap_or_else(|| panic!("no saxpy among {:?}", ptx.keys()));
    // `dyn_ptr`, `a`, then each slice as its data pointer and its length.
    assert_eq!(saxpy.matches(".param .u64").count(), 6, "sm_90 saxpy's parameters:\n{saxpy}");
    for name in ["views", "fill", "double_raw", "scale16"] {
        let prefix = format!("_offload_kernel_{name}_");
        assert!(ptx.keys().any(|k| k.starts_with(&prefix)), "no `{name}` among {:?}", ptx.keys());
    }
    // No GPU here: the launch with 1 GiB of dynamic block-shared memory per block stops the
    // program with the line that names the kernel and the amount.
    let gpu_exe = gpu.join("target/offload/host/x86_64-unknown-linux-gnu/release/app");
    let failed = cmd(&gpu_exe).arg("big-dyn-cache").run_fail();
    assert_eq!(failed.status().code(), Some(1));
    let stderr = failed.stderr_utf8();
    let line = stderr.lines().next().unwrap_or_default();
    assert!(
        line.starts_with("error: the offload launch of kernel `_offload_kernel_block_sums_")
            && line.contains(
                "` with 1073741824 bytes of dynamic block-shared memory per block (`dyn_cache`) \
                 failed: no offload device of this machine runs any of the program's images"
            ),
        "the failed launch's line: {stderr}"
    );
    assert!(!failed.stdout_utf8().contains("big-dyn-cache:"), "the program went on");
}
