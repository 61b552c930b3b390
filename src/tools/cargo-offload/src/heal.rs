//! What a build does first, under the target folder's lock, so that what a killed build or a
//! damaged disk left under `<target dir>/offload` does not survive it: temporary files and
//! folders are removed ([`remove_leftovers`]), and a crate manifest that does not match its seal
//! is removed with its crate's outputs, so that cargo compiles the crate again and rustc writes
//! the manifest anew ([`forget_damaged_manifests`]). The other reused files (images, vendor
//! outputs, the registration object, programs) are checked where they are reused
//! ([`crate::seal`]).

use std::fs;
use std::path::{Path, PathBuf};

use crate::seal;
use crate::util::{Context, Result};

/// Removes the temporary files of killed builds from `dir` (`<target dir>/offload`): in
/// `images`, its profile folders and `manifests`, every file whose name holds `.tmp` (LLVM's
/// tools and rustc's manifest writer write
/// `<output>.tmp<random>` and rename it; [`seal::write_atomically`] writes
/// `<file>.tmp<pid>`) and the registration's `offload-registration.new.o`; in the `deps` and
/// `examples` folders of the passes' target folders (`host`, `device`, `device-<arch>`),
/// rustc's temporary folders `rmeta<6 characters>`. Only a `cargo offload` holding the lock
/// writes there, so none of these is in use. What cannot be removed stays: it is in no file's
/// way.
pub(crate) fn remove_leftovers(dir: &Path) {
    let images = dir.join("images");
    let profiles = fs::read_dir(&images).into_iter().flatten().flatten().map(|e| e.path());
    // The manifests' folder too: rustc writes a manifest through `<manifest>.tmp<pid>`.
    let folders: Vec<_> =
        [images.clone(), dir.join("manifests")].into_iter().chain(profiles).collect();
    for folder in folders.iter().filter(|f| f.is_dir()) {
        for entry in fs::read_dir(folder).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if (name.contains(".tmp") || name == "offload-registration.new.o")
                && entry.path().is_file()
            {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
    for pass in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = pass.file_name().to_string_lossy().into_owned();
        if name == "host" || name == "device" || name.starts_with("device-") {
            remove_rustc_temporaries(&pass.path(), 3);
        }
    }
}

/// Removes rustc's temporary folders (`rmeta` and six characters) from the `deps` and
/// `examples` folders at most `depth` levels under `folder` (`<pass>/<target>/<profile>/deps`).
fn remove_rustc_temporaries(folder: &Path, depth: usize) {
    for outputs in output_folders(folder, depth) {
        for inner in fs::read_dir(&outputs).into_iter().flatten().flatten() {
            if is_rustc_temporary(&inner.file_name().to_string_lossy())
                && inner.file_type().is_ok_and(|t| t.is_dir())
            {
                let _ = fs::remove_dir_all(inner.path());
            }
        }
    }
}

/// The `deps` and `examples` folders (where rustc writes a crate's outputs) at most `depth`
/// levels under `folder`.
fn output_folders(folder: &Path, depth: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(folder).into_iter().flatten().flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let name = entry.file_name();
        if name == "deps" || name == "examples" {
            found.push(entry.path());
        } else if depth > 0 {
            found.extend(output_folders(&entry.path(), depth - 1));
        }
    }
    found
}

/// Whether `name` is that of a temporary folder of rustc's (`rmeta` and six random
/// alphanumeric characters, in which rustc writes a crate's metadata before moving it out).
fn is_rustc_temporary(name: &str) -> bool {
    name.strip_prefix("rmeta")
        .is_some_and(|rest| rest.len() == 6 && rest.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// Removes each manifest in `manifests` (`<crate name><extra filename>.json`, written by the
/// host pass's compilations and sealed by the wrapper, [`crate::wrapper::host`])
/// that does not match its seal, or has none, and the outputs of its crate in the host pass's
/// folder for the target, `host` (`<target dir>/offload/host/<triple>`: the files named after
/// it in each `deps` and `examples` folder, the `rlib`, `rmeta`, shared object, program,
/// `.rlink` and dep-info), so that cargo, which finds them missing, compiles the crate again and
/// rustc writes the manifest anew. Cargo would otherwise find the crate fresh and never write
/// the manifest again. The outputs of a crate whose manifest is missing (every crate compiled
/// for the target writes one) are removed too.
pub(crate) fn forget_damaged_manifests(manifests: &Path, host: &Path) -> Result<()> {
    let entries = match fs::read_dir(manifests) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).context_read(manifests),
    };
    let mut damaged = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
        if let Some(krate) = name.strip_suffix(".json")
            && !seal::intact(&path)
        {
            damaged.push(krate.to_string());
            seal::remove_sealed(&path);
        }
    }
    damaged.extend(crates_without_manifest(host, manifests, 1));
    if damaged.is_empty() {
        return Ok(());
    }
    let outputs: Vec<String> = damaged
        .iter()
        .flat_map(|krate| {
            [
                krate.clone(),
                format!("lib{krate}.rlib"),
                format!("lib{krate}.rmeta"),
                format!("lib{krate}.so"),
                format!("lib{krate}.a"),
                format!("{krate}.rlink"),
                format!("{krate}.d"),
            ]
        })
        .collect();
    remove_outputs(host, &outputs, 1);
    Ok(())
}

