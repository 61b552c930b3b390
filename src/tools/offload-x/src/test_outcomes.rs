//! No silent skips: every compiletest test that `./x.py test` asks for must run and pass.
//!
//! Nearly every offload test carries `//@ needs-offload`, so a compiler that lost its
//! `llvm_offload` support (a configuration or bootstrap-patch regression) would turn them into
//! "ignored" tests, and bootstrap would still exit 0. So `./x.py test` runs compiletest with
//! bootstrap's verbose test rendering (`rust.verbose-tests`), which prints one line per test,
//! `test [MODE] PATH[#REVISION] ... OUTCOME` (`ok`, `FAILED`, or `ignored` with compiletest's
//! reason; bootstrap's `render_tests.rs`), and [`check`] reads those lines: any test of the
//! asked-for suites that was ignored fails the step, and so does any expected test (from
//! [`expected_tests`], the files in the tree) that printed no `ok` line.

use std::fs;
use std::path::Path;

use crate::ui::{Result, fail, strip_ansi};

/// The compiletest tests under each of `suites` (paths relative to the tree `tree`, as
/// `./x.py test` takes them), as compiletest names them: a `run-make` test is its folder (the
/// one holding `rmake.rs`), every other test a `*.rs` file. Like compiletest, folders named
/// `auxiliary` hold no tests. A path that is a file is that one test. Sorted.
pub fn expected_tests(tree: &Path, suites: &[String]) -> Vec<String> {
    fn walk(tree: &Path, relative: &str, out: &mut Vec<String>) {
        let path = tree.join(relative);
        if path.is_file() {
            if relative.ends_with(".rs") {
                out.push(relative.to_string());
            }
            return;
        }
        if path.join("rmake.rs").is_file() {
            out.push(relative.to_string());
            return;
        }
        let Ok(entries) = fs::read_dir(&path) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != "auxiliary" {
                walk(tree, &format!("{relative}/{name}"), out);
            }
        }
    }
    let mut out = Vec::new();
    for suite in suites {
        walk(tree, suite.trim_end_matches('/'), &mut out);
    }
    out.sort();
    out.dedup();
    out
}

/// What one verbose test line says: the test's path (revision dropped) and whether it passed,
/// or `None` for a line that reports no test.
fn outcome(line: &str) -> Option<(&str, Outcome<'_>)> {
    let rest = line.strip_prefix("test [")?;
    let (_mode, rest) = rest.split_once("] ")?;
    let (name, result) = rest.split_once(" ... ")?;
    let path = name.split_once('#').map_or(name, |(path, _revision)| path);
    let outcome = if result.starts_with("ok") {
        Outcome::Ok
    } else if let Some(reason) = result.strip_prefix("ignored") {
        Outcome::Ignored(reason.trim_start_matches(", ").trim())
    } else {
        Outcome::Failed
    };
    Some((path, outcome))
}

#[derive(Debug, PartialEq)]
enum Outcome<'a> {
    Ok,
    /// With compiletest's reason, which may be empty.
    Ignored(&'a str),
    Failed,
}

