//! `[PATCH]`: our changes onto the upstream tree, and back (`export`, `check`).
//!
//! The project stores a change to the compiler in one of two forms:
//! - a new file, stored as itself at its upstream path under `compiler/`, `library/` or
//!   `tests/` of the project (a project file that shadows an upstream file is refused: that is
//!   a patch's job);
//! - a change to an upstream file, as a patch in `src/patches/NNNN-<area>-<what>.patch`: a
//!   DEP-3 style header (Description, Forwarded, Last-Update) followed by a `git diff` against
//!   the `upstream` base commit, or against the file as the patches before it left it. Patches
//!   apply in file-name order, without fuzz. Several patches may change one file; `export`
//!   writes a tree edit of such a file into the last patch that changes it, and keeps the
//!   earlier patches' sections as they are. A later patch may also change a new file that an
//!   earlier patch brings: the project then stores the file as that patch brings it, and the
//!   later patch holds its own hunks, so that each patch keeps to its concern.
//!
//! A patch's header names the new files it brings (`New-Files:`, one path per continuation
//! line), so that each patch with its new files is one step of a series that builds
//! ([`mod@crate::commands::series`]).
//!
//! Materializing computes the content every touched path must have (base content with the
//! patches applied, or the project's file) and writes a file only where that differs from the
//! disk. An unchanged project therefore touches no file and cargo rebuilds nothing; changing a
//! patch rewrites exactly the files it touches. Paths written last time but no longer wanted
//! (a deleted patch or file) are restored to upstream. `materialized.list` in the cache
//! remembers the paths written.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::Cache;
use crate::ui::{Context, Result, fail, run_captured};
use crate::upstream::{BASE_BRANCH, git};

const STEP: &str = "PATCH";

/// Project folders whose files are new files of the upstream tree, stored as themselves: the
/// compiler's and the library's new source files, our tests, and the offload helpers of
/// upstream's run-make support library, which every run-make test imports as
/// `run_make_support::offload` (our other tools live beside it in `src/tools`, but are not
/// part of the tree).
pub const NEW_FILE_ROOTS: &[&str] =
    &["compiler", "library", "tests", "src/tools/run-make-support/src/offload"];

/// Whether `rel` (a tree path) lies in one of the [`NEW_FILE_ROOTS`].
pub fn in_new_file_root(rel: &str) -> bool {
    NEW_FILE_ROOTS.iter().any(|root| rel.strip_prefix(root).is_some_and(|r| r.starts_with('/')))
}

/// The project's patch directory, relative to the project root.
pub const PATCH_DIR: &str = "src/patches";

/// The header field that lists the new files a patch brings.
pub const NEW_FILES_FIELD: &str = "New-Files:";

/// What `export --patch` writes into a new patch's header for a person to replace.
const NEW_PATCH_PLACEHOLDERS: &[&str] =
    &["<what this patch changes, and why>", "<not-needed | not-yet", "<YYYY-MM-DD>"];

/// Why `header` is not a filled-in DEP-3 header of ours, if it is not: a missing
/// `Description:`, `Forwarded:` or `Last-Update:` field, or a placeholder (`<...>`) that
/// `export --patch` wrote and nobody replaced.
pub fn header_problem(header: &str) -> Option<String> {
    for field in ["Description:", "Forwarded:", "Last-Update:"] {
        let Some(line) = header.lines().find(|l| l.starts_with(field)) else {
            return Some(format!("it has no `{field}` field"));
        };
        if NEW_PATCH_PLACEHOLDERS.iter().any(|p| line.contains(p)) {
            return Some(format!("its `{field}` field is still the placeholder `{}`", line.trim()));
        }
    }
    None
}

