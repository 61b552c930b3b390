//! `[SYSROOT]`: the Debian trixie root that provides LLVM 22, and how commands enter it.
//!
//! The machine runs an older Debian whose LLVM is too old for rustc 1.95, so the build runs in
//! a trixie root. Each command enters it in a private mount namespace (`unshare --mount
//! --propagation private`): the bind mounts it needs (the cache, the stage-0 toolchain, `/tmp`,
//! the caller's directories) exist only for that command and vanish with it, so nothing
//! outlives a killed build.
//!
//! As root, `debootstrap` makes the root. As any other user ([`privileged`] is false),
//! `mmdebstrap --mode=unshare` makes it as a tarball (in a user namespace that maps the user's
//! subordinate ids, `/etc/subuid` and `/etc/subgid`), which the user unpacks, so that every
//! file of it is the user's; each command then enters it in a user namespace too (`unshare
//! --user --map-root-user`), where the user is root and so owns the root's files.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output};

use crate::cache::{Cache, stage0_toolchain};
use crate::fetch::apt_mirrors;
use crate::pins::{SYSROOT_LLVM_BIN, SYSROOT_PACKAGES, SYSROOT_SUITE};
use crate::ui::{Context, Result, Timer, fail, run_inherited, say};

const STEP: &str = "SYSROOT";

/// Makes the sysroot unless its completion stamp exists. A half-made one (`sysroot.tmp`, left
/// by an interrupted run) is discarded and made again. A complete one made before a package
/// joined `SYSROOT_PACKAGES` gets the packages its stamp does not list, with `apt-get` inside it
/// as root, and is made again without root.
pub fn ensure(cache: &Cache) -> Result<()> {
    if let Ok(stamp) = fs::read_to_string(cache.sysroot_stamp()) {
        if privileged() {
            return install_missing(cache, &stamp);
        }
        owned_by_this_user(cache)?;
        if missing_packages(&stamp).is_empty() {
            return Ok(());
        }
        // `apt-get` cannot install into it in a user namespace that maps one user.
        unprivileged_tools()?;
        say(STEP, "the sysroot lacks packages that the build needs: making it again");
        fs::remove_file(cache.sysroot_stamp()).at(STEP, &cache.sysroot_stamp())?;
    }
    if !privileged() {
        // Before anything of an earlier sysroot goes.
        unprivileged_tools()?;
    }
    let tmp = cache.root.join("sysroot.tmp");
    discard_incomplete(cache, &tmp)?;
    let Some(mirror) = apt_mirrors(Path::new("/etc/apt")).into_iter().next() else {
        return fail(
            STEP,
            "no Debian mirror in /etc/apt/sources.list{,.d}: cannot make the sysroot",
        );
    };
    if !privileged() {
        make_unprivileged(cache, &tmp, &mirror)?;
        return complete(cache, &tmp);
    }
    make_privileged(cache, &tmp, &mirror)
}

/// `result`, or a failure that names `path` and why it may not be removable: without root, a
/// folder unpacked read-only (`0555`) cannot be emptied.
fn writable<T>(result: std::io::Result<T>, path: &Path) -> Result<T> {
    result.or_fail(STEP, |e| {
        format!("{}: {e} (a folder in it read-only? `chmod -R u+w` it)", path.display())
    })
}

/// Removes the half-made sysroot `tmp` and a sysroot without a completion stamp.
fn discard_incomplete(cache: &Cache, tmp: &Path) -> Result<()> {
    if tmp.exists() {
        say(STEP, format!("discarding the half-made {}", tmp.display()));
        writable(fs::remove_dir_all(tmp), tmp)?;
    }
    if cache.sysroot().exists() {
        say(
            STEP,
            format!("{} has no completion stamp: making it again", cache.sysroot().display()),
        );
        writable(fs::remove_dir_all(cache.sysroot()), &cache.sysroot())?;
    }
    Ok(())
}

