//! `cargo offload` for run-make tests: cargo 1.95.0 (bootstrap's stage-0 cargo, named in the
//! tree's `bootstrap.toml`) with the stage-1 rustc, and `cargo-offload` as `./x.py build`
//! installs it (`$BUILD_ROOT/offload-tools/bin`).

#![allow(dead_code)] // not every test uses every helper

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use run_make_support::{CompletedProcess, cmd, env_var, rfs, source_root};

/// Bootstrap's cargo: the `cargo = "..."` line of the tree's `bootstrap.toml`.
pub fn stage0_cargo() -> PathBuf {
    let config = rfs::read_to_string(source_root().join("bootstrap.toml"));
    let line = config
        .lines()
        .find(|l| l.trim_start().starts_with("cargo ="))
        .expect("bootstrap.toml names no cargo");
    PathBuf::from(line.split('"').nth(1).expect("cargo = \"PATH\""))
}

/// The folder of the installed `cargo-offload`.
pub fn offload_tools_bin() -> PathBuf {
    let bin = PathBuf::from(env_var("BUILD_ROOT")).join("offload-tools/bin");
    assert!(
        bin.join("cargo-offload").is_file(),
        "{} has no cargo-offload: run `./x.py build`",
        bin.display()
    );
    bin
}

/// The report library that `OFFLOAD_REPORT=1` preloads (`src/tools/offload-report`), installed
/// beside `cargo-offload` (`bin/../lib`).
pub fn report_library() -> PathBuf {
    offload_tools_bin().parent().unwrap().join("lib/liboffload_report.so")
}

/// The device sysroot that `./x.py build` writes (`core` with the MIR of every function for
/// each device target, the CPU device's included), as `./x.py cargo` gives it to `cargo offload`.
pub fn device_sysroot() -> PathBuf {
    let sysroot = PathBuf::from(env_var("BUILD_ROOT")).join("offload-device-sysroot");
    assert!(sysroot.is_dir(), "{} is missing: run `./x.py build`", sysroot.display());
    sysroot
}

/// The instructions of each kernel (`_offload_kernel_*`) in the device image `image` (a code
/// object or shared object), disassembled by `objdump` (an `llvm-objdump`), without addresses
/// and comments, by symbol.
pub fn kernel_instructions(objdump: &Path, image: &Path) -> BTreeMap<String, Vec<String>> {
    let text = cmd(objdump).args(["-d", "--no-show-raw-insn"]).arg(image).run().stdout_utf8();
    let mut kernels: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line.split_once(" <").and_then(|(_, rest)| rest.strip_suffix(">:")) {
            current = name.starts_with("_offload_kernel_").then(|| name.to_string());
            continue;
        }
        let Some(kernel) = &current else { continue };
        // `    1a2b:      \tinsn ...` (x86-64) or `\tinsn ... // 0000D510: ...` (amdgcn).
        let insn = match line.trim_start().split_once(':') {
            Some((address, insn)) if address.chars().all(|c| c.is_ascii_hexdigit()) => insn,
            _ => line,
        };
        let insn = insn.split("//").next().unwrap().trim();
        if !insn.is_empty() {
            kernels.entry(kernel.clone()).or_default().push(insn.to_string());
        }
    }
    kernels
}

