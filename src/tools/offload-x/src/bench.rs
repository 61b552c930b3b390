//! `[BENCH]`: the device-pass benchmark (`./x.py bench [ARGS]`).
//!
//! The measuring is done by `src/offload-bench/bench.py`, run inside the sysroot (where both
//! our stage-1 rustc and the rustup 1.95.0 rustc run, beside trixie's LLVM tools); see its
//! documentation for what it compiles and reports. This module builds what is missing,
//! installs trixie's `python3-matplotlib` into the sysroot once (for the plot; without it the
//! benchmark still writes its tables), and passes the paths. `ARGS` go to the script
//! (`--runs N`, `--targets T...`, `--update-readme README.md`, `--from-json FILE
//! [--reinspect]`).

use std::ffi::OsString;
use std::path::Path;

use crate::cache::{Cache, stage0_toolchain};
use crate::sysroot::Enter;
use crate::ui::{Failure, Result, Timer, fail, say};

const STEP: &str = "BENCH";

/// Installs `python3-matplotlib` into the sysroot unless it is there. A failure (no registry)
/// is reported and the benchmark goes on without a plot.
fn ensure_matplotlib(project: &Path, cache: &Cache) -> Result<()> {
    if cache.sysroot().join("usr/lib/python3/dist-packages/matplotlib").exists() {
        return Ok(());
    }
    let timer =
        Timer::start(STEP, "installing python3-matplotlib into the sysroot (once, for the plot)");
    let script = "apt-get update -q >/dev/null && \
                  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
                  python3-matplotlib >/dev/null";
    let status = Enter::new(cache, project, "/bin/sh")
        .args(["-c", script])
        .command(cache)?
        .status()
        .map_err(|e| Failure { step: STEP, message: format!("cannot start unshare: {e}") })?;
    if status.success() {
        timer.done();
    } else {
        say(
            STEP,
            "could not install python3-matplotlib (is the package registry reachable?): no plot",
        );
    }
    Ok(())
}

/// `./x.py bench ARGS`.
pub fn run(project: &Path, cache: &Cache, args: Vec<OsString>) -> Result<()> {
    // `--from-json` only redoes the reports of an earlier run.
    if !args.iter().any(|a| a == "--from-json") {
        crate::commands::build(project, cache)?;
    }
    ensure_matplotlib(project, cache)?;
    let stock = stage0_toolchain().join("bin/rustc");
    let path = |p: &Path| p.display().to_string();
    let script: Vec<OsString> = [
        path(&project.join("src/offload-bench/bench.py")),
        "--ours".into(),
        path(&cache.stage1_rustc()),
        "--stock".into(),
        path(&stock),
        "--cargo".into(),
        path(&stage0_toolchain().join("bin/cargo")),
        "--tree".into(),
        path(&cache.tree()),
        "--example".into(),
        path(&project.join("src/offload-example/lib.rs")),
        "--suite".into(),
        path(&project.join("src/offload-bench/suite.rs")),
        "--work".into(),
        path(&cache.root.join("bench")),
        "--results".into(),
        path(&project.join("src/offload-bench/results")),
        "--cuda-bin".into(),
        path(&crate::cuda::cuda_bin(cache)),
    ]
    .into_iter()
    .map(OsString::from)
    .chain(args)
    .collect();
    let status = Enter::new(cache, project, "python3")
        .args(script)
        .command(cache)?
        .status()
        .map_err(|e| Failure { step: STEP, message: format!("cannot start unshare: {e}") })?;
    if !status.success() {
        return fail(STEP, format!("the benchmark failed ({status}); its output is above"));
    }
    Ok(())
}
