//! The crate that the device passes build ([`IMAGE_CRATE`]), generated under
//! `<target dir>/offload/image` ([`write_image_crate`]), or the program that builds the images
//! in its place ([`ImageBuilder`]). Which crates define each kernel is the part of the module
//! [`mod@kernel_crates`], and where each device pass takes its `core` from that of
//! [`mod@device_core`].

mod device_core;
mod kernel_crates;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use offload_manifest_format::Manifest;
use serde_json::Value;

pub(crate) use self::device_core::{DeviceCore, device_core, no_device_sysroot_note};
use self::kernel_crates::kernel_crates;
use crate::util::{Context, Result, fail, write_if_changed};
use crate::workspace::{Program, Workspace, built_for, toml_string};

/// The crate that builds the device images: it depends on every library (of the workspace or of
/// a path, registry or git dependency) that defines a launched kernel, and the merged manifest
/// names it as its crate.
pub(crate) const IMAGE_CRATE: &str = "offload_image";

/// The cfg that the device passes set, so that a crate can give the device image what only the
/// image needs (a `#[panic_handler]` for the CPU device, say).
pub(crate) const DEVICE_CFG: &str = "offload_device";

/// What builds the device images of a run: one crate per device pass, the one that the
/// manifest names and that roots its kernels.
#[derive(Debug, PartialEq)]
pub(crate) enum ImageBuilder {
    /// The generated image crate ([`IMAGE_CRATE`], in this folder), which depends on the
    /// libraries (of the workspace or of its dependencies) that define the kernels.
    ImageCrate(PathBuf),
    /// A program of the workspace that defines kernels itself (a `bin`, an example, a
    /// `cdylib`): no crate can depend on it, so its device pass builds it as an `rlib` that
    /// builds the image, with the features that the host build resolved for it.
    Program { krate: String, program: Program, features: BTreeSet<String>, manifest: PathBuf },
}

impl ImageBuilder {
    /// The manifest that the device passes read.
    pub(crate) fn manifest(&self) -> PathBuf {
        match self {
            ImageBuilder::ImageCrate(dir) => dir.join("manifest.json"),
            ImageBuilder::Program { manifest, .. } => manifest.clone(),
        }
    }

    /// The name of the crate that builds the image.
    pub(crate) fn krate(&self) -> &str {
        match self {
            ImageBuilder::ImageCrate(_) => IMAGE_CRATE,
            ImageBuilder::Program { krate, .. } => krate,
        }
    }
}

