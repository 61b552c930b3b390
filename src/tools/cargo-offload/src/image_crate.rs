//! The crate that the device passes build ([`IMAGE_CRATE`]), generated under
//! `<target dir>/offload/image` ([`write_image_crate`]), and where each device pass takes its
//! `core` from ([`device_core`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::args::Arch;
use crate::util::{Failure, Result, fail, write_if_changed};
use crate::workspace::Workspace;

/// The environment variable that names the device sysroot: a sysroot whose
/// `lib/rustlib/<target>/lib` holds `core` for each device target (the GPU targets and the
/// host's own, for the CPU device), built once per toolchain with `-Zalways-encode-mir`, so that
/// a device pass instantiates in its image whatever its kernels reach of `core` without
/// building `core` for the project. `./x.py build` makes it; `./x.py cargo` sets this variable.
pub(crate) const DEVICE_SYSROOT_VAR: &str = "CARGO_OFFLOAD_DEVICE_SYSROOT";

/// Where the `core` of a device pass comes from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum DeviceCore {
    /// The device sysroot ([`DEVICE_SYSROOT_VAR`]) has the target's `core`.
    Toolchain(PathBuf),
    /// `-Zbuild-std=core`: built from the toolchain's library source for the project, with the
    /// device pass's flags (`--build-std`, or no device sysroot).
    BuildStd,
}

impl DeviceCore {
    /// How the progress line of a device pass names it.
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            DeviceCore::Toolchain(_) => "the toolchain's core",
            DeviceCore::BuildStd => "core built from source",
        }
    }
}

/// The `core` of `arch`'s device pass: `-Zbuild-std=core` when `build_std` is asked for or no
/// device sysroot is set (with a note), the device sysroot otherwise. A device sysroot without
/// the target's `core` is an error that names the folder it looked in.
pub(crate) fn device_core(arch: &Arch, build_std: bool) -> Result<DeviceCore> {
    if build_std {
        return Ok(DeviceCore::BuildStd);
    }
    let Some(sysroot) = std::env::var_os(DEVICE_SYSROOT_VAR).filter(|v| !v.is_empty()) else {
        eprintln!(
            "[cargo offload] note: {DEVICE_SYSROOT_VAR} is not set, so `core` is built from \
             source for `{}` (`-Zbuild-std=core`)",
            arch.name
        );
        return Ok(DeviceCore::BuildStd);
    };
    let sysroot = PathBuf::from(sysroot);
    let lib = sysroot.join("lib/rustlib").join(&arch.target).join("lib");
    let has_core = fs::read_dir(&lib).into_iter().flatten().flatten().any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        name.starts_with("libcore-") && name.ends_with(".rlib")
    });
    if !has_core {
        return fail(format!(
            "the device sysroot has no `core` for `{}` ({} holds no libcore-*.rlib; \
             {DEVICE_SYSROOT_VAR}={}): rebuild the toolchain (`./x.py build`), or pass \
             `--build-std` to build `core` from source",
            arch.target,
            lib.display(),
            sysroot.display()
        ));
    }
    Ok(DeviceCore::Toolchain(sysroot))
}

/// The crate that builds the device images: it depends on every workspace library that defines
/// a launched kernel, and the merged manifest names it as its crate.
pub(crate) const IMAGE_CRATE: &str = "offload_image";

/// The cfg that the device passes set, so that a crate can give the device image what only the
/// image needs (a `#[panic_handler]` for the CPU device, say).
pub(crate) const DEVICE_CFG: &str = "offload_device";

