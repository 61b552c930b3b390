//! Every crate shape that offload code comes in builds with `cargo offload` as it is, each
//! image with exactly the kernels that the program launches (issue: existing code through
//! `cargo offload`). The workspace `ws/`:
//! - `binkern`, a `bin` that defines kernels and launches them, with a kernel of the workspace
//!   library `saxlib` besides, and a kernel picked by a Cargo feature; its example `negate`
//!   defines and launches a kernel of its own;
//! - `cdyl`, a `#![no_std]` `cdylib` (fat LTO, `panic = "abort"`) whose exported `main` a C
//!   launcher calls, as the offload authors' ports are built;
//! - `bin195`, the rustc-dev-guide's 1.95 form as one program: `extern "C"` declarations on
//!   the host, `extern "gpu-kernel"` definitions on the GPU, `cfg`'d by `target_os`, and a
//!   launch that passes `*const` for a kernel's `&`;
//! - `perf195`, the offload authors' RAJAPerf ports in that form: a `cdylib` with its
//!   `extern "gpu-kernel"` kernels in submodules, `cfg`'d by `offload_device`, which the
//!   compiler finds (the root file names none) and the CPU device runs as the C ABI.
//!
//! Each program builds for `gfx90a` and `sm_90` (the vendor tools accept every image: `ld.lld
//! --no-undefined`, `ptxas` + `nvlink`) and, but for `bin195` (its `target_os` cfgs pick
//! the host's declarations on the CPU device), runs on the CPU device, its results checked
//! against values computed here. Switching the feature back and forth gives each selection's
//! image (on the CPU device, where cargo finds the program's earlier build fresh, and on the
//! GPUs, where cargo compiles the program again each time). Two programs that define kernels
//! in one build are an error that names them. `-r` and `--profile=release` select the profile
//! as `--release` does.

//@ only-x86_64
//@ needs-offload

use std::collections::BTreeSet;
use std::path::Path;

use run_make_support::offload::{
    cargo_offload, cargo_offload_fails, code_object_kernels, copy_dir, cubin_kernels,
};
use run_make_support::{cmd, cwd, source_root};

/// The kernels of the last build's `gfx90a` code object and `sm_90` cubin, by name: a kernel
/// symbol `_offload_kernel_<name>_<hash>` as `<name>`, a 1.95-style link name as it is.
fn image_kernels(ws: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let images = ws.join("target/offload/images");
    let names = |symbols: BTreeSet<String>| -> BTreeSet<String> {
        let name = |s: &str| match s.strip_prefix("_offload_kernel_") {
            Some(rest) => rest.rsplit_once('_').map_or(rest, |(name, _)| name).to_string(),
            None => s.to_string(),
        };
        symbols.iter().map(|s| name(s)).collect()
    };
    (
        names(code_object_kernels(&images.join("gfx90a.so"))),
        names(cubin_kernels(&images.join("sm_90.cubin"))),
    )
}

/// Builds `args` for `gfx90a` and `sm_90` and checks that both images hold `kernels`.
fn gpu_images(ws: &Path, args: &[&str], kernels: &[&str]) {
    let mut all = vec!["build", "--offload-arch=gfx90a,sm_90"];
    all.extend(args);
    let built = cargo_offload(ws, &all);
    let expected: BTreeSet<String> = kernels.iter().map(|k| k.to_string()).collect();
    let (amd, nvidia) = image_kernels(ws);
    assert_eq!(amd, expected, "gfx90a kernels of {args:?}\n{}", built.stderr_utf8());
    assert_eq!(nvidia, expected, "sm_90 kernels of {args:?}");
}

/// The numbers of the program's line that starts with `name: `.
fn values(stdout: &str, name: &str) -> Vec<f64> {
    let line = stdout.lines().find_map(|l| l.strip_prefix(&format!("{name}: ")));
    let line = line.unwrap_or_else(|| panic!("no `{name}` line in\n{stdout}"));
    line.split_whitespace().map(|v| v.parse().unwrap()).collect()
}

fn assert_values(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "{what}[{i}]: device {g}, host {w}");
    }
}

