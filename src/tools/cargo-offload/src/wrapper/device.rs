//! `RUSTC_WRAPPER` of a device pass ([`wrap_device_rustc`]), whose cargo run builds for one
//! target per arch: each target's own flags, and a program that defines kernels compiled as an
//! `rlib`.

use std::fs;
use std::process::{Command, ExitCode};

use super::{crate_name, flag_value};
use crate::args::is_flag;
use crate::env;
use crate::role::{DevicePass, Rustc};
use crate::util::{Context, Result};

/// The role of a wrapper of a device pass, whose cargo run builds for one target per arch
/// (`pass.target_flags`: [`env::DEVICE_TARGET_FLAGS`]). A rustc for one of them (`--target T`,
/// cargo's probe of the target included) gets T's flags after cargo's, which are those that
/// every target of the run shares; build scripts and proc macros (no `--target`) get none.
/// With `pass.program` (the crate name of a program that defines kernels:
/// [`env::DEVICE_PROGRAM`]), that program, compiled for a target, is an `rlib` ([`as_rlib`]),
/// whose device pass builds the image. Cargo's own per-target flags
/// (`target.<triple>.rustflags`) would join those of the user's `.cargo/config.toml` for the
/// same target, and the device passes take none of the user's flags. Returns rustc's exit
/// status; fails if rustc cannot be started.
pub(crate) fn wrap_device_rustc(rustc: &Rustc, pass: &DevicePass) -> Result<ExitCode> {
    let (program, args) = (pass.program.as_deref(), &rustc.args[..]);
    let mut cmd = Command::new(&rustc.program);
    cmd.env_remove(env::DEVICE_PROGRAM)
        .env_remove(env::DEVICE_TARGET_FLAGS)
        .env_remove(env::DEVICE_FAILURES);
    let target = flag_value(args, "--target");
    let extra = target.map_or(Vec::new(), |t| flags_of(&pass.target_flags, t));
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
    let ran = cmd.status().context_run(&rustc.program);
    let code = match &ran {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            let signal = status.signal();
            if signal.is_some() {
                let rustc = &rustc.program;
                eprintln!("error: [cargo offload] `{rustc}` was ended by a signal ({status})");
            }
            status.code().unwrap_or(128 + signal.unwrap_or(0))
        }
        Err(_) => 1,
    };
    // One cargo run builds for several archs, and rustc's errors do not say for which target:
    // `cargo offload` names the archs whose targets failed ([`env::DEVICE_FAILURES`]).
    if code != 0
        && let (Some(target), Some(record)) = (target, &pass.failures)
    {
        let line = format!("{target}\n");
        let appended = fs::OpenOptions::new().create(true).append(true).open(record);
        let _ = appended.and_then(|mut file| std::io::Write::write_all(&mut file, line.as_bytes()));
    }
    ran?;
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
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
        .find_map(|mut fields| (fields.next() == Some(target)).then_some(fields))
        .map_or(Vec::new(), |flags| flags.map(str::to_string).collect())
}

/// `args` of a program's rustc with every `--crate-type` replaced by one `--crate-type rlib`,
/// and without `-C lto` (an `rlib` is no LTO product) and the lints (the host pass reports them;
/// a program built as a library has dead code wherever its `main` is `cfg`'d out).
fn as_rlib(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len() + 3);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        // A flag whose value is the next argument goes with its value.
        let lto = arg == "-C" && rest.as_slice().first().is_some_and(|v| v.starts_with("lto"));
        if arg == "--crate-type" || arg == "--cap-lints" || lto {
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
fn probe_with_programs(probe: &mut Command) -> Result<ExitCode> {
    let out = probe.output().context_run("rustc")?;
    let args: Vec<String> = probe.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    let (stdout, stderr) = executables_supported(
        &args,
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    );
    print!("{stdout}");
    eprint!("{stderr}");
    Ok(ExitCode::from(out.status.code().unwrap_or(1).clamp(0, 255) as u8))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::strings;

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
