//! What the bundle of `./x.py gpu-check` holds: every program that a test or a check runs on the
//! CPU device and whose results it checks, how each is built from the project's own sources
//! ([`BUILDS`]), and the runs of them that `run.sh` compares ([`ROWS`]).
//!
//! Each build is the workspace of a test (`tests/run-make/*/ws`, copied as it is), a workspace
//! that a test puts together from the project's files (the first program of
//! `src/doc/cargo-offload.md`, `offload-dev-guide-form`'s `std-program`), the bundled example
//! or the CPU device's grid benchmark, with the program selected as the test selects it. Each
//! run is a program with the arguments and environment with which a test runs it for its
//! results. Left out, since they run nothing on the CPU device or nothing that a GPU would
//! print alike:
//! - `offload-silent-panics` and `offload-manifest-complete`: libraries compiled for the GPU
//!   targets only (the latter's kernels run on the CPU device as `offload-cpu-device`'s
//!   corpus, which is here);
//! - C launchers of `cdylib`s (`offload-cargo-shapes`' `cdyl`, `offload-cpu-device`'s `clib`):
//!   `cargo offload bundle` bundles executables only;
//! - `offload-cargo-shapes`' `bin195` (the 1.95 form runs on the GPUs only: no reference);
//! - runs whose point is the CPU device's own failure lines or device numbers: the stopping
//!   modes of `offload-cpu-grid` (`panic`, `barrier`, `overflow`, `fault`), and
//!   `offload-slices`' `bad-device`, `big-dyn-cache`, `devices` and `preload-read-only` (the
//!   CPU device counts as four devices; a GPU machine numbers its devices otherwise).

/// Where a build's Cargo workspace comes from. Each is written into a work folder of its own in
/// the cache, where its `target/` stays between runs.
#[derive(Debug)]
pub enum Workspace {
    /// The project's folder `from` as it is (all but a `target/` folder), in the work folder
    /// `name`.
    Copy { name: &'static str, from: &'static str },
    /// The first program of `src/doc/cargo-offload.md` ("A first program"), put together as
    /// `tests/run-make/offload-doc-first-program` does ([`first_program`]).
    DocFirstProgram,
    /// A package `package` whose `src/main.rs` is the project's file `main` (no dependencies),
    /// in the work folder `name`, as `offload-dev-guide-form` makes its `std-program`.
    Package { name: &'static str, package: &'static str, main: &'static str },
}

impl Workspace {
    /// The work folder's name.
    pub fn name(&self) -> &'static str {
        match self {
            Workspace::Copy { name, .. } | Workspace::Package { name, .. } => name,
            Workspace::DocFirstProgram => "offload-doc-first-program",
        }
    }
}

/// One `cargo offload bundle` of one program.
#[derive(Debug)]
pub struct Build {
    /// The bundle's folder in `bundle/` (and in the rows' `PROGRAM` paths).
    pub bundle: &'static str,
    /// The workspace it builds.
    pub workspace: Workspace,
    /// The cargo arguments that select the program (`-p`, `--example`, `--features`).
    pub select: &'static [&'static str],
    /// The program's name: its start script in the bundle.
    pub program: &'static str,
}

/// One run of a bundled program: a row of `run.sh`'s table.
#[derive(Debug)]
pub struct Row {
    /// The row's name in the table, and the name of its reference files.
    pub name: &'static str,
    /// The [`Build::bundle`] of its program.
    pub bundle: &'static str,
    /// The program's arguments.
    pub args: &'static [&'static str],
    /// Variables set for the program (`OFFLOAD_REPORT=1` is set for every run).
    pub env: &'static [(&'static str, &'static str)],
    /// Prefixes of output lines that depend on the device or on timing (dropped before the
    /// comparison).
    pub varies: &'static [&'static str],
    /// Whether the program prints timings: every decimal number (`12.345`, `-0.5`, `inf`,
    /// `NaN`) with the spaces before it reads ` #` in the compared output.
    pub timed: bool,
    /// Where the run comes from (a test, the bundled example, the benchmark), for `run.sh`.
    pub from: &'static str,
}

