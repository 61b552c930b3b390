//! The `RUSTC_WRAPPER` side of `cargo offload`, the way cargo-miri drives rustc: cargo runs
//! `cargo-offload <rustc> <args>` for every rustc it needs. In the host metadata pass each
//! crate compiled for the target gets its own manifest (`-Zoffload=HostMetadata=<manifest>`,
//! [`wrap_rustc`]); in the device pass of a program that defines kernels, the program is
//! compiled as an `rlib` ([`wrap_program_rustc`]).

use std::process::{Command, ExitCode};

use crate::args::is_flag;
use crate::env;

/// `RUSTC_WRAPPER` of the host metadata pass: gives each crate compiled for the target (cargo
/// passes `--target` to those, not to build scripts and proc macros) its own manifest,
/// `<dir>/<crate name><extra filename>.json`, then runs rustc.
pub(crate) fn wrap_rustc(dir: &str, args: &[String]) -> ExitCode {
    let Some((rustc, args)) = args.split_first() else {
        eprintln!("error: [cargo offload] run as RUSTC_WRAPPER without a rustc to run");
        return ExitCode::from(2);
    };
    let mut cmd = Command::new(rustc);
    cmd.args(args).env_remove(env::HOST_METADATA_DIR);
    if let Some(name) = manifest_name(args) {
        cmd.arg("-Zunstable-options").arg(format!("-Zoffload=HostMetadata={dir}/{name}.json"));
    }
    run_rustc(rustc, cmd)
}

/// `RUSTC_WRAPPER` of the device pass of a program that defines kernels (a `bin`, an example,
/// a `cdylib`; `program` is its crate name): the program, compiled for the device target, is an
/// `rlib` ([`as_rlib`]), whose device pass builds the image; every other rustc runs as cargo
/// asked.
pub(crate) fn wrap_program_rustc(program: &str, args: &[String]) -> ExitCode {
    let Some((rustc, args)) = args.split_first() else {
        eprintln!("error: [cargo offload] run as RUSTC_WRAPPER without a rustc to run");
        return ExitCode::from(2);
    };
    let mut cmd = Command::new(rustc);
    cmd.env_remove(env::DEVICE_PROGRAM);
    if crate_name(args) == Some("___") && args.iter().any(|a| a == "--print=file-names") {
        return probe_with_programs(cmd.args(args));
    }
    let is_program =
        args.iter().any(|a| is_flag(a, "--target")) && crate_name(args) == Some(program);
    if is_program {
        cmd.args(as_rlib(args));
    } else {
        cmd.args(args);
    }
    run_rustc(rustc, cmd)
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
    args.iter().position(|a| a == "--crate-name").and_then(|i| args.get(i + 1)).map(String::as_str)
}

/// Runs rustc as `cmd`; its exit status is the wrapper's.
fn run_rustc(rustc: &str, mut cmd: Command) -> ExitCode {
    match cmd.status() {
        Ok(status) => ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8),
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
}