/// Checks bootstrap's verbose output `output` against `expected` (from [`expected_tests`]):
/// returns how many test lines passed, or a `[TEST]` failure whose one message names every
/// ignored test (with its reason) and every expected test without an `ok` line. ANSI colour
/// codes are ignored.
pub fn check(output: &str, expected: &[String]) -> Result<usize> {
    let mut passed = 0;
    let mut ignored = Vec::new();
    let mut ran_ok = std::collections::BTreeSet::new();
    for line in output.lines() {
        let line = strip_ansi(line);
        let Some((path, outcome)) = outcome(line.trim()) else { continue };
        match outcome {
            Outcome::Ok => {
                passed += 1;
                ran_ok.insert(path.to_string());
            }
            Outcome::Ignored(reason) => ignored.push(format!("{path} ({reason})")),
            // bootstrap fails the step itself; the line only needs to not count as passed.
            Outcome::Failed => {}
        }
    }
    let missing: Vec<&str> =
        expected.iter().filter(|t| !ran_ok.contains(*t)).map(String::as_str).collect();
    if ignored.is_empty() && missing.is_empty() {
        return Ok(passed);
    }
    let mut message = String::new();
    if !ignored.is_empty() {
        message += &format!("{} tests were ignored: {}", ignored.len(), ignored.join(", "));
    }
    if !missing.is_empty() {
        if !message.is_empty() {
            message += "; ";
        }
        message +=
            &format!("{} expected tests did not pass: {}", missing.len(), missing.join(", "));
    }
    fail("TEST", message)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "\
running 3 tests
test [codegen] tests/codegen-llvm/gpu_offload_manifest/agree.rs#amdgpu ... ok
test [codegen] tests/codegen-llvm/gpu_offload_manifest/agree.rs#nvptx ... \
\u{1b}[32mok\u{1b}[0m (0.5s)
test [run-make] tests/run-make/offload-slices ... ok
";

    fn expected() -> Vec<String> {
        ["tests/codegen-llvm/gpu_offload_manifest/agree.rs", "tests/run-make/offload-slices"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn every_expected_test_passed() {
        assert_eq!(check(RUN, &expected()).unwrap(), 3);
    }

    #[test]
    fn an_ignored_test_fails_and_is_named() {
        let run = RUN.replace(
            "offload-slices ... ok",
            "offload-slices ... ignored, ignored when LLVM Offload is disabled",
        );
        let error = check(&run, &expected()).unwrap_err().message().to_string();
        assert!(error.contains("1 tests were ignored"), "{error}");
        assert!(
            error.contains("tests/run-make/offload-slices (ignored when LLVM Offload is disabled)"),
            "{error}"
        );
    }

    #[test]
    fn an_ignored_revision_fails() {
        let run = RUN.replace("\u{1b}[32mok\u{1b}[0m (0.5s)", "ignored");
        assert!(check(&run, &expected()).unwrap_err().message().contains("agree.rs ()"));
    }

    #[test]
    fn a_test_that_did_not_run_fails_and_is_named() {
        let run = RUN.replace("test [run-make] tests/run-make/offload-slices ... ok", "");
        let error = check(&run, &expected()).unwrap_err().message().to_string();
        assert_eq!(error, "1 expected tests did not pass: tests/run-make/offload-slices");
    }

    #[test]
    fn a_failed_test_is_not_passed() {
        let run = RUN.replace("offload-slices ... ok", "offload-slices ... FAILED");
        assert!(check(&run, &expected()).unwrap_err().message().contains("did not pass"));
    }

    #[test]
    fn tests_are_files_and_run_make_folders() {
        let tree = std::env::temp_dir().join(format!("offload-x-outcomes-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tree);
        for file in [
            "tests/run-make/offload-a/rmake.rs",
            "tests/run-make/offload-a/ws/src/main.rs",
            "tests/ui/offload-m/bad.rs",
            "tests/ui/offload-m/bad.stderr",
            "tests/ui/offload-m/auxiliary/dep.rs",
            "tests/ui/offload-m/nested/more.rs",
        ] {
            fs::create_dir_all(tree.join(file).parent().unwrap()).unwrap();
            fs::write(tree.join(file), "").unwrap();
        }
        let suites = ["tests/run-make/offload-a", "tests/ui/offload-m/"].map(String::from);
        assert_eq!(
            expected_tests(&tree, &suites),
            [
                "tests/run-make/offload-a",
                "tests/ui/offload-m/bad.rs",
                "tests/ui/offload-m/nested/more.rs"
            ]
        );
        let one = ["tests/ui/offload-m/bad.rs".to_string()];
        assert_eq!(expected_tests(&tree, &one), ["tests/ui/offload-m/bad.rs"]);
        fs::remove_dir_all(&tree).unwrap();
    }
}
