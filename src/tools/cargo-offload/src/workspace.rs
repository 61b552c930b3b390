//! What the passes need to know about the user's project and toolchain: the workspace as
//! `cargo metadata` describes it ([`Workspace`]), the host's target triple and the profile
//! folder that the user's cargo arguments select.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::args::is_flag;
use crate::util::{Failure, Result};

/// What `cargo metadata --no-deps` tells about the workspace.
pub(crate) struct Workspace {
    /// Cargo's target folder (`target_directory`).
    pub(crate) target_dir: PathBuf,
    /// The workspace's root folder (`workspace_root`).
    pub(crate) root: PathBuf,
    /// Library crate name (`-` as `_`) -> (package name, package folder): the libraries of the
    /// workspace's members, and those of the path dependencies outside the workspace that the
    /// host metadata pass built ([`Workspace::add_dependencies`]). A member's library takes
    /// precedence over a path dependency's of the same crate name.
    pub(crate) libraries: BTreeMap<String, (String, PathBuf)>,
    /// Package ids of the workspace's members (cargo's `workspace_members`).
    pub(crate) member_ids: BTreeSet<String>,
    /// Package ids of the path dependencies outside the workspace whose library is among
    /// [`Workspace::libraries`].
    pub(crate) path_ids: BTreeSet<String>,
    /// Library crate name -> the sources (a registry, a git repository) of the packages of the
    /// build that are neither members nor path dependencies and that build a library of that
    /// name: their kernels cannot be built into the images yet.
    pub(crate) foreign: BTreeMap<String, BTreeSet<String>>,
    /// Packages with a target that the host pass links (a program, an example, a test, a
    /// `cdylib`): those link the device images' registration.
    pub(crate) linking_packages: BTreeSet<String>,
    /// Crate name (`-` as `_`) -> the crate that no other crate can depend on but that may
    /// define kernels: a program, an example, a library without `lib`, `rlib` or `dylib` among its
    /// crate types (a `cdylib`). A library of the same crate name takes precedence.
    pub(crate) programs: BTreeMap<String, Program>,
}

/// A crate of the workspace that only builds a final artifact (see [`Workspace::programs`]).
/// Its device pass builds it as an `rlib` that builds the device image itself.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Program {
    /// The package's name.
    pub(crate) package: String,
    /// Cargo's arguments that select the target: `--bin NAME`, `--example NAME` or `--lib`.
    pub(crate) selector: Vec<String>,
    /// The crate's root file (`src_path`).
    pub(crate) root: PathBuf,
    /// The crate names of the package's library and dependencies (normal and dev; a renamed
    /// one by its new name): its device pass compiles them, also those that its host code never
    /// names.
    pub(crate) dependencies: Vec<String>,
}

