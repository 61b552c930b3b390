//! The `RUSTC_WRAPPER` side of `cargo offload`, the way cargo-miri drives rustc: cargo runs
//! `cargo-offload <rustc> <args>` for every rustc it needs. In the host build each crate
//! compiled for the target also writes its own manifest (`-Zoffload=HostMetadata=<manifest>`
//! beside `-Zoffload=Host=<image>`), and a program is linked only once the images exist
//! ([`wrap_host_rustc`]). In a device pass each crate compiled for a target gets that target's
//! flags, and a program that defines kernels is compiled as an `rlib` ([`wrap_device_rustc`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::SystemTime;

use crate::args::is_flag;
use crate::env;
use crate::image_crate::DEVICE_CFG;
use crate::registration::{link_record, link_record_text};
use crate::util::Failure;
use crate::vendor::runtime_lib_dir;

/// `RUSTC_WRAPPER` of the host build, which cargo runs twice over one target folder with the
/// same flags, so that the second run finds fresh every crate that the first compiled (or once:
/// see the end). Each crate compiled for the target (cargo passes `--target` to those, not to
/// build scripts and proc macros) gets `-Zoffload=Host=<image>` (`image`: the path of
/// [`env::HOST_IMAGE`]), `--check-cfg=cfg(offload_device)` and its own manifest,
/// `<dir>/<crate name><extra filename>.json` (the host metadata pass, in the same
/// compilation). The runs differ in what a program (an executable, a test, a `cdylib`) does:
/// - the first ([`env::HOST_LINK`] unset) compiles it with `-Zno-link`: rustc writes its objects
///   and an `.rlink` file but no program, and an earlier program file is removed, so that cargo
///   finds it missing and runs rustc for it again in the second run; the crate is recorded in
///   [`env::HOST_PROGRAMS`] ([`record_program`]). A crate that is a library as well (`lib` and
///   `cdylib`) is linked (its dependents need the library), and its program removed;
/// - the second links it with `-Zlink-only` from that `.rlink` and the link arguments of
///   [`env::HOST_LINK`] (the registration of the images, `\x1f`-separated). A program without
///   an `.rlink` (one that a run which linked it left none of, removed so that it links new
///   images), or whose sources or dependencies
///   changed since the `.rlink` was written ([`stale`]), is compiled and linked in one
///   compilation; a library and program is compiled and linked again (cargo removes its `rlib`
///   before it runs rustc), and so are the crates that depend on it.
///
/// When the device passes ran first ([`env::HOST_COMPILE_AND_LINK`] set beside
/// [`env::HOST_LINK`]), there is one run: every program is compiled and linked in one
/// compilation, as plain cargo does, and recorded as in a first run.
///
/// A manifest that a successful compilation wrote is sealed ([`seal_manifest`]).
pub(crate) fn wrap_host_rustc(dir: &str, args: &[String]) -> ExitCode {
    let manifest = args.get(1..).and_then(manifest_name).map(|n| Path::new(dir).join(n + ".json"));
    let before = manifest.as_deref().map(modified);
    let status = wrap_host_compilation(dir, args);
    if status == ExitCode::SUCCESS
        && let (Some(manifest), Some(before)) = (manifest, before)
        && let Err(Failure(e, _)) = seal_manifest(&manifest, before)
    {
        eprintln!("error: [cargo offload] {e}");
        return ExitCode::from(1);
    }
    status
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

/// [`wrap_host_rustc`] but the manifest's seal.
fn wrap_host_compilation(dir: &str, args: &[String]) -> ExitCode {
    let Some((rustc, args)) = args.split_first() else {
        eprintln!("error: [cargo offload] run as RUSTC_WRAPPER without a rustc to run");
        return ExitCode::from(2);
    };
    let command = || {
        let mut cmd = Command::new(rustc);
        cmd.env_remove(env::HOST_METADATA_DIR)
            .env_remove(env::HOST_IMAGE)
            .env_remove(env::HOST_LINK)
            .env_remove(env::HOST_COMPILE_AND_LINK)
            .env_remove(env::HOST_PROGRAMS);
        cmd
    };
    let Some(name) = manifest_name(args) else {
        let mut cmd = command();
        cmd.args(args);
        return run_rustc(rustc, cmd);
    };
    let image = std::env::var(env::HOST_IMAGE).unwrap_or_default();
    let offload = [
        "-Zunstable-options".to_string(),
        format!("-Zoffload=Host={image}"),
        format!("-Zoffload=HostMetadata={dir}/{name}.json"),
        // A crate may test `offload_device` (set in the device passes) without a warning.
        format!("--check-cfg=cfg({DEVICE_CFG})"),
    ];
    let types = crate_types(args);
    // A `dylib` is a library: its dependents link it, and the program that loads it links the
    // registration.
    let links =
        args.iter().any(|a| a == "--test") || types.iter().any(|t| matches!(*t, "bin" | "cdylib"));
    let library = types.iter().any(|t| matches!(*t, "lib" | "rlib" | "staticlib" | "dylib"));
    let out_dir = flag_value(args, "--out-dir").map(PathBuf::from).unwrap_or_default();
    let rlink = out_dir.join(format!("{name}.rlink"));
    let compile_without_link = || {
        // Its program of an earlier build would stay in place when the second run found the
        // crate fresh.
        for program in program_files(&out_dir, args, &name) {
            let _ = fs::remove_file(program);
        }
        let mut cmd = command();
        cmd.args(args).args(&offload).arg("-Zno-link");
        run_rustc(rustc, cmd)
    };
    let Ok(link_args) = std::env::var(env::HOST_LINK) else {
        // The first run.
        if links && !library {
            let programs = std::env::var(env::HOST_PROGRAMS).unwrap_or_default();
            if let Err(e) = record_program(Path::new(&programs), &name, args) {
                eprintln!("error: [cargo offload] cannot record the program `{name}`: {e}");
                return ExitCode::from(1);
            }
            return compile_without_link();
        }
        let mut cmd = command();
        cmd.args(args).args(&offload);
        let status = run_rustc(rustc, cmd);
        if links && status == ExitCode::SUCCESS {
            for program in program_files(&out_dir, args, &name) {
                let _ = fs::remove_file(program);
            }
        }
        return status;
    };
    // The second run, or the one run.
    let one_run = std::env::var_os(env::HOST_COMPILE_AND_LINK).is_some();
    let added: Vec<String> =
        link_args.split('\x1f').filter(|a| !a.is_empty()).map(str::to_string).collect();
    if links
        && !added.is_empty()
        && let Some(triple) = flag_value(args, "--target")
        && let Err(Failure(e, _)) =
            crate::linker::check_program_linker(args, &name, triple, &runtime_lib_dir())
    {
        eprintln!("error: [cargo offload] {e}");
        return ExitCode::from(1);
    }
    let link_args: Vec<String> = added.iter().map(|a| format!("-Clink-arg={a}")).collect();
    let programs = std::env::var(env::HOST_PROGRAMS).unwrap_or_default();
    // What the programs were linked with, for the next build's [`link_stamp`] comparison; in the
    // one run, also which files it linked ([`record_linked`]).
    let record = |status: ExitCode| {
        if status == ExitCode::SUCCESS {
            let files = program_files(&out_dir, args, &name);
            for program in &files {
                let _ = fs::write(link_record(program), link_record_text(program, &added));
            }
            if one_run && let Err(e) = record_linked(Path::new(&programs), &name, &files) {
                eprintln!("error: [cargo offload] cannot record the program `{name}`: {e}");
                return ExitCode::from(1);
            }
        }
        status
    };
    if !links {
        let mut cmd = command();
        cmd.args(args).args(&offload);
        return run_rustc(rustc, cmd);
    }
    if library {
        // Its program only would do, but cargo removed its `rlib` before starting rustc.
        let mut cmd = command();
        cmd.args(args).args(&offload).args(&link_args);
        return record(run_rustc(rustc, cmd));
    }
    if one_run || !rlink.is_file() || stale(&rlink, &out_dir, &name, args) {
        if one_run {
            if let Err(e) = record_program(Path::new(&programs), &name, args) {
                eprintln!("error: [cargo offload] cannot record the program `{name}`: {e}");
                return ExitCode::from(1);
            }
        }
        // An `.rlink` of an earlier build is not this compilation's.
        let _ = fs::remove_file(&rlink);
        let mut cmd = command();
        cmd.args(args).args(&offload).args(&link_args);
        return record(run_rustc(rustc, cmd));
    }
    let mut cmd = command();
    cmd.args(link_only_args(args, &rlink)).args(&offload).arg("-Zlink-only").args(&link_args);
    let status = record(run_rustc(rustc, cmd));
    // Its objects are gone with the link: a later link compiles again.
    let _ = fs::remove_file(&rlink);
    status
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

/// The source file among rustc's `args`: the one argument that ends in `.rs` and is no flag's
/// value.
fn source_file(args: &[String]) -> Option<&str> {
    let mut rest = args.iter();
    let mut source = None;
    while let Some(arg) = rest.next() {
        if VALUE_FLAGS.contains(&arg.as_str()) {
            rest.next();
        } else if !arg.starts_with('-') && arg.ends_with(".rs") {
            source = Some(arg.as_str());
        }
    }
    source
}

/// rustc's flags that take their value as the next argument.
const VALUE_FLAGS: &[&str] = &[
    "--crate-name",
    "--crate-type",
    "--edition",
    "--emit",
    "--out-dir",
    "--target",
    "--extern",
    "--cfg",
    "--check-cfg",
    "--cap-lints",
    "--error-format",
    "--json",
    "--diagnostic-width",
    "--explain",
    "--print",
    "-o",
    "-L",
    "-l",
    "-C",
    "-Z",
    "-A",
    "-W",
    "-D",
    "-F",
];

/// `args` with the source file replaced by `rlink`, for `-Zlink-only`.
fn link_only_args(args: &[String], rlink: &Path) -> Vec<String> {
    let source = source_file(args);
    args.iter()
        .map(|a| if Some(a.as_str()) == source { rlink.display().to_string() } else { a.clone() })
        .collect()
}

/// The values of `--crate-type` among `args`.
fn crate_types(args: &[String]) -> Vec<&str> {
    let mut types = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        if arg == "--crate-type" {
            types.extend(args.get(i + 1).into_iter().flat_map(|list| list.split(',')));
        } else if let Some(list) = arg.strip_prefix("--crate-type=") {
            types.extend(list.split(','));
        }
    }
    types
}

/// The value of `flag` among `args`, given as `flag VALUE` or `flag=VALUE`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            args.get(i + 1).map(String::as_str)
        } else {
            a.strip_prefix(flag).and_then(|rest| rest.strip_prefix('='))
        }
    })
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

