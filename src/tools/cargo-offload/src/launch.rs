//! How the built programs start: in place, on the machine's own OS, or from a bundle.
//!
//! `cargo offload` runs inside the toolchain's sysroot (Debian trixie), where the programs
//! link trixie's offload runtime. A GPU's driver, though, belongs to the machine's own OS:
//! the CUDA plugin opens `libcuda.so.1` by name, the AMD plugin the ROCm runtime. So a
//! program runs outside the sysroot with trixie's dynamic loader started as a program
//! (`ld-linux-x86-64.so.2 --library-path DIRS --argv0 PROGRAM PROGRAM ARGS`): the loader and
//! every library the program links come from the toolchain (`--library-path` replaces
//! `LD_LIBRARY_PATH` for this process only), and a library that is not there, such as the
//! GPU driver, is found in the machine's own `ld.so.cache`, as a native program finds it.
//! Each library is loaded once (one `libomp`).
//!
//! - In place ([`run_programs`] without a plan): the program runs where `cargo offload` runs.
//! - On the machine's own OS: `./x.py cargo` sets [`env::RUN_PLAN`]; `run` and `test` then write
//!   the programs to run into that file ([`Plan`]) instead of running them, and `./x.py`, once
//!   it has left the sysroot, runs `cargo-offload --run-plan FILE` ([`run_plan`]) with
//!   [`env::ROOT`] naming the sysroot, under which the plan's loader and library folders lie.
//! - A bundle ([`write_bundle`]): each program, the libraries it loads and the loader in one
//!   folder, with a start script per program, for another x86-64 Linux machine.
//!
//! With `OFFLOAD_REPORT` set (and not `0`), each way preloads `liboffload_report.so`
//! (`src/tools/offload-report`), which prints which device and image ran each kernel.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};

use serde::{Deserialize, Serialize, Serializer};

use crate::args::Verb;
use crate::env;
use crate::util::{Context, Failure, Result, fail};

/// Whether the user asked for the report of the devices that ran the kernels.
fn report_wanted() -> bool {
    std::env::var_os("OFFLOAD_REPORT").is_some_and(|v| !v.is_empty() && v != "0")
}

/// `liboffload_report.so`, installed beside this program (`bin/../lib`).
fn report_library() -> Result<PathBuf> {
    let exe =
        std::env::current_exe().context(|| "cannot find the cargo-offload program".to_string())?;
    let lib = exe.parent().and_then(Path::parent).map(|d| d.join("lib/liboffload_report.so"));
    match lib {
        Some(lib) if lib.is_file() => Ok(lib),
        _ => fail(format!(
            "OFFLOAD_REPORT is set but liboffload_report.so is missing beside {} (bin/../lib); \
             `./x.py build` installs it",
            exe.display()
        )),
    }
}

/// One program to run: what the loader needs, as seen inside the sysroot.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Run {
    /// The program's path inside the sysroot.
    pub(crate) program: String,
    /// Its arguments (`cargo offload run|test -- ARGS`).
    pub(crate) args: Vec<String>,
    /// The dynamic loader the program asks for.
    #[serde(serialize_with = "path_as_text")]
    pub(crate) loader: PathBuf,
    /// The folders of the libraries it loads, each once, in the order `ldd` lists them.
    #[serde(serialize_with = "paths_as_text")]
    pub(crate) library_path: Vec<PathBuf>,
}

/// What `run` and `test` leave for `./x.py` to run outside the sysroot: a JSON file that this
/// same `cargo-offload` reads back with `--run-plan` ([`Plan::encode`], [`Plan::decode`]).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Plan {
    /// [`PLAN_FORMAT`], so that a plan that another `cargo-offload` wrote is refused.
    format: String,
    /// `run` (one program) or `test` (one or more).
    pub(crate) verb: Verb,
    /// The programs, in the order to run them.
    pub(crate) runs: Vec<Run>,
}

/// The `format` of a plan file.
const PLAN_FORMAT: &str = "cargo-offload-plan 2";

/// A path as text in the plan: the library paths come from `ldd`'s output, which is read as text
/// (lossily) anyway, so a path that is not UTF-8 is written lossily rather than failing the plan
/// (serde's own `Path` refuses it).
fn path_as_text<S: Serializer>(path: &Path, serializer: S) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
}