/// Moves the made sysroot `tmp` into place and writes its completion stamp.
fn complete(cache: &Cache, tmp: &Path) -> Result<()> {
    writable(fs::rename(tmp, cache.sysroot()), tmp)?;
    writable(fs::write(cache.sysroot_stamp(), SYSROOT_PACKAGES.join("\n")), &cache.sysroot_stamp())
}

/// Makes the sysroot as root with `debootstrap` (installed with `apt-get` if missing) from
/// `mirror`, in `tmp` (a path that does not exist), and completes it.
fn make_privileged(cache: &Cache, tmp: &Path, mirror: &str) -> Result<()> {
    if Command::new("debootstrap").arg("--version").output().is_err() {
        let timer = Timer::start(STEP, "installing debootstrap with apt-get");
        run_inherited(STEP, Command::new("apt-get").args(["install", "-y", "-q", "debootstrap"]))
            .map_err(|f| f.advise("install debootstrap by hand and rerun"))?;
        timer.done();
    }
    let timer = Timer::start(
        STEP,
        format!(
            "debootstrap {SYSROOT_SUITE} with LLVM 22 into {} (about 2 minutes)",
            tmp.display()
        ),
    );
    run_inherited(
        STEP,
        Command::new("debootstrap")
            .arg("--variant=minbase")
            .arg(format!("--include={}", SYSROOT_PACKAGES.join(",")))
            .arg(SYSROOT_SUITE)
            .arg(tmp)
            .arg(mirror),
    )
    .map_err(|f| f.advise("check the network to the package registry and rerun"))?;
    complete(cache, tmp)?;
    timer.done();
    Ok(())
}

/// The effective user id of `./x.py` (the second field of `Uid:` in `/proc/self/status`);
/// `None` if it cannot be read.
fn effective_uid() -> Option<u32> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Whether `./x.py` runs as root (effective user id 0).
pub fn privileged() -> bool {
    effective_uid() == Some(0)
}

/// Fails unless the sysroot's folder belongs to this user, as it does when this user made it
/// without root: in the user namespace, the files of one that root made are nobody's, and the
/// build would fail deep inside.
fn owned_by_this_user(cache: &Cache) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let owner = fs::metadata(cache.sysroot()).map(|m| m.uid()).ok();
    if owner.is_some() && owner != effective_uid() {
        return fail(
            STEP,
            format!(
                "{} was made by another user (root?): remove it as that user, or set \
                 OFFLOAD_FORK_CACHE to a folder of your own",
                cache.sysroot().display()
            ),
        );
    }
    Ok(())
}

/// What making the sysroot without root needs, which the errors name.
const UNPRIVILEGED_NEEDS: &str = "making the sysroot without root needs `mmdebstrap` and \
    `newuidmap` (Debian packages mmdebstrap and uidmap), a subordinate id range of this user by \
    name in /etc/subuid and /etc/subgid (`usermod --add-subuids 100000-165535 --add-subgids \
    100000-165535 USER`, as root) and unprivileged user namespaces; or ./x.py run as root";

/// Fails, saying what is missing, unless `mmdebstrap`, `newuidmap` and a subordinate id range
/// of this user (a line `NAME:start:count` in `/etc/subuid` and `/etc/subgid`, which is how
/// `mmdebstrap` looks it up) are there.
fn unprivileged_tools() -> Result<()> {
    for tool in ["mmdebstrap", "newuidmap"] {
        if Command::new(tool).arg("--version").output().is_err() {
            return fail(STEP, format!("`{tool}` is not installed: {UNPRIVILEGED_NEEDS}"));
        }
    }
    let user = Command::new("id").arg("-un").output().ok().filter(|o| o.status.success());
    let Some(user) = user.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()) else {
        return fail(STEP, format!("`id -un` names no user: {UNPRIVILEGED_NEEDS}"));
    };
    let ranged = |file: &str| {
        let text = fs::read_to_string(file).unwrap_or_default();
        text.lines().any(|l| l.split(':').next() == Some(user.as_str()))
    };
    if !ranged("/etc/subuid") || !ranged("/etc/subgid") {
        return fail(STEP, format!("`{user}` has no subordinate id range: {UNPRIVILEGED_NEEDS}"));
    }
    Ok(())
}

