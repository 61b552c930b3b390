//! `RUSTC_WRAPPER` of the host build, which cargo runs twice over one target folder with the
//! same flags, so that the second run finds fresh every crate that the first compiled (or
//! once: see the end). Each crate compiled for the target (cargo passes `--target` to those,
//! not to build scripts and proc macros) gets `-Zoffload=Host=<image>` (`image`: the path of
//! [`env::HOST_IMAGE`]), `--check-cfg=cfg(offload_device)` and its own manifest,
//! `<dir>/<crate name><extra filename>.json` (the host metadata pass, in the same
//! compilation). The runs differ in what a program (an executable, a test, a `cdylib`) does:
//! - the first ([`compile_run`]; [`env::HOST_LINK`] unset) compiles it with `-Zno-link`: rustc
//!   writes its objects and an `.rlink` file but no program, and an earlier program file is
//!   removed, so that cargo finds it missing and runs rustc for it again in the second run;
//!   the crate is recorded in [`env::HOST_PROGRAMS`] ([`record_program`]). A crate that is a
//!   library as well (`lib` and `cdylib`) is linked (its dependents need the library), and its
//!   program removed;
//! - the second ([`link_run`]) links it with `-Zlink-only` from that `.rlink` and the link
//!   arguments of [`env::HOST_LINK`] (the registration of the images, `\x1f`-separated). A
//!   program without an `.rlink` (one that a run which linked it left none of, removed so that
//!   it links new images), or whose sources or dependencies changed since the `.rlink` was
//!   written ([`stale`]), is compiled and linked in one compilation; a library and program is
//!   compiled and linked again (cargo removes its `rlib` before it runs rustc), and so are the
//!   crates that depend on it.
//!
//! When the device passes ran first ([`env::HOST_COMPILE_AND_LINK`] set beside
//! [`env::HOST_LINK`]), there is one run ([`link_run`] too): every program is compiled and
//! linked in one compilation, as plain cargo does, and recorded as in a first run.
//!
//! A manifest that a successful compilation wrote is sealed ([`seal_manifest`]).
//!
//! Where the user has a rustc wrapper of their own ([`crate::user_wrapper`]), every rustc runs
//! through it, with the flags above. A crate compiled for the target writes its manifest as a
//! side output that the user's wrapper does not know: when a compilation through it succeeds
//! without writing the manifest (a caching wrapper that gave its outputs from its cache), rustc
//! runs again without the wrapper, so that the manifest is this compilation's
//! ([`HostCrate::run`]).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::SystemTime;

use super::{crate_name, crate_types, flag_value, run_rustc, source_file};
use crate::args::is_flag;
use crate::env;
use crate::image_crate::DEVICE_CFG;
use crate::registration::{link_record, link_record_text};
use crate::role::{HostPass, LinkRun, Rustc};
use crate::util::{Context, Failure, Result, exit_code_of};
use crate::vendor::runtime_lib_dir;

/// The role of a wrapper of the host build's compile run: runs `rustc` as the first run does
/// (see the module's docs), then seals the manifest. Returns rustc's exit status; fails if a
/// program cannot be recorded, rustc cannot be started or the manifest cannot be sealed.
pub(crate) fn compile_run(rustc: &Rustc, pass: &HostPass) -> Result<ExitCode> {
    sealed(rustc, pass, |krate| krate.compile())
}

/// The role of a wrapper of the host build's run that links the programs (`link`): runs
/// `rustc` as the link run or the one run does (see the module's docs), then seals the
/// manifest. Returns rustc's exit status; fails as [`compile_run`] does, and when a program's
/// linker cannot link the offload runtime ([`crate::linker::check_program_linker`]).
pub(crate) fn link_run(rustc: &Rustc, pass: &HostPass, link: &LinkRun) -> Result<ExitCode> {
    sealed(rustc, pass, |krate| krate.link(link))
}

