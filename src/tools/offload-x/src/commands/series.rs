//! `[SERIES]`: the patch series as a stack of commits, and a check that each prefix builds.
//!
//! A reviewer reads the series one patch at a time, like a PR stack, so each patch together
//! with the new files it brings (its header's `New-Files:` field) must leave a tree that
//! builds. [`build`] records the series as commits on the branch [`SERIES_BRANCH`] of the
//! tree's git directory, one per patch, on top of the upstream base: `git log -p` of that
//! branch is the stack as a reviewer sees it. It runs in a throwaway index and leaves the
//! materialized tree and its index alone, so it is cheap (seconds) and `./x.py test` runs it:
//! it fails when a patch does not apply after the ones before it, or when a new file belongs to
//! no patch or to two.
//!
//! [`check_prefixes`] (`./x.py series --check`) then checks out each commit in turn into a
//! second tree (`<cache>/series/tree`) and runs upstream's `x.py check` there, inside the
//! sysroot: on every compiler crate (`compiler`) when the patch touches the compiler, so that a
//! crate the patch breaks without touching it is caught too, and on `src/bootstrap` and
//! `src/librustdoc` when it touches those. Checking the compiler crate by crate does not work
//! with this configuration: bootstrap passes `--features llvm_offload` to any crate list, and
//! cargo refuses it for a crate without that feature. The build folder is the series' own
//! (`<cache>/series/build`, incremental), so the compiler that the other verbs build is not
//! touched, and consecutive prefixes recheck only the crates that changed and those that
//! depend on them (about two minutes for the whole compiler from nothing on two cores). The
//! last prefix is the whole series, which `./x.py build` builds in full.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cache::Cache;
use crate::materialize::{self, Drift, Patch};
use crate::project::bootstrap_toml;
use crate::sysroot::Enter;
use crate::ui::{Context, Result, fail, run_captured, say};
use crate::upstream::{BASE_BRANCH, git};

const STEP: &str = "SERIES";

/// The version of what [`check_prefixes`] runs for a prefix (paths, arguments); part of the key
/// of its record of passed prefixes, so that a change of the check rechecks everything.
const CHECK_SCHEME: u32 = 1;

/// The branch of the tree's git directory that holds the series, one commit per patch.
pub const SERIES_BRANCH: &str = "offload-series";

/// What `./x.py series` does.
#[derive(Debug, PartialEq)]
pub enum Series {
    /// `series`: record the series as commits (every patch must apply), [`record`].
    Apply,
    /// `series --check [--from NNNN]`: check that each prefix builds, from the patch named
    /// `from` on ([`check_prefixes`]).
    Check { from: Option<String> },
}

/// `./x.py series`: the tree prepared ([`crate::stages::prepare`]), then `series`.
pub fn run(project: &Path, cache: &Cache, series: &Series) -> Result<()> {
    crate::stages::prepare(project, cache)?;
    match series {
        Series::Apply => record(project, cache),
        Series::Check { from } => check_prefixes(project, cache, from.as_deref()),
    }
}

/// One patch of the series as a commit.
#[derive(Debug)]
pub struct SeriesCommit {
    /// The patch's name, like `0012-middle-offload-kernel-identity`.
    pub name: String,
    /// The commit's hash.
    pub commit: String,
    /// What `x.py check` takes for the files the patch changes or brings, in order, once each.
    pub check_paths: Vec<String>,
}

/// The `x.py check` path that covers `rel`: `compiler` (every compiler crate) for a compiler
/// file, `src/bootstrap` or `src/librustdoc` for theirs, or None for a file no check covers
/// (tests, docs).
pub fn check_path(rel: &str) -> Option<String> {
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.as_slice() {
        ["compiler", _, _, ..] => Some("compiler".to_string()),
        ["src", "bootstrap", ..] => Some("src/bootstrap".to_string()),
        ["src", "librustdoc", ..] => Some("src/librustdoc".to_string()),
        _ => None,
    }
}

