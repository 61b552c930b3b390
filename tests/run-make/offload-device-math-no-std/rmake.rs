//! Float math in a `no_std` kernel crate builds for every device and gives the host's results
//! (issue 63, scenario S40 of `src/doc/scenarios.md`): `ws/kernels`, a `no_std` library whose
//! kernels call `core`'s float functions (`core::f32::math`, `core::f64::math`: `cbrt` among
//! them, which `core` declares as a C function) and the `libm` crate (upstream's vendored copy,
//! by path), launched by the `std` program `ws/app`:
//! - built for `gfx90a,sm_90,host`, every image passes the vendors' tools (`ld.lld
//!   --no-undefined`, `ptxas` and `nvlink`): no LLVM crash for a missing libcall, no undefined
//!   math function, `core`'s `cbrtf` and `cbrt` included;
//! - no GPU image holds an approximate instruction (`v_sin_f32`, `v_exp_f32`, `v_log_f32`;
//!   `sin.approx`, `ex2.approx`, `lg2.approx`);
//! - on the CPU device every result is the host's, bit for bit (the same functions, compiled
//!   for the same target), `core`'s `cbrt` included, which `core` declares from the C library:
//!   a host program takes it from compiler-builtins, and so does the image (patch 0066; before
//!   it, glibc's gave 94 of 4096 results 1 or 2 ULPs away). The program prints `<kernel>: 0
//!   of N differ`; the image defines `cbrt` and `cbrtf` itself.

//@ only-x86_64
//@ needs-offload

use run_make_support::offload::{cargo_offload, copy_dir, llvm_tool};
use run_make_support::{cmd, cwd, rfs, source_root};

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-device-math-no-std/ws"), &ws);
    let libm = source_root().join("vendor/libm-0.2.16");
    assert!(libm.join("Cargo.toml").exists(), "no vendored libm at {}", libm.display());
    let manifest = rfs::read_to_string(ws.join("kernels/Cargo.toml.in"));
    rfs::write(ws.join("kernels/Cargo.toml"), manifest.replace("@LIBM@", &libm.to_string_lossy()));

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
    for kernel in ["core_math", "libm_math"] {
        assert!(isa.contains(kernel), "no {kernel} kernel in the gfx90a image");
    }
    for approximate in ["v_sin_f32", "v_exp_f32", "v_log_f32"] {
        assert!(!isa.contains(approximate), "the gfx90a image uses `{approximate}`");
    }
    let ptx = rfs::read_to_string(images.join("sm_90.ptx"));
    for kernel in ["core_math", "libm_math"] {
        assert!(ptx.contains(kernel), "no {kernel} kernel in the sm_90 PTX");
    }
    for approximate in ["sin.approx", "ex2.approx", "lg2.approx"] {
        assert!(!ptx.contains(approximate), "the sm_90 PTX uses `{approximate}`");
    }

    // The CPU image defines compiler-builtins' `cbrt` and `cbrtf` rather than calling glibc's.
    let nm = cmd(llvm_tool("llvm-nm")).arg("--defined-only").arg(images.join("host.so")).run();
    let symbols = nm.stdout_utf8();
    for cbrt in ["cbrt", "cbrtf"] {
        let defined = symbols.lines().any(|l| l.split_whitespace().last() == Some(cbrt));
        assert!(defined, "the CPU image does not define `{cbrt}`\n{symbols}");
    }
    let run = cargo_offload(&ws, &["run", "--release", "--offload-arch=host"]);
    let stdout = run.stdout_utf8();
    for kernel in ["core_math", "libm_math"] {
        let summary = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{kernel}: ")) && l.ends_with(" differ"));
        let summary = summary.unwrap_or_else(|| panic!("no {kernel} summary\n{stdout}"));
        assert!(summary.starts_with(&format!("{kernel}: 0 of ")), "{summary}\n{stdout}");
    }
}