/// Paths as text in the plan ([`path_as_text`]).
fn paths_as_text<S: Serializer>(
    paths: &[PathBuf],
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.collect_seq(paths.iter().map(|path| path.to_string_lossy()))
}

impl Plan {
    /// The plan of `runs` for `verb`.
    pub(crate) fn new(verb: Verb, runs: Vec<Run>) -> Plan {
        Plan { format: PLAN_FORMAT.to_string(), verb, runs }
    }

    /// The plan as JSON.
    pub(crate) fn encode(&self) -> String {
        // Strings, lists and text paths only: nothing that JSON cannot hold.
        serde_json::to_string_pretty(self).expect("a run plan is plain JSON")
    }

    /// Reads what [`Plan::encode`] wrote; `None` for anything else: another format, or a plan
    /// whose programs do not fit its verb.
    pub(crate) fn decode(text: &str) -> Option<Plan> {
        let plan: Plan = serde_json::from_str(text).ok()?;
        // `run` runs one program, `test` one or more.
        let fits = match plan.verb {
            Verb::Run => plan.runs.len() == 1,
            Verb::Test => !plan.runs.is_empty(),
            Verb::Build | Verb::Bundle => false,
        };
        (plan.format == PLAN_FORMAT && fits).then_some(plan)
    }
}

