//! `[STYLE]`: upstream's own `tidy` and rustfmt on every file the project adds to or changes in
//! the upstream tree (the paths in `materialized.list`, see [`crate::materialize`]), and rustfmt
//! and upstream's line length on the project's own tools ([`PROJECT_RUST_DIRS`]).
//!
//! - rustfmt: the stage-0 toolchain's `rustfmt --check`, with the settings of upstream's
//!   `rustfmt.toml` that a stable rustfmt knows ([`RUSTFMT_CONFIG`]; Debian's source tarball
//!   does not carry the file). Like upstream, it formats the compiler's and bootstrap's sources
//!   and the tests, except the suites its `ignore` list names ([`RUSTFMT_IGNORED_TESTS`]; for us
//!   the UI tests). A Rust file under `compiler/` or `src/` is checked with its child modules,
//!   which are upstream's and already formatted.
//! - tidy: `src/tools/tidy` of the tree, built as a library by the stage-0 cargo from the
//!   vendored crates (into `<cache>/build/offload-tidy`), and its checks that read source files
//!   (`style`, `alphabetical`, `edition`) run over the tree by our driver `tidy/main.rs`; tidy's
//!   checks of the test suites' structure (`ui_tests`, `unknown_revision`, ...) are not run. Tidy's
//!   own `main` panics in its `deps` check on Debian's source (pruned vendored crates) before the
//!   others report. Debian's source also has files tidy finds fault with (error-code docs), so
//!   only the problems that name one of our files count. Like upstream's, tidy leaves the length
//!   of lines in files rustfmt formats to rustfmt.
//! - our tools: every `*.rs` under [`PROJECT_RUST_DIRS`] of the project (not in the tree, so
//!   neither of the above sees them), with the same rustfmt and settings, and no line over
//!   [`MAX_COLUMNS`] (upstream's `max_width`, which rustfmt keeps code within but not comments
//!   and string literals).
//! - lengths ([`lengths`]): no function of ours over [`MAX_FN_LINES`] lines
//!   ([`crate::fn_length`]), in our tools and in the compiler's and library's new files, and
//!   among the functions that our patches add to upstream files (found in the tree by
//!   `added_lines`); and no line over [`MAX_COLUMNS`] in the new files or among the lines that
//!   the patches add, which neither rustfmt nor tidy measures.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::{Cache, stage0_toolchain};
use crate::fn_length::{self, MAX_FN_LINES};
use crate::materialize::Patch;
use crate::ui::{Context, Result, Timer, fail, say, strip_ansi};

mod added_lines;
use added_lines::{MissingHunk, patch_added_lines};

const STEP: &str = "STYLE";

/// The settings of upstream's `rustfmt.toml` (rust-lang/rust at the pinned commit) that a stable
/// rustfmt accepts; its `group_imports` and `imports_granularity` need a nightly rustfmt.
pub const RUSTFMT_CONFIG: &str =
    "use_small_heuristics=Max,merge_derives=false,use_field_init_shorthand=true,style_edition=2024";

/// The tree paths our last materialization wrote (new files and patched upstream files).
fn our_paths(cache: &Cache) -> Result<Vec<String>> {
    let list = fs::read_to_string(cache.materialized_list()).or_fail(STEP, |e| {
        format!("{}: {e}; run `./x.py prepare` first", cache.materialized_list().display())
    })?;
    Ok(list.lines().filter(|l| !l.is_empty()).map(str::to_string).collect())
}

/// The test folders that upstream's `rustfmt.toml` leaves unformatted (syntax errors, layout
/// that diagnostics or debuggers depend on, hand-formatted SIMD types).
const RUSTFMT_IGNORED_TESTS: &[&str] = &[
    "tests/codegen-llvm/simd-intrinsic/",
    "tests/crashes/",
    "tests/debuginfo/",
    "tests/incremental/",
    "tests/pretty/",
    "tests/run-make/export",
    "tests/run-make/translation/test.rs",
    "tests/rustdoc",
    "tests/ui/",
    "tests/ui-fulldeps/",
];

/// The subtrees that upstream's `rustfmt.toml` leaves to their own repositories' settings, where
/// a patch touches them (clippy's `max_width` is 120): patch 0028 changes clippy's driver.
const RUSTFMT_IGNORED_SUBTREES: &[&str] = &["src/tools/clippy/"];

