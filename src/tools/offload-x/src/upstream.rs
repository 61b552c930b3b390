//! `[EXTRACT]`: the upstream tree, as Debian builds it, recorded as a git base commit.
//!
//! What Debian does before configuring (`debian/rules`, `debian/dh_auto_configure.stamp`):
//! apply `debian/patches/series` in order, move each workspace's `Cargo.lock` to
//! `Cargo.lock.orig` (the vendored build writes fresh ones), and empty the file lists of the
//! vendored crates' `.cargo-checksum.json` (Debian pruned files from them) with Debian's own
//! `debian/prune-checksums`. The result is committed on branch `upstream` of a git directory
//! kept beside the tree (`tree.git`): our patches are diffs against it and `export` reads
//! changes against it. The git directory is outside the tree so that bootstrap treats the tree
//! as a tarball source and takes the compiler's commit from `git-commit-info`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::Cache;
use crate::pins::{ORIG_TOP_DIR, RUSTC_WORKSPACES, SOURCE_FILES};
use crate::ui::{Context, Result, Timer, fail, run_captured, say};

const STEP: &str = "EXTRACT";

/// Name of the branch that holds upstream as Debian prepares it.
pub const BASE_BRANCH: &str = "upstream";

/// `git` with the tree's out-of-tree git directory.
pub fn git(cache: &Cache) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("--git-dir").arg(cache.tree_git()).arg("--work-tree").arg(cache.tree());
    cmd.current_dir(cache.tree());
    cmd.env("GIT_CONFIG_NOSYSTEM", "1");
    // Run from a git hook, these would point git at the project's repository instead.
    for var in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"] {
        cmd.env_remove(var);
    }
    cmd
}

/// True when the tree and its base commit exist.
pub fn is_ready(cache: &Cache) -> bool {
    cache.tree().join("x.py").exists()
        && git(cache)
            .args(["rev-parse", "--verify", "-q", BASE_BRANCH])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
}

/// Extracts and prepares the tree unless it is ready. A tree without its base commit (an
/// interrupted extraction) is discarded and made again.
pub fn ensure(cache: &Cache) -> Result<()> {
    if is_ready(cache) {
        return Ok(());
    }
    for stale in [cache.tree(), cache.tree_git(), cache.root.join("tree.tmp")] {
        if stale.exists() {
            say(STEP, format!("discarding the incomplete {}", stale.display()));
            fs::remove_dir_all(&stale).at(STEP, &stale)?;
        }
    }
    let _ = fs::remove_file(cache.materialized_list());
    let tmp = cache.root.join("tree.tmp");
    fs::create_dir_all(&tmp).at(STEP, &tmp)?;
    let src = unpack(cache, &tmp)?;
    apply_debian_series(&src)?;
    prepare_as_debian_rules(&src)?;
    fs::rename(&src, cache.tree()).at(STEP, &src)?;
    let _ = fs::remove_dir_all(&tmp);
    record_base_commit(cache)
}

/// Unpacks the upstream and Debian tarballs into `tmp`; the source folder.
fn unpack(cache: &Cache, tmp: &Path) -> Result<PathBuf> {
    let timer = Timer::start(STEP, "unpacking the upstream source (about 20 s)");
    let orig = cache.downloads().join(SOURCE_FILES[0].name);
    let debian = cache.downloads().join(SOURCE_FILES[1].name);
    run_captured(STEP, Command::new("tar").arg("-xf").arg(&orig).arg("-C").arg(tmp))?;
    let src = tmp.join(ORIG_TOP_DIR);
    run_captured(STEP, Command::new("tar").arg("-xf").arg(&debian).arg("-C").arg(&src))?;
    timer.done();
    Ok(src)
}

/// Applies `debian/patches/series` to `src`, as `dpkg-source` would.
fn apply_debian_series(src: &Path) -> Result<()> {
    let timer = Timer::start(STEP, "applying Debian's patch series");
    let series = fs::read_to_string(src.join("debian/patches/series"))
        .at(STEP, &src.join("debian/patches/series"))?;
    for line in series.lines() {
        let name = line.split('#').next().unwrap_or("").trim();
        if name.is_empty() {
            continue;
        }
        let patch = src.join("debian/patches").join(name);
        let out = Command::new("patch")
            .args(["-p1", "-s", "-N", "--no-backup-if-mismatch", "-i"])
            .arg(&patch)
            .current_dir(src)
            .output()
            .at(STEP, &patch)?;
        if !out.status.success() {
            return fail(
                STEP,
                format!(
                    "Debian's patch debian/patches/{name} does not apply: {}",
                    crate::ui::tail(&out.stdout, 4)
                ),
            );
        }
    }
    timer.done();
    Ok(())
}

/// What `debian/rules` does to the source before a build: the workspaces' `Cargo.lock` set
/// aside, the vendored crates' checksums of pruned files removed.
fn prepare_as_debian_rules(src: &Path) -> Result<()> {
    let timer = Timer::start(
        STEP,
        "debian/rules preparation (Cargo.lock aside, vendored checksums pruned)",
    );
    for ws in RUSTC_WORKSPACES {
        let lock = src.join(ws).join("Cargo.lock");
        if lock.exists() {
            fs::rename(&lock, lock.with_extension("lock.orig")).at(STEP, &lock)?;
        }
    }
    let mut checksums = Vec::new();
    let vendor = src.join("vendor");
    for entry in fs::read_dir(&vendor).at(STEP, &vendor)? {
        let file = entry.at(STEP, &vendor)?.path().join(".cargo-checksum.json");
        if file.exists() {
            checksums.push(file);
        }
    }
    run_captured(
        STEP,
        Command::new("python3").arg(src.join("debian/prune-checksums")).args(&checksums),
    )?;
    timer.done();
    Ok(())
}

/// Records the prepared tree as the first commit of [`BASE_BRANCH`] in the tree's git folder.
fn record_base_commit(cache: &Cache) -> Result<()> {
    let timer = Timer::start(STEP, "recording the base commit (about 40 s)");
    run_captured(
        STEP,
        Command::new("git")
            .arg("init")
            .arg("-q")
            .arg("-b")
            .arg(BASE_BRANCH)
            .arg("--bare")
            .arg(cache.tree_git()),
    )?;
    run_captured(STEP, git(cache).args(["config", "core.bare", "false"]))?;
    run_captured(STEP, git(cache).args(["add", "-A"]))?;
    run_captured(
        STEP,
        git(cache).args([
            "-c",
            "user.name=offload-fork",
            "-c",
            "user.email=offload-fork@localhost",
            "commit",
            "-q",
            "-m",
            "upstream: rustc 1.95.0+dfsg1-2 with Debian's patch series and debian/rules \
             preparation",
        ]),
    )?;
    timer.done();
    Ok(())
}