/// The builds, one bundle each, in the order in which they are built.
pub const BUILDS: &[Build] = &[
    Build {
        bundle: "cpu-grid",
        workspace: Workspace::Copy {
            name: "offload-cpu-grid",
            from: "tests/run-make/offload-cpu-grid/ws",
        },
        select: &[],
        program: "app",
    },
    Build {
        bundle: "slices",
        workspace: Workspace::Copy {
            name: "offload-slices",
            from: "tests/run-make/offload-slices/ws",
        },
        select: &[],
        program: "app",
    },
    Build {
        bundle: "atomics",
        workspace: Workspace::Copy {
            name: "offload-atomics",
            from: "tests/run-make/offload-atomics/ws",
        },
        select: &[],
        program: "app",
    },
    Build {
        bundle: "shapes-binkern",
        workspace: SHAPES,
        select: &["-p", "binkern"],
        program: "binkern",
    },
    Build {
        bundle: "shapes-binkern-extra",
        workspace: SHAPES,
        select: &["-p", "binkern", "--features", "extra"],
        program: "binkern",
    },
    Build {
        bundle: "shapes-negate",
        workspace: SHAPES,
        select: &["-p", "binkern", "--example", "negate"],
        program: "negate",
    },
    Build { bundle: "cpu-device", workspace: CPU_DEVICE, select: &["-p", "app"], program: "app" },
    Build {
        bundle: "generic-types-app",
        workspace: GENERIC_TYPES,
        select: &["--bin", "app"],
        program: "app",
    },
    Build {
        bundle: "generic-types-plus",
        workspace: GENERIC_TYPES,
        select: &["--bin", "plus"],
        program: "plus",
    },
    Build {
        bundle: "cpu-device-second",
        workspace: CPU_DEVICE,
        select: &["--example", "second"],
        program: "second",
    },
    Build {
        bundle: "doc-first-program",
        workspace: Workspace::DocFirstProgram,
        select: &[],
        program: "runner",
    },
    Build {
        bundle: "dev-guide-std-program",
        workspace: Workspace::Package {
            name: "offload-dev-guide-form",
            package: "guideprog",
            main: "tests/run-make/offload-dev-guide-form/std-program/main.rs",
        },
        select: &[],
        program: "guideprog",
    },
    Build {
        bundle: "std-program-gpu",
        workspace: Workspace::Copy {
            name: "offload-cargo-std-program-gpu",
            from: "tests/run-make/offload-cargo-std-program/ws-gpu",
        },
        select: &[],
        program: "onefile-gpu",
    },
    Build {
        bundle: "device-math",
        workspace: Workspace::Copy {
            name: "offload-device-math",
            from: "tests/run-make/offload-device-math/ws",
        },
        select: &[],
        program: "device-math",
    },
    Build {
        bundle: "offload-example",
        workspace: Workspace::Copy { name: "offload-example", from: "src/offload-example" },
        select: &[],
        program: "offload-example",
    },
    Build {
        bundle: "bench-cpu-grid",
        workspace: Workspace::Copy {
            name: "offload-bench-cpu-grid",
            from: "src/offload-bench/cpu-grid",
        },
        select: &[],
        program: "cpu-grid-bench",
    },
    Build {
        bundle: "bench-residency",
        workspace: Workspace::Copy {
            name: "offload-bench-residency",
            from: "src/offload-bench/residency",
        },
        select: &[],
        program: "residency-bench",
    },
];

/// `offload-cargo-shapes`' workspace: three programs are built from it, one after another.
const SHAPES: Workspace = Workspace::Copy {
    name: "offload-cargo-shapes",
    from: "tests/run-make/offload-cargo-shapes/ws",
};