/// Runs `rustc` as `wrap` says for a crate compiled for the target, or as cargo asked for
/// anything else (a build script, a proc macro, cargo's probes); then seals the manifest that
/// a successful compilation wrote ([`seal_manifest`]).
fn sealed(
    rustc: &Rustc,
    pass: &HostPass,
    wrap: impl FnOnce(&HostCrate<'_>) -> Result<ExitCode>,
) -> Result<ExitCode> {
    let Some(name) = manifest_name(&rustc.args) else {
        let wrapper = pass.user_wrapper.as_deref();
        let mut cmd = command(rustc, wrapper);
        cmd.args(&rustc.args);
        return run_rustc(wrapper.unwrap_or(&rustc.program), cmd);
    };
    let manifest = Path::new(&pass.manifests).join(format!("{name}.json"));
    let before = modified(&manifest);
    let status = wrap(&HostCrate::new(rustc, pass, name))?;
    if status == ExitCode::SUCCESS {
        // A seal that cannot be written fails the compilation with status 1.
        seal_manifest(&manifest, before).map_err(|Failure(e, _)| Failure::new(e))?;
    }
    Ok(status)
}

/// `rustc`, through the user's `wrapper` if any, without the variables of the host build's
/// wrapper, which the compilation must not see (a build script that runs `cargo offload` would
/// take them for its own).
fn command(rustc: &Rustc, wrapper: Option<&str>) -> Command {
    let mut cmd = match wrapper {
        Some(wrapper) => {
            let mut cmd = Command::new(wrapper);
            cmd.arg(&rustc.program);
            cmd
        }
        None => Command::new(&rustc.program),
    };
    cmd.env_remove(env::USER_RUSTC_WRAPPER)
        .env_remove(env::HOST_METADATA_DIR)
        .env_remove(env::HOST_IMAGE)
        .env_remove(env::HOST_LINK)
        .env_remove(env::HOST_COMPILE_AND_LINK)
        .env_remove(env::HOST_PROGRAMS);
    cmd
}

/// A crate that the host build compiles for the target, as its wrapper sees it.
struct HostCrate<'a> {
    rustc: &'a Rustc,
    pass: &'a HostPass,
    /// `<crate name><extra filename>`: the name of its manifest and of its `.rlink` file.
    name: String,
    /// The flags that the wrapper adds to every compilation of the crate.
    offload: [String; 4],
    /// Whether rustc links a program of it (an executable, a test, a `cdylib`). A `dylib` is a
    /// library: its dependents link it, and the program that loads it links the registration.
    links: bool,
    /// Whether it is a library (as well).
    library: bool,
    /// Where rustc writes its outputs (`--out-dir`).
    out_dir: PathBuf,
}