/// `RUSTC_WRAPPER` of a device pass, whose cargo run builds for one target per arch
/// (`target_flags`: [`env::DEVICE_TARGET_FLAGS`]). A rustc for one of them (`--target T`,
/// cargo's probe of the target included) gets T's flags after cargo's, which are those that
/// every target of the run shares; build scripts and proc macros (no `--target`) get none.
/// With `program` (the crate name of a program that defines kernels: [`env::DEVICE_PROGRAM`]),
/// that program, compiled for a target, is an `rlib` ([`as_rlib`]), whose device pass builds
/// the image. Cargo's own per-target flags (`target.<triple>.rustflags`) would join those of
/// the user's `.cargo/config.toml` for the same target, and the device passes take none of the
/// user's flags.
pub(crate) fn wrap_device_rustc(
    target_flags: &str,
    program: Option<&str>,
    args: &[String],
) -> ExitCode {
    let Some((rustc, args)) = args.split_first() else {
        eprintln!("error: [cargo offload] run as RUSTC_WRAPPER without a rustc to run");
        return ExitCode::from(2);
    };
    let mut cmd = Command::new(rustc);
    cmd.env_remove(env::DEVICE_PROGRAM)
        .env_remove(env::DEVICE_TARGET_FLAGS)
        .env_remove(env::DEVICE_FAILURES);
    let target = flag_value(args, "--target");
    let extra = target.map_or(Vec::new(), |t| flags_of(target_flags, t));
    if crate_name(args) == Some("___") && args.iter().any(|a| a == "--print=file-names") {
        cmd.args(args).args(&extra);
        if program.is_some() {
            return probe_with_programs(&mut cmd);
        }
    } else {
        let is_program = program.is_some()
            && args.iter().any(|a| is_flag(a, "--target"))
            && crate_name(args) == program;
        if is_program {
            cmd.args(as_rlib(args));
        } else {
            cmd.args(args);
        }
        cmd.args(extra);
    }
    let code = match cmd.status() {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            let signal = status.signal();
            if signal.is_some() {
                eprintln!("error: [cargo offload] `{rustc}` was ended by a signal ({status})");
            }
            status.code().unwrap_or(128 + signal.unwrap_or(0))
        }
        Err(e) => {
            eprintln!("error: [cargo offload] cannot run {rustc}: {e}");
            1
        }
    };
    // One cargo run builds for several archs, and rustc's errors do not say for which target:
    // `cargo offload` names the archs whose targets failed ([`env::DEVICE_FAILURES`]).
    if code != 0
        && let (Some(target), Some(record)) = (target, std::env::var_os(env::DEVICE_FAILURES))
    {
        let line = format!("{target}\n");
        let appended = fs::OpenOptions::new().create(true).append(true).open(&record);
        let _ = appended.and_then(|mut file| std::io::Write::write_all(&mut file, line.as_bytes()));
    }
    ExitCode::from(code.clamp(0, 255) as u8)
}