/// Makes the sysroot in `tmp` (a path that does not exist) without root: `mmdebstrap
/// --mode=unshare` writes it as a tarball from `mirror`, and `tar` unpacks it as the user, so
/// that its files are the user's (its device nodes are left out: `/dev` is the machine's,
/// bound when a command enters). [`unprivileged_tools`] checked what it needs. `mmdebstrap`
/// builds the root in `$TMPDIR` (`/tmp`) first: about 2 GB there.
fn make_unprivileged(cache: &Cache, tmp: &Path, mirror: &str) -> Result<()> {
    let tarball = cache.root.join("sysroot.tar");
    let timer = Timer::start(
        STEP,
        format!(
            "mmdebstrap {SYSROOT_SUITE} with LLVM 22 into {}, without root (about 3 minutes)",
            tmp.display()
        ),
    );
    let made = run_inherited(
        STEP,
        Command::new("mmdebstrap")
            .args(["--mode=unshare", "--variant=minbase", "--format=tar"])
            .arg(format!("--include={}", SYSROOT_PACKAGES.join(",")))
            .arg(SYSROOT_SUITE)
            .arg(&tarball)
            .arg(mirror),
    )
    .map_err(|f| {
        f.advise(format!(
            "{UNPRIVILEGED_NEEDS}; check the network to the package registry and the space in \
             $TMPDIR"
        ))
    })
    .and_then(|()| {
        fs::create_dir(tmp).at(STEP, tmp)?;
        let mut tar = Command::new("tar");
        tar.arg("-C").arg(tmp).arg("-xf").arg(&tarball).arg("--exclude=./dev/*");
        run_inherited(STEP, &mut tar)
    });
    // Also when making or unpacking it failed.
    let _ = fs::remove_file(&tarball);
    made?;
    timer.done();
    Ok(())
}

/// The `SYSROOT_PACKAGES` that `stamp` (the completion stamp's text, one package per line) does
/// not list.
fn missing_packages(stamp: &str) -> Vec<&'static str> {
    SYSROOT_PACKAGES.iter().copied().filter(|p| !stamp.lines().any(|l| l == *p)).collect()
}

/// Installs the `SYSROOT_PACKAGES` that `stamp` (the completion stamp's text, one package per
/// line) does not list, then rewrites the stamp.
fn install_missing(cache: &Cache, stamp: &str) -> Result<()> {
    let missing = missing_packages(stamp);
    if missing.is_empty() {
        return Ok(());
    }
    let timer = Timer::start(STEP, format!("installing {} into the sysroot", missing.join(" ")));
    let script = format!(
        "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -q --no-install-recommends {} >/dev/null",
        missing.join(" ")
    );
    let status =
        Enter::new(cache, &cache.root, "/bin/sh").args(["-c", &script]).status(cache, STEP)?;
    if !status.success() {
        return fail(
            STEP,
            format!(
                "apt-get could not install {} into {}; check the network to the package \
                 registry and rerun",
                missing.join(" "),
                cache.sysroot().display()
            ),
        );
    }
    fs::write(cache.sysroot_stamp(), SYSROOT_PACKAGES.join("\n"))
        .at(STEP, &cache.sysroot_stamp())?;
    timer.done();
    Ok(())
}

/// The machine's CA bundle, and where the sysroot gets a copy of it.
const HOST_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
const SYSROOT_CA_BUNDLE: &str = "/etc/ssl/certs/offload-fork-host-ca-certificates.crt";

/// A command to run inside the sysroot.
pub struct Enter {
    /// Host directories bind-mounted at the same path inside the sysroot (read-write).
    pub binds: Vec<PathBuf>,
    /// Working directory inside the sysroot (a path that is valid there).
    pub cwd: PathBuf,
    /// Environment of the command; nothing else of the caller's environment passes.
    pub env: Vec<(String, OsString)>,
    pub program: OsString,
    pub args: Vec<OsString>,
}

