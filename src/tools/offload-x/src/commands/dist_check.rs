//! `[DIST]` of `./x.py test`: the dist toolchain, installed as a user without root installs
//! it, outside the sysroot.
//!
//! The tarball of `./x.py dist` (built once per toolchain, [`super::dist::ensure`]) is unpacked
//! by the unprivileged user `nobody` (uid 65534; run without root, `./x.py` runs it as its own
//! user) into a new folder (created by this check; one that exists already is an error, not
//! reused), linked with rustup into
//! a fresh `RUSTUP_HOME` (`rustup toolchain link offload`), and used with rustup's proxies on
//! the workspace `src/tools/offload-x/dist-check` (a kernel library with a generic kernel, a
//! program with a build script and a registry crate from a vendored source):
//! 1. `rustc +offload -vV` names the fork's compiler;
//! 2. `cargo +offload offload run --offload-arch=host` gives the right results on the CPU
//!    device, and the build script (a host program linked by the toolchain's linker) ran; the
//!    program's interpreter (`PT_INTERP`) and run path are the toolchain's, read by `readelf`;
//! 3. `cargo +offload offload test --offload-arch=host` passes the program's test;
//! 4. `cargo +offload offload build --offload-arch=gfx90a,sm_90` writes both images (checked
//!    by `ld.lld` and `ptxas`/`nvlink` as every build checks them);
//! 5. `cargo +offload offload bundle --offload-arch=host`, started from the bundle, gives the
//!    right results;
//! 6. the same workspace with the machine's `cc` as the host's linker
//!    (`CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=cc`, into a target folder of its own) is
//!    refused with an error that names the variable: that linker would give the program the
//!    machine's loader beside the toolchain's C library, and it could not start.
//! 7. rustup's components: `cargo +offload doc` documents the kernel library, `cargo +offload
//!    test --doc` runs its doctest (linked by the toolchain's linker), `cargo +offload clippy`
//!    lints the workspace (`-W clippy::pedantic`, whose lints it must print), `cargo +offload
//!    fmt --check` passes on the workspace (formatted with its `rustfmt.toml`) and fails with a
//!    diff at 50 columns;
//! 8. `cargo +offload check` and `cargo +offload clippy` of `bad-launch` (a launch with the
//!    kernel's arguments in another order) fail, naming the kernel and the types, without
//!    `cargo offload`;
//! 9. `cargo offload run` with a logging `RUSTC_WRAPPER` (`log-rustc`, written by the check)
//!    runs the user's wrapper for the edited program and gives the right results;
//! 10. what rust-analyzer uses: its proc-macro server starts (`--version` only: no macro is
//!     expanded), and the library sources lie where it looks for them, under `rustc +offload
//!     --print sysroot`.
//!
//! All of it runs under `strace -f`, tracing `unshare`, `setns`, `chroot`, `pivot_root`, the
//! mount calls old and new (`mount`, `umount2`, `fsopen`, `fsmount`, `move_mount`, `open_tree`,
//! `mount_setattr`) and `clone`/`clone3`, which must record none of those calls and no clone
//! with a `CLONE_NEW*` flag: the toolchain needs no namespace, no `chroot` and no mount.
//! Every program the steps start is the toolchain's or the machine's (`sh`, `tar`), none of the
//! sysroot's.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::dist::{copy, copy_tree};
use crate::cache::Cache;
use crate::ui::{Context, Result, Timer, fail, say};

const STEP: &str = "DIST";

/// The unprivileged user (and group) of the check.
const NOBODY: u32 = 65534;

/// The system calls that the toolchain must not make.
const FORBIDDEN: &str = "unshare,setns,chroot,pivot_root,mount,umount2,fsopen,fsmount,move_mount,\
                         open_tree,mount_setattr";

/// The system calls that make processes, traced for the namespace flags they must not have.
const CLONES: &str = "clone,clone3";