/// Chooses and writes what builds the device images of `manifest` (the merged manifest of the
/// root crates, whose own manifests are `roots`). When every kernel is defined in libraries of
/// the workspace or of its dependencies, that is the image crate ([`write_image_crate`]). When
/// kernels are defined in a program of the workspace, that program builds the image, of the
/// kernels that the crates of its graph launch: two such programs, or another program that
/// launches kernels, are an error that names them. The program's manifest is
/// `<dir>/image/manifest-<crate>.json`. Returns the builder and whether this call wrote any of
/// its files.
pub(crate) fn image_builder(
    dir: &Path,
    ws: &Workspace,
    manifest: &Manifest,
    features: &BTreeMap<String, BTreeSet<String>>,
    roots: &[PathBuf],
) -> Result<(ImageBuilder, bool)> {
    let mut programs = BTreeSet::new();
    let mut libraries = BTreeSet::new();
    for kernel in &manifest.kernels {
        for krate in kernel_crates(ws, manifest, kernel)? {
            if ws.libraries.contains_key(&krate) {
                libraries.insert(krate);
            } else {
                programs.insert(krate);
            }
        }
    }
    let image = dir.join("image");
    fs::create_dir_all(&image).context_create(&image)?;
    let mut programs = programs.into_iter();
    let Some(krate) = programs.next() else {
        let wrote = write_image_crate(&image, ws, manifest, features, libraries.iter())?;
        return Ok((ImageBuilder::ImageCrate(image), wrote));
    };
    if let Some(other) = programs.next() {
        return fail(format!(
            "kernels are defined in two programs of the workspace, `{krate}` and `{other}`: a \
             program that defines a kernel, or a type that a launched kernel takes, builds the \
             device images itself, so build one at a time (`--bin NAME`, `--example NAME` or \
             `-p PACKAGE`)"
        ));
    }
    let program = &ws.programs[&krate];
    let mut reach = root_graph(roots, &krate)?;
    reach.insert(krate.clone());
    // The program's image holds the kernels that crates of its graph launch; a workspace
    // library outside it (also a dependency that the program's code never names) launches its
    // kernels for other programs.
    let mut kernels = Vec::new();
    for kernel in &manifest.kernels {
        let by = &kernel.launched_by;
        if by.iter().any(|c| reach.contains(c)) {
            kernels.push(kernel.clone());
        } else if let Some(other) = by.iter().find(|c| !ws.libraries.contains_key(*c)) {
            // Another program, a test or a bench of the build launches it.
            return fail(format!(
                "the crate `{other}` launches the kernel `{}`, but the program `{krate}` \
                 defines kernels (or types that launched kernels take) and builds the device \
                 images, which serve only it: build one program at a time (`--bin NAME`, \
                 `--example NAME` or `-p PACKAGE`)",
                kernel.kernel
            ));
        }
    }
    // Its device pass compiles every dependency of the package, also one that its host code
    // never names and that is therefore not in its graph.
    reach.extend(program.dependencies.iter().cloned());
    let own = Manifest {
        krate: krate.clone(),
        crate_graph: reach.into_iter().collect(),
        kernels,
        ..manifest.clone()
    };
    let path = image.join(format!("manifest-{krate}.json"));
    let wrote =
        write_if_changed(&path, offload_manifest_format::to_string_pretty(&own).as_bytes())?;
    let builder = ImageBuilder::Program {
        program: program.clone(),
        features: features.get(&krate).cloned().unwrap_or_default(),
        krate,
        manifest: path,
    };
    Ok((builder, wrote))
}

/// The crate graph that the root manifest of crate `krate` (one of `roots`) records.
fn root_graph(roots: &[PathBuf], krate: &str) -> Result<BTreeSet<String>> {
    for path in roots {
        let m = offload_manifest_format::read(path)?;
        if m.krate == krate {
            return Ok(m.crate_graph.into_iter().collect());
        }
    }
    fail(format!(
        "the program `{krate}` defines kernels, but the host pass wrote no manifest for it: \
         build it (`--bin NAME`, `--example NAME` or `-p PACKAGE`)"
    ))
}

/// Writes the image crate (`Cargo.toml`, `lib.rs`, `manifest.json`) in `image`, only the files
/// whose content changed, so that cargo sees an unchanged crate as fresh. It depends on each
/// library of `libraries` (of the workspace or of a dependency: see [`Library::dependency`]),
/// with the features of `features` (by crate name, as the host build resolved them: see
/// [`resolved_features`]). Returns whether it wrote a file.
///
/// [`Library::dependency`]: crate::workspace::Library::dependency
fn write_image_crate<'a>(
    image: &Path,
    ws: &Workspace,
    manifest: &Manifest,
    features: &BTreeMap<String, BTreeSet<String>>,
    libraries: impl Iterator<Item = &'a String>,
) -> Result<bool> {
    let mut toml = String::from(
        "# Written by cargo offload: the crate that builds the device images.\n\
         [package]\nname = \"offload-image\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n\
         [lib]\nname = \"offload_image\"\npath = \"lib.rs\"\n\n[workspace]\n\n\
         [profile.dev]\npanic = \"abort\"\n\n\
         [profile.release]\npanic = \"abort\"\ncodegen-units = 1\n\n\
         [dependencies]\n",
    );
    let mut lib = String::from(
        "// Written by cargo offload: the crate that builds the device images.\n#![no_std]\n",
    );
    for krate in libraries {
        let library = &ws.libraries[krate];
        // A library the host pass did not build for the target keeps its defaults.
        let features = match features.get(krate) {
            Some(features) => {
                let list: Vec<String> = features.iter().map(|f| toml_string(f)).collect();
                format!(", default-features = false, features = [{}]", list.join(", "))
            }
            None => String::new(),
        };
        toml.push_str(&format!(
            "{krate} = {{ package = {}, {}{features} }}\n",
            toml_string(&library.package),
            library.dependency()
        ));
        lib.push_str(&format!("extern crate {krate};\n"));
    }
    let text = offload_manifest_format::to_string_pretty(manifest);
    let mut wrote = write_if_changed(&image.join("Cargo.toml"), toml.as_bytes())?;
    wrote |= write_if_changed(&image.join("lib.rs"), lib.as_bytes())?;
    wrote |= write_if_changed(&image.join("manifest.json"), text.as_bytes())?;
    // The workspace's lock file keeps the dependencies' versions (a git dependency's commit);
    // cargo trims it to the image crate's graph. It is copied again whenever the workspace's
    // changed (`cargo update`), which `Cargo.lock.workspace` keeps a copy of: else the kernels
    // would keep the versions of the first build.
    if let Ok(lock) = fs::read(ws.root.join("Cargo.lock")) {
        let copied = image.join("Cargo.lock.workspace");
        if fs::read(&copied).ok() != Some(lock.clone()) || !image.join("Cargo.lock").is_file() {
            let write = |path: PathBuf| fs::write(&path, &lock).context_write(&path);
            write(image.join("Cargo.lock"))?;
            write(copied)?;
            wrote = true;
        }
    }
    Ok(wrote)
}

