//! The manifests that the host build writes, one per crate: finding those of the root crates
//! among the artifacts of its first run ([`root_manifests`]) and merging them into the one
//! manifest that every device pass builds its image from ([`merge_manifests`]).

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use offload_manifest_format::Manifest;
use serde_json::Value;

use crate::image_crate::IMAGE_CRATE;
use crate::util::{Result, fail};
use crate::workspace::Workspace;

/// The root crates of a host build's first run.
pub(crate) struct Roots {
    /// Their manifests, `<crate><extra filename>.json` in the manifests' folder.
    pub(crate) manifests: Vec<PathBuf>,
    /// The programs whose files exist after the run, as rustc wrote them
    /// (`deps/<crate><extra>`, not cargo's copy without the extra filename): those that the run
    /// found fresh, linked with the images of an earlier build, and those that a run which
    /// links linked. Each is removed when it was linked with other images than the current
    /// ones, so that the link run links it again.
    pub(crate) linked_programs: Vec<PathBuf>,
}

/// The root crates among the `artifacts` (cargo's messages) of the host build's first run:
/// the crates of workspace packages. A library's manifest is named after its `.rmeta` or
/// `.rlib`; a test's after its executable, which keeps the extra filename. A program or
/// `cdylib` is named by cargo without it: one that this run compiled is found in `programs`,
/// where the wrapper recorded it by its source file ([`crate::wrapper::host`]); one
/// that the run found fresh is the file under `deps` (or, for an example, beside it) of which
/// cargo's copy is a hard link, and so is the file of a recorded one that the run linked. A
/// root built for `target` whose manifest is not found is an error that names it: its kernels
/// would be missing from the images.
pub(crate) fn root_manifests(
    artifacts: &[Value],
    ws: &Workspace,
    target: &str,
    dir: &Path,
    programs: &Path,
) -> Result<Roots> {
    let recorded = recorded_programs(programs);
    let mut found = Found { ws, dir, recorded, roots: BTreeSet::new(), linked: Vec::new() };
    for artifact in artifacts {
        if !artifact["package_id"].as_str().is_some_and(|id| ws.member_ids.contains(id)) {
            continue;
        }
        if !crate::workspace::built_for(artifact, target) {
            continue;
        }
        found.artifact(artifact)?;
    }
    Ok(Roots { manifests: found.roots.into_iter().collect(), linked_programs: found.linked })
}

/// What [`root_manifests`] has found so far.
struct Found<'a> {
    ws: &'a Workspace,
    /// The manifests' folder.
    dir: &'a Path,
    /// The programs that the run compiled ([`recorded_programs`]).
    recorded: Vec<(String, PathBuf)>,
    /// The root crates' manifests.
    roots: BTreeSet<PathBuf>,
    /// [`Roots::linked_programs`].
    linked: Vec<PathBuf>,
}