/// Runs `cargo metadata --no-deps` (with the user's `--manifest-path`, if any) and reads the
/// workspace out of it.
pub(crate) fn workspace(cargo: &OsString, cargo_args: &[String]) -> Result<Workspace> {
    let mut cmd = Command::new(cargo);
    cmd.args(["metadata", "--no-deps", "--format-version", "1"]);
    cmd.args(manifest_path_args(cargo_args));
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Failure::new(format!("cannot run cargo: {e}")))?;
    if !out.status.success() {
        return Err(Failure::new("`cargo metadata` failed (above)"));
    }
    let meta: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| Failure::new(format!("`cargo metadata` printed no JSON: {e}")))?;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut libraries = BTreeMap::new();
    let mut programs = BTreeMap::new();
    let mut linking_packages = BTreeSet::new();
    for package in meta["packages"].as_array().into_iter().flatten() {
        let dir = PathBuf::from(text(package, "manifest_path"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let kinds_of = |target: &Value| -> Vec<String> {
            let kinds = target["kind"].as_array().into_iter().flatten().filter_map(Value::as_str);
            kinds.map(str::to_string).collect()
        };
        let is_library =
            |kinds: &[String]| kinds.iter().any(|k| matches!(k.as_str(), "lib" | "rlib" | "dylib"));
        // A program's package's own library is built with the program, named or not.
        let mut dependencies = dependency_crates(package);
        let targets = package["targets"].as_array().into_iter().flatten();
        dependencies.extend(
            targets.filter(|t| is_library(&kinds_of(t))).map(|t| text(t, "name").replace('-', "_")),
        );
        for target in package["targets"].as_array().into_iter().flatten() {
            let kinds = kinds_of(target);
            let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
            let name = text(target, "name");
            let krate = name.replace('-', "_");
            if is_library(&kinds_of(target)) {
                libraries.insert(krate.clone(), (text(package, "name"), dir.clone()));
            } else if let Some(selector) = program_selector(&kinds, &name) {
                let root = PathBuf::from(text(target, "src_path"));
                let dependencies = dependencies.clone();
                let package = text(package, "name");
                programs.insert(krate, Program { package, selector, root, dependencies });
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
        path_ids: BTreeSet::new(),
        foreign: BTreeMap::new(),
        linking_packages,
        programs,
    })
}

impl Workspace {
    /// Adds the libraries of the dependencies that a pass built for `target` (its
    /// `compiler-artifact` messages, `artifacts`): each path dependency outside the workspace
    /// joins [`Workspace::libraries`] (a member's library of the same crate name keeps its
    /// place), so that the image crate depends on it by its folder, like on a member's
    /// library; a registry or git dependency is recorded in [`Workspace::foreign`].
    pub(crate) fn add_dependencies(&mut self, artifacts: &[Value], target: &str) {
        for artifact in artifacts {
            let Some(id) = artifact["package_id"].as_str() else { continue };
            let kinds = artifact["target"]["kind"].as_array().into_iter().flatten();
            let library =
                kinds.filter_map(Value::as_str).any(|k| matches!(k, "lib" | "rlib" | "dylib"));
            if self.member_ids.contains(id) || !library || !built_for(artifact, target) {
                continue;
            }
            let krate = artifact["target"]["name"].as_str().unwrap_or("").replace('-', "_");
            let (name, source) = package_id_parts(id);
            if !source.starts_with("path+") {
                self.foreign.entry(krate).or_default().insert(source.to_string());
                continue;
            }
            let manifest = PathBuf::from(artifact["manifest_path"].as_str().unwrap_or(""));
            let Some(dir) = manifest.parent().filter(|d| !d.as_os_str().is_empty()) else {
                continue;
            };
            if let Entry::Vacant(entry) = self.libraries.entry(krate) {
                entry.insert((name, dir.to_path_buf()));
                self.path_ids.insert(id.to_string());
            }
        }
    }
}

/// Whether a `compiler-artifact` message is of a unit built for `target`: its files lie under
/// `<target dir>/<target>/` (a build dependency's lie elsewhere, with features resolved apart).
pub(crate) fn built_for(artifact: &Value, target: &str) -> bool {
    let target_dir = format!("/{target}/");
    let files = artifact["filenames"].as_array().into_iter().flatten();
    files.filter_map(Value::as_str).any(|f| f.contains(&target_dir))
}

/// The package name and the source of a cargo package id: `SOURCE#NAME@VERSION`, or
/// `SOURCE#VERSION` when the name is the source's last path segment (cargo 1.77 and later), or
/// `NAME VERSION (SOURCE)` (earlier).
fn package_id_parts(id: &str) -> (String, &str) {
    if let Some((name, rest)) = id.split_once(' ') {
        let source = rest.split_once(" (").map_or("", |(_, s)| s.trim_end_matches(')'));
        return (name.to_string(), source);
    }
    let (source, fragment) = id.split_once('#').unwrap_or((id, ""));
    let name = match fragment.split_once('@') {
        Some((name, _)) => name,
        None => {
            let path = source.split('?').next().unwrap_or("").trim_end_matches('/');
            path.rsplit('/').next().unwrap_or("")
        }
    };
    (name.to_string(), source)
}

/// The crate names of the normal and dev dependencies of `package` (a package of `cargo
/// metadata`): the `rename`, else the package name with `-` as `_` (a library named otherwise
/// than its package keeps its name out of this list).
fn dependency_crates(package: &Value) -> Vec<String> {
    let dependencies = package["dependencies"].as_array().into_iter().flatten();
    dependencies
        .filter(|d| d["kind"].as_str() != Some("build"))
        .filter_map(|d| d["rename"].as_str().or(d["name"].as_str()))
        .map(|name| name.replace('-', "_"))
        .collect()
}

impl Program {
    /// The folder under cargo's profile folder where the program's device pass writes its
    /// `rlib` and the image: `examples` for an example, `deps` otherwise.
    pub(crate) fn output_folder(&self) -> &'static str {
        if self.selector.first().is_some_and(|s| s == "--example") { "examples" } else { "deps" }
    }
}

/// Cargo's arguments that select a target of `kinds` named `name` that may define kernels but
/// is no dependency of other crates: `--bin`, `--example`, `--lib` (a library that builds only
/// a `cdylib` or a `staticlib`). `None` for tests, benches and build scripts.
fn program_selector(kinds: &[&str], name: &str) -> Option<Vec<String>> {
    let flag = match kinds {
        ["bin"] => "--bin",
        ["example"] => "--example",
        _ if !kinds.is_empty() && kinds.iter().all(|k| matches!(*k, "cdylib" | "staticlib")) => {
            return Some(vec!["--lib".to_string()]);
        }
        _ => return None,
    };
    Some(vec![flag.to_string(), name.to_string()])
}

/// The host's target triple, from `rustc -vV`.
pub(crate) fn host_triple() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc)
        .arg("-vV")
        .output()
        .map_err(|e| Failure::new(format!("cannot run rustc: {e}")))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or_else(|| Failure::new("`rustc -vV` names no host"))
}

