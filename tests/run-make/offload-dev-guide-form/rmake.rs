//! Code in the form that upstream documents (the rustc-dev-guide's offload usage page,
//! `src/offload/usage.md`) builds with the fork unchanged (scenario S29):
//! - `guide/lib.rs`, a `no_std` library in the page's shape (grid functions imported per GPU
//!   under `cfg(target_arch)`, none for the host, a generic kernel launched as `kernel = axpb`
//!   with literals), goes through the page's three manual passes as the page writes them:
//!   `cargo build -r` with `-Zoffload=HostMetadata=<manifest>`, then the device pass with
//!   `-Zoffload=Device=<manifest>` and `-Zbuild-std=core` for `gfx90a` (and `sm_90`), then the
//!   host pass with `-Zoffload=Host=<...>/deps/device.bin`. The library depends on the page's
//!   `libc` (the rustc source's vendored copy, by path) and on `withbuild`, whose build script
//!   (with its build dependency `buildhelper`) must run in every pass, as `libc`'s does:
//!   `RUSTFLAGS` reach build scripts and their dependencies when cargo builds without
//!   `--target`, and the host metadata pass compiles and links crates whose graph launches no
//!   kernel as usual. The manifest names the instance
//!   `axpb::<f64>`; each device pass writes `device.bin` with the bytes of `host.out`, whose
//!   kernel is exactly that instance and which the vendors' tools accept; the host pass's IR
//!   launches it under the same symbol. A host pass given another file name is refused.
//! - The same library builds with `cargo offload build --release --offload-arch=gfx90a,sm_90`.
//! - `std-program`, a `std` program with generic kernels launched without generic arguments,
//!   literals for `u32` parameters (one past `i32::MAX`) and a 1.95-style launch with an `i32`
//!   literal, runs on the CPU device with every element right.

//@ only-x86_64
//@ needs-offload
//@ needs-llvm-components: amdgpu nvptx

use std::path::Path;

use run_make_support::offload::{
    cargo_offload, offload_tools_bin, package_manifest, stage0_cargo, vendor_check,
};
use run_make_support::serde_json::{self, Value};
use run_make_support::{CompletedProcess, cmd, cwd, env_var, rfs, source_root};

/// The test's sources.
fn source(path: &str) -> std::path::PathBuf {
    source_root().join("tests/run-make/offload-dev-guide-form").join(path)
}

/// `cargo ARGS` in `dir` with `RUSTFLAGS` = `rustflags`, as the page runs it (`cargo +offload`
/// is this toolchain's cargo with the stage-1 rustc); panics with its output unless it
/// succeeds (`succeed`) or fails.
fn cargo(dir: &Path, rustflags: &str, args: &[&str], succeed: bool) -> CompletedProcess {
    let path = format!("{}:/usr/lib/llvm-22/bin:/usr/bin:/bin", offload_tools_bin().display());
    let mut c = cmd(stage0_cargo());
    c.args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("RUSTC", env_var("RUSTC"))
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env("RUSTFLAGS", rustflags)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_INCREMENTAL")
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("MAKEFLAGS");
    if succeed { c.run() } else { c.run_fail() }
}

/// A package `name` in `dir` whose source is the test's `src` (as `src/<file>`), with the
/// `[dependencies]` lines `dependencies` and the `panic = "abort"` profiles that a `no_std`
/// library with a panic handler needs.
fn package(dir: &Path, name: &str, src: &str, file: &str, dependencies: &str) {
    rfs::create_dir_all(dir.join("src"));
    let profiles = "\n[profile.dev]\npanic = \"abort\"\n\n[profile.release]\npanic = \"abort\"\n";
    rfs::write(dir.join("Cargo.toml"), package_manifest(name, dependencies) + profiles);
    rfs::copy(source(src), dir.join("src").join(file));
}

/// The dependencies with build scripts: the vendored `libc`, and `withbuild` (with the build
/// dependency `buildhelper`) beside the package folders; the `[dependencies]` lines that name
/// them.
fn dependencies_with_build_scripts() -> String {
    let libc = source_root().join("vendor/libc-0.2.180");
    assert!(libc.join("build.rs").exists(), "no vendored libc with a build script at {libc:?}");
    let helper = cwd().join("buildhelper");
    rfs::create_dir_all(helper.join("src"));
    rfs::write(helper.join("Cargo.toml"), package_manifest("buildhelper", ""));
    rfs::copy(source("buildhelper/lib.rs"), helper.join("src/lib.rs"));
    let dep = cwd().join("withbuild");
    rfs::create_dir_all(dep.join("src"));
    let build_deps = "\n[build-dependencies]\nbuildhelper = { path = \"../buildhelper\" }\n";
    rfs::write(dep.join("Cargo.toml"), package_manifest("withbuild", build_deps));
    rfs::copy(source("withbuild/build.rs"), dep.join("build.rs"));
    rfs::copy(source("withbuild/lib.rs"), dep.join("src/lib.rs"));
    format!("libc = {{ path = {:?} }}\nwithbuild = {{ path = \"../withbuild\" }}\n", libc)
}

