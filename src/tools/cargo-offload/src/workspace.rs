//! What the passes need to know about the user's project and toolchain: the workspace as
//! `cargo metadata` describes it ([`Workspace`]), the host's target triple and the profile
//! folder that the user's cargo arguments select.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::util::{Context, Failure, Result};

/// What `cargo metadata --no-deps` tells about the workspace.
pub(crate) struct Workspace {
    /// Cargo's target folder (`target_directory`).
    pub(crate) target_dir: PathBuf,
    /// The workspace's root folder (`workspace_root`).
    pub(crate) root: PathBuf,
    /// Library crate name (`-` as `_`) -> its package and where that comes from: the libraries
    /// of the workspace's members, and those of the dependencies (path, registry, git) that the
    /// host pass built ([`Workspace::add_dependencies`]). A member's library takes
    /// precedence over a dependency's of the same crate name.
    pub(crate) libraries: BTreeMap<String, Library>,
    /// Package ids of the workspace's members (cargo's `workspace_members`).
    pub(crate) member_ids: BTreeSet<String>,
    /// Library crate name -> package id, of the dependencies whose library is among
    /// [`Workspace::libraries`] (the first of each crate name).
    pub(crate) dependency_ids: BTreeMap<String, String>,
    /// Library crate name -> the package ids of two or more dependencies (not members) that
    /// build a library of that name (two versions of a registry crate, say): the image crate
    /// cannot tell which one defines a kernel of that crate, so such a kernel is an error.
    pub(crate) ambiguous: BTreeMap<String, BTreeSet<String>>,
    /// Crate name (`-` as `_`) -> the crate that no other crate can depend on but that may
    /// define kernels: a program, an example, a library without `lib`, `rlib` or `dylib` among its
    /// crate types (a `cdylib`). A library of the same crate name takes precedence.
    pub(crate) programs: BTreeMap<String, Program>,
}

/// A library that may define kernels: its package, and how the image crate names it as a
/// dependency ([`Library::dependency`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Library {
    /// The package's name (the crate name may differ: `-` as `_`, or a `[lib] name`).
    pub(crate) package: String,
    /// Where cargo finds the package.
    pub(crate) source: LibrarySource,
}

/// Where cargo finds a library's package, as its package id's source says.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum LibrarySource {
    /// A member of the workspace or a path dependency: its folder.
    Path(PathBuf),
    /// A registry package: the index of its source id (`registry+URL` as `URL`, `sparse+URL`
    /// as is) and the version that the host build resolved.
    Registry { index: String, version: String },
    /// A git package: the repository and the reference of its source id (`branch`, `tag` or
    /// `rev` with its value; none for the default branch). The commit is the lock file's.
    Git { url: String, reference: Option<(String, String)> },
}

impl Library {
    /// The fields of a `Cargo.toml` dependency on the library (after its `package = ...`):
    /// `path = "DIR"`, `version = "=V", registry-index = "INDEX"`, or `git = "URL"` with its
    /// reference. The same source id as the host build's, so that a kernel crate that another
    /// dependency of the image crate also pulls in is one crate, not two, and the version is
    /// the host build's (the image crate starts from the workspace's lock file).
    pub(crate) fn dependency(&self) -> String {
        match &self.source {
            LibrarySource::Path(dir) => {
                format!("path = {}", toml_string(&dir.display().to_string()))
            }
            LibrarySource::Registry { index, version } => format!(
                "version = {}, registry-index = {}",
                toml_string(&format!("={version}")),
                toml_string(index)
            ),
            LibrarySource::Git { url, reference } => {
                let mut fields = format!("git = {}", toml_string(url));
                if let Some((kind, value)) = reference {
                    fields.push_str(&format!(", {kind} = {}", toml_string(value)));
                }
                fields
            }
        }
    }
}

impl LibrarySource {
    /// The source of a cargo package id's source part (`path+file://DIR`, `registry+URL`,
    /// `sparse+URL`, `git+URL[?KIND=VALUE]`) at `version`; `dir` is the package's folder (a
    /// path package's). `None` for another kind of source.
    fn of(source: &str, version: &str, dir: &Path) -> Option<LibrarySource> {
        if source.starts_with("path+") {
            return Some(LibrarySource::Path(dir.to_path_buf()));
        }
        if let Some(index) = source.strip_prefix("registry+") {
            let version = version.to_string();
            return Some(LibrarySource::Registry { index: index.to_string(), version });
        }
        if source.starts_with("sparse+") {
            let version = version.to_string();
            return Some(LibrarySource::Registry { index: source.to_string(), version });
        }
        let git = source.strip_prefix("git+")?;
        let (url, query) = git.split_once('?').unwrap_or((git, ""));
        let reference = query.split('&').find_map(|pair| {
            let (kind, value) = pair.split_once('=')?;
            matches!(kind, "branch" | "tag" | "rev").then(|| (kind.to_string(), value.to_string()))
        });
        Some(LibrarySource::Git { url: url.to_string(), reference })
    }
}