/// Patched crate roots that rustfmt cannot check: given a file, rustfmt formats its modules
/// too, and `core`'s take in `stdarch` and `portable-simd` by `#[path]`, `std`'s `backtrace`,
/// which upstream's `rustfmt.toml` ignores (their repositories format them with their own
/// settings), with an option that a stable rustfmt lacks. Our new modules of `core` and `std`
/// are checked on their own.
const RUSTFMT_UNCHECKABLE_ROOTS: &[&str] = &["library/core/src/lib.rs", "library/std/src/lib.rs"];

/// Whether upstream's rustfmt configuration formats `path` (a tree path): every Rust file but
/// those of [`RUSTFMT_IGNORED_TESTS`] (for us: the UI tests, whose `//~` annotations name lines),
/// [`RUSTFMT_IGNORED_SUBTREES`] and [`RUSTFMT_UNCHECKABLE_ROOTS`].
fn rustfmt_applies(path: &str) -> bool {
    path.ends_with(".rs")
        && !RUSTFMT_IGNORED_TESTS.iter().any(|p| path.starts_with(p))
        && !RUSTFMT_IGNORED_SUBTREES.iter().any(|p| path.starts_with(p))
        && !RUSTFMT_UNCHECKABLE_ROOTS.contains(&path)
}

/// The project's folders whose Rust files the style step checks besides the tree's: our tools
/// (`cargo-offload`, `offload-manifest`, `offload-x` with its tests and tidy driver), the
/// bundled example and the benchmark's kernel suites.
pub const PROJECT_RUST_DIRS: &[&str] = &["src/tools", "src/offload-example", "src/offload-bench"];

/// The most columns (characters) a line of a project file may have: upstream's `max_width`,
/// which rustfmt keeps code within; comments and string literals it leaves as they are.
pub const MAX_COLUMNS: usize = 100;

/// `rustfmt --check` on our Rust files, in the tree and then in the project's
/// [`PROJECT_RUST_DIRS`], and the length of the project files' lines ([`project_style`]), then
/// the length of our functions and of the lines our patches add ([`lengths`]); fails with
/// rustfmt's diff, the long lines or the long functions.
pub fn rustfmt(cache: &Cache) -> Result<()> {
    tree_rustfmt(cache)?;
    let project = crate::project::project_root();
    project_style(&project)?;
    lengths(&project, &cache.tree())
}

/// `rustfmt --check` on our Rust files in the tree; fails with rustfmt's diff.
fn tree_rustfmt(cache: &Cache) -> Result<()> {
    let tree = cache.tree();
    let files: Vec<PathBuf> = our_paths(cache)?
        .iter()
        .filter(|p| rustfmt_applies(p))
        .map(|p| tree.join(p))
        .filter(|p| p.exists())
        .collect();
    if files.is_empty() {
        // rustfmt without files reads standard input and succeeds: that checks nothing.
        return fail(
            STEP,
            format!("no Rust file of ours in {}", cache.materialized_list().display()),
        );
    }
    let timer = Timer::start(STEP, format!("rustfmt --check on {} files", files.len()));
    if !rustfmt_check(&files)? {
        return fail(
            STEP,
            "rustfmt would reformat the files above; run rustfmt with the same settings in the \
             tree (see src/doc/patches.md), then `./x.py export`",
        );
    }
    timer.done();
    Ok(())
}

/// Runs the stage-0 toolchain's `rustfmt --check` with upstream's settings on `files` (not
/// empty: rustfmt without files reads standard input); prints its diff and returns `false` when
/// it would reformat any.
fn rustfmt_check(files: &[PathBuf]) -> Result<bool> {
    let rustfmt = stage0_toolchain().join("bin/rustfmt");
    let out = Command::new(&rustfmt)
        .args(["--check", "--edition", "2024", "--config", RUSTFMT_CONFIG])
        .args(files)
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .running(STEP, rustfmt.display())?;
    if !out.status.success() {
        print!("{}", String::from_utf8_lossy(&out.stdout));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(out.status.success())
}

/// `rustfmt --check` and the line length ([`MAX_COLUMNS`]) on the Rust files of the project's
/// [`PROJECT_RUST_DIRS`]; fails with rustfmt's diff, or with one `FILE:LINE:` line per long line.
pub fn project_style(project: &Path) -> Result<()> {
    let dirs = PROJECT_RUST_DIRS.join(", ");
    let files = project_rust_files(project);
    if files.is_empty() {
        return fail(STEP, format!("no Rust file in {dirs} of {}", project.display()));
    }
    let timer = Timer::start(
        STEP,
        format!("rustfmt --check and {MAX_COLUMNS} columns on {} files of {dirs}", files.len()),
    );
    if !rustfmt_check(&files)? {
        return fail(
            STEP,
            format!(
                "rustfmt would reformat the files above; run `rustfmt --edition 2024 --config \
                 {RUSTFMT_CONFIG}` on them in the project"
            ),
        );
    }
    let mut long = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).reading(STEP, file)?;
        long.extend(long_lines(&file.display().to_string(), &text));
    }
    if !long.is_empty() {
        for line in &long {
            eprintln!("{line}");
        }
        return fail(
            STEP,
            format!(
                "{} line(s) of {dirs} longer than {MAX_COLUMNS} columns (above); rewrap them by \
                 hand (rustfmt leaves comments and string literals as they are)",
                long.len()
            ),
        );
    }
    timer.done();
    Ok(())
}