fn main() {
    let guide = cwd().join("guide");
    package(&guide, "guide", "guide/lib.rs", "lib.rs", &dependencies_with_build_scripts());
    // The page's program calls `libc::printf` on the host only; the crate graph of each pass
    // holds what the library uses.
    let uses = "\n#[cfg(target_os = \"linux\")]\nuse libc as _;\nuse withbuild as _;\n";
    rfs::write(guide.join("src/lib.rs"), rfs::read_to_string(source("guide/lib.rs")) + uses);
    let manifest = guide.join("offload.manifest");

    // 1. Host metadata pass, with the page's flags.
    let flags = "--emit=llvm-bc,llvm-ir -Csave-temps -Zunstable-options";
    let metadata = format!("{flags} -Zoffload=HostMetadata={}", manifest.display());
    cargo(&guide, &metadata, &["build", "-r"], true);
    let json: Value = serde_json::from_str(&rfs::read_to_string(&manifest)).unwrap();
    let kernels = json["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1, "{json}");
    assert_eq!(kernels[0]["kernel"], "guide::axpb::<f64>", "{json}");
    let symbol = kernels[0]["symbol"].as_str().unwrap().to_string();

    // 2. Device passes, with the page's flags and `-Zbuild-std=core`.
    for (target, cpu) in [("amdgcn-amd-amdhsa", "gfx90a"), ("nvptx64-nvidia-cuda", "sm_90")] {
        let device = format!("-Ctarget-cpu={cpu} {flags} -Zoffload=Device={}", manifest.display());
        let args = ["build", "-Zunstable-options", "-r", "-v", "--target", target];
        cargo(&guide, &device, &[&args[..], &["-Zbuild-std=core"]].concat(), true);
        let deps = guide.join(format!("target/{target}/release/deps"));
        let image = rfs::read(deps.join("device.bin"));
        assert_eq!(image, rfs::read(deps.join("host.out")), "{target}: device.bin is not host.out");
        let report = vendor_check(&deps.join("device.bin"), target);
        assert_eq!(report.kernels, [symbol.clone()].into(), "{target}: the image's kernels");
    }

    // 3. Host pass, with the image as the page names it.
    let image = guide.join("target/amdgcn-amd-amdhsa/release/deps/device.bin");
    let host = format!("{flags} -Zoffload=Host={}", image.display());
    cargo(&guide, &host, &["build", "-r"], true);
    let deps = guide.join("target/release/deps");
    let launches = rfs::read_dir(&deps)
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "ll"))
        .any(|ll| rfs::read_to_string(&ll).contains(&symbol));
    assert!(launches, "no host IR in {} names the kernel {symbol}", deps.display());
    // Another file name is refused, naming both that the pass takes.
    let renamed = guide.join("image.bin");
    rfs::copy(&image, &renamed);
    let wrong = format!("{flags} -Zoffload=Host={}", renamed.display());
    let refused = cargo(&guide, &wrong, &["build", "-r"], false);
    let message = "must point to a `host.out` or `device.bin` file";
    assert!(refused.stderr_utf8().contains(message), "{}", refused.stderr_utf8());

    // The same library through `cargo offload`, which checks each image with the vendors'
    // tools.
    let through_cargo_offload = cwd().join("guide-cargo-offload");
    package(&through_cargo_offload, "guide", "guide/lib.rs", "lib.rs", "");
    let built = cargo_offload(
        &through_cargo_offload,
        &["build", "--release", "--offload-arch=gfx90a,sm_90"],
    );
    let stderr = built.stderr_utf8();
    for line in ["image gfx90a: code object", "image sm_90: cubin"] {
        assert!(stderr.contains(line), "no `{line}` in:\n{stderr}");
    }

    // The `std` program on the CPU device.
    let program = cwd().join("std-program");
    rfs::create_dir_all(program.join("src"));
    rfs::write(program.join("Cargo.toml"), package_manifest("guideprog", ""));
    rfs::copy(source("std-program/main.rs"), program.join("src/main.rs"));
    let run = cargo_offload(&program, &["run", "--release", "--offload-arch=host"]);
    let stdout = run.stdout_utf8();
    for line in
        ["fill f64: 256", "fill f32: 256", "affine: 0 of 100 wrong", "affine 1.95: 0 of 100 wrong"]
    {
        assert!(stdout.lines().any(|printed| printed == line), "no `{line}` in:\n{stdout}");
    }
}