/// The steps, each `name: command`, run in order in the workspace by `sh` as `nobody` (or the
/// user without root); each
/// writes `<name>.out`, `<name>.err` and `<name>.status` into the check's folder.
const STEPS: [(&str, &str); 16] = [
    ("rustc", "rustc +offload -vV"),
    ("run", "cargo +offload offload run --offline --release --offload-arch=host -- 1000"),
    ("test", "cargo +offload offload test --offline --release --offload-arch=host"),
    ("build", "cargo +offload offload build --offline --release --offload-arch=gfx90a,sm_90"),
    (
        "bundle",
        "cargo +offload offload bundle --offline --release --offload-arch=host --out \"$T/bundle\"",
    ),
    ("bundled", "cd \"$T\" && \"$T/bundle/app\" 700"),
    (
        "user-linker",
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=cc CARGO_TARGET_DIR=\"$T/linker-target\" \
         cargo +offload offload build --offline --release --offload-arch=host",
    ),
    ("doc", "cargo +offload doc --offline --no-deps && ls target/doc/kernels/fn.blocks.html"),
    ("doctest", "cargo +offload test --offline --doc -p kernels"),
    ("clippy", "cargo +offload clippy --offline -- -W clippy::pedantic"),
    ("fmt", "cargo +offload fmt --check"),
    ("fmt-narrow", "cargo +offload fmt --check -- --config max_width=50"),
    ("bad-launch", "cd bad-launch && cargo +offload check --offline"),
    ("bad-launch-clippy", "cd bad-launch && cargo +offload clippy --offline"),
    (
        "rust-analyzer",
        "RUST_ANALYZER_INTERNALS_DO_NOT_USE=1 \
         \"$T/rust-offload/libexec/rust-analyzer-proc-macro-srv\" --version && \
         ls \"$(rustc +offload --print sysroot)/lib/rustlib/src/rust/library/core/src/\
         offload/mod.rs\"",
    ),
    (
        "wrapper",
        "touch app/src/main.rs && RUSTC_WRAPPER=\"$T/log-rustc\" cargo +offload offload run \
         --offline --release --offload-arch=host -- 300 && grep -o -m1 -e '--crate-name app' \
         \"$T/rustc-wrapper.log\"",
    ),
];

/// Runs the check (see the module's documentation).
pub fn check(project: &Path, cache: &Cache) -> Result<()> {
    let tarball = super::dist::ensure(project, cache)?;
    let timer = Timer::start(STEP, "the dist toolchain as a user without root: cargo +offload");
    let work = new_folder()?;
    // The unpacked toolchain (1.1 GB) goes whether the check passes or not: a failure's
    // message holds the steps' output.
    let result = check_in(project, &tarball, &work);
    let _ = fs::remove_dir_all(&work);
    result?;
    timer.done();
    Ok(())
}

/// The check in `work` (a new folder) with `tarball`.
fn check_in(project: &Path, tarball: &Path, work: &Path) -> Result<()> {
    lay_out(project, tarball, work)?;
    // Without root there is no other user to become: the check runs as this user, who (unlike
    // `nobody`) can read the build cache, so it no longer shows that the toolchain needs none
    // of the sysroot's files; the traced calls are checked the same.
    let privileged = crate::sysroot::privileged();
    let who = if privileged { format!("uid {NOBODY}") } else { "this user".to_string() };
    if privileged {
        shell(&format!("chown -R {NOBODY}:{NOBODY} {}", quote(work)))?;
    }
    let status = run_traced(work, privileged)?;
    let read = |name: &str| fs::read_to_string(work.join(name)).unwrap_or_default();
    if !status.success() {
        return fail(
            STEP,
            format!(
                "unpacking or linking the toolchain as {who} failed ({status}):\n{}",
                read("link.err")
            ),
        );
    }
    let calls = forbidden_calls(&read("strace.log"));
    if !calls.is_empty() {
        return fail(STEP, format!("the toolchain made calls it must not:\n{}", calls.join("\n")));
    }
    check_steps(work, &who)?;
    let program = work.join("ws/target/offload/host/x86_64-unknown-linux-gnu/release/app");
    check_loader(&program, &work.join("rust-offload"))?;
    say(STEP, format!("as {who}: {}", read("rustc.out").lines().next().unwrap_or("")));
    say(STEP, format!("no {FORBIDDEN} call, no clone into a new namespace (strace -f)"));
    Ok(())
}

/// Puts into `work` what the check's user needs: `bin/` with rustup and its `cargo` and `rustc`
/// proxies, `tarball` as `toolchain.tar.xz`, the workspace `dist-check` as `ws/`, and
/// `check.sh`, which unpacks and links the toolchain and runs each of [`STEPS`] in `ws/`,
/// writing `NAME.out`, `NAME.err` and `NAME.status` beside itself.
fn lay_out(project: &Path, tarball: &Path, work: &Path) -> Result<()> {
    let rustup = home_rustup()?;
    fs::create_dir_all(work.join("bin")).at(STEP, work)?;
    copy(&rustup, &work.join("bin/rustup"))?;
    for proxy in ["cargo", "rustc"] {
        std::os::unix::fs::symlink("rustup", work.join("bin").join(proxy)).at(STEP, work)?;
    }
    copy(tarball, &work.join("toolchain.tar.xz"))?;
    copy_tree(&project.join("src/tools/offload-x/dist-check"), &work.join("ws"))?;
    let wrapper = "#!/bin/sh\n# The check's RUSTC_WRAPPER: logs each compiler run, then runs it.\n\
                   printf '%s\\n' \"$*\" >> \"$(dirname \"$0\")/rustc-wrapper.log\"\n\
                   exec \"$@\"\n";
    super::dist::write(&work.join("log-rustc"), wrapper, 0o755)?;
    let mut script = String::from(
        "T=$(pwd -P)\ntar -xJf toolchain.tar.xz || exit 1\n\
         rustup toolchain link offload \"$T/rust-offload\" > link.out 2> link.err || exit 1\n",
    );
    for (name, command) in STEPS {
        script.push_str(&format!(
            "(cd \"$T/ws\" && {command}) > \"$T/{name}.out\" 2> \"$T/{name}.err\"\n\
             echo $? > \"$T/{name}.status\"\n"
        ));
    }
    fs::write(work.join("check.sh"), script).at(STEP, work)
}