/// Every `*.rs` under the project's [`PROJECT_RUST_DIRS`], sorted; cargo's `target` folders and
/// hidden folders are skipped.
fn project_rust_files(project: &Path) -> Vec<PathBuf> {
    rust_files_under(project, PROJECT_RUST_DIRS)
}

/// Every `*.rs` under the folders `dirs` of `project`, sorted; cargo's `target` folders and
/// hidden folders are skipped.
fn rust_files_under(project: &Path, dirs: &[&str]) -> Vec<PathBuf> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                if name != "target" && !name.starts_with('.') {
                    walk(&path, files);
                }
            } else if name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for dir in dirs {
        walk(&project.join(dir), &mut files);
    }
    files.sort();
    files
}

/// The lines of `text` (the file `name`) longer than [`MAX_COLUMNS`] characters, as
/// `NAME:LINE: ...` (lines counted from 1), the way tidy names them.
fn long_lines(name: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let columns = line.chars().count();
            (columns > MAX_COLUMNS).then(|| {
                format!("{name}:{}: line longer than {MAX_COLUMNS} columns ({columns})", i + 1)
            })
        })
        .collect()
}

/// The project's folders of new compiler and library source files (new files of the tree,
/// see [`crate::materialize::NEW_FILE_ROOTS`]), whose functions and lines [`lengths`] checks
/// besides those of [`PROJECT_RUST_DIRS`]: rustfmt, which checks them in the tree, does not
/// wrap comments, and tidy leaves their lines to rustfmt.
pub const NEW_SOURCE_DIRS: &[&str] = &["compiler", "library"];

/// Whether `path` is test code, which the function-length rule leaves alone (as it does
/// `#[cfg(test)]` items): a `tests.rs`, or a file under a `tests` folder.
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
        || path.parent().is_some_and(|p| p.components().any(|c| c.as_os_str() == "tests"))
}

/// What [`lengths`] finds, one `FILE:LINE: ...` line each.
#[derive(Debug, Default)]
struct LengthProblems {
    /// Functions longer than [`MAX_FN_LINES`].
    functions: Vec<String>,
    /// Lines of the compiler's new files, or lines that our patches add to Rust files, longer
    /// than [`MAX_COLUMNS`].
    lines: Vec<String>,
    /// Tree files that do not hold what our patches add (with the first patch found missing),
    /// which the other checks skip.
    stale: Vec<String>,
}