/// Writes the image crate (`Cargo.toml`, `lib.rs`, `manifest.json`) under `dir/image`, only
/// the files whose content changed, so that cargo sees an unchanged crate as fresh. It
/// depends on each workspace library that defines a kernel of the manifest, with the features
/// of `features` (by crate name, as the host build resolved them: see [`library_features`]).
pub(crate) fn write_image_crate(
    dir: &Path,
    ws: &Workspace,
    manifest: &Value,
    features: &BTreeMap<String, BTreeSet<String>>,
) -> Result<PathBuf> {
    let mut deps = BTreeMap::new();
    for kernel in manifest["kernels"].as_array().into_iter().flatten() {
        for krate in kernel_crates(ws, manifest, kernel)? {
            let (package, path) = &ws.libraries[&krate];
            deps.insert(krate, (package.clone(), path.clone()));
        }
    }
    let image = dir.join("image");
    fs::create_dir_all(&image)
        .map_err(|e| Failure(format!("cannot create {}: {e}", image.display()), 1))?;
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
    for (krate, (package, path)) in &deps {
        // A library the host metadata pass did not build for the target keeps its defaults.
        let features = match features.get(krate) {
            Some(features) => {
                let list: Vec<String> = features.iter().map(|f| toml_string(f)).collect();
                format!(", default-features = false, features = [{}]", list.join(", "))
            }
            None => String::new(),
        };
        toml.push_str(&format!(
            "{krate} = {{ package = {}, path = {}{features} }}\n",
            toml_string(package),
            toml_string(&path.display().to_string())
        ));
        lib.push_str(&format!("extern crate {krate};\n"));
    }
    let text = serde_json::to_string_pretty(manifest).unwrap();
    write_if_changed(&image.join("Cargo.toml"), toml.as_bytes())?;
    write_if_changed(&image.join("lib.rs"), lib.as_bytes())?;
    write_if_changed(&image.join("manifest.json"), text.as_bytes())?;
    // The workspace's lock file keeps the dependencies' versions; cargo trims it to the image
    // crate's graph.
    let lock = ws.root.join("Cargo.lock");
    if lock.is_file() && !image.join("Cargo.lock").is_file() {
        let _ = fs::copy(&lock, image.join("Cargo.lock"));
    }
    Ok(image)
}

/// The workspace libraries the image crate depends on for `kernel`, an entry of `manifest`: the
/// crate that defines it; for a kernel declared in an `extern` block (the 1.95 style, named by
/// its link name), the workspace libraries that launch it, whose GPU build defines it, or, if
/// only programs launch it, every workspace library of the crate graph, one of which must
/// define it (the device pass names a link name that none defines).
fn kernel_crates(ws: &Workspace, manifest: &Value, kernel: &Value) -> Result<Vec<String>> {
    let text = kernel["kernel"].as_str().unwrap_or("?");
    let names = |v: &Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
    };
    if let Some(krate) = kernel["item"]["crate"].as_str() {
        if !ws.libraries.contains_key(krate) {
            return fail(format!(
                "kernel `{text}` is defined in crate `{krate}`, which is not a library of this \
                 workspace ({}): cargo offload builds the device images from workspace libraries",
                ws.root.display()
            ));
        }
        return Ok(vec![krate.to_string()]);
    }
    let launchers: Vec<String> = names(&kernel["launched_by"])
        .into_iter()
        .filter(|c| ws.libraries.contains_key(c))
        .collect();
    if !launchers.is_empty() {
        return Ok(launchers);
    }
    let graph: Vec<String> = names(&manifest["crate_graph"])
        .into_iter()
        .filter(|c| ws.libraries.contains_key(c))
        .collect();
    if graph.is_empty() {
        return fail(format!(
            "kernel `{text}` is declared in an `extern` block (the 1.95 style) and no library of \
             this workspace ({}) is in its crate graph: cargo offload builds the device images \
             from workspace libraries, so the `#[no_mangle]` definition of `{text}` must be in one",
            ws.root.display()
        ));
    }
    Ok(graph)
}

