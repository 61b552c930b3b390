//! What the passes need to know about the user's project and toolchain: the workspace as
//! `cargo metadata` describes it ([`Workspace`]), the host's target triple and the profile
//! folder that the user's cargo arguments select.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::util::{Failure, Result};

/// What `cargo metadata --no-deps` tells about the workspace.
pub(crate) struct Workspace {
    /// Cargo's target folder (`target_directory`).
    pub(crate) target_dir: PathBuf,
    /// The workspace's root folder (`workspace_root`).
    pub(crate) root: PathBuf,
    /// Library crate name (`-` as `_`) -> (package name, package folder).
    pub(crate) libraries: BTreeMap<String, (String, PathBuf)>,
    /// Package ids of the workspace's members (cargo's `workspace_members`).
    pub(crate) member_ids: BTreeSet<String>,
    /// Packages with a target that the host pass links (a program, an example, a test, a
    /// `cdylib`): those link the device images' registration.
    pub(crate) linking_packages: BTreeSet<String>,
}

/// Runs `cargo metadata --no-deps` (with the user's `--manifest-path`, if any) and reads the
/// workspace out of it.
pub(crate) fn workspace(cargo: &OsString, cargo_args: &[String]) -> Result<Workspace> {
    let mut cmd = Command::new(cargo);
    cmd.args(["metadata", "--no-deps", "--format-version", "1"]);
    if let Some(i) = cargo_args.iter().position(|a| a == "--manifest-path") {
        cmd.args(&cargo_args[i..(i + 2).min(cargo_args.len())]);
    }
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Failure(format!("cannot run cargo: {e}"), 1))?;
    if !out.status.success() {
        return Err(Failure("`cargo metadata` failed (above)".into(), 1));
    }
    let meta: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| Failure(format!("`cargo metadata` printed no JSON: {e}"), 1))?;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut libraries = BTreeMap::new();
    let mut linking_packages = BTreeSet::new();
    for package in meta["packages"].as_array().into_iter().flatten() {
        let dir = PathBuf::from(text(package, "manifest_path"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        for target in package["targets"].as_array().into_iter().flatten() {
            let kinds: Vec<&str> =
                target["kind"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            if kinds.iter().any(|k| matches!(*k, "lib" | "rlib")) {
                libraries.insert(
                    text(target, "name").replace('-', "_"),
                    (text(package, "name"), dir.clone()),
                );
            }
            if kinds
                .iter()
                .any(|k| matches!(*k, "bin" | "example" | "test" | "bench" | "cdylib" | "dylib"))
            {
                linking_packages.insert(text(package, "name"));
            }
        }
    }
    let member_ids = meta["workspace_members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    Ok(Workspace {
        target_dir: PathBuf::from(text(&meta, "target_directory")),
        root: PathBuf::from(text(&meta, "workspace_root")),
        libraries,
        member_ids,
        linking_packages,
    })
}

/// The host's target triple, from `rustc -vV`.
pub(crate) fn host_triple() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc)
        .arg("-vV")
        .output()
        .map_err(|e| Failure(format!("cannot run rustc: {e}"), 1))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or_else(|| Failure("`rustc -vV` names no host".into(), 1))
}

/// The `--release`/`--profile` of the user's cargo args, as the profile folder name.
pub(crate) fn profile_dir(cargo_args: &[String]) -> String {
    if cargo_args.iter().any(|a| a == "--release" || a == "-r") {
        return "release".into();
    }
    match cargo_args.iter().position(|a| a == "--profile").and_then(|i| cargo_args.get(i + 1)) {
        Some(p) if p == "dev" || p == "test" => "debug".into(),
        Some(p) if p == "bench" => "release".into(),
        Some(p) => p.clone(),
        None => "debug".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::strings;

    #[test]
    fn profile_folder_follows_release_and_profile() {
        assert_eq!(profile_dir(&strings(&["-p", "app"])), "debug");
        assert_eq!(profile_dir(&strings(&["--release"])), "release");
        assert_eq!(profile_dir(&strings(&["-r"])), "release");
        assert_eq!(profile_dir(&strings(&["--profile", "dev"])), "debug");
        assert_eq!(profile_dir(&strings(&["--profile", "test"])), "debug");
        assert_eq!(profile_dir(&strings(&["--profile", "bench"])), "release");
        assert_eq!(profile_dir(&strings(&["--profile", "fast"])), "fast");
    }
}