/// No function of ours longer than [`MAX_FN_LINES`] lines, from `fn` to its closing brace
/// (outside `#[cfg(test)]` items and test files): in the Rust files of [`PROJECT_RUST_DIRS`] and
/// [`NEW_SOURCE_DIRS`] of `project`, and the functions whose `fn` line one of our patches adds,
/// measured in the materialized `tree`. No line longer than [`MAX_COLUMNS`] in the files of
/// [`NEW_SOURCE_DIRS`] or among the lines our patches add to Rust files, as they read in the
/// tree. Fails naming each offender; first, when the tree does not hold what the patches add
/// (edits not exported, or a tree that `./x.py prepare` has not rewritten).
pub fn lengths(project: &Path, tree: &Path) -> Result<()> {
    let patches = crate::materialize::patches(project)?;
    let timer = Timer::start(
        STEP,
        format!(
            "functions of at most {MAX_FN_LINES} lines in {}, {} and {} patches; {MAX_COLUMNS} \
             columns on the compiler's new files and the lines the patches add",
            PROJECT_RUST_DIRS.join(", "),
            NEW_SOURCE_DIRS.join(", "),
            patches.len()
        ),
    );
    let problems = length_problems(project, tree, &patches)?;
    if let Some(stale) = problems.stale.first() {
        return fail(
            STEP,
            format!(
                "{stale}; the tree and the patches disagree: `./x.py export` your edits of the \
                 tree, or `./x.py prepare` to write the patches' version"
            ),
        );
    }
    if problems.functions.is_empty() && problems.lines.is_empty() {
        timer.done();
        return Ok(());
    }
    for line in problems.functions.iter().chain(&problems.lines) {
        eprintln!("{line}");
    }
    let mut what = Vec::new();
    if !problems.functions.is_empty() {
        what.push(format!(
            "{} function(s) longer than {MAX_FN_LINES} lines: split each into functions of at \
             most {MAX_FN_LINES} lines, from `fn` to the closing brace, comments included",
            problems.functions.len()
        ));
    }
    if !problems.lines.is_empty() {
        what.push(format!(
            "{} line(s) longer than {MAX_COLUMNS} columns: rewrap them by hand",
            problems.lines.len()
        ));
    }
    fail(
        STEP,
        format!(
            "{} (above); a file of the compiler or library: change it in the tree, then \
             `./x.py export`",
            what.join("; ")
        ),
    )
}

/// The work of [`lengths`], without printing.
fn length_problems(project: &Path, tree: &Path, patches: &[Patch]) -> Result<LengthProblems> {
    let read = |file: &Path| fs::read_to_string(file).reading(STEP, file);
    let too_long = |name: &str, f: &fn_length::Function| {
        format!("{name}:{}: function `{}` is {} lines long", f.line, f.name, f.lines)
    };
    let mut problems = LengthProblems::default();
    let new_sources = rust_files_under(project, NEW_SOURCE_DIRS);
    for file in project_rust_files(project).iter().chain(&new_sources) {
        let text = read(file)?;
        let name = file.display().to_string();
        if new_sources.contains(file) {
            problems.lines.extend(long_lines(&name, &text));
        }
        if !is_test_file(file.strip_prefix(project).unwrap_or(file)) {
            problems
                .functions
                .extend(fn_length::too_long(&text).iter().map(|f| too_long(&name, f)));
        }
    }
    let patched: BTreeSet<&String> = patches.iter().flat_map(|p| &p.files).collect();
    for path in patched.into_iter().filter(|p| p.ends_with(".rs")) {
        let file = tree.join(path);
        let name = file.display().to_string();
        let text = read(&file)?;
        let added = match patch_added_lines(patches, path, &text) {
            Ok(added) => added,
            Err(MissingHunk { patch, line }) => {
                problems.stale.push(format!(
                    "{name} does not hold what {patch} adds (its hunk at line {line})"
                ));
                continue;
            }
        };
        for (i, line) in text.lines().enumerate() {
            let columns = line.chars().count();
            if let Some(patch) = added.get(&(i + 1))
                && columns > MAX_COLUMNS
            {
                problems.lines.push(format!(
                    "{name}:{}: line longer than {MAX_COLUMNS} columns ({columns}), added by \
                     {patch}",
                    i + 1
                ));
            }
        }
        if is_test_file(Path::new(path)) {
            continue;
        }
        for function in fn_length::too_long(&text) {
            if let Some(patch) = added.get(&function.line) {
                problems
                    .functions
                    .push(format!("{}, added by {patch}", too_long(&name, &function)));
            }
        }
    }
    Ok(problems)
}

