//! Tests of the harness on a miniature upstream: materialization, export, checksums, mirrors.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use offload_x::cache::Cache;
use offload_x::commands::series;
use offload_x::fetch;
use offload_x::materialize::{self, Drift};
use offload_x::pins::PinnedFile;
use offload_x::upstream::{self, BASE_BRANCH};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh scratch folder under the system's temp dir.
fn scratch(name: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir =
        std::env::temp_dir().join(format!("offload-x-test-{}-{name}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A cache whose tree is a two-file upstream committed on the base branch, and an empty project.
fn setup(name: &str) -> (PathBuf, Cache) {
    let root = scratch(name);
    let cache = Cache { root: root.join("cache") };
    let tree = cache.tree();
    write(&tree.join("x.py"), "# upstream's x.py\n");
    write(&tree.join("compiler/a.rs"), "fn a() {\n    one();\n}\n");
    write(&tree.join("compiler/b.rs"), "fn b() {\n    two();\n}\n");
    let ok = Command::new("git")
        .args(["init", "-q", "--bare", "-b", BASE_BRANCH])
        .arg(cache.tree_git())
        .status()
        .unwrap();
    assert!(ok.success());
    for args in [
        &["config", "core.bare", "false"][..],
        &["add", "-A"][..],
        &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"][..],
    ] {
        assert!(upstream::git(&cache).args(args).status().unwrap().success());
    }
    assert!(upstream::is_ready(&cache));
    let project = root.join("project");
    fs::create_dir_all(project.join(materialize::PATCH_DIR)).unwrap();
    (project, cache)
}

/// A patch that changes `one()` to `uno()` in compiler/a.rs.
const PATCH_A: &str = concat!(
    "Description: rename one\nForwarded: not-needed\nLast-Update: 2026-11-29\n---\n",
    "diff --git a/compiler/a.rs b/compiler/a.rs\n",
    "--- a/compiler/a.rs\n",
    "+++ b/compiler/a.rs\n",
    "@@ -1,3 +1,3 @@\n",
    " fn a() {\n",
    "-    one();\n",
    "+    uno();\n",
    " }\n",
);

fn mtime(path: &Path) -> SystemTime {
    fs::metadata(path).unwrap().modified().unwrap()
}

#[test]
fn materialize_applies_patches_and_new_files() {
    let (project, cache) = setup("apply");
    write(&project.join("src/patches/0001-compiler-rename.patch"), PATCH_A);
    write(&project.join("compiler/rustc_offload/src/lib.rs"), "// ours\n");
    let report = materialize::materialize(&project, &cache, &[]).unwrap();
    assert_eq!(report.written, vec!["compiler/a.rs", "compiler/rustc_offload/src/lib.rs"]);
    assert_eq!(
        fs::read_to_string(cache.tree().join("compiler/a.rs")).unwrap(),
        "fn a() {\n    uno();\n}\n"
    );
    assert_eq!(
        fs::read_to_string(cache.tree().join("compiler/rustc_offload/src/lib.rs")).unwrap(),
        "// ours\n"
    );
    assert_eq!(
        fs::read_to_string(cache.tree().join("compiler/b.rs")).unwrap(),
        "fn b() {\n    two();\n}\n"
    );
}

#[test]
fn run_make_support_offload_helpers_are_new_files_and_other_tools_are_not() {
    let (project, cache) = setup("support");
    write(&project.join("src/tools/run-make-support/src/offload/mod.rs"), "// helpers\n");
    write(&project.join("src/tools/cargo-offload/src/main.rs"), "// a tool of ours\n");
    let report = materialize::materialize(&project, &cache, &[]).unwrap();
    assert_eq!(report.written, vec!["src/tools/run-make-support/src/offload/mod.rs"]);
    assert!(!cache.tree().join("src/tools/cargo-offload").exists());
    assert!(materialize::in_new_file_root("tests/run-make/x/rmake.rs"));
    assert!(!materialize::in_new_file_root("src/tools/run-make-support/src/offloaded.rs"));
    assert!(!materialize::in_new_file_root("src/tools/run-make-support/src/lib.rs"));
}

#[test]
fn materializing_an_unchanged_project_touches_no_file() {
    let (project, cache) = setup("idempotent");
    write(&project.join("src/patches/0001-compiler-rename.patch"), PATCH_A);
    write(&project.join("tests/ui/offload-fork/t.rs"), "// test\n");
    materialize::materialize(&project, &cache, &[("bootstrap.toml", b"x = 1\n".to_vec())]).unwrap();
    let files = ["compiler/a.rs", "compiler/b.rs", "tests/ui/offload-fork/t.rs", "bootstrap.toml"];
    let before: Vec<SystemTime> = files.iter().map(|f| mtime(&cache.tree().join(f))).collect();
    std::thread::sleep(Duration::from_millis(20));
    let report =
        materialize::materialize(&project, &cache, &[("bootstrap.toml", b"x = 1\n".to_vec())])
            .unwrap();
    assert!(report.written.is_empty() && report.removed.is_empty(), "{report:?}");
    let after: Vec<SystemTime> = files.iter().map(|f| mtime(&cache.tree().join(f))).collect();
    assert_eq!(before, after);
}

#[test]
fn changing_one_patch_rewrites_only_its_files() {
    let (project, cache) = setup("one-patch");
    write(&project.join("src/patches/0001-compiler-rename.patch"), PATCH_A);
    write(&project.join("compiler/new.rs"), "// ours\n");
    materialize::materialize(&project, &cache, &[]).unwrap();
    write(&project.join("src/patches/0001-compiler-rename.patch"), &PATCH_A.replace("uno", "eins"));
    let report = materialize::materialize(&project, &cache, &[]).unwrap();
    assert_eq!(report.written, vec!["compiler/a.rs"]);
}

#[test]
fn a_removed_patch_or_file_is_restored_to_upstream() {
    let (project, cache) = setup("restore");
    write(&project.join("src/patches/0001-compiler-rename.patch"), PATCH_A);
    write(&project.join("compiler/new.rs"), "// ours\n");
    materialize::materialize(&project, &cache, &[]).unwrap();
    fs::remove_file(project.join("src/patches/0001-compiler-rename.patch")).unwrap();
    fs::remove_file(project.join("compiler/new.rs")).unwrap();
    let report = materialize::materialize(&project, &cache, &[]).unwrap();
    assert_eq!(report.written, vec!["compiler/a.rs"]);
    assert_eq!(report.removed, vec!["compiler/new.rs"]);
    assert_eq!(
        fs::read_to_string(cache.tree().join("compiler/a.rs")).unwrap(),
        "fn a() {\n    one();\n}\n"
    );
    assert!(!cache.tree().join("compiler/new.rs").exists());
}

#[test]
fn a_patch_that_no_longer_applies_is_reported_with_its_file() {
    let (project, cache) = setup("broken");
    let broken = PATCH_A.replace("-    one();", "-    three();");
    write(&project.join("src/patches/0007-compiler-stale.patch"), &broken);
    let err = materialize::materialize(&project, &cache, &[]).unwrap_err();
    assert_eq!(err.step(), "PATCH");
    assert!(err.message().contains("0007-compiler-stale.patch"), "{err}");
    assert!(err.message().contains("does not apply"), "{err}");
    // Nothing was written half-way.
    assert_eq!(
        fs::read_to_string(cache.tree().join("compiler/a.rs")).unwrap(),
        "fn a() {\n    one();\n}\n"
    );
}

#[test]
fn a_new_file_that_shadows_upstream_is_refused() {
    let (project, cache) = setup("shadow");
    write(&project.join("compiler/b.rs"), "// replaced wholesale\n");
    let err = materialize::materialize(&project, &cache, &[]).unwrap_err();
    assert!(err.message().contains("shadows the upstream file compiler/b.rs"), "{err}");
}

/// A patch that, after [`PATCH_A`], adds `dos();` to compiler/a.rs.
const PATCH_A2: &str = concat!(
    "Description: add dos\nForwarded: not-needed\nLast-Update: 2026-12-01\n---\n",
    "diff --git a/compiler/a.rs b/compiler/a.rs\n",
    "--- a/compiler/a.rs\n",
    "+++ b/compiler/a.rs\n",
    "@@ -1,3 +1,4 @@\n",
    " fn a() {\n",
    "     uno();\n",
    "+    dos();\n",
    " }\n",
);

#[test]
fn two_patches_may_change_one_file_in_order() {
    let (project, cache) = setup("owners");
    write(&project.join("src/patches/0001-a.patch"), PATCH_A);
    write(&project.join("src/patches/0002-a-again.patch"), PATCH_A2);
    materialize::materialize(&project, &cache, &[]).unwrap();
    let a = cache.tree().join("compiler/a.rs");
    assert_eq!(fs::read_to_string(&a).unwrap(), "fn a() {\n    uno();\n    dos();\n}\n");

    // Export normalizes both; a tree edit then goes to the last patch that changes the file,
    // as a diff against the file as the first one left it, and the first one stays as it was.
    materialize::export(&project, &cache, true, None).unwrap();
    let first = fs::read_to_string(project.join("src/patches/0001-a.patch")).unwrap();
    write(&a, "fn a() {\n    uno();\n    dos();\n    tres();\n}\n");
    let drift = materialize::export(&project, &cache, true, None).unwrap();
    assert_eq!(drift, vec![Drift::Patch(project.join("src/patches/0002-a-again.patch"))]);
    assert_eq!(fs::read_to_string(project.join("src/patches/0001-a.patch")).unwrap(), first);
    let second = fs::read_to_string(project.join("src/patches/0002-a-again.patch")).unwrap();
    assert!(second.starts_with("Description: add dos\n"), "{second}");
    assert!(second.contains("\n     uno();\n+    dos();\n+    tres();\n"), "{second}");
    assert!(!second.contains("-    one();"), "the diff starts after 0001: {second}");

    // Applied in order, the exported series gives the very same tree.
    let report = materialize::materialize(&project, &cache, &[]).unwrap();
    assert!(report.written.is_empty(), "{report:?}");
    assert_eq!(materialize::export(&project, &cache, false, None).unwrap(), vec![]);
}

#[test]
fn a_prefix_is_checked_by_what_its_patch_touches() {
    let path = |rel| series::check_path(rel);
    // A compiler file: every compiler crate, so that the crates that depend on it are checked.
    assert_eq!(path("compiler/rustc_middle/src/ty/mod.rs").as_deref(), Some("compiler"));
    assert_eq!(
        path("compiler/rustc_llvm/llvm-wrapper/RustWrapper.cpp").as_deref(),
        Some("compiler")
    );
    assert_eq!(path("compiler/rustc/Cargo.toml").as_deref(), Some("compiler"));
    assert_eq!(
        path("src/bootstrap/src/core/build_steps/llvm.rs").as_deref(),
        Some("src/bootstrap")
    );
    assert_eq!(path("src/librustdoc/lib.rs").as_deref(), Some("src/librustdoc"));
    assert_eq!(path("tests/ui/offload-manifest/x.rs"), None);
}

#[test]
fn an_unfilled_patch_header_is_refused() {
    let (project, cache) = setup("header");
    write(&cache.tree().join("compiler/b.rs"), "fn b() {\n    zwei();\n}\n");
    materialize::export(&project, &cache, true, Some("0001-compiler-b")).unwrap();
    let err = series::build(&project, &cache).unwrap_err();
    assert!(
        err.message()
            .contains("0001-compiler-b.patch: its `Description:` field is still the placeholder"),
        "{err}"
    );
    let path = project.join("src/patches/0001-compiler-b.patch");
    let filled = fs::read_to_string(&path)
        .unwrap()
        .replace("<what this patch changes, and why>", "compiler: rename two")
        .replace(
            "Forwarded: <not-needed | not-yet | could be forwarded (why) | partly (what)>",
            "Forwarded: not-needed",
        );
    fs::write(&path, &filled).unwrap();
    let err = series::build(&project, &cache).unwrap_err();
    assert!(err.message().contains("its `Last-Update:` field is still the placeholder"), "{err}");
    fs::write(&path, filled.replace("<YYYY-MM-DD>", "2026-12-01")).unwrap();
    assert_eq!(series::build(&project, &cache).unwrap().len(), 1);
    // A description may name placeholders of its own, like `-Zoffload=Device=<manifest>`.
    assert_eq!(
        materialize::header_problem("Description: x=<manifest>\nForwarded: no\nLast-Update: 1\n"),
        None
    );
}

#[test]
fn a_patch_that_needs_a_later_one_is_named() {
    let (project, cache) = setup("order");
    write(&project.join("src/patches/0001-a-again.patch"), PATCH_A2);
    write(&project.join("src/patches/0002-a.patch"), PATCH_A);
    let err = series::build(&project, &cache).unwrap_err();
    assert!(err.message().contains("0001-a-again.patch does not apply to upstream plus"), "{err}");
}

#[test]
fn every_new_compiler_file_belongs_to_one_patch() {
    let (project, cache) = setup("new-files");
    write(&project.join("compiler/c.rs"), "fn c() {}\n");
    write(&project.join("tests/ui/t.rs"), "fn main() {}\n");
    write(&project.join("src/patches/0001-a.patch"), PATCH_A);
    let patches = materialize::patches(&project).unwrap();
    assert_eq!(
        materialize::new_file_drift(&project, &patches).unwrap(),
        vec![Drift::NewFileUnnamed("compiler/c.rs".into())],
        "tests need no patch"
    );
    let err = series::build(&project, &cache).unwrap_err();
    assert!(err.message().contains("compiler/c.rs is a new file that no patch"), "{err}");

    let named = PATCH_A2.replacen("---\n", "New-Files:\n compiler/c.rs\n---\n", 1);
    write(&project.join("src/patches/0002-a-again.patch"), &named);
    let commits = series::build(&project, &cache).unwrap();
    assert_eq!(commits.len(), 2);
    assert_eq!(commits[0].name, "0001-a");
    assert_eq!(commits[1].name, "0002-a-again");
    let show = |spec: &str| {
        let out = upstream::git(&cache).args(["show", spec]).output().unwrap();
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    // The file arrives with the patch that names it, not before.
    assert_eq!(show(&format!("{}:compiler/c.rs", commits[0].commit)), None);
    assert_eq!(
        show(&format!("{}:compiler/c.rs", commits[1].commit)).as_deref(),
        Some("fn c() {}\n")
    );
    assert_eq!(
        show(&format!("{}:compiler/a.rs", series::SERIES_BRANCH)).as_deref(),
        Some("fn a() {\n    uno();\n    dos();\n}\n")
    );
    // The materialized tree and its index are left alone.
    let status = upstream::git(&cache).args(["status", "--porcelain"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");

    // A name without a file, and a file named twice, are refused too.
    fs::remove_file(project.join("compiler/c.rs")).unwrap();
    let patches = materialize::patches(&project).unwrap();
    assert_eq!(
        materialize::new_file_drift(&project, &patches).unwrap(),
        vec![Drift::NewFileMissing(
            project.join("src/patches/0002-a-again.patch"),
            "compiler/c.rs".into()
        )]
    );
    let err = series::build(&project, &cache).unwrap_err();
    assert!(
        err.message().contains("names the new file compiler/c.rs, which the project lacks"),
        "{err}"
    );
    write(&project.join("compiler/c.rs"), "fn c() {}\n");
    let twice = PATCH_A.replacen("---\n", "New-Files: compiler/c.rs\n---\n", 1);
    write(&project.join("src/patches/0001-a.patch"), &twice);
    let err = materialize::patches(&project).unwrap_err();
    assert!(err.message().contains("the new file compiler/c.rs is named by"), "{err}");
}

#[test]
fn a_later_patch_keeps_its_own_hunks_of_an_earlier_patchs_new_file() {
    let (project, cache) = setup("new-file-hunks");
    let text = |lines: &[&str]| format!("fn c() {{\n{}}}\n", lines.concat());
    // 0001 brings compiler/c.rs; while no later patch changes it, a tree edit of it is copied
    // into the project's file.
    write(&project.join("compiler/c.rs"), &text(&["    first();\n"]));
    let brings = PATCH_A.replacen("---\n", "New-Files:\n compiler/c.rs\n---\n", 1);
    write(&project.join("src/patches/0001-a.patch"), &brings);
    materialize::materialize(&project, &cache, &[]).unwrap();
    let c = cache.tree().join("compiler/c.rs");
    write(&c, &text(&["    first();\n", "    second();\n"]));
    materialize::export(&project, &cache, true, None).unwrap();
    assert_eq!(
        fs::read_to_string(project.join("compiler/c.rs")).unwrap(),
        text(&["    first();\n", "    second();\n"])
    );
    // A person moves `second();` out of 0001 into 0002, a hunk of 0002 against 0001's file.
    write(&project.join("compiler/c.rs"), &text(&["    first();\n"]));
    let later = concat!(
        "Description: add second\nForwarded: not-needed\nLast-Update: 2026-12-05\n---\n",
        "diff --git a/compiler/c.rs b/compiler/c.rs\n",
        "--- a/compiler/c.rs\n",
        "+++ b/compiler/c.rs\n",
        "@@ -1,3 +1,4 @@\n",
        " fn c() {\n",
        "     first();\n",
        "+    second();\n",
        " }\n",
    );
    write(&project.join("src/patches/0002-c.patch"), later);
    // The tree already holds the result: export only normalizes 0002 (git's `index` line),
    // keeps the project's c.rs as 0001 brings it, and check then agrees.
    assert_eq!(
        materialize::export(&project, &cache, false, None).unwrap(),
        vec![Drift::Patch(project.join("src/patches/0002-c.patch"))]
    );
    materialize::export(&project, &cache, true, None).unwrap();
    assert_eq!(materialize::export(&project, &cache, false, None).unwrap(), vec![]);
    assert_eq!(
        fs::read_to_string(project.join("compiler/c.rs")).unwrap(),
        text(&["    first();\n"])
    );
    // A further tree edit of c.rs goes into 0002, the last patch that changes it.
    write(&c, &text(&["    first();\n", "    second();\n", "    third();\n"]));
    materialize::export(&project, &cache, true, None).unwrap();
    assert_eq!(
        fs::read_to_string(project.join("compiler/c.rs")).unwrap(),
        text(&["    first();\n"])
    );
    let patch = fs::read_to_string(project.join("src/patches/0002-c.patch")).unwrap();
    assert!(patch.contains("+    second();\n+    third();\n"), "{patch}");
    // Materializing gives the same tree, and the series has c.rs as each step leaves it.
    materialize::materialize(&project, &cache, &[]).unwrap();
    assert_eq!(
        fs::read_to_string(&c).unwrap(),
        text(&["    first();\n", "    second();\n", "    third();\n"])
    );
    let commits = series::build(&project, &cache).unwrap();
    let show = |spec: &str| {
        let out = upstream::git(&cache).args(["show", spec]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(show(&format!("{}:compiler/c.rs", commits[0].commit)), text(&["    first();\n"]));
    assert!(show(&format!("{}:compiler/c.rs", commits[1].commit)).contains("third();"));

    // A section of c.rs in a patch before the one that brings it does not apply, by name.
    fs::rename(project.join("src/patches/0002-c.patch"), project.join("src/patches/0000-c.patch"))
        .unwrap();
    let err = materialize::materialize(&project, &cache, &[]).unwrap_err();
    assert!(err.message().contains("0000-c.patch does not apply"), "{err}");
    // Nor does a section of the patch that brings the file.
    fs::remove_file(project.join("src/patches/0000-c.patch")).unwrap();
    write(
        &project.join("src/patches/0001-a.patch"),
        &format!("{brings}{}", &later[later.find("diff").unwrap()..]),
    );
    let err = materialize::patches(&project).unwrap_err();
    assert!(err.message().contains("has a section for compiler/c.rs, which its own"), "{err}");
}

#[test]
fn export_needs_only_the_earlier_patches_of_a_shared_file_to_apply() {
    let (project, cache) = setup("moved-hunk");
    write(&project.join("src/patches/0001-a.patch"), PATCH_A);
    write(&project.join("src/patches/0002-a-again.patch"), PATCH_A2);
    write(
        &project.join("src/patches/0003-b.patch"),
        &PATCH_A
            .replace("a.rs", "b.rs")
            .replace("fn a()", "fn b()")
            .replace("one", "two")
            .replace("uno", "zwei"),
    );
    materialize::materialize(&project, &cache, &[]).unwrap();
    materialize::export(&project, &cache, true, None).unwrap();
    // 0002's hunk, moved by hand into 0001: 0002 no longer applies, and export says what is
    // left of it (nothing) instead of refusing the series; nothing is written.
    let moved = PATCH_A
        .replace("+    uno();\n", "+    uno();\n+    dos();\n")
        .replace("@@ -1,3 +1,3 @@", "@@ -1,3 +1,4 @@");
    write(&project.join("src/patches/0001-a.patch"), &moved);
    let before = fs::read_to_string(project.join("src/patches/0003-b.patch")).unwrap();
    let err = materialize::export(&project, &cache, true, None).unwrap_err();
    assert!(err.message().contains("0002-a-again.patch would be empty"), "{err}");
    assert_eq!(
        fs::read_to_string(project.join("src/patches/0001-a.patch")).unwrap(),
        moved,
        "nothing written"
    );
    assert_eq!(fs::read_to_string(project.join("src/patches/0003-b.patch")).unwrap(), before);
    // With 0002 deleted, the series is whole again and the tree agrees with it.
    fs::remove_file(project.join("src/patches/0002-a-again.patch")).unwrap();
    materialize::export(&project, &cache, true, None).unwrap();
    let report = materialize::materialize(&project, &cache, &[]).unwrap();
    assert!(report.written.is_empty(), "{report:?}");
}

#[test]
fn export_round_trips_tree_edits_into_the_project() {
    let (project, cache) = setup("export");
    write(&project.join("src/patches/0001-compiler-rename.patch"), PATCH_A);
    materialize::materialize(&project, &cache, &[]).unwrap();
    // A hand-written patch lacks git's `index` lines: export normalizes it, then check is clean.
    materialize::export(&project, &cache, true, None).unwrap();
    assert_eq!(materialize::export(&project, &cache, false, None).unwrap(), vec![]);

    // Edit an owned file, an unowned file, and add a new file in the tree.
    write(&cache.tree().join("compiler/a.rs"), "fn a() {\n    uno();\n    dos();\n}\n");
    write(&cache.tree().join("compiler/b.rs"), "fn b() {\n    zwei();\n}\n");
    write(&cache.tree().join("tests/ui/new.rs"), "// new test\n");
    let drift = materialize::export(&project, &cache, false, None).unwrap();
    assert!(drift.contains(&Drift::Patch(project.join("src/patches/0001-compiler-rename.patch"))));
    assert!(drift.contains(&Drift::Unowned("compiler/b.rs".into())));
    assert!(drift.contains(&Drift::NewFile("tests/ui/new.rs".into())));

    materialize::export(&project, &cache, true, Some("0002-compiler-b")).unwrap();
    let patch = fs::read_to_string(project.join("src/patches/0001-compiler-rename.patch")).unwrap();
    assert!(patch.starts_with("Description: rename one\n"), "header kept: {patch}");
    assert!(patch.contains("+    dos();"));
    assert!(
        fs::read_to_string(project.join("src/patches/0002-compiler-b.patch"))
            .unwrap()
            .contains("+    zwei();")
    );
    assert_eq!(fs::read_to_string(project.join("tests/ui/new.rs")).unwrap(), "// new test\n");

    // The exported project materializes to the very same tree, and check is clean.
    let report = materialize::materialize(&project, &cache, &[]).unwrap();
    assert!(report.written.is_empty(), "{report:?}");
    assert_eq!(materialize::export(&project, &cache, false, None).unwrap(), vec![]);
}

#[test]
fn a_checksum_mismatch_is_refused() {
    let dir = scratch("checksum");
    let file = dir.join("rustc_1.95.0+dfsg1.orig.tar.xz");
    fs::write(&file, b"not the upstream tarball").unwrap();
    let pin = PinnedFile {
        name: "rustc_1.95.0+dfsg1.orig.tar.xz",
        size: 88_190_992,
        sha256: "fee0a232c32b6f919b2166efc441a7c37884905bdcc2170163579eeed5feee6b",
    };
    let err = fetch::verify(&file, &pin).unwrap_err();
    assert_eq!(err.step(), "DOWNLOAD");
    assert!(err.message().contains("checksum mismatch"), "{err}");
    assert!(err.message().contains(&file.display().to_string()), "{err}");
    // A file with the pinned sum passes.
    let empty = dir.join("empty");
    fs::write(&empty, b"").unwrap();
    let empty_pin = PinnedFile {
        name: "empty",
        size: 0,
        sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    };
    assert!(fetch::verify(&empty, &empty_pin).unwrap());
    assert!(!fetch::verify(&dir.join("missing"), &empty_pin).unwrap());
}

#[test]
fn mirrors_come_from_the_apt_configuration() {
    let etc = scratch("apt");
    write(
        &etc.join("sources.list.d/debian.sources"),
        "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\n\
         Components: main\n\n\
         Types: deb\nURIs: http://mirror.invalid/debian-security\nSuites: bookworm-security\n\
         Components: main\n",
    );
    write(
        &etc.join("sources.list"),
        "# comment\ndeb [arch=amd64] http://other.invalid/debian trixie main\n",
    );
    assert_eq!(
        fetch::apt_mirrors(&etc),
        vec!["http://other.invalid/debian".to_string(), "http://mirror.invalid/debian".to_string()]
    );
}

#[test]
fn source_fingerprint_follows_compiler_sources_only() {
    use offload_x::project::source_fingerprint;
    let project = scratch("fingerprint");
    write(&project.join("src/patches/0001-a.patch"), "Description: a\n---\n");
    write(&project.join("compiler/rustc_x/src/new.rs"), "fn a() {}\n");
    write(&project.join("tests/ui/t.rs"), "fn main() {}\n");
    let first = source_fingerprint(&project).unwrap();
    assert_eq!(first.len(), 16);
    assert_eq!(source_fingerprint(&project).unwrap(), first, "not deterministic");
    // A test or a doc changes nothing the compiler is built from.
    write(&project.join("tests/ui/t.rs"), "fn main() { let _ = 1; }\n");
    write(&project.join("src/doc/x.md"), "doc\n");
    assert_eq!(source_fingerprint(&project).unwrap(), first);
    // A new compiler file, an edited patch: another fingerprint each.
    write(&project.join("compiler/rustc_x/src/new.rs"), "fn b() {}\n");
    let second = source_fingerprint(&project).unwrap();
    assert_ne!(second, first);
    write(&project.join("src/patches/0001-a.patch"), "Description: b\n---\n");
    assert_ne!(source_fingerprint(&project).unwrap(), second);
}
