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

use crate::util::{Context, Result};

/// The user's rustc wrapper: `RUSTC_WRAPPER` when set (and not empty), else the value of
/// `build.rustc-wrapper` that cargo's configuration gives in the current folder (read with
/// `cargo config get`, whose `--show-origin` says what a relative path is relative to: the
/// folder above the `.cargo` folder of the file that set it, or the current folder for an
/// environment variable); `None` when neither names one, or when it names `cargo-offload`
/// itself. A name without `/` stays a name, which `PATH` resolves, as cargo does it. Fails if
/// `cargo` cannot be started.
pub(crate) fn find(cargo: &OsStr) -> Result<Option<PathBuf>> {
    let wrapper = match std::env::var_os("RUSTC_WRAPPER").filter(|w| !w.is_empty()) {
        Some(wrapper) => Some(PathBuf::from(wrapper)),
        None => configured(cargo)?,
    };
    Ok(wrapper.filter(|w| w.file_name() != Some(OsStr::new("cargo-offload"))))
}

/// `build.rustc-wrapper` of cargo's configuration, resolved ([`find`]).
fn configured(cargo: &OsStr) -> Result<Option<PathBuf>> {
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
    let cwd = std::env::current_dir().context(|| "cannot read the current folder".to_string())?;
    Ok(String::from_utf8_lossy(&output.stdout).lines().find_map(|line| resolve(line, &cwd)))
}

/// The wrapper of one line of `cargo config get --format toml --show-origin`,
/// `build.rustc-wrapper = "VALUE" # ORIGIN`, with a relative path resolved against its origin
/// (`cwd` for an environment variable or a `--config` option); `None` for another line or an
/// empty value (which turns the wrapper off).
fn resolve(line: &str, cwd: &Path) -> Option<PathBuf> {
    let rest = line.strip_prefix("build.rustc-wrapper = \"")?;
    let (value, origin) = rest.split_once("\" # ").unwrap_or((rest.trim_end_matches('"'), ""));
    if value.is_empty() {
        return None;
    }
    if !value.contains('/') {
        return Some(PathBuf::from(value));
    }
    let config_file = Path::new(origin);
    let base = match config_file.parent() {
        Some(dot_cargo) if config_file.is_absolute() && dot_cargo.ends_with(".cargo") => {
            dot_cargo.parent().unwrap_or(dot_cargo)
        }
        _ => cwd,
    };
    Some(base.join(value))
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
        assert_eq!(resolve(&line("", "/home/u/ws/.cargo/config.toml"), cwd), None);
        assert_eq!(resolve("build.rustflags = []", cwd), None);
    }
}