/// Builds upstream's tidy as a library (once; cargo rebuilds nothing later) and our driver
/// `tidy/main.rs` against it, runs the driver over the tree, and fails when a problem it reports
/// names one of our files.
pub fn tidy(project: &Path, cache: &Cache) -> Result<()> {
    let tree = cache.tree();
    let target_dir = cache.build().join("offload-tidy");
    let stage0 = stage0_toolchain();
    let cargo = stage0.join("bin/cargo");
    let timer = Timer::start(STEP, "building upstream's tidy (src/tools/tidy, vendored crates)");
    let built = Command::new(&cargo)
        .current_dir(&tree)
        .args(["build", "--quiet", "--release", "--offline", "-p", "tidy", "--lib"])
        .env("CARGO_TARGET_DIR", &target_dir)
        // Bootstrap builds its tools with the stage-0 compiler and this switch as well.
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .status()
        .running(STEP, cargo.display())?;
    if !built.success() {
        return fail(STEP, "building tidy failed; cargo's output is above");
    }
    let release = target_dir.join("release");
    let driver = release.join("offload-tidy");
    let driver_built = Command::new(stage0.join("bin/rustc"))
        .args(["--edition", "2024", "-O", "--crate-name", "offload_tidy", "--extern"])
        .arg(format!("tidy={}", release.join("libtidy.rlib").display()))
        .arg("-L")
        .arg(format!("dependency={}", release.join("deps").display()))
        .arg("-o")
        .arg(&driver)
        .arg(project.join("src/tools/offload-x/tidy/main.rs"))
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove("RUSTUP_TOOLCHAIN")
        .status()
        .running(STEP, "rustc")?;
    if !driver_built.success() {
        return fail(STEP, "building the tidy driver (src/tools/offload-x/tidy/main.rs) failed");
    }
    timer.done();
    let timer = Timer::start(STEP, "tidy's file checks over the tree, problems in our files");
    let out = Command::new(&driver).arg(&tree).output().running(STEP, driver.display())?;
    let report = strip_ansi(&format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ));
    let problems =
        report.lines().filter(|l| l.starts_with("tidy [") && !l.ends_with(": FAIL")).count();
    // The driver exits 0 (no problem) or 1 (problems), after its last line; a panic of a check
    // exits 101 and leaves the folders after it unchecked.
    if !matches!(out.status.code(), Some(0 | 1)) || !report.contains(DRIVER_DONE) {
        eprint!("{report}");
        return fail(STEP, "tidy stopped before checking every folder (its output is above)");
    }
    let ours = ours_in_report(&report, &tree, &our_paths(cache)?);
    if !ours.is_empty() {
        for line in &ours {
            eprintln!("{line}");
        }
        return fail(
            STEP,
            format!(
                "tidy reports {} problem(s) in our files (above); fix them in this repository \
                 (the tree is rewritten from it) and rerun",
                ours.len()
            ),
        );
    }
    timer.done();
    say(STEP, format!("tidy: no problem in our files ({problems} in Debian's tree, none ours)"));
    Ok(())
}

/// The last line of `tidy/main.rs`, printed once every check has run.
const DRIVER_DONE: &str = "offload-tidy: checked compiler, library, src, tests";