/// The features that cargo resolved for each workspace library among `artifacts` (a pass's
/// `compiler-artifact` messages), by crate name. The device passes build each library with the
/// features of the host build, so that a kernel picked by a feature (`--features`,
/// `--no-default-features`, a dependent's feature list) is in the image exactly when the host
/// launches it. Only the units built for `target` count (their files lie under
/// `<target dir>/<target>/`): a build dependency's features are resolved apart.
pub(crate) fn library_features(
    artifacts: &[Value],
    ws: &Workspace,
    target: &str,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut features: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let target_dir = format!("/{target}/");
    for artifact in artifacts {
        let krate = artifact["target"]["name"].as_str().unwrap_or("").replace('-', "_");
        let kinds = artifact["target"]["kind"].as_array().into_iter().flatten();
        let member = artifact["package_id"].as_str().is_some_and(|id| ws.member_ids.contains(id));
        let for_target = artifact["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|f| f.contains(&target_dir));
        if !member
            || !for_target
            || !ws.libraries.contains_key(&krate)
            || !kinds.filter_map(Value::as_str).any(|k| matches!(k, "lib" | "rlib"))
        {
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

/// `text` as a TOML basic string (JSON's string escapes are TOML's).
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn workspace(libraries: &[&str]) -> Workspace {
        Workspace {
            target_dir: PathBuf::from("/ws/target"),
            root: PathBuf::from("/ws"),
            libraries: libraries
                .iter()
                .map(|l| (l.to_string(), (l.replace('_', "-"), PathBuf::from("/ws").join(l))))
                .collect(),
            member_ids: libraries.iter().chain(&["app"]).map(|l| format!("{l} 0.1")).collect(),
            linking_packages: BTreeSet::new(),
        }
    }

    #[test]
    fn kernels_pick_the_libraries_the_image_crate_depends_on() {
        let ws = workspace(&["kern", "k195", "host_only"]);
        let manifest = json!({"crate_graph": ["app", "k195", "host_only", "core"]});
        let defined = json!({"kernel": "kern::k", "item": {"crate": "kern"}});
        assert_eq!(kernel_crates(&ws, &manifest, &defined).ok(), Some(vec!["kern".to_string()]));
        let outside = json!({"kernel": "dep::k", "item": {"crate": "dep"}});
        let Err(Failure(message, 1)) = kernel_crates(&ws, &manifest, &outside) else {
            panic!("a kernel outside the workspace accepted")
        };
        assert!(message.contains("`dep`, which is not a library of this workspace"), "{message}");
        // 1.95 style: the launching libraries, else the workspace libraries of the graph.
        let by_lib = json!({"kernel": "k195_scale", "link_name": "k195_scale",
            "launched_by": ["k195", "app"]});
        assert_eq!(kernel_crates(&ws, &manifest, &by_lib).ok(), Some(vec!["k195".to_string()]));
        let by_program =
            json!({"kernel": "k195_scale", "link_name": "k195_scale", "launched_by": ["app"]});
        assert_eq!(
            kernel_crates(&ws, &manifest, &by_program).ok(),
            Some(vec!["k195".to_string(), "host_only".to_string()])
        );
        let alone = json!({"crate_graph": ["app", "core"]});
        let Err(Failure(message, 1)) = kernel_crates(&ws, &alone, &by_program) else {
            panic!("a 1.95-style kernel without a library accepted")
        };
        assert!(message.contains("no library of this workspace"), "{message}");
    }

    #[test]
    fn libraries_keep_the_features_the_host_build_resolved() {
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
        let features = library_features(&artifacts, &ws, host);
        let k195: Vec<&str> = features["k195"].iter().map(String::as_str).collect();
        assert_eq!(k195, ["scale"]);
        assert!(features["kern"].is_empty());
        assert!(!features.contains_key("app"));
    }

    #[test]
    fn device_core_comes_from_the_device_sysroot() {
        let dir =
            std::env::temp_dir().join(format!("cargo-offload-sysroot-{}", std::process::id()));
        let host = "x86_64-unknown-linux-gnu";
        let lib = dir.join("lib/rustlib/nvptx64-nvidia-cuda/lib");
        fs::create_dir_all(&lib).unwrap();
        fs::write(lib.join("libcore-0123.rlib"), b"").unwrap();
        // SAFETY: the only test that sets this variable, and no test reads it concurrently.
        unsafe { std::env::set_var(DEVICE_SYSROOT_VAR, &dir) };
        let sm = Arch::parse("sm_90", host).ok().unwrap();
        assert_eq!(device_core(&sm, false).ok(), Some(DeviceCore::Toolchain(dir.clone())));
        assert_eq!(device_core(&sm, true).ok(), Some(DeviceCore::BuildStd));
        let gfx = Arch::parse("gfx90a", host).ok().unwrap();
        let Err(Failure(message, 1)) = device_core(&gfx, false) else { panic!("no core accepted") };
        assert!(
            message.contains("no `core` for `amdgcn-amd-amdhsa`")
                && message.contains("--build-std"),
            "{message}"
        );
        unsafe { std::env::remove_var(DEVICE_SYSROOT_VAR) };
        assert_eq!(device_core(&gfx, false).ok(), Some(DeviceCore::BuildStd));
        fs::remove_dir_all(&dir).unwrap();
    }
}