impl Found<'_> {
    /// Adds the manifest `<dir>/<name>.json` of the root crate of `artifact`; fails if it is
    /// missing.
    fn add(&mut self, artifact: &Value, name: &str) -> Result<()> {
        let path = self.dir.join(format!("{name}.json"));
        if !path.is_file() {
            return fail(format!(
                "the host pass wrote no manifest for the crate `{}` ({} is missing); remove {} \
                 and build again",
                artifact["target"]["name"].as_str().unwrap_or(name),
                path.display(),
                self.ws.target_dir.join("offload/host").display()
            ));
        }
        self.roots.insert(path);
        Ok(())
    }

    /// Adds what the root `artifact` (a workspace crate built for the target) has: a library's
    /// manifest, a test's, a program's ([`Found::program`]); a build script has none.
    fn artifact(&mut self, artifact: &Value) -> Result<()> {
        let files: Vec<&str> = artifact["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if let Some(rmeta) = library_file(&files) {
            let stem = Path::new(rmeta).file_stem().unwrap_or_default().to_string_lossy();
            let name = stem.strip_prefix("lib").unwrap_or(&stem);
            self.add(artifact, name)?;
            let shared = Path::new(rmeta).with_file_name(format!("lib{name}.so"));
            if shared.is_file() {
                self.linked.push(shared);
            }
            return Ok(());
        }
        let target = &artifact["target"];
        let kinds = target["kind"].as_array().into_iter().flatten().filter_map(Value::as_str);
        let build_script = kinds.into_iter().any(|k| k == "custom-build");
        let test = artifact["profile"]["test"].as_bool() == Some(true);
        let types = target["crate_types"].as_array().into_iter().flatten();
        let links = test
            || types.filter_map(Value::as_str).any(|t| matches!(t, "bin" | "cdylib" | "dylib"));
        if build_script || !links {
            return Ok(());
        }
        // Cargo lists only the files that exist: a program that this run compiled (and did
        // not link) has no file yet, but its executable is named.
        let mut programs: Vec<&str> = files.into_iter().filter(|f| f.ends_with(".so")).collect();
        programs.extend(artifact["executable"].as_str());
        if !test {
            return self.program(artifact, &programs);
        }
        for file in programs {
            let path = Path::new(file);
            self.add(artifact, &path.file_stem().unwrap_or_default().to_string_lossy())?;
            // A run that does not link removed the test programs it compiled.
            if path.is_file() {
                self.linked.push(path.to_path_buf());
            }
        }
        Ok(())
    }

    /// Adds the manifest of the program or `cdylib` of `artifact`, not a test, whose files
    /// cargo names `programs`: the wrapper recorded it, or its file is a hard link of the one
    /// that rustc wrote ([`linked_from`]).
    fn program(&mut self, artifact: &Value, programs: &[&str]) -> Result<()> {
        let target = &artifact["target"];
        let source = target["src_path"].as_str().unwrap_or("");
        let source = fs::canonicalize(source).unwrap_or_else(|_| PathBuf::from(source));
        if let Some((name, _)) = self.recorded.iter().find(|(_, s)| *s == source) {
            let name = name.clone();
            self.add(artifact, &name)?;
            // Compiled and linked by a run that links.
            self.linked.extend(programs.first().and_then(|p| linked_from(Path::new(p))));
            return Ok(());
        }
        let host = self.ws.target_dir.join("offload/host");
        let name = target["name"].as_str().unwrap_or("");
        let Some(program) = programs.first().map(Path::new) else {
            return fail(format!(
                "the host pass neither compiled the program `{name}` nor names a file of it; \
                 remove {} and build again",
                host.display()
            ));
        };
        let Some(linked) = linked_from(program) else {
            return fail(format!(
                "cannot tell which manifest the host pass wrote for {} (neither compiled by \
                 this build nor a hard link of the file rustc wrote); remove {} and build again",
                program.display(),
                host.display()
            ));
        };
        let file_name = linked.file_name().unwrap_or_default().to_string_lossy();
        let file_name = file_name.strip_prefix("lib").unwrap_or(&file_name);
        self.add(artifact, file_name.strip_suffix(".so").unwrap_or(file_name))?;
        self.linked.push(linked);
        Ok(())
    }
}

/// The file among an artifact's `files` whose name is its library's manifest's: its `.rmeta`,
/// or else its `rlib` (a `cdylib` too, maybe, whose shared object shares the library's name).
/// (An `rlib` without `.rmeta`: cargo pipelines no crate that is also a `cdylib`; the one in
/// `deps` rather than cargo's copy of a root library's, which has no extra filename, where
/// cargo names both. A path package's `cdylib` crate has none anyway.) `None` for no library.
fn library_file<'a>(files: &[&'a str]) -> Option<&'a str> {
    let in_deps = |f: &&&str| Path::new(f).parent().is_some_and(|d| d.ends_with("deps"));
    let rlibs = || files.iter().filter(|f| f.ends_with(".rlib"));
    let library = files
        .iter()
        .find(|f| f.ends_with(".rmeta"))
        .or_else(|| rlibs().find(in_deps))
        .or_else(|| rlibs().next());
    library.copied()
}

/// The programs that the wrapper recorded in `programs` (a folder): name
/// (`<crate><extra filename>`) and source file, for those that are not tests.
fn recorded_programs(programs: &Path) -> Vec<(String, PathBuf)> {
    let mut recorded = Vec::new();
    for entry in fs::read_dir(programs).into_iter().flatten().flatten() {
        let text = fs::read_to_string(entry.path()).unwrap_or_default();
        let mut lines = text.lines();
        if let (Some(source), Some("false")) = (lines.next(), lines.next()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            recorded.push((name, PathBuf::from(source)));
        }
    }
    recorded
}