impl<'a> HostCrate<'a> {
    /// The crate of `rustc`, whose manifest is `name` ([`manifest_name`]).
    fn new(rustc: &'a Rustc, pass: &'a HostPass, name: String) -> HostCrate<'a> {
        let args = &rustc.args;
        let offload = [
            "-Zunstable-options".to_string(),
            format!("-Zoffload=Host={}", pass.image),
            format!("-Zoffload=HostMetadata={}/{name}.json", pass.manifests),
            // A crate may test `offload_device` (set in the device passes) without a warning.
            format!("--check-cfg=cfg({DEVICE_CFG})"),
        ];
        let types = crate_types(args);
        let links = args.iter().any(|a| a == "--test")
            || types.iter().any(|t| matches!(*t, "bin" | "cdylib"));
        let library = types.iter().any(|t| matches!(*t, "lib" | "rlib" | "staticlib" | "dylib"));
        let out_dir = flag_value(args, "--out-dir").map(PathBuf::from).unwrap_or_default();
        HostCrate { rustc, pass, name, offload, links, library, out_dir }
    }

    /// Runs rustc with `args` (cargo's, or those of a link-only compilation), the offload
    /// flags and `extra`, through the user's wrapper if any; again without it when a
    /// compilation through it succeeded without writing the crate's manifest (see the module's
    /// docs; a link-only compilation writes none). What the wrapper printed reaches cargo only
    /// when its compilation stands: cargo must not read a crate's artifact messages twice.
    fn run(&self, args: &[String], extra: &[String]) -> Result<ExitCode> {
        let link_only = extra.iter().any(|a| a == "-Zlink-only");
        let wrapper = match self.pass.user_wrapper.as_deref() {
            Some(wrapper) if !link_only => wrapper,
            wrapper => {
                let cmd = self.command(wrapper, args, extra);
                return run_rustc(wrapper.unwrap_or(&self.rustc.program), cmd);
            }
        };
        let manifest = Path::new(&self.pass.manifests).join(format!("{}.json", self.name));
        let before = modified(&manifest);
        let output = self.command(Some(wrapper), args, extra).output().context_run(wrapper)?;
        if !output.status.success() || modified(&manifest) != before {
            std::io::stdout().write_all(&output.stdout).context(|| "cannot write".into())?;
            std::io::stderr().write_all(&output.stderr).context(|| "cannot write".into())?;
            return Ok(exit_code_of(wrapper, output.status));
        }
        run_rustc(&self.rustc.program, self.command(None, args, extra))
    }

    /// rustc with `args`, the offload flags and `extra`, through `wrapper` if any.
    fn command(&self, wrapper: Option<&str>, args: &[String], extra: &[String]) -> Command {
        let mut cmd = command(self.rustc, wrapper);
        cmd.args(args).args(&self.offload).args(extra);
        cmd
    }

    /// The program files that rustc links for the crate ([`program_files`]).
    fn programs(&self) -> Vec<PathBuf> {
        program_files(&self.out_dir, &self.rustc.args, &self.name)
    }

    /// Removes the program files of an earlier build, which would stay in place when the
    /// second run found the crate fresh.
    fn remove_programs(&self) {
        for program in self.programs() {
            let _ = fs::remove_file(program);
        }
    }

    /// Records that this run compiled the program ([`record_program`]).
    fn record_program(&self) -> Result<()> {
        record_program(Path::new(&self.pass.programs), &self.name, &self.rustc.args)
            .context(|| format!("cannot record the program `{}`", self.name))
    }

    /// The first run: a program is compiled without its link, anything else compiled (and a
    /// library's program removed).
    fn compile(&self) -> Result<ExitCode> {
        let args = &self.rustc.args;
        if self.links && !self.library {
            self.record_program()?;
            self.remove_programs();
            return self.run(args, &["-Zno-link".to_string()]);
        }
        let status = self.run(args, &[])?;
        if self.links && status == ExitCode::SUCCESS {
            self.remove_programs();
        }
        Ok(status)
    }

    /// The link run, or the one run (`link.one_run`): a program is linked with `link`'s
    /// arguments, from its `.rlink` file where that is there and fresh.
    fn link(&self, link: &LinkRun) -> Result<ExitCode> {
        let args = &self.rustc.args;
        if self.links
            && !link.link_args.is_empty()
            && let Some(triple) = flag_value(args, "--target")
        {
            crate::linker::check_program_linker(args, &self.name, triple, &runtime_lib_dir())
                .map_err(|Failure(e, _)| Failure::new(e))?;
        }
        let link_args: Vec<String> =
            link.link_args.iter().map(|a| format!("-Clink-arg={a}")).collect();
        if !self.links {
            return self.run(args, &[]);
        }
        if self.library {
            // Its program only would do, but cargo removed its `rlib` before starting rustc.
            return self.record_link(link, self.run(args, &link_args)?);
        }
        let rlink = self.out_dir.join(format!("{}.rlink", self.name));
        if link.one_run || !rlink.is_file() || stale(&rlink, &self.out_dir, &self.name, args) {
            if link.one_run {
                self.record_program()?;
            }
            // An `.rlink` of an earlier build is not this compilation's.
            let _ = fs::remove_file(&rlink);
            return self.record_link(link, self.run(args, &link_args)?);
        }
        let mut extra = vec!["-Zlink-only".to_string()];
        extra.extend(link_args);
        let status = self.run(&link_only_args(args, &rlink), &extra);
        let status = status.and_then(|status| self.record_link(link, status));
        // Its objects are gone with the link: a later link compiles again.
        let _ = fs::remove_file(&rlink);
        status
    }

    /// After a link that ended with `status`: if it succeeded, records what the programs were
    /// linked with, for the next build's comparison ([`link_record`]), and, in the one run,
    /// which files it linked ([`record_linked`]). Returns `status`.
    fn record_link(&self, link: &LinkRun, status: ExitCode) -> Result<ExitCode> {
        if status == ExitCode::SUCCESS {
            let files = self.programs();
            for program in &files {
                let _ = fs::write(link_record(program), link_record_text(program, &link.link_args));
            }
            if link.one_run {
                record_linked(Path::new(&self.pass.programs), &self.name, &files)
                    .context(|| format!("cannot record the program `{}`", self.name))?;
            }
        }
        Ok(status)
    }
}
/// The modification time of `path`, `None` if it has none (it is missing).
fn modified(path: &Path) -> Option<SystemTime> {
    fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Seals the manifest at `manifest` ([`crate::seal`]) if the compilation wrote it, that is, if
/// its modification time is no longer `before`, its time before the compilation (a link-only
/// compilation writes none, and the one there stays as it was, sealed or not): the next build
/// reuses it, when cargo finds its crate fresh, only while it is as rustc wrote it
/// ([`crate::heal::forget_damaged_manifests`]).
fn seal_manifest(manifest: &Path, before: Option<SystemTime>) -> crate::util::Result<()> {
    let now = modified(manifest);
    if now.is_some() && now != before { crate::seal::seal(manifest) } else { Ok(()) }
}

/// Whether the `.rlink` file `rlink` of crate `name` (`<crate name><extra filename>`) is older
/// than a file that its compilation read: a source file that its dep-info (`<out_dir>/<name>.d`)
/// lists, or a dependency that `args` pass with `--extern`. That happens when a file is edited
/// while `cargo offload` builds: the first run compiled the crate before the edit, and cargo,
/// which runs rustc again in the second run, records the edit as built.
fn stale(rlink: &Path, out_dir: &Path, name: &str, args: &[String]) -> bool {
    let Ok(written) = fs::metadata(rlink).and_then(|m| m.modified()) else { return true };
    let dep_info = fs::read_to_string(out_dir.join(format!("{name}.d"))).unwrap_or_default();
    // Each file the compilation read is a rule of its own, `PATH:` (spaces escaped as `\ `).
    let sources = dep_info
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.strip_suffix(':'))
        .map(|path| PathBuf::from(path.replace("\\ ", " ")));
    let externs = args
        .iter()
        .enumerate()
        .filter(|(_, a)| *a == "--extern")
        .filter_map(|(i, _)| args.get(i + 1)?.split_once('=').map(|(_, p)| PathBuf::from(p)));
    sources
        .chain(externs)
        .any(|file| fs::metadata(file).and_then(|m| m.modified()).is_ok_and(|m| m > written))
}