/// The shared libraries `program` loads, as `(name the loader looks for, canonical path)`, the
/// dynamic loader among them (named `ld-linux-x86-64.so.2`), read from `ldd`.
pub(crate) fn libraries(program: &Path) -> Result<Vec<(String, PathBuf)>> {
    let out = Command::new("ldd")
        .arg(program)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .context_run(format!("ldd {}", program.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || text.contains("not found") {
        return fail(format!(
            "ldd {} found not every library the program needs:\n{text}{}",
            program.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(parse_ldd(&text)
        .into_iter()
        .map(|(name, path)| {
            let canonical = fs::canonicalize(&path).unwrap_or(path);
            (name, canonical)
        })
        .collect())
}

/// `(name, path)` of each library line of `ldd`'s output with a path: `NAME => PATH (ADDR)`,
/// or `PATH (ADDR)` for the loader, named by its file name.
pub(crate) fn parse_ldd(text: &str) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let (name, path) = match line.split_once(" => ") {
            Some((name, rest)) => (name.to_string(), rest.split_whitespace().next().unwrap_or("")),
            None => {
                let path = line.split_whitespace().next().unwrap_or("");
                let name = Path::new(path).file_name().map(|n| n.to_string_lossy().into_owned());
                (name.unwrap_or_default(), path)
            }
        };
        if path.starts_with('/') && !name.is_empty() {
            found.push((name, PathBuf::from(path)));
        }
    }
    found
}

/// The loader and library folders of `program`, for [`Run`].
fn loader_and_folders(program: &Path) -> Result<(PathBuf, Vec<PathBuf>)> {
    let libraries = libraries(program)?;
    let Some((_, loader)) = libraries.iter().find(|(name, _)| name.starts_with("ld-linux")) else {
        return fail(format!("ldd names no dynamic loader for {}", program.display()));
    };
    let mut folders: Vec<PathBuf> = Vec::new();
    for (_, path) in &libraries {
        let folder = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        if !folders.contains(&folder) {
            folders.push(folder);
        }
    }
    Ok((loader.clone(), folders))
}

/// 4. `run` runs the one program the host pass built, `test` every test program (stopping at
/// the first that fails), each in place, or, with [`env::RUN_PLAN`] set, writes them into the plan
/// for `./x.py` to run on the machine's own OS.
pub(crate) fn run_programs(verb: Verb, programs: &[String], args: &[String]) -> Result<ExitCode> {
    let programs = match verb {
        Verb::Run => match programs {
            [_] => programs.to_vec(),
            [] => return fail("the host pass built no program to run"),
            _ => {
                return fail(format!(
                    "the host pass built {} programs; pick one with `--bin NAME` or \
                     `--example NAME`",
                    programs.len()
                ));
            }
        },
        Verb::Test => programs.to_vec(),
        Verb::Build | Verb::Bundle => return Ok(ExitCode::SUCCESS),
    };
    if let Some(plan_file) = std::env::var_os(env::RUN_PLAN) {
        let mut runs = Vec::new();
        for program in programs {
            let (loader, library_path) = loader_and_folders(Path::new(&program))?;
            runs.push(Run { program, args: args.to_vec(), loader, library_path });
        }
        let plan = Plan::new(verb, runs);
        fs::write(&plan_file, plan.encode()).context_write(Path::new(&plan_file))?;
        return Ok(ExitCode::SUCCESS);
    }
    let report = if report_wanted() { Some(report_library()?) } else { None };
    run_each(verb, &programs, |program| {
        eprintln!("[cargo offload] running {program}");
        let mut cmd = Command::new(program);
        cmd.args(args).env_remove("LD_LIBRARY_PATH").env_remove(env::RUN_PLAN);
        if let Some(report) = &report {
            // Beside the user's own preloads; unlike `--preload`, the program's children get
            // it too.
            let mut preload = report.clone().into_os_string();
            if let Some(own) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
                preload.push(" ");
                preload.push(own);
            }
            cmd.env("LD_PRELOAD", preload);
        }
        cmd.status().context_run(program)
    })
}

/// Runs `start(program)` for each program: `run`'s exit status is the program's; `test` stops
/// at the first program that fails, with status 101.
fn run_each(
    verb: Verb,
    programs: &[String],
    mut start: impl FnMut(&str) -> Result<ExitStatus>,
) -> Result<ExitCode> {
    for program in programs {
        let status = start(program)?;
        let code = exit_code(program, status);
        if verb == Verb::Run {
            return Ok(ExitCode::from(code));
        }
        if code != 0 {
            return Err(Failure::with_status(format!("test program {program} failed"), 101));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The program's exit code, or `128 + N` (as shells report it) when signal N ended it.
fn exit_code(program: &str, status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code.clamp(0, 255) as u8,
        (None, Some(signal)) => {
            eprintln!("[cargo offload] {program} was ended by signal {signal}");
            (128 + signal).clamp(0, 255) as u8
        }
        _ => 1,
    }
}

/// `cargo-offload --run-plan FILE` on the machine's own OS: runs the plan's programs with the
/// toolchain's loader and libraries, found under [`env::ROOT`].
pub(crate) fn run_plan(file: &Path) -> Result<ExitCode> {
    let text = fs::read_to_string(file)
        .context(|| format!("cannot read the run plan {}", file.display()))?;
    let Some(plan) = Plan::decode(&text) else {
        return fail(format!("{} is not a run plan of this cargo-offload", file.display()));
    };
    let Some(root) = std::env::var_os(env::ROOT).map(PathBuf::from).filter(|r| r.is_absolute())
    else {
        return fail(format!("--run-plan needs {}: the toolchain's sysroot, absolute", env::ROOT));
    };
    let report = if report_wanted() { Some(report_library()?) } else { None };
    let binds: Vec<PathBuf> = std::env::var_os(env::BINDS)
        .map(|v| std::env::split_paths(&v).filter(|p| p.is_absolute()).collect())
        .unwrap_or_default();
    let outside = |p: &Path| outside_path(&root, &binds, p);
    let programs: Vec<String> = plan.runs.iter().map(|r| r.program.clone()).collect();
    let mut runs = plan.runs.iter();
    run_each(plan.verb, &programs, |program| {
        let run = runs.next().expect("one run per program");
        let path = outside(Path::new(program));
        let folders: Vec<String> =
            run.library_path.iter().map(|d| outside(d).display().to_string()).collect();
        eprintln!(
            "[cargo offload] running {program} on this machine's own OS (the toolchain's loader \
             and libraries)"
        );
        let loader = outside(&run.loader);
        let mut cmd = Command::new(&loader);
        cmd.arg("--library-path").arg(folders.join(":"));
        if let Some(report) = &report {
            cmd.arg("--preload").arg(report);
        }
        cmd.arg("--argv0").arg(program).arg(&path).args(&run.args);
        cmd.status().context_run(format!("{program} with the loader {}", loader.display()))
    })
}

/// Where the machine sees `path` of the sysroot: at the same path under a bound folder of
/// `binds`, else under `root`.
pub(crate) fn outside_path(root: &Path, binds: &[PathBuf], path: &Path) -> PathBuf {
    if binds.iter().any(|bound| path.starts_with(bound)) {
        return path.to_path_buf();
    }
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// The file that marks a folder as a bundle that `cargo offload bundle` wrote (and may write
/// again).
const BUNDLE_MARK: &str = ".cargo-offload-bundle";

/// The bundle's folder for `--out DIR` (or the default), checked before anything is built:
/// its absolute path, without `.` and `..` (so that the folder written beside it is beside
/// it). Fails when the path holds `:` or `;` (the start scripts give the loader `DIR/lib` in a
/// list that they separate), when, under `./x.py cargo`, it is not in a folder that the
/// machine sees at the same path ([`env::BINDS`]), when it is not a folder, or when it holds
/// anything that `cargo offload bundle` did not write ([`refuse_foreign_entries`]).
pub(crate) fn bundle_folder(out: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(out)
        .map_err(|e| Failure::new(format!("--out {}: {e}", out.display())))?;
    let mut folder = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                folder.pop();
            }
            other => folder.push(other),
        }
    }
    if folder.parent().is_none() {
        return fail(format!("--out {}: a bundle needs a folder of its own", out.display()));
    }
    if folder.to_string_lossy().contains([':', ';']) {
        return fail(format!(
            "--out {}: the bundle's folder may not hold ':' or ';' (its start scripts give the \
             loader `lib/` in a list that they separate)",
            folder.display()
        ));
    }
    if let Some(binds) = std::env::var_os(env::BINDS) {
        let binds: Vec<PathBuf> = std::env::split_paths(&binds).collect();
        if !binds.iter().any(|bound| folder.starts_with(bound)) {
            let shared: Vec<String> = binds.iter().map(|b| b.display().to_string()).collect();
            return fail(format!(
                "--out {}: this folder is the toolchain sysroot's own, not the machine's; \
                 `./x.py cargo` shares only {}: write the bundle under one of them",
                folder.display(),
                shared.join(", ")
            ));
        }
    }
    if folder.exists() && !folder.is_dir() {
        return fail(format!("--out {}: not a folder", folder.display()));
    }
    refuse_foreign_entries(&folder)?;
    Ok(folder)
}

/// Fails unless `out` is missing, empty, or a bundle that `cargo offload` wrote with nothing
/// added: its mark file lists every file and folder it wrote (`bin/NAME`, `lib/NAME`), and any
/// other entry is the user's.
fn refuse_foreign_entries(out: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(out) else { return Ok(()) };
    let mut found: Vec<String> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            for inner in fs::read_dir(entry.path()).into_iter().flatten().flatten() {
                found.push(format!("{name}/{}", inner.file_name().to_string_lossy()));
            }
        }
        found.push(name);
    }
    if found.is_empty() {
        return Ok(());
    }
    let Ok(mark) = fs::read_to_string(out.join(BUNDLE_MARK)) else {
        return fail(format!(
            "{} exists and is not a bundle of `cargo offload`; give another --out",
            out.display()
        ));
    };
    let ours: Vec<&str> = mark.lines().collect();
    if let Some(other) = found.iter().find(|n| !ours.contains(&n.as_str())) {
        return fail(format!(
            "{} holds `{other}`, which `cargo offload bundle` did not write; move it away or \
             give another --out",
            out.display()
        ));
    }
    Ok(())
}