/// One patch of the series.
#[derive(Debug)]
pub struct Patch {
    pub path: PathBuf,
    /// Everything before the first `diff --git` line.
    pub header: String,
    /// Upstream paths the patch touches, in the order they appear.
    pub files: Vec<String>,
    /// The patch's section for each of `files` (from its `diff --git` line to the next one).
    pub sections: Vec<String>,
    /// New files (upstream-relative paths) that the header's `New-Files:` field names.
    pub new_files: Vec<String>,
}

impl Patch {
    /// The file name without `.patch`, like `0012-middle-offload-kernel-identity`.
    pub fn name(&self) -> String {
        self.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// The paths of a header's `New-Files:` field: the rest of its line and each continuation line
/// (a line that starts with a space), split at whitespace.
fn header_new_files(header: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in header.lines() {
        if let Some(rest) = line.strip_prefix(NEW_FILES_FIELD) {
            inside = true;
            out.extend(rest.split_whitespace().map(str::to_string));
        } else if inside && line.starts_with(' ') {
            out.extend(line.split_whitespace().map(str::to_string));
        } else {
            inside = false;
        }
    }
    out
}

/// Parses the patch at `path`: its header, the paths of its `diff --git a/P b/P` lines and
/// their sections.
pub fn read_patch(path: &Path) -> Result<Patch> {
    let text = fs::read_to_string(path).reading(STEP, path)?;
    let mut files = Vec::new();
    let mut starts = Vec::new();
    let mut header_end = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            header_end.get_or_insert(offset);
            starts.push(offset);
            let rest = rest.trim_end();
            // `a/P b/P`: P is the same on both sides, as neither side is renamed.
            let Some(mid) = rest.find(" b/") else {
                return fail(
                    STEP,
                    format!("{}: unreadable line `{}`", path.display(), line.trim_end()),
                );
            };
            let file = rest[..mid].to_string();
            if files.contains(&file) {
                return fail(STEP, format!("{}: {file} has two sections", path.display()));
            }
            files.push(file);
        }
        offset += line.len();
    }
    let Some(header_end) = header_end else {
        return fail(
            STEP,
            format!(
                "{} holds no `diff --git` section; write patches with `x.py export`",
                path.display()
            ),
        );
    };
    starts.push(text.len());
    let sections = starts.windows(2).map(|w| text[w[0]..w[1]].to_string()).collect();
    let header = text[..header_end].to_string();
    let new_files = header_new_files(&header);
    Ok(Patch { path: path.to_path_buf(), header, files, sections, new_files })
}

/// The project's patches, in application order (by file name).
pub fn patches(project: &Path) -> Result<Vec<Patch>> {
    let dir = project.join(PATCH_DIR);
    let mut paths: Vec<PathBuf> = match fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "patch"))
            .collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    let patches: Vec<Patch> = paths.iter().map(|p| read_patch(p)).collect::<Result<_>>()?;
    for patch in &patches {
        if let Some(own) = patch.files.iter().find(|f| patch.new_files.contains(f)) {
            return fail(
                STEP,
                format!(
                    "{} has a section for {own}, which its own `{NEW_FILES_FIELD}` brings; a new \
                     file is stored whole as its patch brings it, and only later patches change it",
                    patch.path.display()
                ),
            );
        }
    }
    let mut owner: BTreeMap<&str, &Path> = BTreeMap::new();
    for patch in &patches {
        for file in &patch.new_files {
            if let Some(other) = owner.insert(file, &patch.path) {
                return fail(
                    STEP,
                    format!(
                        "the new file {file} is named by the `{NEW_FILES_FIELD}` of both {} and \
                         {}; a new file belongs to one patch",
                        other.display(),
                        patch.path.display()
                    ),
                );
            }
        }
    }
    Ok(patches)
}

