//! The toolchain's components beside the compiler: those of rustup's default profile (`rustdoc`,
//! clippy with `cargo-clippy` and `clippy-driver`, rustfmt with `cargo-fmt`), the library
//! sources (rustup's `rust-src`) and rust-analyzer's proc-macro server. Each
//! program is built by upstream's bootstrap from the same Debian source tree, against the
//! stage-1 compiler's `librustc_driver` (the fork's: `core::offload` resolves, and clippy lints
//! what `cargo check` checks), and goes into the dist folder (`super::dist`) where rustup and
//! cargo look for it:
//!
//! ```text
//! bin/rustdoc, bin/rustfmt, bin/cargo-fmt, bin/clippy-driver, bin/cargo-clippy
//!                                    scripts that start each program with the toolchain's
//!                                    loader, as bin/rustc starts the compiler
//! lib/offload/bin/                   the programs
//! lib/offload/lib/clippy-driver, lib/offload/lib/rustfmt
//!                                    scripts for cargo-clippy and cargo-fmt, which look for
//!                                    `clippy-driver` and `rustfmt` beside their own executable:
//!                                    started by the loader, that is the loader in this folder
//! libexec/rust-analyzer-proc-macro-srv
//!                                    a script: the server that rust-analyzer starts for proc
//!                                    macros built by this toolchain
//! lib/rustlib/src/rust/library       the library sources of the stage-1 toolchain (the fork's
//!                                    `core::offload` included), which rust-analyzer and
//!                                    `-Zbuild-std` read, without what upstream's `rust-src`
//!                                    leaves out ([`RUST_SRC_LEFT_OUT`])
//! ```
//!
//! Built once per compiler (bootstrap's own freshness: about 6 minutes on 2 CPUs after a
//! compiler change, seconds when fresh); the README gives the sizes.

use std::fs;
use std::path::{Path, PathBuf};

use super::dist::{copy, write};
use crate::bootstrap::bootstrap;
use crate::cache::Cache;
use crate::pins::HOST;
use crate::stages::{library_targets, restore_gpu_sysroot};
use crate::toolchain_lock::{ToolchainLock, Use};
use crate::ui::{Result, Timer, fail};

const STEP: &str = "DIST";

/// Bootstrap's paths of the component programs.
const BOOTSTRAP_PATHS: [&str; 4] = [
    "src/tools/rustdoc",
    "src/tools/clippy",
    "src/tools/rustfmt",
    "src/tools/rust-analyzer/crates/proc-macro-srv-cli",
];

/// The programs that `bin/` starts, each by a script of its name.
pub const PROGRAMS: [&str; 5] =
    ["rustdoc", "rustfmt", "cargo-fmt", "clippy-driver", "cargo-clippy"];

/// The programs that `cargo-clippy` and `cargo-fmt` look for beside their own executable.
const COMPANIONS: [&str; 2] = ["clippy-driver", "rustfmt"];

/// The proc-macro server, started from `libexec/` by rust-analyzer.
pub const PROC_MACRO_SERVER: &str = "rust-analyzer-proc-macro-srv";

/// Builds the component programs with bootstrap (what is fresh is kept) and returns where each
/// of [`PROGRAMS`] and [`PROC_MACRO_SERVER`] lies, by name. Bootstrap reassembles the stage-1
/// sysroot for the tools without the targets' libraries (the host's `std` included), so the
/// libraries' own invocation (`crate::stages::build`'s, fresh: seconds) runs after it, and the
/// GPU targets' libraries are put back if that fails.
pub fn ensure(cache: &Cache) -> Result<Vec<(&'static str, PathBuf)>> {
    let _replacing = ToolchainLock::take(cache, STEP, Use::Replace)?;
    let timer = Timer::start(
        STEP,
        "rustdoc, clippy, rustfmt and the proc-macro server (after a compiler change: about 6 \
         minutes)",
    );
    let mut args = vec!["build", "--stage", "1"];
    args.extend(BOOTSTRAP_PATHS);
    let tools = bootstrap(cache, STEP, &args);
    // Also after a failed tools' invocation, which may have reassembled the sysroot already.
    let targets = library_targets();
    let libraries =
        bootstrap(cache, STEP, &["build", "--stage", "1", "library", "--target", &targets]);
    restore_gpu_sysroot(cache)?;
    tools?;
    libraries?;
    timer.done();
    let host = cache.build().join(HOST);
    let mut found = Vec::new();
    for name in PROGRAMS.into_iter().chain([PROC_MACRO_SERVER]) {
        // The stage-1 tools lie in `stage1-tools-bin`; rustdoc as `rustdoc_tool_binary`, which
        // bootstrap copies into the stage-1 sysroot only while it assembles that for rustdoc
        // (the libraries' invocation leaves it out).
        let file = if name == "rustdoc" { "rustdoc_tool_binary" } else { name };
        let path = host.join("stage1-tools-bin").join(file);
        if !path.is_file() {
            return fail(STEP, format!("bootstrap built no `{name}` ({})", path.display()));
        }
        found.push((name, path));
    }
    Ok(found)
}