/// The start script of the bundled program `name` (`bin/NAME`).
fn start_script(name: &str) -> String {
    let quoted = format!("'{}'", name.replace('\'', "'\\''"));
    format!(
        "#!/bin/sh\n\
         # Starts {name} (written by `cargo offload bundle`) with this bundle's dynamic loader\n\
         # and libraries (lib/), whatever the machine's C library: arguments and the exit\n\
         # status pass through. A GPU driver comes from the machine (its ld.so.cache).\n\
         # OFFLOAD_REPORT=1: one line per kernel and device says which device and image ran it.\n\
         here=$(dirname \"$(readlink -f \"$0\")\")\n\
         case \"$here\" in *:* | *\\;*)\n\
         \x20   echo \"$0: the bundle's folder holds ':' or ';', which the loader's\" \\\n\
         \x20       \"library path cannot hold: move the bundle\" >&2\n\
         \x20   exit 127 ;;\n\
         esac\n\
         lib=\"$here/lib\"\n\
         if [ -e \"$lib/libomp.so.5\" ] && ! [ \"$lib/libomp.so\" -ef \"$lib/libomp.so.5\" ]\n\
         then\n\
         \x20   echo \"$0: lib/libomp.so must be a link to libomp.so.5 (copy the bundle with\" \\\n\
         \x20       \"tar, cp -a or rsync -a, which keep links)\" >&2\n\
         \x20   exit 127\n\
         fi\n\
         if [ -n \"${{OFFLOAD_REPORT:-}}\" ] && [ \"$OFFLOAD_REPORT\" != 0 ]; then\n\
         \x20   if ! [ -f \"$lib/liboffload_report.so\" ]; then\n\
         \x20       echo \"$0: OFFLOAD_REPORT is set; lib/liboffload_report.so is missing\" >&2\n\
         \x20       exit 127\n\
         \x20   fi\n\
         \x20   exec \"$here/lib/ld-linux-x86-64.so.2\" --library-path \"$here/lib\" \\\n\
         \x20       --preload \"$here/lib/liboffload_report.so\" --argv0 \"$0\" \\\n\
         \x20       \"$here/bin/\"{quoted} \"$@\"\n\
         fi\n\
         exec \"$here/lib/ld-linux-x86-64.so.2\" --library-path \"$here/lib\" --argv0 \"$0\" \\\n\
         \x20   \"$here/bin/\"{quoted} \"$@\"\n"
    )
}