/// `text` as a TOML basic string (JSON's string escapes are TOML's).
pub(crate) fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// A crate of the workspace that only builds a final artifact (see [`Workspace::programs`]).
/// Its device pass builds it as an `rlib` that builds the device image itself.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Program {
    /// The package's name.
    pub(crate) package: String,
    /// Cargo's arguments that select the target: `--bin NAME`, `--example NAME` or `--lib`.
    pub(crate) selector: Vec<String>,
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
    let out = cmd.stderr(Stdio::inherit()).output().context_run("cargo")?;
    if !out.status.success() {
        return Err(Failure::new("`cargo metadata` failed (above)"));
    }
    let meta: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| Failure::new(format!("`cargo metadata` printed no JSON: {e}")))?;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut libraries = BTreeMap::new();
    let mut programs = BTreeMap::new();
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
                let library = Library {
                    package: text(package, "name"),
                    source: LibrarySource::Path(dir.clone()),
                };
                libraries.insert(krate.clone(), library);
            } else if let Some(selector) = program_selector(&kinds, &name) {
                let dependencies = dependencies.clone();
                let package = text(package, "name");
                programs.insert(krate, Program { package, selector, dependencies });
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
        dependency_ids: BTreeMap::new(),
        ambiguous: BTreeMap::new(),
        programs,
    })
}

impl Workspace {
    /// Whether a library of the workspace's own (a member's, or a path dependency's inside the
    /// workspace's folder) is among [`Workspace::libraries`]: crates whose doctests plain
    /// `cargo test` would run.
    pub(crate) fn has_own_library(&self) -> bool {
        self.libraries.values().any(|library| {
            matches!(&library.source, LibrarySource::Path(dir) if dir.starts_with(&self.root))
        })
    }

    /// Adds the libraries of the dependencies that a pass built for `target` (its
    /// `compiler-artifact` messages, `artifacts`) to [`Workspace::libraries`], so that the image
    /// crate can depend on those that define kernels like on a member's library: a path
    /// dependency by its folder, a registry or git dependency by its source and version. A
    /// member's library of the same crate name keeps its place; two dependencies of one crate
    /// name go to [`Workspace::ambiguous`].
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
            let (package, version, source) = package_id_parts(id);
            let manifest = PathBuf::from(artifact["manifest_path"].as_str().unwrap_or(""));
            let dir = manifest.parent().unwrap_or(Path::new(""));
            let Some(source) = LibrarySource::of(source, version, dir) else { continue };
            if matches!(&source, LibrarySource::Path(dir) if dir.as_os_str().is_empty()) {
                continue;
            }
            match self.libraries.entry(krate) {
                Entry::Vacant(entry) => {
                    self.dependency_ids.insert(entry.key().clone(), id.to_string());
                    entry.insert(Library { package, source });
                }
                // A member's library keeps its place; a second dependency of the crate name
                // makes it ambiguous.
                Entry::Occupied(entry) => {
                    if let Some(first) = self.dependency_ids.get(entry.key())
                        && first != id
                    {
                        let ids = self.ambiguous.entry(entry.key().clone()).or_default();
                        ids.extend([first.clone(), id.to_string()]);
                    }
                }
            }
        }
    }
}

/// Whether a `compiler-artifact` message is of a unit built for `target`: its files lie under
/// `<target dir>/<target>/` (a build dependency's lie elsewhere, with features resolved apart).
pub(crate) fn built_for(artifact: &Value, target: &str) -> bool {
    let target_dir = format!("/{target}/");
    // Cargo lists only the files that exist: a program that the host pass's compile run did
    // not link yet has none (its executable is named), nor has a `cdylib`; only crates for the
    // target are compiled without linking.
    let mut files = artifact["filenames"].as_array().into_iter().flatten().peekable();
    if files.peek().is_none() && artifact["executable"].is_null() {
        return true;
    }
    let files = files.chain(Some(&artifact["executable"]));
    files.filter_map(Value::as_str).any(|f| f.contains(&target_dir))
}

