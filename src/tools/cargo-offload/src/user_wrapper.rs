//! The user's own `RUSTC_WRAPPER` (sccache, a logging script), which `cargo offload` runs
//! inside its own: cargo knows one wrapper only, and the host pass and the device passes need
//! `cargo-offload` there, so [`find`] reads the user's the way cargo would (`RUSTC_WRAPPER`, else
//! `build.rustc-wrapper` of cargo's configuration), and the host pass's wrapper runs each
//! rustc through it ([`crate::wrapper::host`]): cargo's probes, build scripts, proc macros and
//! every crate compiled for the target. The device passes do not use it: a device pass reads
//! the merged manifest (`-Zoffload=Device=<file>`), an input that a caching wrapper does not
//! know, so a cached device crate could miss a kernel launched since.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::env;
use crate::util::{Context, Result};

/// The user's rustc wrapper: `RUSTC_WRAPPER` when set (an empty value turns the wrapper off,
/// as it does for cargo), else the value of `build.rustc-wrapper` that cargo's configuration
/// gives in the current folder (read with `cargo config get`, whose `--show-origin` says what a
/// relative path is relative to: the folder above the folder of the file that set it, or the
/// current folder for an environment variable). A name without `/` stays a name, which `PATH`
/// resolves; a relative path becomes absolute here, since rustc runs in other folders. Where
/// `RUSTC_WRAPPER` is `cargo-offload` itself (a `cargo offload` in a build script of a host
/// pass), the wrapper that the outer `cargo offload` found ([`env::USER_RUSTC_WRAPPER`]).
/// `None` when nothing names one. Fails if `cargo` cannot be started.
pub(crate) fn find(cargo: &OsStr) -> Result<Option<PathBuf>> {
    let cwd = std::env::current_dir().context(|| "cannot read the current folder".to_string())?;
    match std::env::var_os("RUSTC_WRAPPER") {
        Some(wrapper) if wrapper.is_empty() => Ok(None),
        Some(wrapper) if Path::new(&wrapper).file_name() == Some(OsStr::new("cargo-offload")) => {
            Ok(std::env::var_os(env::USER_RUSTC_WRAPPER).map(PathBuf::from))
        }
        Some(wrapper) => Ok(Some(absolute(Path::new(&wrapper), &cwd))),
        None => configured(cargo, &cwd),
    }
}

/// `wrapper` as cargo runs it from `base`: a name as it is, a path joined to `base`.
fn absolute(wrapper: &Path, base: &Path) -> PathBuf {
    if wrapper.components().count() > 1 || wrapper.is_absolute() {
        base.join(wrapper)
    } else {
        wrapper.to_path_buf()
    }
}

/// `build.rustc-wrapper` of cargo's configuration, resolved ([`find`]).
fn configured(cargo: &OsStr, cwd: &Path) -> Result<Option<PathBuf>> {
    let output = Command::new(cargo)
        .args(["-Zunstable-options", "config", "get", "--format", "toml", "--show-origin"])
        .arg("build.rustc-wrapper")
        // `config get` is one of cargo's unstable commands, as `-Zbuild-std` is.
        .env("RUSTC_BOOTSTRAP", "1")
        .output()
        .context_run("cargo config get build.rustc-wrapper")?;
    // Not set: cargo says so and fails.
    if !output.status.success() {
        return Ok(None);
    }
    Ok(String::from_utf8_lossy(&output.stdout).lines().find_map(|line| resolve(line, cwd)))
}

/// The wrapper of one line of `cargo config get --format toml --show-origin`,
/// `build.rustc-wrapper = "VALUE" # ORIGIN`, with a relative path resolved against its origin:
/// the folder above the folder of the configuration file (cargo's root of a configuration
/// file, `<root>/.cargo/config.toml`), or `cwd` for an environment variable or a `--config`
/// option; `None` for another line or an empty value (which turns the wrapper off).
fn resolve(line: &str, cwd: &Path) -> Option<PathBuf> {
    let rest = line.strip_prefix("build.rustc-wrapper = \"")?;
    let (value, origin) = rest.split_once("\" # ").unwrap_or((rest.trim_end_matches('"'), ""));
    if value.is_empty() {
        return None;
    }
    let config_file = Path::new(origin);
    let root = config_file.parent().and_then(Path::parent);
    let base = match root {
        Some(root) if config_file.is_absolute() => root,
        _ => cwd,
    };
    Some(absolute(Path::new(value), base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_as_cargo_does() {
        let cwd = Path::new("/home/u/ws/app");
        let line =
            |value: &str, origin: &str| format!("build.rustc-wrapper = \"{value}\" # {origin}");
        assert_eq!(
            resolve(&line("tools/wrap.sh", "/home/u/ws/.cargo/config.toml"), cwd),
            Some(PathBuf::from("/home/u/ws/tools/wrap.sh"))
        );
        assert_eq!(
            resolve(&line("sccache", "/home/u/.cargo/config.toml"), cwd),
            Some(PathBuf::from("sccache"))
        );
        assert_eq!(
            resolve(&line("bin/w", "environment variable `CARGO_BUILD_RUSTC_WRAPPER`"), cwd),
            Some(PathBuf::from("/home/u/ws/app/bin/w"))
        );
        assert_eq!(
            resolve(&line("/opt/w", "--config cli option"), cwd),
            Some(PathBuf::from("/opt/w"))
        );
        assert_eq!(
            resolve(&line("w/x.sh", "/opt/cargo/config.toml"), cwd),
            Some(PathBuf::from("/opt/w/x.sh"))
        );
        assert_eq!(resolve(&line("", "/home/u/ws/.cargo/config.toml"), cwd), None);
        assert_eq!(absolute(Path::new("../w.sh"), cwd), PathBuf::from("/home/u/ws/app/../w.sh"));
        assert_eq!(absolute(Path::new("sccache"), cwd), PathBuf::from("sccache"));
        assert_eq!(resolve("build.rustflags = []", cwd), None);
    }
}