/// `bundle`: writes `out` with each program (`bin/`), the libraries they and
/// `liboffload_report.so` load and the loader (`lib/`), and a start script per program
/// ([`start_script`]); prints the size and the C library. An `out` that holds anything but an
/// earlier bundle is refused ([`bundle_folder`]), so nothing a user wrote is overwritten.
pub(crate) fn write_bundle(out: &Path, programs: &[String]) -> Result<()> {
    if programs.is_empty() {
        return fail("the host pass built no program to bundle");
    }
    let names = start_script_names(programs)?;
    // Checked again: the build took a while.
    let out = &bundle_folder(out)?;
    let staging = staging_folder(out)?;
    fill_bundle(&staging, programs, &names)?;
    if out.exists() {
        fs::remove_dir_all(out).map_err(|e| io_failure(out, e))?;
    }
    fs::rename(&staging, out).map_err(|e| io_failure(out, e))?;
    report_bundle(out, &names);
    Ok(())
}

/// A failure of the file system at `path`.
fn io_failure(path: &Path, e: std::io::Error) -> Failure {
    Failure::new(format!("{}: {e}", path.display()))
}

/// The name of each program's start script (its file name), in the order of `programs`. A
/// name that the bundle has already (`bin`, `lib`, the mark, another program's) is refused.
fn start_script_names(programs: &[String]) -> Result<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    for program in programs {
        let name = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        if ["bin", "lib", BUNDLE_MARK, ""].contains(&name.as_str()) || names.contains(&name) {
            return fail(format!(
                "cannot bundle {program}: its start script would be `{name}`, which the bundle \
                 has already (bundle the programs one at a time with `--bin NAME`)"
            ));
        }
        names.push(name);
    }
    Ok(names)
}

/// The folder in which the bundle for `out` is written, beside `out`, and moved into place at
/// the end, so that a failed bundle leaves the earlier one as it was; named by this process,
/// and refused if something is there.
fn staging_folder(out: &Path) -> Result<PathBuf> {
    let staging = out.with_file_name(format!(
        ".{}.cargo-offload-{}",
        out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    if fs::symlink_metadata(&staging).is_ok() {
        return fail(format!("{} is in the way of the bundle; remove it", staging.display()));
    }
    Ok(staging)
}

/// Writes the bundle into `staging`: the programs (`bin/`, as `names`) with a start script
/// each, the libraries (`lib/`), and the mark that lists all it wrote.
fn fill_bundle(staging: &Path, programs: &[String], names: &[String]) -> Result<()> {
    let (bin, lib) = (staging.join("bin"), staging.join("lib"));
    fs::create_dir_all(&bin)
        .and_then(|()| fs::create_dir_all(&lib))
        .map_err(|e| io_failure(&bin, e))?;
    let mut entries: Vec<String> = vec!["bin".into(), "lib".into(), BUNDLE_MARK.into()];
    let report = report_library()?;
    let mut needed = libraries(&report)?;
    needed.push(("liboffload_report.so".to_string(), report));
    for (program, name) in programs.iter().zip(names) {
        let path = Path::new(program);
        fs::copy(path, bin.join(name)).map_err(|e| io_failure(path, e))?;
        needed.extend(libraries(path)?);
        let script = staging.join(name);
        fs::write(&script, start_script(name)).map_err(|e| io_failure(&script, e))?;
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755))
            .map_err(|e| io_failure(&script, e))?;
        entries.push(name.clone());
    }
    copy_libraries(&lib, &needed)?;
    write_mark(staging, entries)?;
    // The runtime opens `libomp` a second time by the name `libomp.so` (OMPT): a link, since
    // the loader tells libraries apart by file, and a second copy aborts ("OMP: Error #15").
    if lib.join("libomp.so.5").is_file() {
        std::os::unix::fs::symlink("libomp.so.5", lib.join("libomp.so"))
            .map_err(|e| io_failure(&lib, e))?;
    }
    Ok(())
}