/// Records the project's series as commits on [`SERIES_BRANCH`] (replacing what it held) and
/// returns them in order. Fails, naming the patch or file, when a patch does not apply to
/// upstream plus the patches before it, when a header is not filled in
/// ([`materialize::header_problem`]), or when new files and `New-Files:` fields disagree.
pub fn build(project: &Path, cache: &Cache) -> Result<Vec<SeriesCommit>> {
    let patches = materialize::patches(project)?;
    refuse_unready(project, &patches)?;
    let new_files = materialize::new_files(project)?;
    let index = cache.root.join("series.index");
    let _ = fs::remove_file(&index);
    let with_index = || {
        let mut cmd = git(cache);
        cmd.env("GIT_INDEX_FILE", &index);
        cmd
    };
    let out = |mut cmd: std::process::Command| -> Result<String> {
        Ok(String::from_utf8_lossy(&run_captured(STEP, &mut cmd)?.stdout).trim().to_string())
    };
    let mut read = with_index();
    read.args(["read-tree", BASE_BRANCH]);
    run_captured(STEP, &mut read)?;
    let mut parent = out({
        let mut c = git(cache);
        c.args(["rev-parse", BASE_BRANCH]);
        c
    })?;
    let mut commits = Vec::new();
    for patch in &patches {
        let mut apply = with_index();
        apply.args(["apply", "--cached", "--whitespace=nowarn"]).arg(absolute(&patch.path));
        let applied = apply.output().running(STEP, "git apply")?;
        if !applied.status.success() {
            let _ = fs::remove_file(&index);
            return fail(
                STEP,
                format!(
                    "{} does not apply to upstream plus the patches before it: {}",
                    patch.path.display(),
                    crate::ui::tail(&applied.stderr, 3)
                ),
            );
        }
        for rel in &patch.new_files {
            let mut hash = git(cache);
            hash.args(["hash-object", "-w", "--no-filters"]).arg(&new_files[rel]);
            let blob = out(hash)?;
            let mut add = with_index();
            add.args(["update-index", "--add", "--cacheinfo", &format!("100644,{blob},{rel}")]);
            run_captured(STEP, &mut add)?;
        }
        let mut write = with_index();
        write.arg("write-tree");
        let tree = out(write)?;
        let mut commit = git(cache);
        commit
            .args(["-c", "user.name=offload-x", "-c", "user.email=offload-x@localhost"])
            .args(["commit-tree", &tree, "-p", &parent, "-m"])
            .arg(format!("{}\n\n{}", patch.name(), patch.header.trim_end_matches(['\n', '-'])));
        // A fixed date: the same series gives the same commits.
        commit.env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z");
        commit.env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z");
        parent = out(commit)?;
        commits.push(SeriesCommit {
            name: patch.name(),
            commit: parent.clone(),
            check_paths: check_paths(patch),
        });
    }
    let _ = fs::remove_file(&index);
    let mut update = git(cache);
    update.args(["update-ref", &format!("refs/heads/{SERIES_BRANCH}"), &parent]);
    run_captured(STEP, &mut update)?;
    Ok(commits)
}

/// Fails, naming the patch or file, when new files and `New-Files:` fields disagree or a
/// header is not filled in ([`materialize::header_problem`]).
fn refuse_unready(project: &Path, patches: &[Patch]) -> Result<()> {
    let problems = materialize::new_file_drift(project, patches)?;
    if let Some(problem) = problems.first() {
        let what = match problem {
            Drift::NewFileUnnamed(f) => format!(
                "{f} is a new file that no patch's `New-Files:` names; add it to the header of \
                 the patch that uses it"
            ),
            Drift::NewFileMissing(p, f) => {
                format!("{} names the new file {f}, which the project lacks", p.display())
            }
            other => format!("{other:?}"),
        };
        return fail(STEP, what);
    }
    for patch in patches {
        if let Some(problem) = materialize::header_problem(&patch.header) {
            return fail(
                STEP,
                format!(
                    "{}: {problem}; fill in its header (src/doc/patches.md, \"The header says \
                     why\")",
                    patch.path.display()
                ),
            );
        }
    }
    Ok(())
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or(path.to_path_buf())
}

