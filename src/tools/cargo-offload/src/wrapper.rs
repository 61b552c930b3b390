//! The `RUSTC_WRAPPER` side of `cargo offload`: in the host metadata pass cargo runs
//! `cargo-offload <rustc> <args>` for every rustc it needs, and each crate compiled for the
//! target gets its own manifest (`-Zoffload=HostMetadata=<manifest>`), the way cargo-miri drives
//! rustc.

use std::process::{Command, ExitCode};

/// The environment variable that tells a `cargo-offload` run by cargo as `RUSTC_WRAPPER` which
/// pass it wraps; its value is the folder of the manifests.
pub(crate) const WRAP_VAR: &str = "CARGO_OFFLOAD_HOST_METADATA_DIR";

/// `RUSTC_WRAPPER` of the host metadata pass: gives each crate compiled for the target (cargo
/// passes `--target` to those, not to build scripts and proc macros) its own manifest,
/// `<dir>/<crate name><extra filename>.json`, then runs rustc.
pub(crate) fn wrap_rustc(dir: &str, args: &[String]) -> ExitCode {
    let Some((rustc, args)) = args.split_first() else {
        eprintln!("error: [cargo offload] run as RUSTC_WRAPPER without a rustc to run");
        return ExitCode::from(2);
    };
    let mut cmd = Command::new(rustc);
    cmd.args(args).env_remove(WRAP_VAR);
    if let Some(name) = manifest_name(args) {
        cmd.arg("-Zunstable-options").arg(format!("-Zoffload=HostMetadata={dir}/{name}.json"));
    }
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
    let value = |flag: &str| {
        args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(String::as_str)
    };
    if !args.iter().any(|a| a == "--target" || a.starts_with("--target=")) {
        return None;
    }
    if args.iter().any(|a| a.starts_with("--print")) {
        return None;
    }
    let krate = value("--crate-name").filter(|c| *c != "___")?;
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
}