/// The package name, version and source of a cargo package id: `SOURCE#NAME@VERSION`, or
/// `SOURCE#VERSION` when the name is the source's last path segment (cargo 1.77 and later), or
/// `NAME VERSION (SOURCE)` (earlier).
fn package_id_parts(id: &str) -> (String, &str, &str) {
    if let Some((name, rest)) = id.split_once(' ') {
        let (version, source) = rest.split_once(" (").unwrap_or((rest, ""));
        return (name.to_string(), version, source.trim_end_matches(')'));
    }
    let (source, fragment) = id.split_once('#').unwrap_or((id, ""));
    let (name, version) = match fragment.split_once('@') {
        Some((name, version)) => (name, version),
        None => {
            let path = source.split('?').next().unwrap_or("").trim_end_matches('/');
            (path.rsplit('/').next().unwrap_or(""), fragment)
        }
    };
    (name.to_string(), version, source)
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

/// What `rustc -vV` prints of the toolchain's rustc (`RUSTC`, or `rustc` on `PATH`): its
/// version, commit and host.
pub(crate) fn rustc_version() -> Result<String> {
    let out = rustc().arg("-vV").output().context_run("rustc")?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The host's target triple, from `version` (`rustc -vV`: [`rustc_version`]).
pub(crate) fn host_triple(version: &str) -> Result<String> {
    version
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or_else(|| Failure::new("`rustc -vV` names no host"))
}

/// The toolchain's rustc: `RUSTC`, or `rustc` on `PATH`.
fn rustc() -> Command {
    Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
}

/// Refuses each GPU arch of `archs` that its target's processors lack (`gfx9999`, `sm_9`):
/// rustc would only warn, once per crate, and the vendor tools would then fail on the image
/// (`llc` with a crash). The processors are those of `rustc --print target-cpus --target
/// <triple>` ([`target_cpus`]), kept in `<dir>/target-cpus-<triple>` with the `rustc -vV`
/// (`version`) that printed them, so that rustc is asked once per toolchain.
pub(crate) fn check_gpu_archs(
    archs: &[crate::args::Arch],
    dir: &Path,
    version: &str,
) -> Result<()> {
    for arch in archs.iter().filter(|a| a.device.arch_is_cpu) {
        let Some(cpu) = &arch.cpu else { continue };
        let record = dir.join(format!("target-cpus-{}", arch.target));
        let kept = std::fs::read_to_string(&record).ok();
        // A record without processors (cut short) is asked again, not trusted.
        let kept = kept.as_deref().and_then(|k| k.strip_prefix(version));
        let listing = match kept.filter(|listing| !target_cpus(listing).is_empty()) {
            Some(listing) => listing.to_string(),
            None => {
                let out = rustc()
                    .args(["--print", "target-cpus", "--target", &arch.target])
                    .output()
                    .context_run("rustc")?;
                let listing = String::from_utf8_lossy(&out.stdout).into_owned();
                // Without a listing (an old rustc, a failure) the device pass reports it.
                if !out.status.success() || target_cpus(&listing).is_empty() {
                    continue;
                }
                // Written beside and renamed, so that a reader never sees half a record.
                let part = record.with_extension(format!("part{}", std::process::id()));
                let written = std::fs::write(&part, format!("{version}{listing}"))
                    .and_then(|()| std::fs::rename(&part, &record));
                if written.is_err() {
                    let _ = std::fs::remove_file(&part);
                }
                listing
            }
        };
        if !target_cpus(&listing).contains(&cpu.as_str()) {
            return Err(Failure::usage(format!(
                "unknown offload arch `{}`: `{}` has no processor `{cpu}` (`rustc --print \
                 target-cpus --target {}` lists those it has)",
                arch.name, arch.target, arch.target
            )));
        }
    }
    Ok(())
}

/// The processors in `listing`, the output of `rustc --print target-cpus`: the first word of
/// each indented line (a line may go on with a description).
fn target_cpus(listing: &str) -> Vec<&str> {
    listing
        .lines()
        .filter(|l| l.starts_with(char::is_whitespace))
        .filter_map(|l| l.split_whitespace().next())
        .collect()
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

/// The user's cargo arguments that say where packages come from, for the cargo commands of the
/// device passes, so that they resolve the kernel crates as the host passes did: `--offline`,
/// `--config VALUE` (or `--config=VALUE`), and `--frozen` as `--offline` (the image crate adds
/// itself to its copy of the lock file, which `--locked` forbids; the host passes check the
/// user's lock file).
pub(crate) fn source_args(cargo_args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = cargo_args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--offline" || arg == "--frozen" {
            out.push("--offline".to_string());
        } else if arg.starts_with("--config=") {
            out.push(arg.clone());
        } else if arg == "--config" {
            out.push(arg.clone());
            out.extend(rest.next().cloned());
        } else if arg == "--" {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::util::strings;

    #[test]
    fn target_cpus_are_the_first_words_of_the_indented_lines() {
        let listing = "Available CPUs for this target:\n    generic         - This is the \
                       default target CPU for the current build target.\n    gfx90a\n    \
                       gfx942\n\n";
        assert_eq!(target_cpus(listing), ["generic", "gfx90a", "gfx942"]);
        assert!(target_cpus("error: unknown print request: `target-cpus`\n").is_empty());
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
            let (name, version, source) = package_id_parts(id);
            (name, version.to_string(), source.to_string())
        };
        let path = "path+file:///home/u/kern-x".to_string();
        assert_eq!(
            parts("path+file:///home/u/kern-x#kern-two@0.2.0"),
            ("kern-two".into(), "0.2.0".into(), path)
        );
        let path = "path+file:///home/u/kern2".to_string();
        let kern2 = ("kern2".into(), "0.1.0".into(), path);
        assert_eq!(parts("path+file:///home/u/kern2#0.1.0"), kern2);
        assert_eq!(parts("kern2 0.1.0 (path+file:///home/u/kern2)"), kern2);
        let git = "git+https://example.org/k.git?branch=main".to_string();
        assert_eq!(
            parts("git+https://example.org/k.git?branch=main#k@1.0.0"),
            ("k".into(), "1.0.0".into(), git)
        );
    }

    /// One table of cases (path, registry, sparse and git dependencies joining the workspace's
    /// libraries), read top to bottom, so it is longer than a helper would be.
    #[test]
    fn dependencies_join_the_libraries() {
        let path = |dir: &str| LibrarySource::Path(PathBuf::from(dir));
        let kern = Library { package: "kern".into(), source: path("/ws/kern") };
        let mut ws = Workspace {
            target_dir: PathBuf::from("/ws/target"),
            root: PathBuf::from("/ws"),
            libraries: BTreeMap::from([("kern".into(), kern.clone())]),
            member_ids: BTreeSet::from(["path+file:///ws/kern#0.1.0".to_string()]),
            dependency_ids: BTreeMap::new(),
            ambiguous: BTreeMap::new(),
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
            artifact("registry+https://r/index#reg@1.0.0", "reg", "rlib", "/r/reg-1.0.0", host),
            artifact("sparse+https://s/index/#sp@0.4.1", "sp", "lib", "/s/sp-0.4.1", host),
            artifact("git+https://g/k.git?tag=v2#gk@2.0.0", "gk", "lib", "/g/gk", host),
            // Two packages of one crate name: neither can be told apart by the crate.
            artifact("git+https://g/two.git#two@2.0.0", "two", "lib", "/g/two", host),
            artifact("registry+https://r/index#two@1.0.0", "two", "lib", "/r/two-1.0.0", host),
        ];
        ws.add_dependencies(&artifacts, host);
        let registry = |index: &str, version: &str| LibrarySource::Registry {
            index: index.to_string(),
            version: version.to_string(),
        };
        let tag = Some(("tag".to_string(), "v2".to_string()));
        let expected = [
            ("gk", "gk", LibrarySource::Git { url: "https://g/k.git".into(), reference: tag }),
            ("kern", "kern", path("/ws/kern")),
            ("kern_two", "kern-two", path("/out/kern-x")),
            ("reg", "reg", registry("https://r/index", "1.0.0")),
            ("sp", "sp", registry("sparse+https://s/index/", "0.4.1")),
            ("two", "two", LibrarySource::Git { url: "https://g/two.git".into(), reference: None }),
        ];
        let expected: BTreeMap<String, Library> = expected
            .into_iter()
            .map(|(k, package, source)| {
                (k.to_string(), Library { package: package.into(), source })
            })
            .collect();
        assert_eq!(ws.libraries, expected);
        assert!(!ws.dependency_ids.contains_key("kern"));
        assert_eq!(ws.dependency_ids["kern_two"], "path+file:///out/kern-x#kern-two@0.2.0");
        let two = BTreeSet::from([
            "git+https://g/two.git#two@2.0.0".to_string(),
            "registry+https://r/index#two@1.0.0".to_string(),
        ]);
        assert_eq!(ws.ambiguous, BTreeMap::from([("two".to_string(), two)]));
        // How the image crate names each as a dependency.
        let fields = |krate: &str| ws.libraries[krate].dependency();
        assert_eq!(fields("kern_two"), r#"path = "/out/kern-x""#);
        assert_eq!(fields("reg"), r#"version = "=1.0.0", registry-index = "https://r/index""#);
        assert_eq!(
            fields("sp"),
            r#"version = "=0.4.1", registry-index = "sparse+https://s/index/""#
        );
        assert_eq!(fields("gk"), r#"git = "https://g/k.git", tag = "v2""#);
        assert_eq!(fields("two"), r#"git = "https://g/two.git""#);
    }

    #[test]
    fn source_arguments_reach_the_device_passes() {
        let args = strings(&["--frozen", "-p", "app", "--config", "a.toml", "--config=b=1", "-r"]);
        assert_eq!(
            source_args(&args),
            strings(&["--offline", "--config", "a.toml", "--config=b=1"])
        );
        assert_eq!(source_args(&strings(&["--offline", "--locked"])), strings(&["--offline"]));
        assert!(source_args(&strings(&["--release", "--features", "x"])).is_empty());
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