fn check_paths(patch: &Patch) -> Vec<String> {
    let mut paths = Vec::new();
    for rel in patch.files.iter().chain(&patch.new_files) {
        if let Some(path) = check_path(rel)
            && !paths.contains(&path)
        {
            paths.push(path);
        }
    }
    paths
}

/// The second tree that [`check_prefixes`] checks out the series' commits into.
pub fn series_tree(cache: &Cache) -> PathBuf {
    cache.root.join("series/tree")
}

/// Checks out each commit of the series from the patch named `from` on (default: the first,
/// skipping the commits that passed before under the same configuration, which
/// `<cache>/series/passed` records) and runs `x.py check` on what it touches (see
/// [`check_path`]); stops at the first prefix that does not build, naming its patch. Prints
/// one line per prefix: its patch, the checked paths and the seconds it took.
pub fn check_prefixes(project: &Path, cache: &Cache, from: Option<&str>) -> Result<()> {
    let commits = build(project, cache)?;
    let start = match from {
        None => 0,
        Some(name) => named_commit(&commits, name)?,
    };
    let tree = series_tree(cache);
    fs::create_dir_all(&tree).creating(STEP, &tree)?;
    let config = series_config(project, cache)?;
    let mut passed = Passed::load(cache, &config);
    for commit in &commits[start..] {
        if from.is_none() && passed.contains(commit) {
            say(STEP, format!("{}: checked before, unchanged", commit.name));
            continue;
        }
        check_out(cache, &tree, commit, &config)?;
        if commit.check_paths.is_empty() {
            say(STEP, format!("{}: changes nothing that builds", commit.name));
            passed.record(commit)?;
            continue;
        }
        say(STEP, format!("{}: x.py check {}", commit.name, commit.check_paths.join(" ")));
        let started = Instant::now();
        let status = Enter::new(cache, &tree, "python3")
            .arg("x.py")
            .args(["check", "--stage", "1"])
            .args(commit.check_paths.iter().map(String::as_str))
            .status(cache, STEP)?;
        if !status.success() {
            return fail(
                STEP,
                format!(
                    "the series up to {} does not build ({status}; `x.py check` output above); \
                     after a fix, `./x.py series --check` resumes there (the prefixes before it \
                     passed and are skipped)",
                    commit.name
                ),
            );
        }
        say(STEP, format!("{}: builds ({:.0} s)", commit.name, started.elapsed().as_secs_f64()));
        passed.record(commit)?;
    }
    match from {
        None => say(STEP, format!("every prefix of the series builds ({} patches)", commits.len())),
        Some(_) => say(
            STEP,
            format!(
                "every prefix from {} on builds ({} patches)",
                commits[start].name,
                commits.len() - start
            ),
        ),
    }
    Ok(())
}

/// The index in `commits` of the one patch whose name starts with `name`.
fn named_commit(commits: &[SeriesCommit], name: &str) -> Result<usize> {
    let matching: Vec<usize> =
        (0..commits.len()).filter(|&i| commits[i].name.starts_with(name)).collect();
    match matching.as_slice() {
        [i] => Ok(*i),
        [] => fail(STEP, format!("no patch of the series is named `{name}...`")),
        _ => fail(STEP, format!("`{name}` names more than one patch; give more of its name")),
    }
}

