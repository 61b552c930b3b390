//! Float math that no GPU provides is a rustc error that names the kernel, never an LLVM crash
//! (issue 63, scenario S46 of `src/doc/scenarios.md`): `ws/src/main.rs` has six kernels, one
//! calling `f16::sin`, one computing `%` of `f16`, one computing with `f128` two functions down
//! (`wide`, then `wider` and its `f128::exp`), one calling `f128::sqrt` of `f128` data (only the
//! intrinsic `sqrtf128` computes), one calling `StdFloat::cos` of an `f32x4`, one converting an
//! `f32` to `u128`:
//! - built for `gfx90a`, and for `sm_90`, the device pass fails with one error per kernel that
//!   names the kernel, the function that holds the operation, the operation and the chain of
//!   calls, with a help; no vendor tool is reached (before patch 0065, `llc` stopped with
//!   `LLVM ERROR: Cannot select` for `sm_90` and `unsupported library call operation` for
//!   `f128`, and `gfx90a` took the approximate `v_sin_f16`);
//! - built for `host`, every kernel runs on the CPU device and gives the host's results;
//! - `ws-bits`, whose kernel only moves `f128` bits (through `black_box` and a volatile read
//!   too), computes with `f16` arithmetic and `sqrt` and converts through `u64`, builds for
//!   `gfx90a,sm_90,host` (the vendors' tools accept both GPU images) and runs right.

//@ only-x86_64
//@ needs-offload

use run_make_support::offload::{cargo_offload, cargo_offload_fails, copy_dir};
use run_make_support::{cwd, source_root};

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-device-math-unprovided/ws"), &ws);
    for (arch, target) in [("gfx90a", "amdgcn-amd-amdhsa"), ("sm_90", "nvptx64-nvidia-cuda")] {
        let arg = format!("--offload-arch={arch}");
        let stderr = cargo_offload_fails(&ws, &["build", "--release", &arg]).stderr_utf8();
        for unwanted in ["LLVM ERROR", "refused it", "Stack dump", "panicked"] {
            assert!(!stderr.contains(unwanted), "{arch}: `{unwanted}`\n{stderr}");
        }
        let errors = [
            (
                "half_sin",
                "the intrinsic `sinf16` in `std::f16::<impl f16>::sin`",
                "help: compute it in `f32` and round the result to `f16`, as the host does: \
                 `(x as f32).sin() as f16`",
            ),
            (
                "half_rem",
                "an `f16` remainder (`%`) in `half_rem`",
                "`((x as f32) % (y as f32)) as f16`",
            ),
            ("quad_exp", "an `f128` computation in `wide`", "help: compute it in `f64`"),
            (
                "quad_sqrt",
                "the intrinsic `sqrtf128` in `core::f128::<impl f128>::sqrt`",
                "help: compute it in `f64`",
            ),
            (
                "lanes_cos",
                "the intrinsic `simd_fcos` of `f32` lanes in `std::simd::StdFloat::cos`",
                "help: compute it lane by lane: `Simd::from_array(v.to_array().map(f32::cos))`",
            ),
            (
                "wide_int",
                "a conversion from `f32` to `u128` in `wide_int`",
                "help: convert through a 64-bit integer",
            ),
        ];
        for (kernel, reached, help) in errors {
            let head = format!("error: the offload kernel `{kernel}` reaches {reached}");
            let at = stderr.find(&head).unwrap_or_else(|| panic!("{arch}: no `{head}`\n{stderr}"));
            let error = &stderr[at..];
            let error = &error[..error[1..].find("\nerror").map_or(error.len(), |end| end + 1)];
            let target = format!("has no implementation on `{target}`");
            assert!(error.contains(&target), "{arch}: {kernel}: no `{target}`\n{error}");
            assert!(error.contains("note: the chain of calls: "), "{arch}: no chain\n{error}");
            assert!(error.contains(help), "{arch}: {kernel}: no `{help}`\n{error}");
        }
        let chain = "the chain of calls: `quad_exp` -> `wide`";
        assert!(stderr.contains(chain), "{arch}: no `{chain}`\n{stderr}");
        // The device pass stops before any code is made: no image, no vendor tool.
        let errors = "due to 6 previous errors";
        assert!(stderr.contains(errors), "{arch}: not `{errors}`\n{stderr}");
        let images = ws.join("target/offload/images");
        let image = images.join(if arch == "gfx90a" { "gfx90a.so" } else { "sm_90.cubin" });
        assert!(!image.exists(), "{arch}: an image was written: {}", image.display());
    }
    let stdout = cargo_offload(&ws, &["run", "--release", "--offload-arch=host"]).stdout_utf8();
    for label in ["f16 sin", "f16 rem", "u128 conversion", "f128 exp", "f128 sqrt", "simd cos"] {
        let line = format!("{label}: 0 of 256 differ");
        assert!(stdout.contains(&line), "no `{line}`\n{stdout}");
    }

    // What a GPU does compute builds for both: `f128` bits moved (`from_bits`, `abs`,
    // `copysign`, `black_box`, a volatile read), `f16` arithmetic and `sqrt`, `f32` through
    // `u64`; the vendors' tools accept both images.
    let bits = cwd().join("ws-bits");
    copy_dir(&source_root().join("tests/run-make/offload-device-math-unprovided/ws-bits"), &bits);
    let built = cargo_offload(&bits, &["build", "--release", "--offload-arch=gfx90a,sm_90,host"]);
    let stderr = built.stderr_utf8();
    for arch in ["gfx90a", "sm_90", "host"] {
        assert!(stderr.contains(&format!("image {arch}: ")), "no image for {arch}\n{stderr}");
    }
    let run = cargo_offload(&bits, &["run", "--release", "--offload-arch=host"]).stdout_utf8();
    assert!(run.contains("bits: 0 of 256 differ"), "{run}");
}
