//! Offloaded programs run end to end on LLVM offload's CPU device (issue: kernels run in CI).
//!
//! `cargo offload run --offload-arch=host` builds the workspace `ws/` (kernels in two library
//! crates, launches in a library and in the program) through the host pass's compile run (which
//! writes the manifests), the device pass for the host target (an x86-64 shared object) and the
//! host pass's link run, and runs the program, which the runtime's host plugin serves. Every result
//! the program prints is compared with values computed here, without offload. The launches cover a
//! scalar with data in and back (`saxpy`), a generic kernel at two types, a `#[repr(C)]` struct and
//! an array by value, reading through one pointer and writing through another, scalars of four
//! widths in an order a swap would change, and a kernel of a second crate.
//!
//! Then a second program of the workspace (an example) runs by name, and again after an edit that
//! launches another instance of its kernel (the host pass writes the manifests as it compiles, with
//! no separate build of the crates for them), `run` refuses to pick among several programs, `cargo
//! offload test` runs a test that launches a kernel, a C program calls a `cdylib` that launches one
//! (linked; and loaded with `dlopen` under the report library of `OFFLOAD_REPORT=1`, which reports
//! the launch of an `sm_90`-only build and leaves the program its own end), and the bundled example
//! (`src/offload-example`) runs and checks itself against the host.
//!
//! The device pass takes the CPU device's `core` from the toolchain (the device sysroot) and
//! builds none; a copy of the workspace built with `--build-std` (`core` from source) gives the
//! same kernels, each with the same instructions or no more.

//@ only-x86_64
//@ needs-offload

use std::collections::BTreeMap;
use std::path::Path;

use run_make_support::offload::{
    cargo_offload, cargo_offload_fails, compare_kernels, copy_dir, kernel_instructions,
    project_example, report_library,
};
use run_make_support::{cmd, cwd, rfs, source_root};

/// `name: v0 v1 ...` lines of the program's output.
fn results(stdout: &str) -> BTreeMap<String, Vec<f64>> {
    stdout
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(name, values)| {
            let values = values.split_whitespace().map(|v| v.parse::<f64>().unwrap()).collect();
            (name.to_string(), values)
        })
        .collect()
}

fn expect(got: &BTreeMap<String, Vec<f64>>, name: &str, want: &[f64]) {
    let values = got.get(name).unwrap_or_else(|| panic!("the program printed no `{name}` line"));
    assert_eq!(values.len(), want.len(), "{name}: {values:?}");
    for (i, (g, w)) in values.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "{name}[{i}]: device {g}, expected {w}");
    }
}