/// `offload-cargo-generic-types`' workspace: its two programs, one after the other.
const GENERIC_TYPES: Workspace = Workspace::Copy {
    name: "offload-cargo-generic-types",
    from: "tests/run-make/offload-cargo-generic-types/ws",
};

/// `offload-cpu-device`'s workspace: its program and its example.
const CPU_DEVICE: Workspace =
    Workspace::Copy { name: "offload-cpu-device", from: "tests/run-make/offload-cpu-device/ws" };

/// A row with neither arguments, environment nor device-dependent lines.
const PLAIN: Row =
    Row { name: "", bundle: "", args: &[], env: &[], varies: &[], timed: false, from: "" };

/// The runs, in the table's order.
pub const ROWS: &[Row] = &[
    Row {
        name: "cpu-grid",
        bundle: "cpu-grid",
        // How often each element got `a * x` depends on which work items ran at once.
        varies: &["racy_saxpy: "],
        from: "tests/run-make/offload-cpu-grid (its first run)",
        ..PLAIN
    },
    Row {
        name: "slices",
        bundle: "slices",
        args: &["100003"],
        from: "tests/run-make/offload-slices (n = 100,003)",
        ..PLAIN
    },
    Row {
        name: "slices-empty",
        bundle: "slices",
        args: &["0"],
        from: "tests/run-make/offload-slices (n = 0)",
        ..PLAIN
    },
    Row {
        name: "slices-transfers-plain",
        bundle: "slices",
        args: &["transfers-plain"],
        from: "tests/run-make/offload-slices (100 launches, each mapping the buffer)",
        ..PLAIN
    },
    Row {
        name: "slices-transfers-preload",
        bundle: "slices",
        args: &["transfers-preload"],
        from: "tests/run-make/offload-slices (100 launches over a PreloadMut)",
        ..PLAIN
    },
    Row {
        name: "slices-preload-sync",
        bundle: "slices",
        args: &["preload-sync"],
        from: "tests/run-make/offload-slices (offload_sync)",
        ..PLAIN
    },
    Row {
        name: "atomics",
        bundle: "atomics",
        from: "tests/run-make/offload-atomics (2^20 work items)",
        ..PLAIN
    },
    Row {
        name: "atomics-meet",
        bundle: "atomics",
        args: &["meet"],
        // Two workers on the CPU device whatever its CPUs, so that the reference says that the
        // two blocks met, as the GPU's blocks, which run at once, should.
        env: &[("RUST_OFFLOAD_CPU_WORKERS", "2")],
        from: "tests/run-make/offload-atomics (two blocks that wait for each other)",
        ..PLAIN
    },
    Row {
        name: "atomics-copies",
        bundle: "atomics",
        args: &["copies"],
        from: "tests/run-make/offload-atomics (what comes back)",
        ..PLAIN
    },
    Row {
        name: "shapes-binkern",
        bundle: "shapes-binkern",
        from: "tests/run-make/offload-cargo-shapes (a program that defines kernels)",
        ..PLAIN
    },
    Row {
        name: "shapes-binkern-extra",
        bundle: "shapes-binkern-extra",
        from: "tests/run-make/offload-cargo-shapes (the same, --features extra)",
        ..PLAIN
    },
    Row {
        name: "shapes-negate",
        bundle: "shapes-negate",
        from: "tests/run-make/offload-cargo-shapes (an example that defines a kernel)",
        ..PLAIN
    },
    Row {
        name: "cpu-device",
        bundle: "cpu-device",
        from: "tests/run-make/offload-cpu-device (its program, the corpus included)",
        ..PLAIN
    },
    Row {
        name: "generic-types-app",
        bundle: "generic-types-app",
        from: "tests/run-make/offload-cargo-generic-types (a library's type argument)",
        ..PLAIN
    },
    Row {
        name: "generic-types-plus",
        bundle: "generic-types-plus",
        from: "tests/run-make/offload-cargo-generic-types (a program's type argument)",
        ..PLAIN
    },
    Row {
        name: "cpu-device-second",
        bundle: "cpu-device-second",
        from: "tests/run-make/offload-cpu-device (its example)",
        ..PLAIN
    },
    Row {
        name: "doc-first-program",
        bundle: "doc-first-program",
        args: &[FIRST_PROGRAM_ARG],
        from: "src/doc/cargo-offload.md, A first program (offload-doc-first-program)",
        ..PLAIN
    },
    Row {
        name: "dev-guide-std-program",
        bundle: "dev-guide-std-program",
        from: "tests/run-make/offload-dev-guide-form (std-program)",
        ..PLAIN
    },
    Row {
        name: "std-program-gpu",
        bundle: "std-program-gpu",
        args: &["1000"],
        from: "tests/run-make/offload-cargo-std-program (ws-gpu: a one-file `std` program)",
        ..PLAIN
    },
    Row {
        name: "device-math",
        bundle: "device-math",
        // Each function's largest error against the host's is the measurement a GPU run
        // gives (kept in the results); the counts past the bounds are compared.
        varies: &["f32 ", "f64 "],
        from: "tests/run-make/offload-device-math (34 float functions of each type; each \
               function's error on the GPU in its `f32 `/`f64 ` lines of the results)",
        ..PLAIN
    },
    Row {
        name: "offload-example",
        bundle: "offload-example",
        from: "src/offload-example (the main job's program)",
        ..PLAIN
    },
    Row {
        name: "bench-cpu-grid",
        bundle: "bench-cpu-grid",
        timed: true,
        from: "src/offload-bench/cpu-grid (timings masked; `results equal` compared)",
        ..PLAIN
    },
    Row {
        name: "bench-residency",
        bundle: "bench-residency",
        timed: true,
        from: "src/offload-bench/residency (timings and ratios masked; copies compared)",
        ..PLAIN
    },
];

