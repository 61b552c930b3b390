//! `cargo offload` for run-make tests: cargo 1.95.0 (bootstrap's stage-0 cargo, named in the
//! tree's `bootstrap.toml`) with the stage-1 rustc, and `cargo-offload` as `./x.py build`
//! installs it (`$BUILD_ROOT/offload-tools/bin`).

#![allow(dead_code)] // not every test uses every helper

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
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
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