/// The `--release`/`--profile` of the user's cargo args, as the profile folder name.
pub(crate) fn profile_dir(cargo_args: &[String]) -> String {
    if cargo_args.iter().any(|a| a == "--release" || a == "-r") {
        return "release".into();
    }
    let named =
        cargo_args.iter().enumerate().find_map(|(i, a)| match a.strip_prefix("--profile") {
            Some("") => cargo_args.get(i + 1).map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        });
    match named {
        Some("dev" | "test") => "debug".into(),
        Some("bench") => "release".into(),
        Some(p) => p.to_string(),
        None => "debug".into(),
    }
}

/// The user's `--manifest-path PATH` (or `--manifest-path=PATH`), if any, for the cargo
/// commands that `cargo offload` runs on the user's workspace.
pub(crate) fn manifest_path_args(cargo_args: &[String]) -> &[String] {
    match cargo_args.iter().position(|a| a == "--manifest-path") {
        Some(i) => &cargo_args[i..(i + 2).min(cargo_args.len())],
        None => match cargo_args.iter().position(|a| a.starts_with("--manifest-path=")) {
            Some(i) => &cargo_args[i..=i],
            None => &[],
        },
    }
}

/// The user's cargo arguments that select the profile (`--release`, `-r`, `--profile NAME`),
/// for the cargo commands that build or clean a workspace crate apart from the user's pass.
pub(crate) fn profile_args(cargo_args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = cargo_args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--release" || arg == "-r" || arg.starts_with("--profile=") {
            out.push(arg.clone());
        } else if arg == "--profile" {
            out.push(arg.clone());
            out.extend(rest.next().cloned());
        }
    }
    out
}

/// Cargo's target selection options (`--lib`, `--bin NAME`, `--tests`, `--all-targets`, ...).
const TARGET_SELECTION: &[&str] = &[
    "--lib",
    "--bin",
    "--bins",
    "--example",
    "--examples",
    "--test",
    "--tests",
    "--bench",
    "--benches",
    "--all-targets",
    "--doc",
];