/// Directories of the sysroot that must never be shadowed by a bind of a caller's directory.
const SYSTEM_DIRS: &[&str] =
    &["", "bin", "boot", "dev", "etc", "lib", "lib64", "proc", "run", "sbin", "sys", "usr", "var"];

/// The sysroot's own program folders, after LLVM's on `PATH`.
const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

impl Enter {
    pub fn new(cache: &Cache, cwd: &Path, program: impl Into<OsString>) -> Enter {
        let mut env: Vec<(String, OsString)> = vec![
            ("HOME".into(), "/root".into()),
            ("PATH".into(), format!("{SYSROOT_LLVM_BIN}:{SYSTEM_PATH}").into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("CARGO_HTTP_CAINFO".into(), SYSROOT_CA_BUNDLE.into()),
            ("TERM".into(), std::env::var_os("TERM").unwrap_or_else(|| "dumb".into())),
        ];
        // What a user sets for rustc and cargo passes through; the rest of the host's
        // environment (its PATH, rustup's proxies) means nothing inside the sysroot.
        for (key, value) in std::env::vars_os() {
            let Some(key) = key.to_str() else { continue };
            if key.starts_with("RUST") || key.starts_with("CARGO") || key == "OFFLOAD_FORK_CACHE" {
                if key != "RUSTUP_TOOLCHAIN" && key != "CARGO_HOME" && key != "RUSTUP_HOME" {
                    env.push((key.to_string(), value));
                }
            }
        }
        Enter {
            binds: vec![cache.root.clone(), cwd.to_path_buf()],
            cwd: cwd.to_path_buf(),
            env,
            program: program.into(),
            args: Vec::new(),
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Enter {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Enter {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: &str, value: impl Into<OsString>) -> Enter {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.into()));
        self
    }

    pub fn bind(mut self, dir: impl Into<PathBuf>) -> Enter {
        self.binds.push(dir.into());
        self
    }

    /// The folders bound into the sysroot at their own paths, each with whether it is
    /// read-only, parents before children: the cache, the stage-0 toolchain (read-only) and the
    /// caller's folders; `/tmp` is bound too, whole.
    pub fn bound_dirs(&self, cache: &Cache) -> Vec<(PathBuf, bool)> {
        // Exact binds: the cache and the stage-0 toolchain (read-only).
        let mut binds: Vec<(PathBuf, bool)> =
            vec![(cache.root.clone(), false), (stage0_toolchain(), true)];
        for dir in &self.binds {
            if dir == &cache.root {
                continue;
            }
            // Bind a caller's directory from its top-level folder down, so that relative
            // paths that climb out of it (`../x`) still resolve; system folders of the sysroot
            // are never shadowed, only the directory itself is bound there.
            let top = dir.components().nth(1).map(|c| PathBuf::from("/").join(c));
            let Some(top) = top else { continue };
            let top_name = top.to_string_lossy().trim_start_matches('/').to_string();
            if top_name == "tmp" {
                continue; // all of /tmp is bound already
            }
            let target = if SYSTEM_DIRS.contains(&top_name.as_str()) { dir.clone() } else { top };
            binds.push((target, false));
        }
        // Parents before children, so that a later bind is not hidden by an earlier one.
        binds.sort_by_key(|(d, _)| d.components().count());
        binds.dedup_by(|a, b| a.0 == b.0);
        binds
    }

    /// Runs this inside `cache`'s sysroot to its end, with the caller's standard streams; its
    /// exit status. A failure to start `unshare` is a [`Failure`](crate::ui::Failure) of `step`.
    pub fn status(&self, cache: &Cache, step: &'static str) -> Result<ExitStatus> {
        status(step, &mut self.command(cache)?)
    }

    /// Runs this inside `cache`'s sysroot to its end, capturing its standard output and error.
    /// A failure to start `unshare` is a [`Failure`](crate::ui::Failure) of `step`.
    pub fn output(&self, cache: &Cache, step: &'static str) -> Result<Output> {
        output(step, &mut self.command(cache)?)
    }

    /// The `unshare` command that runs this inside `cache`'s sysroot.
    pub fn command(&self, cache: &Cache) -> Result<Command> {
        let root = cache.sysroot();
        if !cache.sysroot_stamp().exists() {
            return fail(STEP, format!("{} is not complete: run `./x.py build`", root.display()));
        }
        // The resolver configuration may change between boots; cargo needs a current one.
        if let Ok(conf) = fs::read("/etc/resolv.conf") {
            let inside = root.join("etc/resolv.conf");
            if fs::read(&inside).ok().as_deref() != Some(&conf[..]) {
                let _ = fs::remove_file(&inside);
                let _ = fs::write(&inside, &conf);
            }
        }
        // The machine's own CA bundle (which may hold the certificate of a proxy in front of
        // the package registries): cargo inside the sysroot reads it through
        // CARGO_HTTP_CAINFO, set by `Enter::new`.
        if let Ok(bundle) = fs::read(HOST_CA_BUNDLE) {
            let inside = root.join(SYSROOT_CA_BUNDLE.trim_start_matches('/'));
            if fs::read(&inside).ok().as_deref() != Some(&bundle[..]) {
                let _ = fs::write(&inside, &bundle);
            }
        }
        // `chroot` is in `/usr/sbin`, which a user's `PATH` may lack.
        let mut script =
            String::from("set -e\nPATH=\"/usr/sbin:/usr/bin:/sbin:/bin:$PATH\"\nR=\"$1\"; shift\n");
        for special in ["proc", "dev", "sys"] {
            script.push_str(&format!("mount --rbind /{special} \"$R/{special}\"\n"));
        }
        script.push_str("mount --rbind /tmp \"$R/tmp\"\n");
        for (dir, read_only) in &self.bound_dirs(cache) {
            let d = shell_quote(&dir.to_string_lossy());
            script.push_str(&format!("mkdir -p \"$R\"{d}\nmount --bind {d} \"$R\"{d}\n"));
            if *read_only {
                script.push_str(&format!("mount -o remount,bind,ro \"$R\"{d}\n"));
            }
        }
        script.push_str("cd=\"$1\"; shift\nexec chroot \"$R\" /usr/bin/env -i \"$@\"\n");
        // `env -i K=V ... sh -c 'cd DIR && exec PROG ARGS'`
        let mut cmd = Command::new("unshare");
        if !privileged() {
            // The user is root there, and owner of the sysroot's files (see the module's
            // documentation); mounts need a user namespace of its own.
            cmd.args(["--user", "--map-root-user"]);
        }
        cmd.args(["--mount", "--propagation", "private", "sh", "-c", &script, "enter"]);
        cmd.arg(&root).arg(&self.cwd);
        for (k, v) in &self.env {
            let mut kv = OsString::from(k);
            kv.push("=");
            kv.push(v);
            cmd.arg(kv);
        }
        cmd.args(["/bin/sh", "-c", "cd \"$0\" && exec \"$@\""]);
        cmd.arg(&self.cwd).arg(&self.program).args(&self.args);
        Ok(cmd)
    }
}

/// Runs `cmd`, an [`Enter::command`] that a caller completed (with a run plan, say), with the
/// caller's standard streams; its exit status. A failure to start `unshare` is a
/// [`Failure`](crate::ui::Failure) of `step`.
pub fn status(step: &'static str, cmd: &mut Command) -> Result<ExitStatus> {
    cmd.status().context(step, cannot_start)
}

/// As [`status`], capturing the command's standard output and error.
pub fn output(step: &'static str, cmd: &mut Command) -> Result<Output> {
    cmd.output().context(step, cannot_start)
}

/// As [`status`], started with the streams the caller set and not waited for.
pub fn spawn(step: &'static str, cmd: &mut Command) -> Result<Child> {
    cmd.spawn().context(step, cannot_start)
}

/// What fails when a command that enters the sysroot could not start.
fn cannot_start() -> String {
    "cannot start unshare".into()
}

/// Quotes `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
