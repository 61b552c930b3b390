//! `[BENCH]`: the device-pass benchmark (`./x.py bench [ARGS]`).
//!
//! The measuring is done by `src/offload-bench/bench.py`, run inside the sysroot (where both
//! our stage-1 rustc and the rustup 1.95.0 rustc run, beside trixie's LLVM tools); see its
//! documentation for what it compiles and reports. This module builds what is missing,
//! installs trixie's `python3-matplotlib` into the sysroot once (for the plot; without it the
//! benchmark still writes its tables), extracts upstream's `library/` for the stock
//! compiler's `-Zbuild-std` ([`upstream_library`]), writes the device targets' table
//! (`offload_targets`) as JSON for the script ([`device_targets_file`]), and passes the paths.
//! `ARGS` go to the script (`--runs N`, `--edits N`, `--targets T...`, `--update-readme
//! src/doc/benchmarks.md`, which rewrites the tables of that page, `--from-json FILE
//! [--reinspect]`, `--edit-loop ROUNDS`); the edit loop (`src/offload-bench/edit_loop.py`) runs
//! the installed `cargo offload`.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use crate::cache::{Cache, stage0_toolchain};
use crate::sysroot::Enter;
use crate::ui::{Context, Result, Timer, fail, run_captured, say};
use crate::upstream::{BASE_BRANCH, git};

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
    let status = Enter::new(cache, project, "/bin/sh").args(["-c", script]).status(cache, STEP)?;
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

/// Upstream's `library/`, without our patches, where the stock compiler's `-Zbuild-std` builds
/// `core`: ours declares built-in macros that rustup's 1.95.0 lacks (`offload_kernel`), so
/// stock cannot build it. Extracted from branch `upstream` of the tree's git directory into
/// `<cache>/upstream-library/library`, once per upstream commit (`.commit` records it), with
/// the lock file that the vendored build wrote into the tree's `library/` (upstream's is kept
/// as `Cargo.lock.orig`). Returns that `library/`.
fn upstream_library(cache: &Cache) -> Result<PathBuf> {
    let root = cache.root.join("upstream-library");
    let library = root.join("library");
    let stamp = root.join(".commit");
    let out = run_captured(STEP, git(cache).args(["rev-parse", BASE_BRANCH]))?;
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if fs::read_to_string(&stamp).is_ok_and(|s| s == commit) && library.is_dir() {
        return Ok(library);
    }
    let timer = Timer::start(STEP, "extracting upstream's library/ for the stock compiler");
    if root.exists() {
        fs::remove_dir_all(&root).at(STEP, &root)?;
    }
    fs::create_dir_all(&root).at(STEP, &root)?;
    let archive = root.join("library.tar");
    let archive_arg = format!("--output={}", archive.display());
    run_captured(
        STEP,
        git(cache).args(["archive", "--format=tar", &archive_arg, BASE_BRANCH]).arg("library"),
    )?;
    run_captured(
        STEP,
        std::process::Command::new("tar").arg("-xf").arg(&archive).arg("-C").arg(&root),
    )?;
    fs::remove_file(&archive).at(STEP, &archive)?;
    let lock = cache.tree().join("library/Cargo.lock");
    let lock = if lock.exists() { lock } else { cache.tree().join("library/Cargo.lock.orig") };
    fs::copy(&lock, library.join("Cargo.lock")).at(STEP, &lock)?;
    fs::write(&stamp, &commit).at(STEP, &stamp)?;
    timer.done();
    Ok(library)
}

/// Writes the device targets' table as JSON (`offload_targets::to_json`) to
/// `<cache>/device-targets.json`, which the script reads (`--device-targets`): its targets,
/// their `-Ctarget-cpu` and the vendor steps of its image check. Outside `<cache>/bench`, which
/// the script empties.
fn device_targets_file(cache: &Cache) -> Result<PathBuf> {
    let path = cache.root.join("device-targets.json");
    fs::write(&path, offload_targets::to_json()).at(STEP, &path)?;
    Ok(path)
}

/// `./x.py bench ARGS`.
pub fn run(project: &Path, cache: &Cache, args: Vec<OsString>) -> Result<()> {
    // `--from-json` only redoes the reports of an earlier run.
    if !args.iter().any(|a| a == "--from-json") {
        crate::commands::build(project, cache)?;
    }
    ensure_matplotlib(project, cache)?;
    let stock_library = upstream_library(cache)?;
    let stock = stage0_toolchain().join("bin/rustc");
    let device_targets = device_targets_file(cache)?;
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
        "--stock-library".into(),
        path(&stock_library),
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
        "--device-targets".into(),
        path(&device_targets),
        "--offload-tools-bin".into(),
        path(&crate::cache::offload_tools_bin(cache)),
    ]
    .into_iter()
    .map(OsString::from)
    .chain(args)
    .collect();
    let status = Enter::new(cache, project, "python3").args(script).status(cache, STEP)?;
    if !status.success() {
        return fail(STEP, format!("the benchmark failed ({status}); its output is above"));
    }
    Ok(())
}