/// [`env::DEVICE_TARGET_FLAGS`] for `targets` (a target and its rustc flags): one record a
/// target, `\x1e`-separated, of the target and its flags, `\x1f`-separated. Read back by
/// [`flags_of`].
pub(crate) fn encode_target_flags(targets: &[(&str, Vec<String>)]) -> String {
    let records: Vec<String> = targets
        .iter()
        .map(|(target, flags)| {
            std::iter::once(*target).chain(flags.iter().map(String::as_str)).collect::<Vec<_>>()
        })
        .map(|fields| fields.join("\x1f"))
        .collect();
    records.join("\x1e")
}

/// The flags of `target` in `encoded` ([`encode_target_flags`]); none for a target it lacks.
fn flags_of(encoded: &str, target: &str) -> Vec<String> {
    encoded
        .split('\x1e')
        .map(|record| record.split('\x1f'))
        .find_map(|mut fields| (fields.next() == Some(target)).then(|| fields))
        .map_or(Vec::new(), |flags| flags.map(str::to_string).collect())
}

/// `args` of a program's rustc with every `--crate-type` replaced by one `--crate-type rlib`,
/// and without `-C lto` (an `rlib` is no LTO product) and the lints (the host pass reports them;
/// a program built as a library has dead code wherever its `main` is `cfg`'d out).
fn as_rlib(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len() + 3);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--crate-type" || arg == "--cap-lints" {
            rest.next();
        } else if arg == "-C" && rest.as_slice().first().is_some_and(|v| v.starts_with("lto")) {
            rest.next();
        } else if !arg.starts_with("--crate-type=")
            && !arg.starts_with("--cap-lints=")
            && !arg.starts_with("-Clto")
        {
            out.push(arg.clone());
        }
    }
    out.extend(["--crate-type", "rlib", "--cap-lints", "allow"].map(str::to_string));
    out
}