/// The file of which `copy` (cargo's copy of a program, without the extra filename) is a hard
/// link: in `deps` beside it, or in its own folder (an example's).
fn linked_from(copy: &Path) -> Option<PathBuf> {
    let meta = fs::metadata(copy).ok()?;
    let folder = copy.parent()?;
    for dir in [folder.join("deps"), folder.to_path_buf()] {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let same =
                fs::metadata(&path).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino());
            if same && path != copy {
                return Some(path);
            }
        }
    }
    None
}

/// The union of the root manifests, as the manifest of [`IMAGE_CRATE`]
/// ([`offload_manifest_format::merge`]): every kernel instance once (by its symbol, which tells
/// apart the same path in two versions of one crate), with the union of its launching crates,
/// and the union of the crate graphs. The manifests must come from one compiler.
pub(crate) fn merge_manifests(paths: &[PathBuf]) -> Result<Manifest> {
    Ok(offload_manifest_format::merge(paths, IMAGE_CRATE)?)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use offload_manifest_format::{FORMAT_VERSION, MAGIC};
    use serde_json::json;

    use super::*;
    use crate::util::Failure;

    #[test]
    fn root_manifests_name_programs_by_record_or_hard_link() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-roots-{}", std::process::id()));
        let (manifests, programs, profile) =
            (dir.join("m"), dir.join("p"), dir.join("x86_64-unknown-linux-gnu/debug"));
        for folder in [&manifests, &programs, &profile.join("deps")] {
            fs::create_dir_all(folder).unwrap();
        }
        for name in ["kern-1", "app-2", "tool-3", "app-4", "both-7"] {
            fs::write(manifests.join(format!("{name}.json")), "{}").unwrap();
        }
        // `app` was compiled by this run (recorded), `tool` was fresh (a hard link of its
        // `deps` file), `app`'s test harness is named by its own file.
        fs::write(programs.join("app-2"), "/ws/app/src/main.rs\nfalse\n").unwrap();
        fs::write(profile.join("deps/tool-3"), "program").unwrap();
        fs::hard_link(profile.join("deps/tool-3"), profile.join("tool")).unwrap();
        let member = "path+file:///ws/app#0.1.0";
        let artifact = |name: &str, src: &str, test: bool, files: Vec<String>, exe: &str| {
            json!({"package_id": member,
                "target": {"name": name, "src_path": src, "kind": ["bin"], "crate_types": ["bin"]},
                "profile": {"test": test}, "filenames": files, "executable": exe})
        };
        let path = |p: &Path| p.display().to_string();
        let exe = path(&profile.join("app"));
        let tool = path(&profile.join("tool"));
        let test = path(&profile.join("deps/app-4"));
        let artifacts = [
            json!({"package_id": member, "target": {"name": "kern"}, "profile": {"test": false},
                "filenames": ["/t/x86_64-unknown-linux-gnu/debug/libkern.rlib",
                    "/t/x86_64-unknown-linux-gnu/debug/deps/libkern-1.rlib",
                    "/t/x86_64-unknown-linux-gnu/debug/deps/libkern-1.rmeta"]}),
            // A library and `cdylib`: no `.rmeta`, and cargo's copy of the `rlib` comes first.
            json!({"package_id": member, "target": {"name": "both"}, "profile": {"test": false},
                "filenames": ["/t/x86_64-unknown-linux-gnu/debug/libboth.rlib",
                    "/t/x86_64-unknown-linux-gnu/debug/deps/libboth-7.rlib"]}),
            // Cargo names no file of a program that the run compiled without linking it.
            artifact("app", "/ws/app/src/main.rs", false, vec![], &exe),
            artifact("tool", "/ws/app/src/bin/tool.rs", false, vec![tool.clone()], &tool),
            artifact("app", "/ws/app/src/main.rs", true, vec![], &test),
            json!({"package_id": "registry+x#dep@1.0.0", "filenames": ["/t/deps/libdep-9.rmeta"]}),
            // A build script and a proc macro of a member are no roots.
            json!({"package_id": member, "profile": {"test": false},
                "target": {"name": "build-script-build", "kind": ["custom-build"],
                    "crate_types": ["bin"]},
                "filenames": ["/t/build/app-5/build-script-build"],
                "executable": "/t/build/app-5/build-script-build"}),
            json!({"package_id": member, "profile": {"test": false},
                "target": {"name": "pm", "kind": ["proc-macro"], "crate_types": ["proc-macro"]},
                "filenames": ["/t/deps/libpm-6.so"], "executable": null}),
        ];
        let ws = Workspace {
            target_dir: dir.clone(),
            root: dir.clone(),
            libraries: Default::default(),
            member_ids: BTreeSet::from([member.to_string()]),
            dependency_ids: Default::default(),
            ambiguous: Default::default(),
            programs: Default::default(),
        };
        let host = "x86_64-unknown-linux-gnu";
        let roots = root_manifests(&artifacts, &ws, host, &manifests, &programs).ok().unwrap();
        let names: Vec<String> = roots
            .manifests
            .iter()
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["app-2", "app-4", "both-7", "kern-1", "tool-3"]);
        // Only `tool` is linked: the test harness compiled by this run has no file yet.
        assert_eq!(roots.linked_programs, [profile.join("deps/tool-3")]);
        // A run that links: `app`, which it compiled, is linked too.
        fs::write(profile.join("deps/app-2"), "program").unwrap();
        fs::hard_link(profile.join("deps/app-2"), profile.join("app")).unwrap();
        let roots = root_manifests(&artifacts, &ws, host, &manifests, &programs).ok().unwrap();
        let linked = [profile.join("deps/app-2"), profile.join("deps/tool-3")];
        assert_eq!(roots.linked_programs, linked);
        // A program compiled by no run that cargo's copy does not link to: an error naming it.
        fs::write(profile.join("lost"), "program").unwrap();
        let lost = path(&profile.join("lost"));
        let artifacts =
            [artifact("lost", "/ws/app/src/bin/lost.rs", false, vec![lost.clone()], &lost)];
        assert!(matches!(
            root_manifests(&artifacts, &ws, host, &manifests, &programs),
            Err(Failure(m, 1)) if m.contains(&lost)
        ));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn merged_manifest_is_the_union_under_the_image_crate() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-merge-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, krate: &str, kernels: Value| {
            let m = json!({
                "magic": MAGIC, "format_version": FORMAT_VERSION, "rustc_commit": "c",
                "crate": krate, "crate_graph": [krate, "core", "kern"], "kernels": kernels
            });
            let path = dir.join(name);
            fs::write(&path, m.to_string()).unwrap();
            path
        };
        let kernel = |symbol: &str, by: &str| {
            json!({"kernel": "kern::k", "link_name": "k", "symbol": symbol, "params": [],
                "launched_by": [by]})
        };
        let a = write("a.json", "app", json!([kernel("s_k", "kern")]));
        // `tool` also launches `k` of another version of `kern`: the same text, another symbol.
        let mut j = kernel("s_j", "tool");
        j["kernel"] = json!("kern::j");
        let b = write("b.json", "tool", json!([kernel("s_k", "tool"), j, kernel("s_k2", "tool")]));
        let merged = merge_manifests(&[a.clone(), b]).ok().unwrap();
        assert_eq!(merged.krate, IMAGE_CRATE);
        assert_eq!(merged.crate_graph, ["app", "core", "kern", IMAGE_CRATE, "tool"]);
        let kernels: Vec<(&str, &[String])> =
            merged.kernels.iter().map(|k| (k.kernel.as_str(), &k.launched_by[..])).collect();
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            kernels,
            vec![
                ("kern::j", &names(&["tool"])[..]),
                ("kern::k", &names(&["kern", "tool"])[..]),
                ("kern::k", &names(&["tool"])[..]),
            ]
        );
        let other = dir.join("other.json");
        fs::write(&other, fs::read_to_string(&a).unwrap().replace("\"c\"", "\"d\"")).unwrap();
        assert!(matches!(
            merge_manifests(&[a, other]),
            Err(Failure(m, 1)) if m.contains("another compiler")
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
