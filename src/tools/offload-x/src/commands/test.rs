//! `./x.py test`: the harness's tests, the style and series checks, our tools' tests, the fuzz
//! run, the outside and GPU checks, compiletest, and every prefix of the series.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::fuzz::{SHORT_FUZZ_COUNT, fuzz_run};
use crate::bootstrap::bootstrap_tee;
use crate::cache::{Cache, stage0_toolchain};
use crate::stages::{build, restore_gpu_sysroot};
use crate::toolchain_lock::{ToolchainLock, Use};
use crate::tools::{test_cargo_offload, test_manifest_tool};
use crate::ui::{Context, Result, Timer, fail, say};

/// Upstream test suites that `x.py test` runs by default, beside our own `tests/`.
pub const UPSTREAM_SUITES: &[&str] = &["tests/codegen-llvm/gpu_offload"];

/// `[TEST]`: the harness's own tests, then compiletest suites at stage 1. `paths` (upstream
/// test paths) replace the default suites.
pub fn test(project: &Path, cache: &Cache, paths: &[String]) -> Result<()> {
    if paths.is_empty() {
        let timer = Timer::start("TEST", "harness tests (cargo test)");
        let cargo = stage0_toolchain().join("bin/cargo");
        let status = Command::new(&cargo)
            .args(["test", "--quiet", "--manifest-path"])
            .arg(project.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", cache.root.join("tools-target"))
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .status()
            .running("TEST", cargo.display())?;
        if !status.success() {
            return fail("TEST", "harness tests failed; their output is above");
        }
        timer.done();
    }
    build(project, cache)?;
    if paths.is_empty() {
        super::style::rustfmt(cache)?;
        super::style::tidy(project, cache)?;
        super::series::record(project, cache)?;
        let timer = Timer::start("TEST", "our tools' own tests (cargo test, offline)");
        test_manifest_tool(project, cache)?;
        test_cargo_offload(project, cache)?;
        timer.done();
        fuzz_run(project, cache, 1, 0, SHORT_FUZZ_COUNT)?;
        super::outside::check(project, cache)?;
        // The dist toolchain, installed and used as a user without root.
        super::dist_check::check(project, cache)?;
        // The GPU check's bundle builds, and its script runs here with every row "did not run".
        super::gpu_check::check_without_gpu(project, cache)?;
    }
    let mut suites: Vec<String> = paths.to_vec();
    if suites.is_empty() {
        suites.extend(UPSTREAM_SUITES.iter().map(|s| s.to_string()));
        suites.extend(our_suites(project));
    }
    let timer = Timer::start("TEST", format!("compiletest at stage 1: {}", suites.join(" ")));
    // `--force-rerun`: compiletest would otherwise skip tests whose last run passed with this
    // compiler, and a test command that runs nothing proves nothing.
    // `rust.verbose-tests`: one line per test with its outcome, which `test_outcomes` reads so
    // that an ignored or missing test fails the step (CI's renderer prints failures only).
    let mut args =
        vec!["test", "--stage", "1", "--force-rerun", "--set", "rust.verbose-tests=true"];
    args.extend(suites.iter().map(String::as_str));
    // Bootstrap assembles the stage-1 sysroot afresh, and the GPU libraries go back after it.
    let replacing = ToolchainLock::take(cache, "TEST", Use::Replace)?;
    let tested = bootstrap_tee(cache, "TEST", &args);
    restore_gpu_sysroot(cache)?;
    drop(replacing);
    let output = tested?;
    let expected = crate::test_outcomes::expected_tests(&cache.tree(), &suites);
    let passed = crate::test_outcomes::check(&output, &expected)?;
    say(
        "TEST",
        format!("{passed} tests passed, none ignored; all {} expected tests ran", expected.len()),
    );
    timer.done();
    if paths.is_empty() {
        // Each prefix of the patch series builds; prefixes checked before are skipped, so this
        // costs time only after a patch changed (about ten minutes for the whole series).
        let timer = Timer::start("SERIES", "x.py check of each prefix of the patch series");
        super::series::check_prefixes(project, cache, None)?;
        timer.done();
    }
    Ok(())
}

/// Our compiletest suites: the folders two levels under the project's `tests/` that hold
/// tests (`tests/<mode>/<folder>`).
pub fn our_suites(project: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(modes) = fs::read_dir(project.join("tests")) else { return out };
    for mode in modes.flatten() {
        let Ok(folders) = fs::read_dir(mode.path()) else { continue };
        for folder in folders.flatten() {
            if folder.path().is_dir() {
                out.push(format!(
                    "tests/{}/{}",
                    mode.file_name().to_string_lossy(),
                    folder.file_name().to_string_lossy()
                ));
            }
        }
    }
    out.sort();
    out
}