/// Runs `probe`, cargo's question which files each crate type gives on the target, and answers
/// for `bin` as if the target supported it: cargo refuses to build a program for a target
/// without executables (`amdgcn-amd-amdhsa`), although the device pass builds it as an `rlib`.
/// Cargo reads one line per supported crate type, in the order of the `--crate-type` flags, and
/// a type that rustc drops with a warning as unsupported has none.
fn probe_with_programs(probe: &mut Command) -> ExitCode {
    let out = match probe.output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("error: [cargo offload] cannot run rustc: {e}");
            return ExitCode::from(1);
        }
    };
    let args: Vec<String> = probe.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    let (stdout, stderr) = executables_supported(
        &args,
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    );
    print!("{stdout}");
    eprint!("{stderr}");
    ExitCode::from(out.status.code().unwrap_or(1).clamp(0, 255) as u8)
}

/// The probe's `stdout` and `stderr` (see [`probe_with_programs`]) with a file name for `bin`
/// (`___`, which the device pass never writes) where rustc dropped it as unsupported.
fn executables_supported(args: &[String], stdout: &str, stderr: &str) -> (String, String) {
    let dropped = |ty: &str| {
        stderr.lines().any(|l| l.contains(&format!("dropping unsupported crate type `{ty}`")))
    };
    let types: Vec<&str> = args
        .iter()
        .zip(args.iter().skip(1))
        .filter(|(flag, _)| *flag == "--crate-type")
        .map(|(_, ty)| ty.as_str())
        .collect();
    let Some(bin) = types.iter().position(|t| *t == "bin") else {
        return (stdout.to_string(), stderr.to_string());
    };
    if !dropped("bin") {
        return (stdout.to_string(), stderr.to_string());
    }
    let before = types[..bin].iter().filter(|t| !dropped(t)).count();
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.insert(before.min(lines.len()), "___");
    let stderr: Vec<&str> =
        stderr.lines().filter(|l| !l.contains("dropping unsupported crate type `bin`")).collect();
    (lines.join("\n") + "\n", stderr.join("\n") + "\n")
}