/// The features that cargo resolved for each library (of the workspace or of a dependency,
/// [`Workspace::libraries`]) and program among `artifacts` (a pass's `compiler-artifact`
/// messages), by crate name. The device passes build each library
/// (and a program that defines kernels) with the features of the host build, so that a kernel
/// picked by a feature (`--features`, `--no-default-features`, a dependent's feature list) is
/// in the image exactly when the host launches it. Only the units built for `target` count
/// (their files lie under `<target dir>/<target>/`): a build dependency's features are
/// resolved apart.
pub(crate) fn resolved_features(
    artifacts: &[Value],
    ws: &Workspace,
    target: &str,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut features: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for artifact in artifacts {
        let krate = artifact["target"]["name"].as_str().unwrap_or("").replace('-', "_");
        let kinds = artifact["target"]["kind"].as_array().into_iter().flatten();
        let id = artifact["package_id"].as_str();
        let member = id.is_some_and(|id| {
            ws.member_ids.contains(id) || ws.dependency_ids.get(&krate).is_some_and(|d| d == id)
        });
        let for_target = built_for(artifact, target);
        let library = kinds.filter_map(Value::as_str).any(|k| matches!(k, "lib" | "rlib"));
        let known = if library {
            ws.libraries.contains_key(&krate)
        } else {
            ws.programs.contains_key(&krate) && !ws.libraries.contains_key(&krate)
        };
        if !member || !for_target || !known {
            continue;
        }
        let resolved = artifact["features"].as_array().into_iter().flatten();
        features
            .entry(krate)
            .or_default()
            .extend(resolved.filter_map(Value::as_str).map(str::to_string));
    }
    features
}

#[cfg(test)]
mod tests {
    use offload_manifest_format::{FORMAT_VERSION, ItemPath, Kernel, MAGIC};
    use serde_json::json;

    use super::*;
    use crate::util::{Failure, strings};
    use crate::workspace::{Library, LibrarySource};

    /// A manifest of crate `krate` with `graph` and `kernels`.
    pub(super) fn manifest_of(krate: &str, graph: &[&str], kernels: Vec<Kernel>) -> Manifest {
        Manifest {
            magic: MAGIC.to_string(),
            format_version: FORMAT_VERSION,
            rustc_commit: "c".to_string(),
            krate: krate.to_string(),
            crate_graph: strings(graph),
            kernels,
        }
    }

