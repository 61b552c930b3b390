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

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::{Cache, stage0_toolchain};
use crate::ui::{Failure, Result, Timer, fail, say, strip_ansi};

const STEP: &str = "STYLE";

/// The settings of upstream's `rustfmt.toml` (rust-lang/rust at the pinned commit) that a stable
/// rustfmt accepts; its `group_imports` and `imports_granularity` need a nightly rustfmt.
pub const RUSTFMT_CONFIG: &str =
    "use_small_heuristics=Max,merge_derives=false,use_field_init_shorthand=true,style_edition=2024";

/// The tree paths our last materialization wrote (new files and patched upstream files).
fn our_paths(cache: &Cache) -> Result<Vec<String>> {
    let list = fs::read_to_string(cache.materialized_list()).map_err(|e| Failure {
        step: STEP,
        message: format!(
            "{}: {e}; run `./x.py prepare` first",
            cache.materialized_list().display()
        ),
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

/// Patched crate roots that rustfmt cannot check: given a file, rustfmt formats its modules
/// too, and `core`'s take in `stdarch` and `portable-simd` by `#[path]`, `std`'s `backtrace`,
/// which upstream's `rustfmt.toml` ignores (their repositories format them with their own
/// settings), with an option that a stable rustfmt lacks. Our new modules of `core` and `std`
/// are checked on their own.
const RUSTFMT_UNCHECKABLE_ROOTS: &[&str] = &["library/core/src/lib.rs", "library/std/src/lib.rs"];

/// Whether upstream's rustfmt configuration formats `path` (a tree path): every Rust file but
/// those of [`RUSTFMT_IGNORED_TESTS`] (for us: the UI tests, whose `//~` annotations name lines)
/// and [`RUSTFMT_UNCHECKABLE_ROOTS`].
fn rustfmt_applies(path: &str) -> bool {
    path.ends_with(".rs")
        && !RUSTFMT_IGNORED_TESTS.iter().any(|p| path.starts_with(p))
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
/// [`PROJECT_RUST_DIRS`], and the length of the project files' lines ([`project_style`]); fails
/// with rustfmt's diff or the long lines.
pub fn rustfmt(cache: &Cache) -> Result<()> {
    tree_rustfmt(cache)?;
    project_style(&crate::project::project_root())
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
        .map_err(|e| Failure {
            step: STEP,
            message: format!("cannot run {}: {e}", rustfmt.display()),
        })?;
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
        let text = fs::read_to_string(file).map_err(|e| Failure {
            step: STEP,
            message: format!("cannot read {}: {e}", file.display()),
        })?;
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
    for dir in PROJECT_RUST_DIRS {
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
        .map_err(|e| Failure {
            step: STEP,
            message: format!("cannot run {}: {e}", cargo.display()),
        })?;
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
        .map_err(|e| Failure { step: STEP, message: format!("cannot run rustc: {e}") })?;
    if !driver_built.success() {
        return fail(STEP, "building the tidy driver (src/tools/offload-x/tidy/main.rs) failed");
    }
    timer.done();
    let timer = Timer::start(STEP, "tidy's file checks over the tree, problems in our files");
    let out = Command::new(&driver).arg(&tree).output().map_err(|e| Failure {
        step: STEP,
        message: format!("cannot run {}: {e}", driver.display()),
    })?;
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