/// Each kernel's PTX lines (its `.entry` to its closing brace) in `ptx`, by name, every Rust
/// symbol in them written `_R`: the two builds' crate graphs give internal `core` functions
/// other v0 crate disambiguators.
pub fn ptx_kernels(ptx: &str) -> BTreeMap<String, Vec<String>> {
    let mut kernels: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in ptx.lines() {
        if let Some(rest) = line.strip_prefix(".visible .entry ") {
            current = rest.split('(').next().map(str::to_string);
            continue;
        }
        let Some(kernel) = &current else { continue };
        if line == "}" {
            current = None;
            continue;
        }
        let line = line.split("//").next().unwrap().trim();
        let normalized: Vec<String> = line
            .split_inclusive(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map(|token| if token.starts_with("_R") { "_R".to_string() } else { token.into() })
            .collect();
        if !line.is_empty() {
            kernels.entry(kernel.clone()).or_default().push(normalized.concat());
        }
    }
    kernels
}

/// Compares the kernels of an image built with the toolchain's `core` with those of the same
/// image built with `core` from source (`--build-std`), for `what`: the same kernels, each
/// with the same instructions or, where the two `core`s' optimized MIR leads LLVM to other
/// choices, no more instructions with the toolchain's `core`. Returns the kernels whose
/// instructions differ.
pub fn compare_kernels(
    what: &str,
    toolchain: &BTreeMap<String, Vec<String>>,
    from_source: &BTreeMap<String, Vec<String>>,
) -> Vec<String> {
    assert_eq!(
        toolchain.keys().collect::<Vec<_>>(),
        from_source.keys().collect::<Vec<_>>(),
        "{what}: the kernels of the two images"
    );
    assert!(!toolchain.is_empty(), "{what}: no kernels in the image");
    let mut differing = Vec::new();
    for (kernel, insns) in toolchain {
        let other = &from_source[kernel];
        if insns != other {
            assert!(
                insns.len() <= other.len(),
                "{what}: `{kernel}` has {} instructions with the toolchain's core, {} with \
                 --build-std",
                insns.len(),
                other.len()
            );
            differing.push(kernel.clone());
        }
    }
    println!(
        "{what}: {} kernels, {} with other instructions than --build-std's (none longer): \
         {differing:?}",
        toolchain.len(),
        differing.len()
    );
    differing
}

/// The project's bundled example (`src/offload-example`, a Cargo package), which the harness
/// makes visible to the tests.
pub fn project_example() -> PathBuf {
    PathBuf::from(env_var("OFFLOAD_FORK_PROJECT")).join("src/offload-example")
}

/// `cargo offload ARGS` in `dir`, with its own target folder inside it; panics with its output
/// unless it succeeds (`succeed`) or fails (`!succeed`).
fn run(dir: &Path, args: &[&str], succeed: bool) -> CompletedProcess {
    let path = format!("{}:/usr/lib/llvm-22/bin:/usr/bin:/bin", offload_tools_bin().display());
    let mut c = cmd(stage0_cargo());
    c.arg("offload")
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("RUSTC", env_var("RUSTC"))
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env(
            "CARGO_OFFLOAD_CUDA_BIN",
            PathBuf::from(env_var("BUILD_ROOT")).join("offload-cuda/bin"),
        )
        .env("CARGO_OFFLOAD_DEVICE_SYSROOT", device_sysroot())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        // A user's shell sets none; bootstrap's does, for its own builds.
        .env_remove("CARGO_INCREMENTAL")
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("MAKEFLAGS");
    if succeed { c.run() } else { c.run_fail() }
}

/// `cargo offload ARGS` in `dir`; panics with its output unless it succeeds.
pub fn cargo_offload(dir: &Path, args: &[&str]) -> CompletedProcess {
    run(dir, args, true)
}

/// `cargo offload ARGS` in `dir`; panics with its output unless it fails.
pub fn cargo_offload_fails(dir: &Path, args: &[&str]) -> CompletedProcess {
    run(dir, args, false)
}

/// Copies the folder `from` to `to`, without a `target/` folder.
pub fn copy_dir(from: &Path, to: &Path) {
    rfs::create_dir_all(to);
    for entry in rfs::read_dir(from) {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "target" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if src.is_dir() { copy_dir(&src, &dst) } else { rfs::copy(&src, &dst) }
    }
}

/// The `name: mismatches checksum` lines of a test program's output (`offload-cpu-grid`,
/// `offload-slices`), by name.
pub fn reports(stdout: &str) -> BTreeMap<String, (u64, u64)> {
    stdout
        .lines()
        .filter_map(|l| l.split_once(": "))
        .filter_map(|(name, rest)| {
            let mut fields = rest.split_whitespace().map(|v| v.parse::<u64>());
            match (fields.next(), fields.next(), fields.next()) {
                (Some(Ok(m)), Some(Ok(s)), None) => Some((name.to_string(), (m, s))),
                _ => None,
            }
        })
        .collect()
}