    /// The kernel `text` defined in crate `item` (by identity), or declared (by link name)
    /// when `item` is `None`, and launched by `launched_by`.
    pub(super) fn kernel(text: &str, item: Option<&str>, launched_by: &[&str]) -> Kernel {
        let item = item.map(|krate| ItemPath {
            krate: krate.to_string(),
            crate_source: "0123456789abcdef".to_string(),
            path: Vec::new(),
        });
        Kernel {
            kernel: text.to_string(),
            args: item.as_ref().map(|_| Vec::new()),
            definition: item.as_ref().map(|_| "fedcba9876543210".to_string()),
            link_name: if item.is_none() { Some(text.to_string()) } else { None },
            defined_in: None,
            item,
            symbol: text.to_string(),
            params: Vec::new(),
            launched_by: strings(launched_by),
        }
    }

    /// A workspace with `libraries` and the programs `app` (a `bin`) and `guide` (a `cdylib`
    /// that defines 1.95-style kernels).
    pub(super) fn workspace(libraries: &[&str]) -> Workspace {
        let program = |selector: &[&str]| Program {
            package: "app".to_string(),
            selector: selector.iter().map(|s| s.to_string()).collect(),
            dependencies: vec!["dev_only".to_string()],
        };
        Workspace {
            target_dir: PathBuf::from("/ws/target"),
            root: PathBuf::from("/ws"),
            libraries: libraries
                .iter()
                .map(|l| {
                    let source = LibrarySource::Path(PathBuf::from("/ws").join(l));
                    (l.to_string(), Library { package: l.replace('_', "-"), source })
                })
                .collect(),
            member_ids: libraries.iter().chain(&["app"]).map(|l| format!("{l} 0.1")).collect(),
            dependency_ids: BTreeMap::new(),
            ambiguous: BTreeMap::new(),
            programs: BTreeMap::from([
                ("app".to_string(), program(&["--bin", "app"])),
                ("guide".to_string(), program(&["--lib"])),
            ]),
        }
    }

    /// The `compiler-artifact` message of library `name` of package `id` (its manifest in
    /// `dir`), built for the host with `features`.
    pub(super) fn library_artifact(id: &str, name: &str, dir: &str, features: &[&str]) -> Value {
        let file = format!("/ws/target/x86_64-unknown-linux-gnu/debug/deps/lib{name}.rmeta");
        json!({
            "package_id": id, "manifest_path": format!("{dir}/Cargo.toml"),
            "target": {"name": name, "kind": ["lib"]}, "filenames": [file], "features": features
        })
    }

    /// [`workspace`] with the path dependency `dep` (package `the-dep`, outside the workspace,
    /// built with feature `f`), the registry dependency `reg` and two packages of crate name
    /// `twice`.
    pub(super) fn with_dependencies(mut ws: Workspace) -> Workspace {
        let artifacts = [
            library_artifact(
                "path+file:///elsewhere/dep#the-dep@0.3.0",
                "dep",
                "/elsewhere/dep",
                &["f"],
            ),
            library_artifact(
                "registry+https://r/index#reg@1.2.3",
                "reg",
                "/home/u/.cargo/registry/src/index/reg-1.2.3",
                &[],
            ),
            library_artifact("registry+https://r/index#twice@1.0.0", "twice", "/r/t1", &[]),
            library_artifact("registry+https://r/index#twice@2.0.0", "twice", "/r/t2", &[]),
        ];
        ws.add_dependencies(&artifacts, "x86_64-unknown-linux-gnu");
        ws
    }