/// The lines of tidy's `report` that name one of `ours` (tree paths) by its absolute path,
/// followed by `:` (`style`, `alphabetical`: `FILE:LINE: problem`), a space (`edition`:
/// `FILE doesn't have ...`) or the end of the line.
fn ours_in_report(report: &str, tree: &Path, ours: &[String]) -> Vec<String> {
    let names: Vec<String> = ours.iter().map(|p| tree.join(p).display().to_string()).collect();
    report
        .lines()
        .filter(|line| {
            names.iter().any(|name| {
                line.match_indices(name.as_str()).any(|(at, _)| {
                    matches!(line[at + name.len()..].chars().next(), None | Some(':' | ' '))
                })
            })
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::added_lines::tests::patch;
    use super::*;

    #[test]
    fn rustfmt_skips_only_the_suites_upstream_ignores() {
        assert!(rustfmt_applies("compiler/rustc_middle/src/ty/offload_kernel.rs"));
        assert!(rustfmt_applies("src/bootstrap/src/core/build_steps/llvm.rs"));
        assert!(rustfmt_applies("tests/run-make/offload-manifest/rmake.rs"));
        assert!(rustfmt_applies("src/tools/run-make-support/src/offload/image.rs"));
        assert!(rustfmt_applies("tests/codegen-llvm/gpu_offload_manifest/agree.rs"));
        assert!(!rustfmt_applies("tests/ui/offload-manifest/kernel-signature.rs"));
        assert!(!rustfmt_applies("compiler/rustc/Cargo.toml"));
        assert!(!rustfmt_applies("src/tools/clippy/src/driver.rs"));
    }

    #[test]
    fn project_files_are_every_rs_outside_target_folders() {
        let root = std::env::temp_dir().join(format!("offload-x-style-{}", std::process::id()));
        let tools = root.join("src/tools");
        for (path, text) in [
            ("b/src/main.rs", "fn main() {}\n"),
            ("b/src/util.rs", ""),
            ("b/tests/harness.rs", ""),
            ("b/Cargo.toml", ""),
            ("a/fuzz/seed.rs", ""),
            ("b/target/debug/build/out.rs", ""),
            (".cache/x.rs", ""),
        ] {
            let path = tools.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        let found: Vec<String> = project_rust_files(&root)
            .iter()
            .map(|p| p.strip_prefix(&tools).unwrap().display().to_string())
            .collect();
        assert_eq!(
            found,
            ["a/fuzz/seed.rs", "b/src/main.rs", "b/src/util.rs", "b/tests/harness.rs"]
        );
        fs::remove_dir_all(&root).unwrap();
        assert!(project_rust_files(&root).is_empty());
    }

    #[test]
    fn long_lines_are_counted_in_characters() {
        let fits = "x".repeat(MAX_COLUMNS);
        let wide = "é".repeat(MAX_COLUMNS);
        let long = "y".repeat(MAX_COLUMNS + 1);
        let text = format!("{fits}\n{wide}\n\n{long}\n// short\n");
        assert_eq!(
            long_lines("src/tools/a.rs", &text),
            [format!("src/tools/a.rs:4: line longer than {MAX_COLUMNS} columns (101)")]
        );
        assert!(long_lines("b.rs", "").is_empty());
    }

    #[test]
    fn our_tools_have_no_long_lines() {
        // This crate is `src/tools/offload-x` of the project. The folder as cargo gives it when
        // it runs the test, not when it compiled it: cargo reuses a test binary that a checkout
        // in another folder compiled into the same target folder (CI's clone, say).
        let manifest_dir =
            std::env::var("CARGO_MANIFEST_DIR").unwrap_or(env!("CARGO_MANIFEST_DIR").to_string());
        let project = Path::new(&manifest_dir).join("../../..");
        let files = project_rust_files(&project);
        assert!(files.iter().any(|f| f.ends_with("src/tools/cargo-offload/src/main.rs")));
        assert!(files.iter().any(|f| f.ends_with("src/tools/offload-x/tidy/main.rs")));
        let long: Vec<String> = files
            .iter()
            .flat_map(|f| long_lines(&f.display().to_string(), &fs::read_to_string(f).unwrap()))
            .collect();
        assert!(long.is_empty(), "{}", long.join("\n"));
    }

    #[test]
    fn test_files_are_tests_rs_and_tests_folders() {
        assert!(is_test_file(Path::new("compiler/rustc_a/src/tests.rs")));
        assert!(is_test_file(Path::new("src/tools/offload-x/tests/harness.rs")));
        assert!(is_test_file(Path::new("src/tools/b/tests/more/x.rs")));
        assert!(!is_test_file(Path::new("src/tools/b/src/test_outcomes.rs")));
        assert!(!is_test_file(Path::new("tests.rs/x.rs")));
        assert!(!is_test_file(Path::new("compiler/rustc_a/src/lib.rs")));
    }

    /// A function of `lines` lines named `name`.
    fn function(name: &str, lines: usize) -> String {
        format!("fn {name}() {{\n{}}}\n", "    x();\n".repeat(lines - 2))
    }

    #[test]
    fn lengths_of_project_files_and_patched_tree_files() {
        let root = std::env::temp_dir().join(format!("offload-x-lengths-{}", std::process::id()));
        let (project, tree) = (root.join("project"), root.join("tree"));
        let long = function("long", MAX_FN_LINES + 1);
        let wide = format!("// {}\n", "w".repeat(MAX_COLUMNS));
        let upstream_long = function("upstream", MAX_FN_LINES + 5);
        let patched = format!("{upstream_long}{long}{wide}");
        for (path, text) in [
            ("project/src/tools/t/src/a.rs", format!("{}{long}", function("short", 80))),
            ("project/src/tools/t/src/tests.rs", long.clone()),
            ("project/src/tools/t/tests/h.rs", long.clone()),
            ("project/src/tools/t/src/wide.rs", wide.clone()),
            ("project/compiler/c/src/new.rs", format!("#[cfg(test)]\nmod t {{\n{long}}}\n{wide}")),
            ("tree/compiler/c/src/lib.rs", patched.clone()),
        ] {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        // The patch adds `long` and the wide line after `upstream`.
        let added: String = format!("{long}{wide}").lines().map(|l| format!("+{l}\n")).collect();
        let at = MAX_FN_LINES + 5;
        let hunk = format!("@@ -{at},0 +{},{} @@\n{added}", at + 1, MAX_FN_LINES + 2);
        let patches = [patch("0001-p", &[("compiler/c/src/lib.rs", &hunk)])];
        let problems = length_problems(&project, &tree, &patches).unwrap();
        let show = |p: &Path| p.display().to_string();
        let a = show(&project.join("src/tools/t/src/a.rs"));
        let lib = show(&tree.join("compiler/c/src/lib.rs"));
        assert_eq!(
            problems.functions,
            [
                format!("{a}:81: function `long` is 81 lines long"),
                format!("{lib}:86: function `long` is 81 lines long, added by 0001-p"),
            ]
        );
        let new = show(&project.join("compiler/c/src/new.rs"));
        assert_eq!(
            problems.lines,
            [
                format!("{new}:85: line longer than {MAX_COLUMNS} columns (103)"),
                format!("{lib}:167: line longer than {MAX_COLUMNS} columns (103), added by 0001-p"),
            ]
        );
        // A tree that does not hold what the patch adds is refused.
        fs::write(tree.join("compiler/c/src/lib.rs"), &upstream_long).unwrap();
        let stale = length_problems(&project, &tree, &patches).unwrap();
        assert_eq!(
            stale.stale,
            [format!("{lib} does not hold what 0001-p adds (its hunk at line 86)")]
        );
        assert_eq!(stale.functions, problems.functions[..1]);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn lengths_fail_naming_what_to_do() {
        let root = std::env::temp_dir().join(format!("offload-x-fail-{}", std::process::id()));
        let file = root.join("src/tools/t/src/a.rs");
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, function("f", MAX_FN_LINES)).unwrap();
        assert!(lengths(&root, &root.join("tree")).is_ok());
        fs::write(&file, function("f", MAX_FN_LINES + 1)).unwrap();
        let failure = lengths(&root, &root.join("tree")).unwrap_err();
        assert_eq!(
            failure.message(),
            "1 function(s) longer than 80 lines: split each into functions of at most 80 lines, \
             from `fn` to the closing brace, comments included (above); a file of the compiler \
             or library: change it in the tree, then `./x.py export`"
        );
        fs::remove_dir_all(&root).unwrap();
    }

    /// Run by hand: `cargo test -p offload-x --lib -- --ignored --nocapture our_lengths_today`.
    /// Prints what [`lengths`] finds in this checkout and the materialized tree of the cache
    /// (read only); `./x.py style` prepares the tree first, this test does not.
    #[test]
    #[ignore]
    fn our_lengths_today() {
        let manifest_dir =
            std::env::var("CARGO_MANIFEST_DIR").unwrap_or(env!("CARGO_MANIFEST_DIR").to_string());
        let project = Path::new(&manifest_dir).join("../../..").canonicalize().unwrap();
        let tree = Cache::from_env().tree();
        let patches = crate::materialize::patches(&project).unwrap();
        let problems = length_problems(&project, &tree, &patches).unwrap();
        println!("{} patches, tree {}", patches.len(), tree.display());
        for line in problems.functions.iter().chain(&problems.lines).chain(&problems.stale) {
            println!("{line}");
        }
    }

    #[test]
    fn colours_are_stripped() {
        assert_eq!(strip_ansi("\u{1b}[0m\u{1b}[31mtidy [style]\u{1b}[0m: x"), "tidy [style]: x");
    }

    #[test]
    fn report_lines_of_our_files_only() {
        let tree = Path::new("/c/tree");
        let report = "tidy [style (compiler)]: /c/tree/compiler/a/src/x.rs:3: trailing whitespace\n\
                      tidy [style (compiler)]: /c/tree/compiler/a/src/xy.rs:3: trailing \
                      whitespace\n\
                      tidy [edition (compiler)]: /c/tree/compiler/a/Cargo.toml doesn't have \
                      `edition = \"2021\"` or `edition = \"2024\"` on a separate line\n\
                      tidy [edition (compiler)]: /c/tree/compiler/a/Cargo.toml.orig doesn't\n\
                      tidy [deps]: vendor/foo: license not allowed\n";
        let ours = vec!["compiler/a/src/x.rs".to_string(), "compiler/a/Cargo.toml".to_string()];
        let found = ours_in_report(report, tree, &ours);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("/c/tree/compiler/a/src/x.rs:3"));
        assert!(found[1].contains("Cargo.toml doesn't have"));
    }
}