/// The realistic corpus (`ws/corpus`), recomputed here in `f32`/`u32`/`u64` as the kernels do.
fn corpus(got: &BTreeMap<String, Vec<f64>>, stdout: &str) {
    const M: usize = 64;
    let f = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
    let u = |v: Vec<u32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
    let x: Vec<f32> = (0..M).map(|i| i as f32 * 0.125 - 2.0).collect();
    expect(got, "gather", &f((0..M).map(|i| x[(i * 7) % M]).collect()));
    let dot: f32 = x
        .iter()
        .zip(&x)
        .step_by(2)
        .enumerate()
        .map(|(i, (a, b))| if i % 2 == 0 { 1.0 } else { 0.5 } * a * b)
        .sum();
    expect(got, "strided_dot", &[f64::from(dot)]);
    expect(
        got,
        "divide",
        &u((0..M as u32).map(|i| (1000 + i * 13, 1 + i % 9)).map(|(a, d)| a / d + a % d).collect()),
    );
    let coeffs = [0.5f32, -1.25, 2.0, 0.125];
    let table = [3u32, 1, 4, 1, 5, 9, 2, 6];
    let lut = [0u32, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4];
    let poly = |x: f32| coeffs.iter().rev().fold(0.0f32, |acc, c| acc * x + c);
    expect(got, "tables_f", &f((0..M).map(|i| poly(i as f32 / 64.0).clamp(0.0, 1.0)).collect()));
    expect(got, "tables_bits", &u((0..M).map(|i| lut[(i * 5) & 15] + table[i % 8]).collect()));
    let codes = &got["classify_codes"];
    let class: Vec<u32> = codes
        .iter()
        .map(|c| match char::from_u32(*c as u32) {
            Some(c) if c.is_alphabetic() => 1,
            Some(c) => c.to_digit(16).map_or(2, |d| 16 + d),
            None => 0,
        })
        .collect();
    // Letters, other characters, digits and invalid code points all occur.
    assert!(class.contains(&1) && class.contains(&2) && class.contains(&0) && class.contains(&17));
    expect(got, "classify", &u(class));
    let fm = |v: f32| {
        v.abs().min(4.0).max(-4.0).copysign(-1.0) + f32::from_bits(v.to_bits() & 0x7f80_0000)
    };
    expect(got, "float_math", &f((0..M).map(|i| fm((i as f32 - 32.0) * 0.37)).collect()));
    let mut bins = [0u32; 16];
    for i in 0..M {
        bins[(i * i) % 16] += 1;
    }
    expect(got, "histogram", &u(bins.to_vec()));
    let taps = [1.0f32, 2.0, 3.0, 4.0];
    expect(
        got,
        "affine_small",
        &f((0..M).map(|i| if i < 40 { taps[i % 4] * 2.0 + 1.0 } else { -1.0 }).collect()),
    );
    expect(got, "axpy_f32", &f((0..M).map(|i| 2.0 * (1.0 - i as f32 * 0.5) + i as f32).collect()));
    expect(
        got,
        "axpy_u64",
        &(0..M as u64).map(|i| (3 * (i + 7) + i * 1000) as f64).collect::<Vec<_>>(),
    );
    expect(
        got,
        "areas",
        &f((0..M).map(|i| if i % 3 == 0 { 2.0 * 2.0 } else { 3.14159 * 1.5 * 1.5 }).collect()),
    );
    let ops: [fn(f32) -> f32; 3] = [|x| x * 2.0, |x| x * x, |x| -x];
    expect(got, "apply_ops", &f((0..M).map(|i| ops[i % 3](i as f32 - 10.0)).collect()));
    // 64-bit results, compared exactly as text.
    let wide: Vec<String> = (0..M as u64)
        .map(|i| {
            let (a, b) = (u64::MAX / 3 - i * 1_000_003, 6 + i * 2);
            ((a as i128 * b as i128 / (b as i128 | 1)) as u64).to_string()
        })
        .collect();
    let line = stdout.lines().find_map(|l| l.strip_prefix("wide: ")).expect("no `wide` line");
    assert_eq!(line.split_whitespace().collect::<Vec<_>>(), wide, "wide");
}

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-cpu-device/ws"), &ws);
    let run = cargo_offload(&ws, &["run", "--release", "--offload-arch=host", "-p", "app"]);
    let stderr = run.stderr_utf8();
    // One progress line per pass.
    let passes = [
        "host pass (x86_64-unknown-linux-gnu): compile",
        "device pass host",
        "image host: shared object",
        "host pass (x86_64-unknown-linux-gnu): link",
    ];
    for pass in passes {
        assert!(stderr.contains(&format!("[cargo offload] {pass}")), "no `{pass}` line:\n{stderr}");
    }
    let toolchain_core = "device pass host (x86_64-unknown-linux-gnu, the toolchain's core)";
    assert!(stderr.contains(toolchain_core), "no `{toolchain_core}` line:\n{stderr}");
    let got = results(&run.stdout_utf8());

    let x: Vec<f64> = (0..256).map(|i| i as f64 * 0.5).collect();
    let saxpy: Vec<f64> = (0..256).map(|i| 3.0 * x[i] + (i % 7) as f64).collect();
    expect(&got, "saxpy", &saxpy);
    expect(&got, "scale_u64", &(1..=8).map(|i| i as f64 * 10.0).collect::<Vec<_>>());
    expect(&got, "scale_f64", &(0..8).map(|i| i as f64 * 0.25 * -4.0).collect::<Vec<_>>());
    let affine: Vec<f64> =
        (0..8).map(|i| if i < 6 { ((i + 3) % 8 + 1) as f64 * 2.0 + 0.5 } else { -1.0 }).collect();
    expect(&got, "affine", &affine);
    let src: Vec<f64> = (0..16).map(|i| i as f64 - 8.0).collect();
    expect(&got, "copy_scaled", &src.iter().map(|s| s * 3.0 - 1.0).collect::<Vec<_>>());
    expect(&got, "copy_scaled_src", &src);
    expect(&got, "mixed", &[(3 * 100 - 7 + 200) as f64, 4.5]);
    expect(&got, "add_index", &(0..32).map(|i| 100.0 + i as f64).collect::<Vec<_>>());
    corpus(&got, &run.stdout_utf8());

    // `core` from source gives the same image.
    let from_source = cwd().join("ws-build-std");
    copy_dir(&source_root().join("tests/run-make/offload-cpu-device/ws"), &from_source);
    cargo_offload(
        &from_source,
        &["build", "--release", "--build-std", "--offload-arch=host", "-p", "app"],
    );
    let objdump = Path::new("/usr/lib/llvm-22/bin/llvm-objdump");
    let kernels =
        |dir: &Path| kernel_instructions(objdump, &dir.join("target/offload/images/host.so"));
    compare_kernels("the CPU device", &kernels(&ws), &kernels(&from_source));

    // A second program of the workspace, picked by name; without a name, `run` refuses to
    // guess.
    let second =
        cargo_offload(&ws, &["run", "--release", "--offload-arch=host", "--example", "second"]);
    assert_eq!(second.stdout_utf8().trim(), "second: 42 42 42 42 42 42 42 42");
    // The host pass writes the manifests as it compiles: there is no second build of the
    // crates for them. An edit that launches another instance of the kernel reaches the
    // manifest, the image and the program. `cargo offload test` below builds the examples too
    // (as `cargo test` does), and only this example launches `scale::<u32>`: its manifest must
    // be among the roots.
    let metadata_pass = ws.join("target/offload/host-metadata");
    assert!(!metadata_pass.exists(), "a separate metadata pass built {}", metadata_pass.display());
    let second_rs = ws.join("app/examples/second.rs");
    let source = rfs::read_to_string(&second_rs);
    let edited = source
        .replace("[2u64; 8]", "[3u32; 8]")
        .replace("kern::scale::<u64>", "kern::scale::<u32>")
        .replace("21u64", "7u32");
    assert_ne!(edited, source);
    rfs::write(&second_rs, edited);
    let second =
        cargo_offload(&ws, &["run", "--release", "--offload-arch=host", "--example", "second"]);
    assert_eq!(second.stdout_utf8().trim(), "second: 21 21 21 21 21 21 21 21");
    let manifest = rfs::read_to_string(ws.join("target/offload/image/manifest.json"));
    assert!(manifest.contains("kern::scale::<u32>"), "the edited launch is not in {manifest}");
    let several = cargo_offload_fails(
        &ws,
        &["run", "--release", "--offload-arch=host", "--bins", "--examples"],
    );
    assert!(
        several.stderr_utf8().contains("programs; pick one with `--bin NAME` or `--example NAME`")
    );
    // A kernel launched from a test harness: `cargo offload test` runs the workspace's tests.
    let tests = cargo_offload(&ws, &["test", "--release", "--offload-arch=host", "-p", "app"]);
    assert!(
        tests.stdout_utf8().contains("test tests::add_index_on_the_device ... ok"),
        "{}",
        tests.stdout_utf8()
    );
    // The workspace has libraries, whose doctests `cargo offload test` says it does not run.
    assert!(
        tests.stderr_utf8().contains("note: [cargo offload] doctests are not run"),
        "{}",
        tests.stderr_utf8()
    );

    // A `cdylib` that launches a kernel, called from a C program.
    cargo_offload(&ws, &["build", "--release", "--offload-arch=host", "-p", "clib"]);
    let lib = ws.join("target/offload/host/x86_64-unknown-linux-gnu/release");
    let c_program = cwd().join("clib-main");
    cmd("cc")
        .arg(ws.join("clib/main.c"))
        .arg("-o")
        .arg(&c_program)
        .arg(format!("-L{}", lib.display()))
        .arg("-lclib")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .run();
    let c_run = cmd(&c_program).env_remove("LD_LIBRARY_PATH").run();
    assert_eq!(c_run.stdout_utf8().trim(), "clib: 1 3 511");
    // A C launcher that loads the cdylib with `dlopen` and `RTLD_LOCAL` (as Python's `ctypes`
    // does), so that the offload runtime comes in outside the program's global scope, with the
    // report library of `OFFLOAD_REPORT=1` preloaded. Built for `sm_90` alone (no GPU here):
    // the report finds the runtime and says that the kernel did not run, and the program stops
    // with its own failed-launch line (status 1), not the report's abort (status 134). (With a
    // CPU device image, the runtime cannot load it for such a launcher: the image needs the
    // program's launch record, `__rust_offload_launch`, which `RTLD_LOCAL` hides.)
    cargo_offload(&ws, &["build", "--release", "--offload-arch=sm_90", "-p", "clib"]);
    let dl_program = cwd().join("clib-dlopen");
    cmd("cc").arg(ws.join("clib/dlopen.c")).arg("-o").arg(&dl_program).arg("-ldl").run();
    let dl_run = cmd(&dl_program)
        .arg(lib.join("libclib.so"))
        .env_remove("LD_LIBRARY_PATH")
        .env("LD_PRELOAD", report_library())
        .run_fail();
    let stderr = dl_run.stderr_utf8();
    assert_eq!(dl_run.status().code(), Some(1), "{stderr}");
    assert!(
        stderr.lines().any(|l| l.starts_with("[offload report] kernel `_offload_kernel_")
            && l.contains("` did not run: ")),
        "the report of the dlopen'ed cdylib's launch:\n{stderr}"
    );
    assert!(stderr.contains("error: the offload launch of kernel `"), "{stderr}");

    // The bundled example checks its three kernels against the host itself.
    let example = cwd().join("example");
    copy_dir(&project_example(), &example);
    let run = cargo_offload(&example, &["run", "--release", "--offload-arch=host"]);
    let stdout = run.stdout_utf8();
    for kernel in ["saxpy", "stencil3", "sum_reduce"] {
        let line = stdout.lines().find(|l| l.starts_with(&format!("{kernel}:"))).unwrap_or("");
        assert!(
            line.ends_with(": ok"),
            "the example's `{kernel}` on the CPU device: {line:?}\n{stdout}"
        );
    }
}