/// The bootstrap configuration of the second tree: the main tree's, with a build folder of its
/// own, and incremental, as the same crates are checked again after each patch.
fn series_config(project: &Path, cache: &Cache) -> Result<String> {
    let config = String::from_utf8_lossy(&bootstrap_toml(project, cache)?).replace(
        &format!("build-dir = \"{}\"", cache.build().display()),
        &format!("build-dir = \"{}\"", cache.root.join("series/build").display()),
    );
    let config = config.replace("incremental = false", "incremental = true");
    if !config.contains("series/build") {
        return fail(STEP, "config.example.toml no longer sets `build-dir`; update series.rs");
    }
    Ok(config)
}

/// Checks `commit` out into the second tree `tree`, with the configuration `config`.
/// `read-tree -u --reset` rewrites only the files that differ from the last checkout, so cargo
/// sees unchanged crates as unchanged.
fn check_out(cache: &Cache, tree: &Path, commit: &SeriesCommit, config: &str) -> Result<()> {
    let mut checkout = std::process::Command::new("git");
    checkout
        .arg("--git-dir")
        .arg(cache.tree_git())
        .arg("--work-tree")
        .arg(tree)
        .current_dir(tree)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_INDEX_FILE", cache.root.join("series/index"))
        .args(["read-tree", "-u", "--reset", &commit.commit]);
    run_captured(STEP, &mut checkout)?;
    let toml = tree.join("bootstrap.toml");
    if fs::read_to_string(&toml).ok().as_deref() != Some(config) {
        fs::write(&toml, config).writing(STEP, &toml)?;
    }
    Ok(())
}

/// The prefixes that passed, by commit and checked paths (`<cache>/series/passed`): a commit
/// names its whole tree, so an unchanged prefix needs no second check. The record is kept only
/// while what else the check depends on is unchanged: the bootstrap configuration, the
/// sysroot's packages (its completion stamp), the stage-0 toolchain and this check's own
/// scheme (its first line hashes them). `--from` checks again regardless.
struct Passed {
    path: PathBuf,
    text: String,
}

impl Passed {
    fn load(cache: &Cache, config: &str) -> Passed {
        let config_line = format!("config {:016x}\n", {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::hash::DefaultHasher::new();
            CHECK_SCHEME.hash(&mut hasher);
            config.hash(&mut hasher);
            fs::read(cache.sysroot_stamp()).unwrap_or_default().hash(&mut hasher);
            crate::cache::stage0_toolchain().hash(&mut hasher);
            fs::read(
                crate::cache::stage0_toolchain()
                    .join("lib/rustlib/multirust-channel-manifest.toml"),
            )
            .unwrap_or_default()
            .hash(&mut hasher);
            hasher.finish()
        });
        let path = cache.root.join("series/passed");
        let mut text = fs::read_to_string(&path).unwrap_or_default();
        if !text.starts_with(&config_line) {
            text = config_line;
        }
        Passed { path, text }
    }

    fn key(commit: &SeriesCommit) -> String {
        format!("{} {}", commit.commit, commit.check_paths.join(" "))
    }

    fn contains(&self, commit: &SeriesCommit) -> bool {
        self.text.lines().any(|line| line == Passed::key(commit))
    }

    fn record(&mut self, commit: &SeriesCommit) -> Result<()> {
        self.text.push_str(&Passed::key(commit));
        self.text.push('\n');
        fs::write(&self.path, &self.text).writing(STEP, &self.path)
    }
}

/// `[SERIES]` as `./x.py test` and `./x.py series` run it: the series recorded as commits
/// (every patch applies after the ones before it; every new file belongs to one patch).
pub fn record(project: &Path, cache: &Cache) -> Result<()> {
    let commits = build(project, cache)?;
    say(
        "SERIES",
        format!(
            "{} patches apply in order; the stack is branch {} of {} \
             (`git --git-dir {} log -p --reverse {}..{}`)",
            commits.len(),
            SERIES_BRANCH,
            cache.tree_git().display(),
            cache.tree_git().display(),
            BASE_BRANCH,
            SERIES_BRANCH,
        ),
    );
    Ok(())
}