/// Puts the `built` programs ([`ensure`]) and their start scripts into the dist `folder`, and
/// the stage-1 tree's library sources (`tree`'s `library/`) as `rust-src`. Returns the
/// programs' paths in the folder, which load libraries and are stripped like the compiler.
pub fn assemble(built: &[(&str, PathBuf)], tree: &Path, folder: &Path) -> Result<Vec<PathBuf>> {
    let offload = folder.join("lib/offload");
    let mut placed = Vec::new();
    for (name, path) in built {
        let to = offload.join("bin").join(name);
        copy(path, &to)?;
        placed.push(to);
    }
    for name in PROGRAMS {
        write(&folder.join("bin").join(name), &start_script(name, ".."), 0o755)?;
    }
    // `cargo-clippy` and `cargo-fmt` start the program beside their own executable, which,
    // started by the loader, is the loader.
    for companion in COMPANIONS {
        let script = start_script(companion, "../../..");
        write(&offload.join("lib").join(companion), &script, 0o755)?;
    }
    let server = start_script(PROC_MACRO_SERVER, "..");
    write(&folder.join("libexec").join(PROC_MACRO_SERVER), &server, 0o755)?;
    copy_sources(&tree.join("library"), &folder.join("lib/rustlib/src/rust/library"))?;
    Ok(placed)
}

/// The start script of `name` (a program in `lib/offload/bin/`), which lies `up` (`..` for a
/// script in `bin/`) below the toolchain's folder `$d`: the program started by the toolchain's
/// loader with the toolchain's libraries, as `bin/rustc` starts the compiler. `clippy-driver`,
/// which cargo starts as a wrapper of rustc (`clippy-driver rustc ARGS`, a first argument whose
/// file stem is `rustc`, as clippy-driver tells it) and which then compiles and links build
/// scripts itself, gets the toolchain's linker driver after that first argument, as `bin/rustc`
/// gives it; a caller's later `-C linker` wins. (Rustdoc compiles doctests with the sysroot's
/// `bin/rustc`, which adds the driver.)
fn start_script(name: &str, up: &str) -> String {
    let head = match name {
        "clippy-driver" => {
            "case \"${1##*/}\" in rustc|rustc.*) r=$1; shift; set -- \"$r\" \
             -Clinker=\"$d/lib/offload/bin/cc\" \"$@\";; esac\n"
        }
        _ => "",
    };
    format!(
        "#!/bin/sh\n\
         # {name} of the offload toolchain, started by the toolchain's own loader (./x.py dist).\n\
         d=$(cd \"$(dirname \"$0\")/{up}\" && pwd -P) || exit 1\n\
         l=\"$d/lib/offload/lib\"\n\
         {head}\
         exec \"$l/ld-linux-x86-64.so.2\" --library-path \"$d/lib:$l\" --argv0 \"$0\" \\\n\
         \x20   \"$d/lib/offload/bin/{name}\" \"$@\"\n"
    )
}

/// What upstream's `rust-src` leaves out of `library/` (bootstrap's `dist` step, as of the
/// pinned commit): folders with links that rustup cannot unpack, and `stdarch`'s test crates,
/// which building the standard library does not need.
const RUST_SRC_LEFT_OUT: [&str; 4] = [
    "backtrace/crates",
    "stdarch/Cargo.toml",
    "stdarch/crates/stdarch-verify",
    "stdarch/crates/intrinsic-test",
];

/// Copies the library sources `from` (the tree's `library/`) to `to`, without
/// [`RUST_SRC_LEFT_OUT`], build outputs (`target/`), editors' backups (`*~`) and the `*.orig`
/// files that Debian's patching leaves.
fn copy_sources(from: &Path, to: &Path) -> Result<()> {
    if !from.join("Cargo.toml").is_file() {
        return fail(STEP, format!("no library sources at {}", from.display()));
    }
    copy_sources_under(from, Path::new(""), to)
}