/// Records in `programs` (a folder) that the first run of the host build compiled the linking
/// crate `name` (`<crate name><extra filename>`): a file of that name holding its source file
/// (canonical, from `args`) and whether it is a test, one per line, which
/// [`crate::manifests::root_manifests`] matches with cargo's artifact messages, which name a
/// program by its path without the extra filename.
fn record_program(programs: &Path, name: &str, args: &[String]) -> std::io::Result<()> {
    let source = std::env::current_dir()?.join(source_file(args).unwrap_or_default());
    // As cargo's artifact messages name it after `canonicalize`.
    let source = fs::canonicalize(&source).unwrap_or(source);
    let test = args.iter().any(|a| a == "--test");
    fs::create_dir_all(programs)?;
    fs::write(programs.join(name), format!("{}\n{test}\n", source.display()))
}

/// Adds to the record of crate `name` in `programs` (a folder, [`env::HOST_PROGRAMS`]) the
/// program `files` that the one run linked, a line `linked <path>` each
/// ([`crate::passes`] removes them if the build then fails).
fn record_linked(programs: &Path, name: &str, files: &[PathBuf]) -> std::io::Result<()> {
    use std::io::Write;
    fs::create_dir_all(programs)?;
    let mut record = fs::File::options().append(true).create(true).open(programs.join(name))?;
    for file in files {
        writeln!(record, "linked {}", file.display())?;
    }
    Ok(())
}

/// `args` with the source file replaced by `rlink`, for `-Zlink-only`.
fn link_only_args(args: &[String], rlink: &Path) -> Vec<String> {
    let source = source_file(args);
    args.iter()
        .map(|a| if Some(a.as_str()) == source { rlink.display().to_string() } else { a.clone() })
        .collect()
}

/// The programs (an executable, a shared library) that rustc links for the crate `name`
/// (`<crate name><extra filename>`) into `out_dir`.
fn program_files(out_dir: &Path, args: &[String], name: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for ty in crate_types(args) {
        match ty {
            "bin" => files.push(out_dir.join(name)),
            "cdylib" => files.push(out_dir.join(format!("lib{name}.so"))),
            _ => {}
        }
    }
    if args.iter().any(|a| a == "--test") {
        files.push(out_dir.join(name));
    }
    files
}