/// The value of `--crate-name` among `args`.
fn crate_name(args: &[String]) -> Option<&str> {
    flag_value(args, "--crate-name")
}

/// Runs rustc as `cmd`; its exit status is the wrapper's.
fn run_rustc(rustc: &str, mut cmd: Command) -> ExitCode {
    match cmd.status() {
        Ok(status) => crate::util::exit_code_of(rustc, status),
        Err(e) => {
            eprintln!("error: [cargo offload] cannot run {rustc}: {e}");
            ExitCode::from(1)
        }
    }
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

    #[test]
    fn a_target_without_executables_still_names_a_program_file() {
        let args = strings(&[
            "-",
            "--crate-name",
            "___",
            "--print=file-names",
            "--crate-type",
            "bin",
            "--crate-type",
            "rlib",
            "--crate-type",
            "dylib",
            "--crate-type",
            "cdylib",
            "--print=sysroot",
        ]);
        let stderr = "warning: dropping unsupported crate type `bin` for target `amdgcn`\n\
                      warning: dropping unsupported crate type `dylib` for target `amdgcn`\n";
        let (stdout, stderr) = executables_supported(&args, "lib___.rlib\n___.elf\n/sys\n", stderr);
        assert_eq!(stdout, "___\nlib___.rlib\n___.elf\n/sys\n");
        assert!(!stderr.contains("`bin`") && stderr.contains("`dylib`"), "{stderr}");
        // A target with executables: the probe as rustc answered it.
        let (same, _) = executables_supported(&args, "___\nlib___.rlib\n", "");
        assert_eq!(same, "___\nlib___.rlib\n");
    }

    #[test]
    fn a_program_compiles_as_an_rlib_without_lto_and_lints() {
        let args = strings(&[
            "--crate-name",
            "app",
            "--crate-type",
            "bin",
            "--crate-type=cdylib",
            "-C",
            "lto=fat",
            "-Clto",
            "-C",
            "opt-level=3",
            "--cap-lints",
            "warn",
            "--target",
            "nvptx64-nvidia-cuda",
        ]);
        assert_eq!(
            as_rlib(&args),
            strings(&[
                "--crate-name",
                "app",
                "-C",
                "opt-level=3",
                "--target",
                "nvptx64-nvidia-cuda",
                "--crate-type",
                "rlib",
                "--cap-lints",
                "allow",
            ])
        );
    }

    #[test]
    fn each_target_gets_its_own_flags() {
        let encoded = encode_target_flags(&[
            ("amdgcn-amd-amdhsa", strings(&["-Ctarget-cpu=gfx90a"])),
            ("x86_64-unknown-linux-gnu", strings(&["-Ztls-model=initial-exec", "-Cfoo"])),
            ("nvptx64-nvidia-cuda", Vec::new()),
        ]);
        assert_eq!(flags_of(&encoded, "amdgcn-amd-amdhsa"), ["-Ctarget-cpu=gfx90a"]);
        assert_eq!(
            flags_of(&encoded, "x86_64-unknown-linux-gnu"),
            ["-Ztls-model=initial-exec", "-Cfoo"]
        );
        assert!(flags_of(&encoded, "nvptx64-nvidia-cuda").is_empty());
        // A target of no arch (a build script's compilation has none) gets nothing.
        assert!(flags_of(&encoded, "aarch64-unknown-linux-gnu").is_empty());
    }
}