/// The crates (`<crate name><extra filename>`) that have outputs in the `deps` and `examples`
/// folders at most `depth` levels under `folder` (an `rlib`, an `rmeta`, or a program: a file
/// without an extension, named with an extra filename) but no manifest in `manifests`.
fn crates_without_manifest(folder: &Path, manifests: &Path, depth: usize) -> Vec<String> {
    let mut crates = Vec::new();
    for outputs in output_folders(folder, depth) {
        for file in fs::read_dir(&outputs).into_iter().flatten().flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            let library = name.strip_prefix("lib").and_then(|rest| {
                rest.strip_suffix(".rlib").or_else(|| rest.strip_suffix(".rmeta"))
            });
            let program = (!name.contains('.') && file.file_type().is_ok_and(|t| t.is_file()))
                .then_some(name.as_str());
            // Only rustc's own files, named with cargo's extra filename (`-<hash>`): cargo's
            // copy of an example (`examples/<name>`) has no manifest of its own.
            if let Some(krate) = library.or(program).filter(|krate| krate.contains('-'))
                && !manifests.join(format!("{krate}.json")).is_file()
                && !crates.iter().any(|c| c == krate)
            {
                crates.push(krate.to_string());
            }
        }
    }
    crates
}

/// Removes the files named `names` from the `deps` and `examples` folders at most `depth`
/// levels under `folder`.
fn remove_outputs(folder: &Path, names: &[String], depth: usize) {
    for outputs in output_folders(folder, depth) {
        for file in names {
            let _ = fs::remove_file(outputs.join(file));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("cargo-offload-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Temporary files of LLVM's tools and rustc's temporary folders go; the images, their
    /// seals and a crate's files stay.
    #[test]
    fn leftovers_of_killed_builds_are_removed() {
        let dir = folder("leftovers");
        let profile = dir.join("images/release");
        let deps = dir.join("host/x86_64-unknown-linux-gnu/release/deps");
        let device_deps = dir.join("device/nvptx64-nvidia-cuda/release/deps");
        for d in [&profile, &deps.join("rmetaAb12Cd"), &device_deps.join("rmetaZZ99zz")] {
            fs::create_dir_all(d).unwrap();
        }
        let gone = [
            profile.join("host.offload.tmp1a2b3c4"),
            profile.join("offload-registration.new.o"),
            dir.join("images/host.so.sha256.tmp42"),
        ];
        let kept = [
            profile.join("host.offload"),
            profile.join("host.offload.sha256"),
            dir.join("images/host.so"),
            deps.join("libapp-0123.rmeta"),
        ];
        for file in gone.iter().chain(&kept) {
            fs::write(file, b"x").unwrap();
        }
        fs::create_dir_all(deps.join("rmeta-not-ours")).unwrap();
        remove_leftovers(&dir);
        for file in &gone {
            assert!(!file.exists(), "{} stayed", file.display());
        }
        for file in &kept {
            assert!(file.exists(), "{} went", file.display());
        }
        assert!(!deps.join("rmetaAb12Cd").exists() && !device_deps.join("rmetaZZ99zz").exists());
        assert!(deps.join("rmeta-not-ours").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    /// A manifest that differs from its seal, or has none, goes with its crate's outputs, as do
    /// the outputs of a crate without a manifest; a sealed one and its crate's outputs stay.
    #[test]
    fn a_damaged_manifest_goes_with_its_crates_outputs() {
        let dir = folder("manifests");
        let manifests = dir.join("manifests");
        let host = dir.join("host/x86_64-unknown-linux-gnu");
        let deps = host.join("debug/deps");
        fs::create_dir_all(&manifests).unwrap();
        fs::create_dir_all(&deps).unwrap();
        // A program whose manifest is gone, and a build script's folder, which has none;
        // cargo's copy of an example, which has no extra filename.
        fs::write(deps.join("app-4"), b"program").unwrap();
        fs::create_dir_all(host.join("debug/examples")).unwrap();
        fs::write(host.join("debug/examples/demo"), b"copy").unwrap();
        fs::create_dir_all(deps.join("build-script-build-5")).unwrap();
        for name in ["good-1", "torn-2", "unsealed-3"] {
            fs::write(manifests.join(format!("{name}.json")), b"{\"kernels\":[]}").unwrap();
            fs::write(deps.join(format!("lib{name}.rmeta")), b"m").unwrap();
            fs::write(deps.join(format!("{name}.d")), b"d").unwrap();
        }
        seal::seal(&manifests.join("good-1.json")).ok().unwrap();
        seal::seal(&manifests.join("torn-2.json")).ok().unwrap();
        fs::write(manifests.join("torn-2.json"), b"{\"ker").unwrap();
        forget_damaged_manifests(&manifests, &host).ok().unwrap();
        assert!(!deps.join("app-4").exists(), "a program without a manifest stayed");
        assert!(deps.join("build-script-build-5").exists());
        assert!(host.join("debug/examples/demo").exists(), "cargo's copy of an example went");
        assert!(seal::intact(&manifests.join("good-1.json")));
        assert!(deps.join("libgood-1.rmeta").exists() && deps.join("good-1.d").exists());
        for name in ["torn-2", "unsealed-3"] {
            assert!(!manifests.join(format!("{name}.json")).exists(), "{name}");
            assert!(!seal::seal_path(&manifests.join(format!("{name}.json"))).exists());
            assert!(!deps.join(format!("lib{name}.rmeta")).exists(), "{name}");
            assert!(!deps.join(format!("{name}.d")).exists(), "{name}");
        }
        let _ = fs::remove_dir_all(&dir);
    }
}