/// The project's new files: upstream-relative path -> path in the project.
pub fn new_files(project: &Path) -> Result<BTreeMap<String, PathBuf>> {
    fn walk(dir: &Path, rel: &str, out: &mut BTreeMap<String, PathBuf>) -> std::io::Result<()> {
        let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<std::io::Result<_>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let child_rel = format!("{rel}/{name}");
            if entry.file_type()?.is_dir() {
                walk(&entry.path(), &child_rel, out)?;
            } else {
                out.insert(child_rel, entry.path());
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    for root in NEW_FILE_ROOTS {
        let dir = project.join(root);
        if dir.is_dir() {
            walk(&dir, root, &mut out).reading(STEP, &dir)?;
        }
    }
    Ok(out)
}

/// Content of `rel` in the base commit, or None when upstream has no such file.
pub fn base_content(cache: &Cache, rel: &str) -> Result<Option<Vec<u8>>> {
    let out = git(cache)
        .args(["cat-file", "blob", &format!("{BASE_BRANCH}:{rel}")])
        .output()
        .running(STEP, "git")?;
    Ok(out.status.success().then_some(out.stdout))
}

/// What a tree path must hold: `Some(bytes)`, or `None` for "absent".
pub type Desired = BTreeMap<String, Option<Vec<u8>>>;

/// Computes the content of every path that the project's patches and new files touch.
pub fn desired(project: &Path, cache: &Cache) -> Result<Desired> {
    let mut want: Desired = BTreeMap::new();
    for (rel, path) in new_files(project)? {
        if base_content(cache, &rel)?.is_some() {
            return fail(
                STEP,
                format!(
                    "{} shadows the upstream file {rel}; store changes to upstream files as a \
                     patch in {PATCH_DIR} (`x.py export --patch NAME`)",
                    path.display()
                ),
            );
        }
        let bytes = fs::read(&path).reading(STEP, &path)?;
        want.insert(rel, Some(bytes));
    }
    want.extend(apply_series(cache, project, &patches(project)?)?);
    Ok(want)
}

/// Content of `rel` before `patches[index]` applies, as far as the patches before it are
/// concerned: for a new file, the project's file once the earlier patch whose `New-Files:`
/// names it has brought it (`None` before that, so that a section of a patch that comes first
/// does not apply); for any other file, upstream's.
fn content_before(
    cache: &Cache,
    project: &Path,
    patches: &[Patch],
    index: usize,
    rel: &str,
) -> Result<Option<Vec<u8>>> {
    let Some(creator) = patches.iter().position(|p| p.new_files.iter().any(|f| f == rel)) else {
        return base_content(cache, rel);
    };
    if creator >= index {
        return Ok(None);
    }
    let path = project.join(rel);
    fs::read(&path).map(Some).reading(STEP, &path)
}

/// Whether `rel` is a new file of `patches` (a `New-Files:` entry) that a patch has a section
/// for: its tree edits then go into the last such patch, never into the project's file.
fn new_file_has_sections(patches: &[Patch], rel: &str) -> bool {
    patches.iter().any(|p| p.files.iter().any(|f| f == rel))
        && patches.iter().any(|p| p.new_files.iter().any(|f| f == rel))
}

/// Applies the patch file `patch` in `dir` with `patch -p1 --fuzz=0` (hunks found by their
/// context, at any offset, never with less of it). `None` when it applied, else why not: the
/// last lines `patch` printed.
fn patch_refusal(dir: &Path, patch: &Path) -> Result<Option<String>> {
    let out = Command::new("patch")
        .args(["-p1", "-s", "-N", "--fuzz=0", "--no-backup-if-mismatch", "-r", "-", "-i"])
        .arg(std::path::absolute(patch).unwrap_or(patch.to_path_buf()))
        .current_dir(dir)
        .output()
        .running(STEP, "patch")?;
    if out.status.success() {
        return Ok(None);
    }
    let mut why = out.stdout;
    why.extend_from_slice(&out.stderr);
    Ok(Some(crate::ui::tail(&why, 3)))
}

/// Applies `patches` in order, each to the files as the patches before it left them (a new file
/// of an earlier patch as the project stores it), in a scratch folder of the cache, and returns
/// the content of each file they touch after the whole series.
pub fn apply_series(cache: &Cache, project: &Path, patches: &[Patch]) -> Result<Desired> {
    let scratch = cache.root.join("patch-scratch");
    let _ = fs::remove_dir_all(&scratch);
    let mut after = Desired::new();
    for (index, patch) in patches.iter().enumerate() {
        for rel in &patch.files {
            let target = scratch.join(rel);
            if !after.contains_key(rel) {
                fs::create_dir_all(target.parent().unwrap()).writing(STEP, &target)?;
                if let Some(bytes) = content_before(cache, project, patches, index, rel)? {
                    fs::write(&target, bytes).writing(STEP, &target)?;
                }
            }
        }
        if let Some(why) = patch_refusal(&scratch, &patch.path)? {
            let _ = fs::remove_dir_all(&scratch);
            return fail(
                STEP,
                format!(
                    "{} does not apply to upstream and the patches before it: {why}; rebase it \
                     (edit the materialized tree, then `x.py export`)",
                    patch.path.display(),
                ),
            );
        }
        for rel in &patch.files {
            after.insert(rel.clone(), fs::read(scratch.join(rel)).ok());
        }
    }
    let _ = fs::remove_dir_all(&scratch);
    Ok(after)
}

/// What [`materialize`] did: paths written (created, changed or restored) and removed.
#[derive(Debug, Default)]
pub struct Report {
    pub written: Vec<String>,
    pub removed: Vec<String>,
}

/// Brings the tree to the project's state, writing only files whose content differs.
/// `extra` are further generated files (like `bootstrap.toml`), written the same way.
pub fn materialize(project: &Path, cache: &Cache, extra: &[(&str, Vec<u8>)]) -> Result<Report> {
    let mut want = desired(project, cache)?;
    let previous: BTreeSet<String> = fs::read_to_string(cache.materialized_list())
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    for rel in &previous {
        if !want.contains_key(rel) {
            // No longer ours: back to upstream (or gone, if upstream has no such file).
            want.insert(rel.clone(), base_content(cache, rel)?);
        }
    }
    let mut report = Report::default();
    let tree = cache.tree();
    let all = want.iter().map(|(r, c)| (r.as_str(), c.as_deref()));
    let extra_iter = extra.iter().map(|(r, c)| (*r, Some(&c[..])));
    for (rel, content) in all.chain(extra_iter) {
        let path = tree.join(rel);
        let current = fs::read(&path).ok();
        match content {
            Some(bytes) if current.as_deref() != Some(bytes) => {
                fs::create_dir_all(path.parent().unwrap()).writing(STEP, &path)?;
                fs::write(&path, bytes).writing(STEP, &path)?;
                report.written.push(rel.to_string());
            }
            None if current.is_some() => {
                fs::remove_file(&path).writing(STEP, &path)?;
                report.removed.push(rel.to_string());
            }
            _ => {}
        }
    }
    // The list keeps the paths that differ from upstream: those are what the next run must
    // restore if the project stops wanting them.
    let mut list = String::new();
    for (rel, content) in &want {
        if base_content(cache, rel)? != *content {
            list.push_str(rel);
            list.push('\n');
        }
    }
    if fs::read_to_string(cache.materialized_list()).ok().as_deref() != Some(&list) {
        fs::write(cache.materialized_list(), list).writing(STEP, &cache.materialized_list())?;
    }
    Ok(report)
}

/// The content of `rel` after `sections` (each patch's section for `rel`, in series order) are
/// applied with `patch -p1 --fuzz=0` to `start` (upstream's file, or a new file as the patch
/// that brings it leaves it); `None` when `start` is `None` and no section creates the file.
/// Fails naming the patch whose section does not apply.
fn state_after_sections(
    cache: &Cache,
    rel: &str,
    start: Option<Vec<u8>>,
    sections: &[(&Path, &str)],
) -> Result<Option<Vec<u8>>> {
    let scratch = cache.root.join("export-scratch");
    let _ = fs::remove_dir_all(&scratch);
    let target = scratch.join(rel);
    fs::create_dir_all(target.parent().unwrap()).writing(STEP, &target)?;
    if let Some(bytes) = start {
        fs::write(&target, bytes).writing(STEP, &target)?;
    }
    for (patch, section) in sections {
        let section_file = cache.root.join("export-section.diff");
        fs::write(&section_file, section).writing(STEP, &section_file)?;
        let refusal = patch_refusal(&scratch, &section_file)?;
        let _ = fs::remove_file(&section_file);
        if let Some(why) = refusal {
            let _ = fs::remove_dir_all(&scratch);
            return fail(
                STEP,
                format!(
                    "{}'s section of {rel} does not apply to the file as the patches before it \
                     leave it: {why}; fix that section first",
                    patch.display(),
                ),
            );
        }
    }
    let state = fs::read(&target).ok();
    let _ = fs::remove_dir_all(&scratch);
    Ok(state)
}

/// `git diff` of the tree's `rel` against `before` (the file as earlier patches left it; `None`:
/// absent), with the usual `a/` and `b/` paths: the diff runs against a tree object that holds
/// only `before`, made in a throwaway index so that the tree's own index is left alone.
fn diff_since(cache: &Cache, rel: &str, before: &Option<Vec<u8>>) -> Result<String> {
    let index = cache.root.join("export.index");
    let _ = fs::remove_file(&index);
    let with_index = |args: &[&str]| {
        let mut cmd = git(cache);
        cmd.env("GIT_INDEX_FILE", &index).args(args);
        cmd
    };
    let Some(bytes) = before else {
        // Our new files are stored as files, never created by a patch's section.
        return fail(
            STEP,
            format!(
                "{rel} does not exist before the patch that changes it: a new file is stored \
                 whole as the patch whose `{NEW_FILES_FIELD}` names it brings it, and only later \
                 patches change it"
            ),
        );
    };
    {
        let scratch = cache.root.join("export.blob");
        fs::write(&scratch, bytes).writing(STEP, &scratch)?;
        let blob = run_captured(
            STEP,
            git(cache).args(["hash-object", "-w", "--no-filters"]).arg(&scratch),
        )?;
        let _ = fs::remove_file(&scratch);
        let blob = String::from_utf8_lossy(&blob.stdout).trim().to_string();
        // Upstream's mode, so that the diff shows no mode change of an executable file.
        let listed = run_captured(STEP, git(cache).args(["ls-tree", BASE_BRANCH, "--", rel]))?;
        let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
        let mode = listed.split_whitespace().next().unwrap_or("100644");
        let info = format!("{mode},{blob},{rel}");
        run_captured(STEP, &mut with_index(&["update-index", "--add", "--cacheinfo", &info]))?;
    }
    let tree = run_captured(STEP, &mut with_index(&["write-tree"]))?;
    let tree = String::from_utf8_lossy(&tree.stdout).trim().to_string();
    let diff = run_captured(
        STEP,
        &mut with_index(&["diff", "--no-color", "--no-ext-diff", &tree, "--", rel]),
    )?;
    let _ = fs::remove_file(&index);
    Ok(String::from_utf8_lossy(&diff.stdout).into_owned())
}

/// One difference between the tree and the project, as `export` sees it.
#[derive(Debug, PartialEq, Eq)]
pub enum Drift {
    /// A patch whose content differs from the tree's diff against upstream.
    Patch(PathBuf),
    /// A new tree file (under compiler/, library/, tests/) missing or different in the project.
    NewFile(String),
    /// A changed upstream file that no patch owns.
    Unowned(String),
    /// A new compiler or library file that no patch's `New-Files:` names.
    NewFileUnnamed(String),
    /// A `New-Files:` entry of a patch (the path) for which the project has no new file.
    NewFileMissing(PathBuf, String),
}

/// Where new files and `New-Files:` fields disagree: every new file under `compiler/` or
/// `library/` (tests build nothing) must be named by exactly one patch, and every name must be
/// a new file of the project.
pub fn new_file_drift(project: &Path, patches: &[Patch]) -> Result<Vec<Drift>> {
    let files = new_files(project)?;
    let named: BTreeSet<&str> =
        patches.iter().flat_map(|p| p.new_files.iter().map(String::as_str)).collect();
    let mut drift = Vec::new();
    for rel in files.keys() {
        if !rel.starts_with("tests/") && !named.contains(rel.as_str()) {
            drift.push(Drift::NewFileUnnamed(rel.clone()));
        }
    }
    for patch in patches {
        for rel in &patch.new_files {
            if !files.contains_key(rel) {
                drift.push(Drift::NewFileMissing(patch.path.clone(), rel.clone()));
            }
        }
    }
    Ok(drift)
}

/// Compares the tree with the project. With `write`, brings the project to the tree's state:
/// patches regenerated (headers kept), new files copied; changed upstream files that no patch
/// owns go into `new_patch` (created with a header to fill in), or are reported as
/// [`Drift::Unowned`] when it is None. New files that no `New-Files:` field names, and names
/// without a file, are reported either way ([`new_file_drift`]): headers are written by hand.
pub fn export(
    project: &Path,
    cache: &Cache,
    write: bool,
    new_patch: Option<&str>,
) -> Result<Vec<Drift>> {
    let mut drift = Vec::new();
    let changed = git_lines(cache, &["diff", "--name-only", BASE_BRANCH])?;
    let untracked = git_lines(cache, &["ls-files", "--others", "--exclude-standard"])?;
    let patches = patches(project)?;
    let owned: BTreeSet<&str> =
        patches.iter().flat_map(|p| p.files.iter().map(String::as_str)).collect();
    let unowned: Vec<String> =
        changed.iter().filter(|f| !owned.contains(f.as_str())).cloned().collect();
    // Everything is computed before anything is written, so a refusal leaves the project as
    // it was.
    let mut writes = Vec::new();
    for (patch, body) in patches.iter().zip(regenerated_bodies(cache, project, &patches)?) {
        let text = format!("{}{}", patch.header, body);
        if fs::read_to_string(&patch.path).ok().as_deref() != Some(&text) {
            drift.push(Drift::Patch(patch.path.clone()));
            if write {
                if body.is_empty() {
                    return fail(
                        STEP,
                        format!(
                            "{} would be empty: the tree no longer changes its files beyond what \
                             the patches before it do; delete the patch",
                            patch.path.display()
                        ),
                    );
                }
                writes.push((patch.path.clone(), text));
            }
        }
    }
    for (path, text) in writes {
        fs::write(&path, text).writing(STEP, &path)?;
    }
    if !unowned.is_empty() {
        match (write, new_patch) {
            (true, Some(name)) => {
                drift.push(Drift::Patch(write_new_patch(project, cache, name, &unowned)?))
            }
            _ => drift.extend(unowned.into_iter().map(Drift::Unowned)),
        }
    }
    drift.extend(export_new_files(project, cache, &patches, &untracked, write)?);
    drift.extend(new_file_drift(project, &patches)?);
    Ok(drift)
}

/// The lines that `git ARGS` prints about the tree.
fn git_lines(cache: &Cache, args: &[&str]) -> Result<Vec<String>> {
    let out = run_captured(STEP, git(cache).args(args))?;
    Ok(String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect())
}

/// The tree's diff of `files` against upstream.
fn diff_of(cache: &Cache, files: &[String]) -> Result<String> {
    let mut cmd = git(cache);
    cmd.args(["diff", "--no-color", "--no-ext-diff", BASE_BRANCH, "--"]).args(files);
    Ok(String::from_utf8_lossy(&run_captured(STEP, &mut cmd)?.stdout).into_owned())
}

/// Each patch's body (its sections, without the header) as the tree now asks for it. A file
/// that several patches change, or a new file that a later patch changes: its tree edits go to
/// the last of them, as a diff against the file as the earlier ones left it; their sections
/// stay as they are.
fn regenerated_bodies(cache: &Cache, project: &Path, patches: &[Patch]) -> Result<Vec<String>> {
    let mut last_owner: BTreeMap<&str, usize> = BTreeMap::new();
    let mut owners: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, patch) in patches.iter().enumerate() {
        for file in &patch.files {
            last_owner.insert(file, index);
            *owners.entry(file).or_default() += 1;
        }
    }
    let mut bodies = Vec::new();
    for (index, patch) in patches.iter().enumerate() {
        let mut body = String::new();
        for (file, section) in patch.files.iter().zip(&patch.sections) {
            if last_owner[file.as_str()] != index {
                body.push_str(section);
            } else if owners[file.as_str()] == 1 && !new_file_has_sections(patches, file) {
                body.push_str(&diff_of(cache, std::slice::from_ref(file))?);
            } else {
                // Only the earlier patches' sections of this file matter: the patch being
                // regenerated, and any other patch, need not apply (after a hunk moved to an
                // earlier patch, this one no longer does).
                let earlier: Vec<(&Path, &str)> = patches[..index]
                    .iter()
                    .flat_map(|p| {
                        p.files
                            .iter()
                            .zip(&p.sections)
                            .filter(|(f, _)| *f == file)
                            .map(move |(_, section)| (p.path.as_path(), section.as_str()))
                    })
                    .collect();
                let start = content_before(cache, project, patches, index, file)?;
                let before = state_after_sections(cache, file, start, &earlier)?;
                body.push_str(&diff_since(cache, file, &before)?);
            }
        }
        bodies.push(body);
    }
    Ok(bodies)
}

/// Writes the patch `name` of the tree's changes to `unowned` files, with a header for a
/// person to fill in; its path.
fn write_new_patch(
    project: &Path,
    cache: &Cache,
    name: &str,
    unowned: &[String],
) -> Result<PathBuf> {
    let path = project.join(PATCH_DIR).join(format!("{name}.patch"));
    let header = format!(
        "Description: <what this patch changes, and why>\n\
         Forwarded: <not-needed | not-yet | could be forwarded (why) | partly (what)>\n\
         Last-Update: <YYYY-MM-DD>\n\
         ---\n"
    );
    fs::create_dir_all(path.parent().unwrap()).ok();
    fs::write(&path, format!("{header}{}", diff_of(cache, unowned)?)).writing(STEP, &path)?;
    Ok(path)
}

/// The tree's new files (`untracked`, in the [`NEW_FILE_ROOTS`]) that the project lacks or
/// holds otherwise; with `write`, copied into the project. A new file that a later patch
/// changes is left as the project stores it: its tree edits are that patch's.
fn export_new_files(
    project: &Path,
    cache: &Cache,
    patches: &[Patch],
    untracked: &[String],
    write: bool,
) -> Result<Vec<Drift>> {
    let mut drift = Vec::new();
    for rel in untracked {
        // Lock files are what the vendored build writes, not ours.
        if !in_new_file_root(rel) || rel.ends_with("Cargo.lock") {
            continue;
        }
        if new_file_has_sections(patches, rel) {
            continue;
        }
        let from = cache.tree().join(rel);
        let to = project.join(rel);
        let bytes = fs::read(&from).reading(STEP, &from)?;
        if fs::read(&to).ok().as_deref() != Some(&bytes[..]) {
            drift.push(Drift::NewFile(rel.clone()));
            if write {
                fs::create_dir_all(to.parent().unwrap()).ok();
                fs::write(&to, bytes).writing(STEP, &to)?;
            }
        }
    }
    Ok(drift)
}