/// The manifest name of a rustc invocation that compiles a crate for the target, `None` for
/// cargo's probes (`--print`, crate `___`) and host-only crates (no `--target`).
fn manifest_name(args: &[String]) -> Option<String> {
    if !args.iter().any(|a| is_flag(a, "--target")) {
        return None;
    }
    if args.iter().any(|a| a.starts_with("--print")) {
        return None;
    }
    let krate = crate_name(args).filter(|c| *c != "___")?;
    let extra = args
        .iter()
        .enumerate()
        .find_map(|(i, a)| {
            a.strip_prefix("-Cextra-filename=").or_else(|| {
                (a == "-C").then(|| args.get(i + 1)?.strip_prefix("extra-filename=")).flatten()
            })
        })
        .unwrap_or("");
    Some(format!("{krate}{extra}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::strings;

    #[test]
    fn manifests_are_named_per_crate_and_skip_probes_and_host_crates() {
        let args = strings(&[
            "--crate-name",
            "app",
            "--edition=2024",
            "-C",
            "extra-filename=-0123abcd",
            "--target",
            "x86_64-unknown-linux-gnu",
        ]);
        assert_eq!(manifest_name(&args).as_deref(), Some("app-0123abcd"));
        let build_script =
            strings(&["--crate-name", "build_script_build", "-C", "extra-filename=-99"]);
        assert_eq!(manifest_name(&build_script), None);
        let probe = strings(&["-", "--crate-name", "___", "--print=file-names", "--target", "x"]);
        assert_eq!(manifest_name(&probe), None);
    }

    #[test]
    fn a_program_links_from_its_rlink_file() {
        let args = strings(&[
            "--crate-name",
            "app",
            "--edition=2024",
            "app/src/main.rs",
            "--crate-type",
            "bin",
            "--out-dir",
            "/t/deps",
            "-C",
            "extra-filename=-0123abcd",
            "--cfg",
            "feature=\"x.rs\"",
            "--target",
            "x86_64-unknown-linux-gnu",
        ]);
        assert_eq!(source_file(&args), Some("app/src/main.rs"));
        assert_eq!(crate_types(&args), ["bin"]);
        assert_eq!(flag_value(&args, "--out-dir"), Some("/t/deps"));
        let rlink = Path::new("/t/deps/app-0123abcd.rlink");
        let linked = link_only_args(&args, rlink);
        assert_eq!(linked[3], "/t/deps/app-0123abcd.rlink");
        assert_eq!(linked.iter().filter(|a| a.ends_with(".rs") || a.ends_with(".rs\"")).count(), 1);
        assert_eq!(
            program_files(Path::new("/t/deps"), &args, "app-0123abcd"),
            [PathBuf::from("/t/deps/app-0123abcd")]
        );
        let cdylib = strings(&["--crate-type=lib,cdylib", "--crate-name", "k", "src/lib.rs"]);
        assert_eq!(crate_types(&cdylib), ["lib", "cdylib"]);
        assert_eq!(crate_types(&strings(&["--crate-type", "rlib,dylib"])), ["rlib", "dylib"]);
        // A `dylib` is a library, never removed as a program.
        let dylib = strings(&["--crate-type", "dylib", "--crate-name", "d", "src/lib.rs"]);
        assert!(program_files(Path::new("/d"), &dylib, "d-3").is_empty());
        assert_eq!(program_files(Path::new("/d"), &cdylib, "k-1"), [PathBuf::from("/d/libk-1.so")]);
        let test = strings(&["--crate-name", "t", "tests/t.rs", "--test"]);
        assert_eq!(program_files(Path::new("/d"), &test, "t-2"), [PathBuf::from("/d/t-2")]);
    }

    #[test]
    fn an_rlink_older_than_a_source_or_dependency_is_stale() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-stale-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (source, dep, rlink) =
            (dir.join("main.rs"), dir.join("libdep.rlib"), dir.join("a.rlink"));
        fs::write(&source, "fn main() {}").unwrap();
        fs::write(&dep, "").unwrap();
        let dep_info = format!(
            "{d}/a.d: {s}\n\n{s}:\n# env-dep:X=1\n",
            d = dir.display(),
            s = source.display()
        );
        fs::write(dir.join("a.d"), dep_info).unwrap();
        let args = strings(&["--extern", &format!("dep={}", dep.display())]);
        let age = |path: &Path, seconds: u64| {
            let file = fs::File::options().write(true).open(path).unwrap();
            let time = std::time::SystemTime::now() - std::time::Duration::from_secs(seconds);
            file.set_modified(time).unwrap();
        };
        assert!(stale(&rlink, &dir, "a", &args), "no rlink");
        fs::write(&rlink, "").unwrap();
        age(&source, 20);
        age(&dep, 20);
        assert!(!stale(&rlink, &dir, "a", &args));
        age(&source, 0);
        age(&rlink, 10);
        assert!(stale(&rlink, &dir, "a", &args), "the source was edited");
        age(&source, 20);
        assert!(!stale(&rlink, &dir, "a", &args));
        age(&dep, 0);
        assert!(stale(&rlink, &dir, "a", &args), "the dependency was compiled again");
        fs::remove_dir_all(&dir).unwrap();
    }
}