/// The argument with which the page runs its first program (`-- 100000`).
const FIRST_PROGRAM_ARG: &str = "100000";

/// The build whose bundle is `bundle`.
pub fn build_of(bundle: &str) -> Option<&'static Build> {
    BUILDS.iter().find(|b| b.bundle == bundle)
}

/// The `Cargo.toml` of a test package `name` (version 0.1.0, edition 2024) with the TOML lines
/// `dependencies`, as `run_make_support::offload::package_manifest` writes it, plus `extra`.
pub fn package_manifest(name: &str, dependencies: &str, extra: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
         [dependencies]\n{dependencies}{extra}"
    )
}

/// What `src/doc/cargo-offload.md` no longer holds that [`first_program`] needs, in words;
/// the caller names the page.
#[derive(Debug)]
pub struct PageMismatch(String);

impl std::fmt::Display for PageMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The files (path in the workspace, contents) of the first program of
/// `src/doc/cargo-offload.md`, whose text is `page`: the section "A first program"'s kernel
/// library (the Rust block that starts with `// kernels/src/lib.rs`) and program (`//
/// runner/src/main.rs`) in the workspace that its TOML block describes, as
/// `tests/run-make/offload-doc-first-program` puts them together. Fails, naming what is
/// missing, when the section no longer holds what the test relies on (the members, the
/// dependency, the command with [`FIRST_PROGRAM_ARG`]).
pub fn first_program(page: &str) -> Result<Vec<(&'static str, String)>, PageMismatch> {
    let start = page
        .find("## A first program")
        .ok_or_else(|| PageMismatch("no section \"A first program\"".to_string()))?;
    let section = &page[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)];
    let needed = [
        "members = [\"kernels\", \"runner\"]",
        "kernels = { path = \"../kernels\" }",
        "cargo offload run --release --offload-arch=host -- 100000",
    ];
    if let Some(missing) = needed.iter().find(|text| !section.contains(*text)) {
        return Err(PageMismatch(format!(
            "the section \"A first program\" no longer holds `{missing}`"
        )));
    }
    let block = |first_line: &str| -> Result<String, PageMismatch> {
        let start = section
            .find(&format!("```rust\n{first_line}\n"))
            .ok_or_else(|| PageMismatch(format!("no Rust block starting with `{first_line}`")))?;
        let code = &section[start + "```rust\n".len()..];
        let end =
            code.find("```").ok_or_else(|| PageMismatch("an unterminated code block".into()))?;
        Ok(code[..end].to_string())
    };
    Ok(vec![
        (
            "Cargo.toml",
            "[workspace]\nmembers = [\"kernels\", \"runner\"]\nresolver = \"3\"\n".into(),
        ),
        ("kernels/Cargo.toml", package_manifest("kernels", "", "")),
        (
            "runner/Cargo.toml",
            package_manifest("runner", "kernels = { path = \"../kernels\" }\n", ""),
        ),
        ("kernels/src/lib.rs", block("// kernels/src/lib.rs")?),
        ("runner/src/main.rs", block("// runner/src/main.rs")?),
    ])
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use super::*;

    fn project() -> PathBuf {
        // Cargo's at run time: a test program compiled in another checkout with the same
        // target folder (CI's clone) has that checkout's path in `env!`.
        let manifest_dir = std::env::var("CARGO_MANIFEST_DIR");
        PathBuf::from(manifest_dir.unwrap_or(env!("CARGO_MANIFEST_DIR").to_string()))
            .join("../../..")
    }

    #[test]
    fn rows_and_builds_belong_together() {
        let rows: BTreeSet<&str> = ROWS.iter().map(|r| r.name).collect();
        assert_eq!(rows.len(), ROWS.len(), "row names are unique");
        let bundles: BTreeSet<&str> = BUILDS.iter().map(|b| b.bundle).collect();
        assert_eq!(bundles.len(), BUILDS.len(), "bundle names are unique");
        // `reference` is the folder of the reference outputs beside the bundles.
        assert!(!bundles.contains("reference"));
        for row in ROWS {
            assert!(build_of(row.bundle).is_some(), "{}: no build {}", row.name, row.bundle);
            assert!(!row.from.is_empty(), "{}", row.name);
        }
        for build in BUILDS {
            assert!(ROWS.iter().any(|r| r.bundle == build.bundle), "{} is never run", build.bundle);
        }
        // Names are file names and words of the table and of `run.sh`.
        let word = |s: &str| {
            !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
        };
        for name in ROWS.iter().map(|r| r.name).chain(bundles.iter().copied()) {
            assert!(word(name) && name.len() <= 26, "{name}");
        }
        for build in BUILDS {
            assert!(word(build.program), "{}", build.program);
        }
    }

    #[test]
    fn the_builds_sources_are_the_projects() {
        let project = project();
        for build in BUILDS {
            match &build.workspace {
                Workspace::Copy { from, .. } => {
                    assert!(project.join(from).join("Cargo.toml").is_file(), "{from}")
                }
                Workspace::Package { main, .. } => assert!(project.join(main).is_file(), "{main}"),
                Workspace::DocFirstProgram => {}
            }
        }
    }

    #[test]
    fn the_pages_first_program_is_found() {
        let page = std::fs::read_to_string(project().join("src/doc/cargo-offload.md")).unwrap();
        let files = first_program(&page).unwrap();
        let paths: Vec<&str> = files.iter().map(|(p, _)| *p).collect();
        assert_eq!(
            paths,
            [
                "Cargo.toml",
                "kernels/Cargo.toml",
                "runner/Cargo.toml",
                "kernels/src/lib.rs",
                "runner/src/main.rs"
            ]
        );
        assert!(files[3].1.contains("#[offload_kernel]"), "{}", files[3].1);
        assert!(files[4].1.contains("offload! {") && files[4].1.contains("fn main()"));
        assert!(!files[4].1.contains("```"));
        let without = page.replace("-- 100000", "-- 5");
        assert!(first_program(&without).unwrap_err().to_string().contains("-- 100000"));
        assert!(first_program("# nothing\n").is_err());
    }
}