/// Runs `work`'s `check.sh` under `strace -f` (its log: `work/strace.log`), as `nobody` when
/// `privileged`, with an environment of only `HOME` (`work`), `RUSTUP_HOME`, `CARGO_HOME` and a
/// `PATH` that starts with `work/bin`; the script's exit status.
fn run_traced(work: &Path, privileged: bool) -> Result<std::process::ExitStatus> {
    let trace = work.join("strace.log");
    let path = format!("{}:/usr/bin:/bin", work.join("bin").display());
    let mut strace = Command::new("strace");
    strace
        .args(["-f", "-qq", "-e", "signal=none", "-e", &format!("trace={FORBIDDEN},{CLONES}")])
        .arg("-o")
        .arg(&trace);
    if privileged {
        strace.args(["setpriv", &format!("--reuid={NOBODY}"), &format!("--regid={NOBODY}")]);
        strace.arg("--clear-groups");
    }
    strace
        .args(["env", "-i"])
        .arg(format!("HOME={}", work.display()))
        .arg(format!("RUSTUP_HOME={}", work.join(".rustup").display()))
        .arg(format!("CARGO_HOME={}", work.join(".cargo").display()))
        .arg(format!("PATH={path}"))
        .args(["sh", "-c", "cd \"$HOME\" && sh ./check.sh"])
        .status()
        .context(STEP, || "cannot start strace (`apt install strace`)".into())
}

/// Fails, naming the step, its output and the user `who` ran it as, unless each of [`STEPS`]
/// that `check.sh` ran in `work` ended as it must and printed what it must.
fn check_steps(work: &Path, who: &str) -> Result<()> {
    let read = |name: &str| fs::read_to_string(work.join(name)).unwrap_or_default();
    // Each step's name, whether it must succeed, and what it must print.
    let expected: [(&str, bool, &[&str]); 16] = [
        ("rustc", true, &["rustc 1.95.0", "host: x86_64-unknown-linux-gnu"]),
        ("run", true, &["build script: ran", "saxpy: 0 of 1000 wrong", "scale: 0 of 1000 wrong"]),
        ("test", true, &["test tests::kernels_on_the_device ... ok"]),
        ("build", true, &["image gfx90a: ", "image sm_90: "]),
        ("bundle", true, &[]),
        ("bundled", true, &["saxpy: 0 of 700 wrong", "scale: 0 of 700 wrong"]),
        (
            "user-linker",
            false,
            &["would be linked by `cc`", "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER"],
        ),
        ("doc", true, &["target/doc/kernels/fn.blocks.html"]),
        ("doctest", true, &["kernels/src/lib.rs - blocks", "1 passed"]),
        ("clippy", true, &["implied by `-W clippy::pedantic`"]),
        ("fmt", true, &[]),
        ("fmt-narrow", false, &["Diff in "]),
        (
            "bad-launch",
            false,
            &[
                "`offload` passes `(&[f32], f32, &mut [f32])` to the kernel `",
                "saxpy`, which takes `(f32, &[f32], &mut [f32])`",
            ],
        ),
        (
            "bad-launch-clippy",
            false,
            &[
                "`offload` passes `(&[f32], f32, &mut [f32])` to the kernel `",
                "saxpy`, which takes `(f32, &[f32], &mut [f32])`",
            ],
        ),
        ("wrapper", true, &["saxpy: 0 of 300 wrong", "--crate-name app"]),
        (
            "rust-analyzer",
            true,
            &[
                "rust-analyzer-proc-macro-srv 1.95.0",
                "lib/rustlib/src/rust/library/core/src/offload/mod.rs",
            ],
        ),
    ];
    for (name, succeeds, texts) in expected {
        let (out, err) = (read(&format!("{name}.out")), read(&format!("{name}.err")));
        let status = read(&format!("{name}.status"));
        let missing = texts.iter().find(|t| !out.contains(*t) && !err.contains(*t));
        if (status.trim() == "0") != succeeds || missing.is_some() {
            let command = STEPS.iter().find(|(n, _)| *n == name).map_or("", |(_, c)| c);
            return fail(
                STEP,
                format!(
                    "as {who}, `{command}` exited with {} and printed no {missing:?}\n\
                     --- stdout\n{out}--- stderr\n{}",
                    status.trim(),
                    crate::ui::tail(err.as_bytes(), 30)
                ),
            );
        }
    }
    Ok(())
}

