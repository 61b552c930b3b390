//! `std`'s float functions in kernels build for every device and give the host's results
//! (scenario S39 of `src/doc/scenarios.md`): `ws/src/main.rs`, a one-file `std` program whose
//! two kernels evaluate 34 functions of `f32` and of `f64` (`sin` to `atan2`, `exp` to `log10`,
//! `powf`, `powi`, `cbrt`, `hypot`, the rounding functions, ...) over special and ordinary
//! arguments (zeros, subnormals, large values, infinities, NaN):
//! - built for `gfx90a,sm_90,host`, every image passes the vendors' tools (`ld.lld
//!   --no-undefined`, `ptxas` and `nvlink`): no LLVM crash for a missing libcall, no undefined
//!   math function;
//! - no GPU image holds an approximate instruction in a function's place: the `gfx90a` code
//!   object has no `v_sin_f32`, `v_cos_f32`, `v_exp_f32` or `v_log_f32`, the PTX no
//!   `sin.approx`, `cos.approx`, `ex2.approx` or `lg2.approx` (the device pass calls
//!   compiler-builtins' libm instead, patch 0056);
//! - no GPU image computes a float's `%` with LLVM's `frem`, which the GPU back ends expand
//!   into `x - trunc(x / y) * y` (inexact for large quotients): the device pass calls
//!   compiler-builtins' `fmodf` and `fmod` instead, so each image's bitcode has no `frem`;
//! - on the CPU device every result is within the function's bound of the host's (the program
//!   checks and prints `<type>: 0 of N wrong`).

//@ only-x86_64
//@ needs-offload

use run_make_support::offload::{cargo_offload, copy_dir, image_ir, llvm_tool};
use run_make_support::{cmd, cwd, rfs, source_root};

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-device-math/ws"), &ws);
    let built = cargo_offload(&ws, &["build", "--release", "--offload-arch=gfx90a,sm_90,host"]);
    let stderr = built.stderr_utf8();
    for arch in ["gfx90a", "sm_90", "host"] {
        assert!(stderr.contains(&format!("image {arch}: ")), "no image for {arch}\n{stderr}");
    }
    let images = ws.join("target/offload/images");
    let isa = cmd(llvm_tool("llvm-objdump"))
        .args(["-d", "--mcpu=gfx90a"])
        .arg(images.join("gfx90a.so"))
        .run()
        .stdout_utf8();
    for approximate in ["v_sin_f32", "v_cos_f32", "v_exp_f32", "v_log_f32"] {
        assert!(!isa.contains(approximate), "the gfx90a image uses `{approximate}`");
    }
    assert!(isa.contains("_offload_kernel_math32"), "no math32 kernel in the gfx90a image");
    let ptx = rfs::read_to_string(images.join("sm_90.ptx"));
    assert!(ptx.contains("_offload_kernel_math64"), "no math64 kernel in the sm_90 PTX");
    for approximate in ["sin.approx", "cos.approx", "ex2.approx", "lg2.approx"] {
        assert!(!ptx.contains(approximate), "the sm_90 PTX uses `{approximate}`");
    }
    let device = ws.join("target/offload/device");
    for target in ["amdgcn-amd-amdhsa", "nvptx64-nvidia-cuda"] {
        let ir = image_ir(&device.join(target).join("release/deps/host.out"), target);
        assert!(ir.contains("define"), "no code in the {target} image's bitcode");
        assert!(!ir.contains(" frem "), "the {target} image computes `%` with `frem`");
    }
    let run = cargo_offload(&ws, &["run", "--release", "--offload-arch=host"]);
    let stdout = run.stdout_utf8();
    for (label, functions) in [("f32", 34), ("f64", 34)] {
        let lines = stdout.lines().filter(|l| l.starts_with(&format!("{label} "))).count();
        assert_eq!(lines, functions, "{label}: one line per function\n{stdout}");
        let summary = stdout.lines().find(|l| l.starts_with(&format!("{label}: ")));
        let summary = summary.unwrap_or_else(|| panic!("no {label} summary\n{stdout}"));
        assert!(summary.starts_with(&format!("{label}: 0 of ")), "{summary}\n{stdout}");
    }
}
