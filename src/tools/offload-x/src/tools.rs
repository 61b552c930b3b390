//! Our Rust tools that the harness builds from upstream's vendored crates, offline, with the
//! rustup 1.95.0 toolchain (`src/tools/cargo-offload`, `offload-manifest`, `offload-report`):
//! building, installing beside the stage-1 toolchain, and testing them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::{Cache, offload_tools_bin, stage0_toolchain};
use crate::ui::{Context, Result, fail};
use crate::upstream;

/// `cargo ARGS` of the rustup 1.95.0 toolchain for `src/tools/offload-manifest`, offline, with
/// crates.io replaced by upstream's `vendor/` in the materialized tree.
fn manifest_tool_cargo(project: &Path, cache: &Cache, args: &[&str]) -> Command {
    tool_cargo(project, cache, "offload-manifest", args)
}

/// `cargo ARGS` of the rustup 1.95.0 toolchain for `src/tools/<tool>`, offline, against
/// upstream's vendored crates.
fn tool_cargo(project: &Path, cache: &Cache, tool: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(stage0_toolchain().join("bin/cargo"));
    cmd.args(args)
        .arg("--manifest-path")
        .arg(project.join("src/tools").join(tool).join("Cargo.toml"))
        .args([
            "--offline",
            "--quiet",
            "--config",
            "source.crates-io.replace-with='vendored'",
            "--config",
        ])
        .arg(format!("source.vendored.directory='{}'", cache.tree().join("vendor").display()))
        .env("CARGO_TARGET_DIR", cache.root.join("tools-target"))
        // The caller's flags, wrappers and configuration are for the fork's compiler (`./x.py
        // cargo` in a workspace of theirs), not for our tools and the stage-0 toolchain.
        .current_dir(project)
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC")
        .env_remove("CARGO_BUILD_RUSTC_WRAPPER")
        .env_remove("CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_BUILD_RUSTC")
        .env_remove("CARGO_BUILD_RUSTFLAGS");
    cmd
}

/// Builds `src/tools/offload-manifest` (the manifest printer) for the step `step`; returns its
/// path.
pub fn manifest_tool(project: &Path, cache: &Cache, step: &'static str) -> Result<PathBuf> {
    if !upstream::is_ready(cache) {
        return fail(
            step,
            "the manifest printer builds from upstream's vendored crates: run `./x.py build` first",
        );
    }
    crate::ui::run_captured(
        step,
        &mut manifest_tool_cargo(project, cache, &["build", "--release"]),
    )?;
    Ok(cache.root.join("tools-target/release/offload-manifest"))
}

/// The text dump of the manifest at `path` (see `src/tools/offload-manifest`).
pub fn dump_manifest(project: &Path, cache: &Cache, path: &Path) -> Result<String> {
    let tool = manifest_tool(project, cache, "JOB")?;
    let out = crate::ui::run_captured("JOB", Command::new(&tool).arg(path))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Builds `src/tools/cargo-offload` and installs it in [`offload_tools_bin`], with the report
/// library (`../lib`) and the manifest printer (`offload-manifest`, whose `check` the run-make
/// tests run on the compiler's manifests). The binaries are built on this machine and run
/// inside the sysroot, whose C library is newer. Returns the installed `cargo-offload`.
pub fn install_cargo_offload(project: &Path, cache: &Cache) -> Result<PathBuf> {
    if !upstream::is_ready(cache) {
        return fail(
            "BUILD",
            "cargo offload builds from upstream's vendored crates: run `./x.py build` first",
        );
    }
    crate::ui::run_captured(
        "BUILD",
        &mut tool_cargo(project, cache, "cargo-offload", &["build", "--release"]),
    )?;
    crate::ui::run_captured(
        "BUILD",
        &mut tool_cargo(project, cache, "offload-report", &["build", "--release"]),
    )?;
    let printer = manifest_tool(project, cache, "BUILD")?;
    let release = cache.root.join("tools-target/release");
    let installed = offload_tools_bin(cache).join("cargo-offload");
    let report = offload_tools_bin(cache).join("../lib/liboffload_report.so");
    for (built, installed) in [
        (release.join("cargo-offload"), &installed),
        (release.join("liboffload_report.so"), &report),
        (printer, &offload_tools_bin(cache).join("offload-manifest")),
    ] {
        if fs::read(installed).ok() != fs::read(&built).ok() {
            fs::create_dir_all(installed.parent().unwrap())
                .and_then(|()| fs::copy(&built, installed))
                .context("BUILD", || format!("cannot install {}", installed.display()))?;
        }
    }
    Ok(installed)
}

/// Runs the tests of `src/tools/cargo-offload` (its argument parsing, image builders, run
/// plans and bundles), of `src/tools/offload-report`, of `src/tools/offload-manifest-format`
/// (the manifest format: reading, round trips, merging, errors) and of
/// `src/tools/offload-targets` (the device targets' table).
pub fn test_cargo_offload(project: &Path, cache: &Cache) -> Result<()> {
    for tool in ["cargo-offload", "offload-report", "offload-manifest-format", "offload-targets"] {
        let status =
            tool_cargo(project, cache, tool, &["test"]).status().running("TEST", "cargo")?;
        if !status.success() {
            return fail("TEST", format!("{tool} tests failed; their output is above"));
        }
    }
    Ok(())
}

/// Runs the manifest printer's own tests.
pub fn test_manifest_tool(project: &Path, cache: &Cache) -> Result<()> {
    let status =
        manifest_tool_cargo(project, cache, &["test"]).status().running("TEST", "cargo")?;
    if !status.success() {
        return fail("TEST", "offload-manifest tests failed; their output is above");
    }
    Ok(())
}