/// The `bin` shape and its example, on the CPU device and for the GPUs.
fn program_shapes(ws: &Path) {
    let y: Vec<f64> = (0..128).map(|i| 2.0 * i as f64 + 1.0).collect();
    // Back and forth on the CPU device, where cargo finds the program's earlier build for a
    // feature set fresh: the image must still be the selection's.
    for extra in [false, true, false] {
        let mut args = vec!["run", "--release", "--offload-arch=host", "-p", "binkern"];
        args.extend(if extra { &["--features", "extra"][..] } else { &[] });
        let run = cargo_offload(ws, &args);
        let x: Vec<f64> = (0..256)
            .map(|i| (i as f64 * 0.5).powi(2) + if extra { i as f64 } else { 0.0 })
            .collect();
        assert_values(&values(&run.stdout_utf8(), "x"), &x, &format!("x, extra: {extra}"));
        assert_values(&values(&run.stdout_utf8(), "y"), &y, "y");
    }
    // And for the GPUs: each image holds exactly the selection's kernels.
    for extra in [false, true, false] {
        let mut args = vec!["--release", "-p", "binkern"];
        let mut kernels = vec!["axpb", "square"];
        if extra {
            args.extend(["--features", "extra"]);
            kernels.push("add_index");
        }
        kernels.sort();
        gpu_images(ws, &args, &kernels);
    }

    let run = cargo_offload(
        ws,
        &[
            "run",
            "--profile=release",
            "--offload-arch=host",
            "-p",
            "binkern",
            "--example",
            "negate",
        ],
    );
    let negated: Vec<f64> = (0..32).map(|i| -3.0 * i as f64).collect();
    assert_values(&values(&run.stdout_utf8(), "negated"), &negated, "negated");
    // `saxlib` launches `axpb` in code that the example never calls: not the example's kernel.
    gpu_images(ws, &["--release", "-p", "binkern", "--example", "negate"], &["negate"]);
}

/// Builds the `cdylib` package `package` for the CPU device and runs its `main` through the C
/// launcher (`cdyl/launcher.c`); returns what it printed.
fn run_cdylib(ws: &Path, package: &str) -> String {
    cargo_offload(ws, &["build", "-r", "--offload-arch=host", "-p", package]);
    let library =
        ws.join(format!("target/offload/host/x86_64-unknown-linux-gnu/release/lib{package}.so"));
    let launcher = cwd().join("launcher");
    if !launcher.is_file() {
        cmd("cc").arg(ws.join("cdyl/launcher.c")).arg("-o").arg(&launcher).run();
    }
    cmd(&launcher).arg(&library).env_remove("LD_LIBRARY_PATH").run().stdout_utf8()
}

/// The `cdylib` shape: the launcher runs the library's `main` on the CPU device.
fn cdylib_shape(ws: &Path) {
    let stdout = run_cdylib(ws, "cdyl");
    let (w, h) = (16, 8);
    let out: Vec<f64> =
        (0..h).flat_map(|y| (0..w).map(move |x| ((x + y) * 10 + y) as f64)).collect();
    let first = stdout.lines().next().unwrap_or("");
    let got: Vec<f64> = first.split_whitespace().map(|v| v.parse().unwrap()).collect();
    assert_values(&got, &out, "scale_rows");
    let sum: f64 = out[(h - 1) * w..].iter().sum();
    assert_values(&values(&stdout, "sum"), &[sum], "total");
    gpu_images(ws, &["--release", "-p", "cdyl"], &["scale_rows", "total"]);
}

/// The RAJAPerf ports' shape in the 1.95 style (`perf195`): a `cdylib` with `extern
/// "gpu-kernel"` kernels in submodules, whose root file names no kernel. The CPU device runs its
/// kernels (the launcher calls its `main`), and each GPU image holds the two launched kernels,
/// not the unlaunched one.
fn ports_195(ws: &Path) {
    let stdout = run_cdylib(ws, "perf195");
    let y: Vec<f64> = (0..100).map(|i| 1.0 + 3.0 * i as f64).collect();
    assert_values(&values(&stdout, "axpy"), &y, "perf195_axpy");
    let dot: f64 = y.iter().enumerate().map(|(i, v)| i as f64 * v).sum();
    assert_values(&values(&stdout, "dot"), &[dot], "perf195_dot");
    gpu_images(ws, &["--release", "-p", "perf195"], &["perf195_axpy", "perf195_dot"]);
}

/// The 1.95 form in one program: GPU images of the launched kernels only; without a GPU, the
/// program stops at its first launch, naming the kernel.
fn form_195(ws: &Path) {
    gpu_images(ws, &["--release", "-p", "bin195"], &["bin195_sum", "bin195_twice"]);
    let exe = ws.join("target/offload/host/x86_64-unknown-linux-gnu/release/bin195");
    let run = cmd(&exe).env_remove("LD_LIBRARY_PATH").run_fail();
    let stderr = run.stderr_utf8();
    assert!(
        stderr.starts_with("error: the offload launch of kernel `bin195_twice` failed"),
        "{stderr}"
    );
}

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-cargo-shapes/ws"), &ws);
    program_shapes(&ws);
    cdylib_shape(&ws);
    ports_195(&ws);
    form_195(&ws);
    // Every program of the workspace at once: two of them define kernels, and each builds its
    // own image.
    let both =
        cargo_offload_fails(&ws, &["build", "--release", "--offload-arch=host", "--workspace"]);
    let stderr = both.stderr_utf8();
    assert!(
        stderr.contains(
            "kernels are defined in two programs of the workspace, `bin195` and `binkern`"
        ),
        "{stderr}"
    );
}