/// A new folder for the check under the temporary folder: its name has this process's id and
/// the time, and it must not exist (`create_dir` fails on a folder that another user made).
fn new_folder() -> Result<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let work =
        std::env::temp_dir().join(format!("offload-dist-check-{}-{nanos}", std::process::id()));
    fs::create_dir(&work).at(STEP, &work)?;
    Ok(work)
}

/// The lines of an `strace` log (`-qq`, calls of [`FORBIDDEN`] and [`CLONES`]) that break the
/// rule: every call of [`FORBIDDEN`], and every clone with a `CLONE_NEW*` flag.
fn forbidden_calls(log: &str) -> Vec<String> {
    let clone = |l: &str| {
        CLONES.split(',').any(|c| {
            l.split_whitespace().nth(1).is_some_and(|call| call.starts_with(&format!("{c}(")))
        })
    };
    log.lines()
        .filter(|l| !l.contains("+++") && !l.contains("resumed>"))
        .filter(|l| !clone(l) || l.contains("CLONE_NEW"))
        .map(String::from)
        .collect()
}

/// Fails unless `program`'s interpreter (`PT_INTERP`) and run path (`DT_RPATH`/`DT_RUNPATH`)
/// lie in `toolchain` (the unpacked folder), as `readelf` shows them: a program that the
/// toolchain links starts with the toolchain's loader and C library on every machine.
fn check_loader(program: &Path, toolchain: &Path) -> Result<()> {
    let toolchain = toolchain.canonicalize().at(STEP, toolchain)?;
    let out = Command::new("readelf")
        .args(["--program-headers", "--dynamic", "--wide"])
        .arg(program)
        .output()
        .at(STEP, program)?;
    let text = String::from_utf8_lossy(&out.stdout);
    let interpreter = text
        .lines()
        .find_map(|l| l.split("Requesting program interpreter: ").nth(1))
        .map(|rest| rest.trim_end_matches(']').trim().to_string());
    let run_path = text
        .lines()
        .find(|l| l.contains("(RPATH)") || l.contains("(RUNPATH)"))
        .and_then(|l| l.split('[').nth(1))
        .map(|rest| rest.trim_end_matches(']').to_string());
    let inside = |path: &Option<String>| {
        path.as_deref().is_some_and(|p| {
            p.split(':').all(|p| fs::canonicalize(p).is_ok_and(|p| p.starts_with(&toolchain)))
        })
    };
    if !out.status.success() || !inside(&interpreter) || !inside(&run_path) {
        return fail(
            STEP,
            format!(
                "{}: interpreter {interpreter:?} and run path {run_path:?} are not all in {}",
                program.display(),
                toolchain.display()
            ),
        );
    }
    say(STEP, format!("the program starts with {}", interpreter.unwrap_or_default()));
    Ok(())
}

/// The rustup of this machine's user, which the check copies for `nobody` (whose home has
/// none), and for a user without root into the check's own home.
fn home_rustup() -> Result<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    match home.map(|h| h.join("bin/rustup")).filter(|r| r.is_file()) {
        Some(rustup) => Ok(rustup),
        None => fail(STEP, "no rustup in $CARGO_HOME/bin or ~/.cargo/bin: install rustup"),
    }
}

/// Runs `command` with `sh -c`; fails unless it succeeds.
fn shell(command: &str) -> Result<()> {
    let mut sh = Command::new("sh");
    crate::ui::run_captured(STEP, sh.args(["-c", command])).map(|_| ())
}

/// `path` quoted for `sh`.
fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strace_lines_that_break_the_rule() {
        let log = "12 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 13\n\
                   13 clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD}, 88) = 14\n\
                   14 clone3({flags=CLONE_NEWUSER|CLONE_NEWNS, exit_signal=SIGCHLD}, 88) = 15\n\
                   15 unshare(CLONE_NEWNS) = 0\n\
                   16 fsopen(\"tmpfs\", 0) = 3\n\
                   17 +++ exited with 0 +++\n";
        let calls = forbidden_calls(log);
        assert_eq!(calls.len(), 3, "{calls:?}");
        assert!(calls[0].contains("CLONE_NEWUSER"));
        assert!(calls[1].starts_with("15 unshare"));
        assert!(calls[2].starts_with("16 fsopen"));
    }
}