/// Copies each of `needed` (name, path) into `lib` under its name, once; the loader must be
/// among them.
fn copy_libraries(lib: &Path, needed: &[(String, PathBuf)]) -> Result<()> {
    for (name, path) in needed {
        let to = lib.join(name);
        if !to.exists() {
            fs::copy(path, &to).map_err(|e| io_failure(path, e))?;
        }
    }
    if !lib.join("ld-linux-x86-64.so.2").is_file() {
        return fail("ldd named no dynamic loader `ld-linux-x86-64.so.2` for the programs");
    }
    Ok(())
}

/// Writes the mark of the bundle in `staging`: `entries` (what it wrote at its top), every file
/// in `bin/` and `lib/`, and `lib/libomp.so`, the link made after it.
fn write_mark(staging: &Path, mut entries: Vec<String>) -> Result<()> {
    for dir in ["bin", "lib"] {
        for inner in fs::read_dir(staging.join(dir)).into_iter().flatten().flatten() {
            entries.push(format!("{dir}/{}", inner.file_name().to_string_lossy()));
        }
    }
    entries.push("lib/libomp.so".into());
    fs::write(staging.join(BUNDLE_MARK), entries.join("\n") + "\n")
        .map_err(|e| io_failure(staging, e))
}

/// Prints how to start each bundled program (`names`) and what the bundle `out` holds: its
/// size, its libraries and the C library among them.
fn report_bundle(out: &Path, names: &[String]) {
    let (bin, lib) = (out.join("bin"), out.join("lib"));
    for name in names {
        eprintln!("[cargo offload] bundled {name}: start it with {}", out.join(name).display());
    }
    let bytes: u64 = [&bin, &lib]
        .iter()
        .flat_map(|d| fs::read_dir(d).into_iter().flatten().flatten())
        .filter_map(|e| fs::symlink_metadata(e.path()).ok())
        .map(|m| m.len())
        .sum();
    let libc = Command::new(lib.join("libc.so.6"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").to_string())
        .unwrap_or_default();
    eprintln!(
        "[cargo offload] bundle {}: {} program{}, {} MB ({} libraries with the loader \
         lib/ld-linux-x86-64.so.2; {libc})",
        out.display(),
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        bytes.div_ceil(1_000_000),
        fs::read_dir(&lib).map(|d| d.count()).unwrap_or(0)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::strings;

    #[test]
    fn plans_read_back_as_written() {
        let plan = Plan::new(
            Verb::Test,
            vec![
                Run {
                    program: "/w/target/a".to_string(),
                    args: strings(&["", "two\nlines", "x:y", "3", "\"quoted\" \\ ü"]),
                    loader: PathBuf::from("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
                    library_path: vec![
                        PathBuf::from("/usr/lib/llvm-22/lib"),
                        PathBuf::from("/usr/lib/x86_64-linux-gnu"),
                        PathBuf::from("/opt/lib: ü"),
                    ],
                },
                Run {
                    program: "/w/target/b".to_string(),
                    args: vec![],
                    loader: PathBuf::from("/l"),
                    library_path: vec![],
                },
            ],
        );
        let text = plan.encode();
        assert_eq!(Plan::decode(&text).as_ref(), Some(&plan));
        let other_format = text.replace(PLAN_FORMAT, "cargo-offload-plan 3");
        assert_ne!(other_format, text);
        assert_eq!(Plan::decode(&other_format), None, "another format");
        assert_eq!(Plan::decode("cargo-offload-plan 1\n1\n3\nrun\n"), None, "an older plan");
        assert_eq!(Plan::decode(&text[..text.len() - 2]), None, "a short plan");
        assert_eq!(Plan::decode("something else"), None);
        let two_runs = Plan::new(Verb::Run, plan.runs);
        assert_eq!(Plan::decode(&two_runs.encode()), None, "`run` runs one program");
        let none = Plan::new(Verb::Test, vec![]);
        assert_eq!(Plan::decode(&none.encode()), None, "no program");
        let one = || Run {
            program: "/a".into(),
            args: vec![],
            loader: "/l".into(),
            library_path: vec![],
        };
        let build = Plan::new(Verb::Build, vec![one()]);
        assert_eq!(Plan::decode(&build.encode()), None, "`build` runs nothing");
        let run = Plan::new(Verb::Run, vec![one()]);
        assert_eq!(Plan::decode(&run.encode()), Some(run));
    }

    #[test]
    fn paths_that_are_not_utf8_are_written_lossily() {
        use std::os::unix::ffi::OsStrExt;
        let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/lib/\xff"));
        let run = Run {
            program: "/a".into(),
            args: vec![],
            loader: odd.clone(),
            library_path: vec![odd],
        };
        let read = Plan::decode(&Plan::new(Verb::Run, vec![run]).encode()).unwrap();
        assert_eq!(read.runs[0].loader, PathBuf::from("/lib/\u{fffd}"));
        assert_eq!(read.runs[0].library_path, [PathBuf::from("/lib/\u{fffd}")]);
    }

    #[test]
    fn sysroot_paths_map_outside_unless_bound() {
        let (root, binds) = (Path::new("/c/sysroot"), [PathBuf::from("/w"), PathBuf::from("/tmp")]);
        assert_eq!(outside_path(root, &binds, Path::new("/w/t/app")), PathBuf::from("/w/t/app"));
        assert_eq!(
            outside_path(root, &binds, Path::new("/usr/lib/llvm-22/lib")),
            PathBuf::from("/c/sysroot/usr/lib/llvm-22/lib")
        );
        assert_eq!(outside_path(root, &binds, Path::new("/wx")), PathBuf::from("/c/sysroot/wx"));
    }

    #[test]
    fn bundle_folders_are_checked_before_the_build() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-bundle-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("old/bin")).unwrap();
        // An earlier bundle: what its mark lists may go, anything else stays.
        fs::write(dir.join("old/.cargo-offload-bundle"), ".cargo-offload-bundle\nbin\nbin/app\n")
            .unwrap();
        fs::write(dir.join("old/bin/app"), "").unwrap();
        assert_eq!(bundle_folder(&dir.join("old/bin/..")).ok(), Some(dir.join("old")));
        fs::write(dir.join("old/bin/mine"), "").unwrap();
        let refused = bundle_folder(&dir.join("old")).err().map(|f| f.0).unwrap_or_default();
        assert!(refused.contains("holds `bin/mine`"), "{refused}");
        fs::write(dir.join("file"), "").unwrap();
        assert!(bundle_folder(&dir.join("file")).is_err(), "a file");
        assert!(bundle_folder(&dir.join("co:lon")).is_err(), "a colon");
        assert!(bundle_folder(Path::new("/")).is_err(), "the root");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ldd_lines_give_names_and_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibomptarget.so.22.1 => /usr/lib/llvm-22/lib/libomptarget.so.22.1 (0x7f)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x7f)\n\
                    \tlibmissing.so => not found\n";
        assert_eq!(
            parse_ldd(text),
            vec![
                (
                    "libomptarget.so.22.1".to_string(),
                    PathBuf::from("/usr/lib/llvm-22/lib/libomptarget.so.22.1")
                ),
                ("libc.so.6".to_string(), PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6")),
                ("ld-linux-x86-64.so.2".to_string(), PathBuf::from("/lib64/ld-linux-x86-64.so.2")),
            ]
        );
    }

    #[test]
    fn start_scripts_pass_arguments_and_quote_the_name() {
        let script = start_script("it's");
        assert!(script.starts_with("#!/bin/sh\n"));
        assert!(script.contains("\"$here/bin/\"'it'\\''s' \"$@\""), "{script}");
        assert_eq!(script.matches("exec ").count(), 2, "both ways replace the shell");
        assert!(script.contains("--preload \"$here/lib/liboffload_report.so\""));
    }
}