/// [`copy_sources`] of the folder `relative` under `root`.
fn copy_sources_under(root: &Path, relative: &Path, to: &Path) -> Result<()> {
    let dir = root.join(relative);
    for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let path = relative.join(&name);
        let text = name.to_string_lossy();
        let left_out = RUST_SRC_LEFT_OUT.iter().any(|p| Path::new(p) == path);
        if left_out || text == "target" || text.ends_with('~') || text.ends_with(".orig") {
            continue;
        }
        if entry.path().is_dir() {
            copy_sources_under(root, &path, to)?;
        } else {
            copy(&entry.path(), &to.join(&path))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;

    use super::*;

    /// Runs the start script of `name` (in `bin/`) of a toolchain folder under `root` whose
    /// loader prints the arguments it was given, one a line; returns them.
    fn started_with(root: &Path, name: &str, args: &[&str]) -> Vec<String> {
        let loader = root.join("lib/offload/lib/ld-linux-x86-64.so.2");
        fs::create_dir_all(loader.parent().unwrap()).unwrap();
        fs::write(&loader, "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n").unwrap();
        fs::set_permissions(&loader, fs::Permissions::from_mode(0o755)).unwrap();
        let script = root.join("bin").join(name);
        fs::create_dir_all(script.parent().unwrap()).unwrap();
        fs::write(&script, start_script(name, "..")).unwrap();
        let out = Command::new("sh").arg(&script).args(args).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
    }

    #[test]
    fn start_scripts_add_the_linker_where_the_program_links() {
        // A space in the folder's name: every path in the scripts is quoted.
        let root = std::env::temp_dir().join(format!("offload components {}", std::process::id()));
        let root = {
            fs::create_dir_all(&root).unwrap();
            root.canonicalize().unwrap()
        };
        let cc = format!("-Clinker={}/lib/offload/bin/cc", root.display());
        let program = |name: &str| format!("{}/lib/offload/bin/{name}", root.display());
        // Cargo starts clippy-driver as a wrapper: `clippy-driver <rustc> ARGS`, with `rustc`
        // as cargo found it (a bare name on `PATH`, a path, a renamed rustc).
        for rustc in ["rustc", "/x/rustc", "/x/rustc.real"] {
            let wrapped = started_with(&root, "clippy-driver", &[rustc, "--crate-name", "app"]);
            let at = wrapped.iter().position(|a| *a == program("clippy-driver")).unwrap();
            assert_eq!(wrapped[at + 1..], [rustc, &cc, "--crate-name", "app"]);
        }
        // Not as a wrapper: the arguments as given.
        for direct in [&["-vV"][..], &["/x/rustcx", "-vV"]] {
            let args = started_with(&root, "clippy-driver", direct);
            let at = args.iter().position(|a| *a == program("clippy-driver")).unwrap();
            assert_eq!(args[at + 1..], *direct);
        }
        for name in ["rustdoc", "rustfmt"] {
            let args = started_with(&root, name, &["--check", "a b.rs"]);
            let at = args.iter().position(|a| *a == program(name)).unwrap();
            assert_eq!(args[at + 1..], ["--check", "a b.rs"], "{name}");
        }
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn rust_src_leaves_out_what_upstream_leaves_out() {
        let root = std::env::temp_dir().join(format!("offload-rust-src-{}", std::process::id()));
        let (library, out) = (root.join("library"), root.join("out"));
        let files = [
            "Cargo.toml",
            "core/src/offload/mod.rs",
            "stdarch/crates/core_arch/src/lib.rs",
            "stdarch/crates/intrinsic-test/src/main.rs",
            "stdarch/Cargo.toml",
            "backtrace/crates/x/lib.rs",
            "backtrace/src/lib.rs",
            "Cargo.lock.orig",
            "std/src/lib.rs~",
            "target/debug/x",
        ];
        for file in files {
            let path = library.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, file).unwrap();
        }
        copy_sources(&library, &out).unwrap();
        let kept: Vec<&str> = files.into_iter().filter(|f| out.join(f).is_file()).collect();
        assert_eq!(
            kept,
            [
                "Cargo.toml",
                "core/src/offload/mod.rs",
                "stdarch/crates/core_arch/src/lib.rs",
                "backtrace/src/lib.rs"
            ]
        );
        assert!(copy_sources(&root.join("missing"), &out).is_err());
        let _ = fs::remove_dir_all(&root);
    }
}