/// The target selection that the host metadata pass of `cargo offload test` adds to the user's
/// cargo args: `--tests` (the crates that `cargo test` compiles as tests, with `cfg(test)`),
/// and, when the user selects no target, `--examples` too, since `cargo test` then also builds
/// the examples (to see that they compile), which the host pass links with the images. Without
/// it, a kernel instance that only an example launches would be missing from the images, and
/// the host pass would refuse the example. An example or bench that the user names is checked
/// as itself, not as a test (`cargo test --example NAME` compiles it with `cfg(test)`).
pub(crate) fn test_check_targets(cargo_args: &[String]) -> &'static [&'static str] {
    let selects = cargo_args.iter().any(|a| TARGET_SELECTION.iter().any(|flag| is_flag(a, flag)));
    if selects { &["--tests"] } else { &["--tests", "--examples"] }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::util::strings;

    #[test]
    fn test_check_adds_examples_only_without_target_selection() {
        assert_eq!(
            test_check_targets(&strings(&["--release", "-p", "app"])),
            ["--tests", "--examples"]
        );
        assert_eq!(test_check_targets(&strings(&["--test", "t", "--release"])), ["--tests"]);
        assert_eq!(test_check_targets(&strings(&["--lib"])), ["--tests"]);
        assert_eq!(test_check_targets(&strings(&["--bin=app"])), ["--tests"]);
        assert_eq!(test_check_targets(&strings(&["--bench=b"])), ["--tests"]);
        assert_eq!(test_check_targets(&strings(&["--example=x"])), ["--tests"]);
        assert_eq!(test_check_targets(&strings(&["--examples", "--workspace"])), ["--tests"]);
        assert_eq!(test_check_targets(&strings(&["--all-targets"])), ["--tests"]);
        assert_eq!(test_check_targets(&strings(&["--workspace"])), ["--tests", "--examples"]);
        // Only a whole flag, or one with `=VALUE`, selects: not a longer flag that starts alike.
        assert_eq!(test_check_targets(&strings(&["--libfoo"])), ["--tests", "--examples"]);
    }

    #[test]
    fn profile_folder_follows_release_and_profile() {
        assert_eq!(profile_dir(&strings(&["-p", "app"])), "debug");
        assert_eq!(profile_dir(&strings(&["--release"])), "release");
        assert_eq!(profile_dir(&strings(&["-r"])), "release");
        assert_eq!(profile_dir(&strings(&["--profile", "dev"])), "debug");
        assert_eq!(profile_dir(&strings(&["--profile", "test"])), "debug");
        assert_eq!(profile_dir(&strings(&["--profile", "bench"])), "release");
        assert_eq!(profile_dir(&strings(&["--profile", "fast"])), "fast");
        assert_eq!(profile_dir(&strings(&["--profile=fast"])), "fast");
        assert_eq!(profile_dir(&strings(&["--profile=dev"])), "debug");
    }

    #[test]
    fn package_ids_name_their_package_and_source() {
        let parts = |id: &str| {
            let (name, source) = package_id_parts(id);
            (name, source.to_string())
        };
        let path = "path+file:///home/u/kern-x".to_string();
        assert_eq!(parts("path+file:///home/u/kern-x#kern-two@0.2.0"), ("kern-two".into(), path));
        let path = "path+file:///home/u/kern2".to_string();
        assert_eq!(parts("path+file:///home/u/kern2#0.1.0"), ("kern2".into(), path.clone()));
        assert_eq!(parts("kern2 0.1.0 (path+file:///home/u/kern2)"), ("kern2".into(), path));
        let git = "git+https://example.org/k.git?branch=main".to_string();
        assert_eq!(parts("git+https://example.org/k.git?branch=main#k@1.0.0"), ("k".into(), git));
    }

    #[test]
    fn path_dependencies_join_the_libraries() {
        let mut ws = Workspace {
            target_dir: PathBuf::from("/ws/target"),
            root: PathBuf::from("/ws"),
            libraries: BTreeMap::from([(
                "kern".into(),
                ("kern".into(), PathBuf::from("/ws/kern")),
            )]),
            member_ids: BTreeSet::from(["path+file:///ws/kern#0.1.0".to_string()]),
            path_ids: BTreeSet::new(),
            foreign: BTreeMap::new(),
            linking_packages: BTreeSet::new(),
            programs: BTreeMap::new(),
        };
        let host = "x86_64-unknown-linux-gnu";
        let artifact = |id: &str, name: &str, kind: &str, dir: &str, folder: &str| {
            let file = format!("/ws/target/{folder}/debug/deps/lib{name}.rmeta");
            json!({
                "package_id": id, "manifest_path": format!("{dir}/Cargo.toml"),
                "target": {"name": name, "kind": [kind]}, "filenames": [file], "features": []
            })
        };
        let artifacts = [
            artifact("path+file:///ws/kern#0.1.0", "kern", "lib", "/ws/kern", host),
            artifact(
                "path+file:///out/kern-x#kern-two@0.2.0",
                "kern_two",
                "lib",
                "/out/kern-x",
                host,
            ),
            // A path dependency's program, and a library built only as a build dependency.
            artifact("path+file:///out/tool#0.1.0", "tool", "bin", "/out/tool", host),
            artifact("path+file:///out/gen#0.1.0", "gen", "lib", "/out/gen", "."),
            // A path dependency with a member's crate name: the member's library stays.
            artifact("path+file:///out/kern#0.9.0", "kern", "lib", "/out/kern", host),
            artifact("registry+https://r#reg@1.0.0", "reg", "rlib", "/r/reg-1.0.0", host),
            artifact("git+https://g/reg#reg@2.0.0", "reg", "lib", "/g/reg", host),
        ];
        ws.add_dependencies(&artifacts, host);
        let libraries: Vec<(&str, &str, &Path)> =
            ws.libraries.iter().map(|(k, (p, d))| (k.as_str(), p.as_str(), d.as_path())).collect();
        assert_eq!(
            libraries,
            [
                ("kern", "kern", Path::new("/ws/kern")),
                ("kern_two", "kern-two", Path::new("/out/kern-x"))
            ]
        );
        assert_eq!(ws.path_ids, BTreeSet::from(["path+file:///out/kern-x#kern-two@0.2.0".into()]));
        let foreign = BTreeSet::from(["git+https://g/reg".into(), "registry+https://r".into()]);
        assert_eq!(ws.foreign, BTreeMap::from([("reg".to_string(), foreign)]));
    }

    #[test]
    fn profile_arguments_are_kept_apart() {
        let args = strings(&["-p", "app", "--release", "--profile", "fast", "--features", "x"]);
        assert_eq!(profile_args(&args), strings(&["--release", "--profile", "fast"]));
        assert_eq!(profile_args(&strings(&["--profile=fast", "-v"])), strings(&["--profile=fast"]));
        assert!(profile_args(&strings(&["--bins"])).is_empty());
        let path = strings(&["--manifest-path=ws/Cargo.toml", "-p", "app"]);
        assert_eq!(manifest_path_args(&path), &path[..1]);
        let path = strings(&["-p", "app", "--manifest-path", "ws/Cargo.toml"]);
        assert_eq!(manifest_path_args(&path), &path[2..]);
    }
}