    /// A fresh folder for one test.
    pub(super) fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cargo-offload-{test}-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The cases of where a launched kernel is defined (a library, a path or registry dependency,
    /// a program crate), checked in turn against one workspace; they read top to bottom, so the
    /// test is longer than a helper would be.
    #[test]
    fn a_program_that_defines_kernels_builds_the_image() {
        let dir = scratch("builder");
        let ws = workspace(&["kern"]);
        let root = |krate: &str, graph: &[&str]| {
            let path = dir.join(format!("{krate}-root.json"));
            let m = manifest_of(krate, graph, Vec::new());
            fs::write(&path, offload_manifest_format::to_string_pretty(&m)).unwrap();
            path
        };
        let roots = [root("app", &["app", "core", "kern"]), root("guide", &["core", "guide"])];
        let kernel = |krate: &str, by: &str| kernel(&format!("{krate}::k"), Some(krate), &[by]);
        let features = BTreeMap::from([("app".to_string(), BTreeSet::from(["big".to_string()]))]);
        let build = |ws: &Workspace, kernels: Vec<Kernel>| {
            let manifest = manifest_of(IMAGE_CRATE, &[], kernels);
            image_builder(&dir, ws, &manifest, &features, &roots)
        };
        // Libraries only: the image crate.
        let Ok((ImageBuilder::ImageCrate(image), true)) = build(&ws, vec![kernel("kern", "kern")])
        else {
            panic!("no image crate written")
        };
        assert!(fs::read_to_string(image.join("lib.rs")).unwrap().contains("extern crate kern;"));
        // The same kernels again: no file written (the images built before stand).
        let Ok((ImageBuilder::ImageCrate(_), false)) = build(&ws, vec![kernel("kern", "kern")])
        else {
            panic!("the same image crate written again")
        };
        // A path dependency's kernel: the image crate depends on it by its folder, with the
        // features of the host build.
        let ws_deps = with_dependencies(workspace(&["kern"]));
        let dep_features = BTreeMap::from([("dep".to_string(), BTreeSet::from(["f".to_string()]))]);
        let manifest = manifest_of(IMAGE_CRATE, &[], vec![kernel("dep", "app")]);
        let Ok((ImageBuilder::ImageCrate(image), _)) =
            image_builder(&dir, &ws_deps, &manifest, &dep_features, &roots)
        else {
            panic!("no image crate for a path dependency's kernel")
        };
        let toml = fs::read_to_string(image.join("Cargo.toml")).unwrap();
        assert!(
            toml.contains(
                "dep = { package = \"the-dep\", path = \"/elsewhere/dep\", \
                 default-features = false, features = [\"f\"] }"
            ),
            "{toml}"
        );
        assert!(fs::read_to_string(image.join("lib.rs")).unwrap().contains("extern crate dep;"));
        // A registry dependency's kernel: by its index and the host build's version.
        let manifest = manifest_of(IMAGE_CRATE, &[], vec![kernel("reg", "app")]);
        let Ok((ImageBuilder::ImageCrate(image), _)) =
            image_builder(&dir, &ws_deps, &manifest, &BTreeMap::new(), &roots)
        else {
            panic!("no image crate for a registry dependency's kernel")
        };
        let toml = fs::read_to_string(image.join("Cargo.toml")).unwrap();
        assert!(
            toml.contains(
                "reg = { package = \"reg\", version = \"=1.2.3\", \
                 registry-index = \"https://r/index\" }"
            ),
            "{toml}"
        );
        // A program's kernel and a library kernel of its graph: the program, under its name; a
        // kernel that only a library outside its graph launches is not the program's.
        let ws_far = workspace(&["kern", "far", "dev_only"]);
        let kernels = vec![
            kernel("app", "app"),
            kernel("kern", "kern"),
            kernel("far", "far"),
            kernel("dev_only", "dev_only"),
        ];
        let Ok((builder, true)) = build(&ws_far, kernels) else { panic!("no program builder") };
        assert_eq!(builder.krate(), "app");
        let ImageBuilder::Program { program, features: own, .. } = &builder else { unreachable!() };
        assert_eq!(program.selector, strings(&["--bin", "app"]));
        assert_eq!(own, &BTreeSet::from(["big".to_string()]));
        let written = offload_manifest_format::read(builder.manifest()).ok().unwrap();
        assert_eq!(written.krate, "app");
        assert_eq!(written.crate_graph, ["app", "core", "dev_only", "kern"]);
        assert_eq!(written.kernels.len(), 2);
        // Two programs with kernels, or another program's launch: errors that name them.
        let two = build(&ws, vec![kernel("app", "app"), kernel("guide", "guide")]);
        let Err(Failure(two, 1)) = two else { panic!("two image builders accepted") };
        assert!(two.contains("two programs of the workspace, `app` and `guide`"), "{two}");
        let other = build(&ws, vec![kernel("app", "app"), kernel("kern", "guide")]);
        let Err(Failure(other, 1)) = other else { panic!("another program's launch accepted") };
        assert!(other.contains("the crate `guide` launches the kernel `kern::k`"), "{other}");
        let test = build(&ws, vec![kernel("app", "app"), kernel("kern", "a_test")]);
        let Err(Failure(test, 1)) = test else { panic!("a test's launch accepted") };
        assert!(test.contains("the crate `a_test` launches the kernel `kern::k`"), "{test}");
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The image crate's lock file is the workspace's, copied again only when that changed
    /// (not when cargo trimmed the copy).
    #[test]
    fn the_image_crates_lock_follows_the_workspaces() {
        let dir = scratch("lock");
        let mut ws = workspace(&["kern"]);
        ws.root = dir.join("ws");
        fs::create_dir_all(&ws.root).unwrap();
        fs::write(ws.root.join("Cargo.lock"), "v1").unwrap();
        let manifest = manifest_of(IMAGE_CRATE, &[], vec![kernel("kern::k", Some("kern"), &[])]);
        let build = |ws: &Workspace| {
            let Ok((ImageBuilder::ImageCrate(image), wrote)) =
                image_builder(&dir, ws, &manifest, &BTreeMap::new(), &[])
            else {
                panic!("no image crate")
            };
            (fs::read_to_string(image.join("Cargo.lock")).unwrap(), wrote)
        };
        assert_eq!(build(&ws), ("v1".to_string(), true));
        fs::write(dir.join("image/Cargo.lock"), "v1, trimmed by cargo").unwrap();
        assert_eq!(build(&ws), ("v1, trimmed by cargo".to_string(), false));
        fs::write(ws.root.join("Cargo.lock"), "v2").unwrap();
        assert_eq!(build(&ws), ("v2".to_string(), true));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn libraries_keep_the_features_the_host_build_resolved() {
        let dir = scratch("features");
        let ws = workspace(&["k195", "kern"]);
        let host = "x86_64-unknown-linux-gnu";
        let artifact = |id: &str, name: &str, kind: &str, dir: &str, features: &[&str]| {
            let target = json!({"name": name, "kind": [kind]});
            let file = format!("/ws/target/{dir}/release/deps/lib{name}.rmeta");
            json!({"package_id": id, "target": target, "filenames": [file], "features": features})
        };
        let target_dir = host.to_string();
        let artifacts = [
            artifact("k195 0.1", "k195", "lib", &target_dir, &["scale"]),
            // The same library as a build dependency, built for the host apart: not counted.
            artifact("k195 0.1", "k195", "lib", ".", &["std"]),
            artifact("kern 0.1", "kern", "lib", &target_dir, &[]),
            artifact("app 0.1", "app", "bin", &target_dir, &["scale"]),
            // A registry crate named like a workspace library: not a member.
            artifact("registry kern 2.0", "kern", "lib", &target_dir, &["extra"]),
        ];
        let features = resolved_features(&artifacts, &ws, host);
        assert!(!features.contains_key("dep"));
        let k195: Vec<&str> = features["k195"].iter().map(String::as_str).collect();
        assert_eq!(k195, ["scale"]);
        assert!(features["kern"].is_empty());
        // A program's own features: it builds the image when it defines kernels.
        let app: Vec<&str> = features["app"].iter().map(String::as_str).collect();
        assert_eq!(app, ["scale"]);
        // A dependency's library gets its features too (path or registry); another package of
        // the same crate name does not.
        let ws = with_dependencies(ws);
        let mut artifacts = artifacts.to_vec();
        artifacts.push(library_artifact(
            "path+file:///elsewhere/dep#the-dep@0.3.0",
            "dep",
            "/elsewhere/dep",
            &["f"],
        ));
        artifacts.push(library_artifact("registry+https://r/index#reg@1.2.3", "reg", "/r", &["x"]));
        artifacts.push(library_artifact("registry+https://q#reg@0.1.0", "reg", "/q", &["y"]));
        let features = resolved_features(&artifacts, &ws, host);
        let dep: Vec<&str> = features["dep"].iter().map(String::as_str).collect();
        assert_eq!(dep, ["f"]);
        let reg: Vec<&str> = features["reg"].iter().map(String::as_str).collect();
        assert_eq!(reg, ["x"]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
