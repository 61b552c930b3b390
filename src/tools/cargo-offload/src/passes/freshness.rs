//! What a build builds again, and why: cargo's fingerprints see neither the compiler build
//! (only `rustc -vV`), nor the flags that the wrapper adds per arch, nor the content of a
//! manifest or of the registration, so `cargo offload` records what selected each output
//! beside it and removes the outputs whose record differs: another compiler's
//! ([`forget_other_compilers_output`]), another arch's ([`forget_other_arch`]), another image's
//! ([`Build::forget_other_image`]), a program linked with other images
//! ([`forget_programs_linked_otherwise`]). It also decides whether the last build's images may
//! stand ([`Build::last_image_crate`]).

use std::collections::BTreeSet;
use std::fs;
use std::mem::take;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use offload_targets::identity::driver_identity;

use super::{Build, cargo_command};
use crate::args::Arch;
use crate::env;
use crate::image_crate::{IMAGE_CRATE, ImageBuilder};
use crate::registration::{link_record, link_record_text};
use crate::util::{Context, Result};
use crate::workspace::{manifest_path_args, profile_args};

/// Removes what `cargo offload` built with another compiler build. Builds of the fork share
/// `rustc -vV` (the upstream version and commit), which is all that cargo's fingerprints see
/// of the compiler, so cargo would keep rmeta files, manifests and images of an older build
/// as fresh; the identity here adds the size and modification time of the compiler's driver
/// library. Recorded in `<dir>/compiler`.
pub(crate) fn forget_other_compilers_output(dir: &Path) -> Result<()> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let run = |args: &[&str]| {
        Command::new(&rustc)
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let version = run(&["-vV"]).context_run("rustc")?;
    let sysroot = run(&["--print", "sysroot"]).context_run("rustc")?;
    let mut identity = version;
    identity.push_str(&driver_identity(Path::new(sysroot.trim())).join("\n"));
    // The device sysroot's `core` may be rebuilt while the compiler stays: cargo does not track
    // sysroot libraries, so the device passes' outputs would still name the older one.
    if let Some(sysroot) = std::env::var_os(env::DEVICE_SYSROOT) {
        identity
            .push_str(&fs::read_to_string(Path::new(&sysroot).join("stamp")).unwrap_or_default());
    }
    let record = dir.join("compiler");
    // Without a record, whatever is there came from an unknown compiler.
    let previous = fs::read_to_string(&record).ok();
    if previous.as_deref() == Some(identity.as_str()) {
        return Ok(());
    }
    if let Ok(entries) = fs::read_dir(dir) {
        let entries: Vec<_> = entries.flatten().collect();
        if !entries.is_empty() {
            eprintln!(
                "[cargo offload] the compiler changed since the last build: rebuilding all passes"
            );
        }
        for entry in entries {
            let path = entry.path();
            let _ = if path.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
        }
    }
    fs::create_dir_all(dir).context_create(dir)?;
    fs::write(&record, identity).context_write(&record)
}

/// Removes each of the `linked_programs` (program files that exist after a host run:
/// [`crate::manifests::Roots::linked_programs`]) that was linked with other images or link
/// arguments than `link_args`, or changed since its link (its [`link_record`] holds another
/// [`link_record_text`], or none), so that cargo finds it missing and the link run links it
/// again. Cargo sees neither the registration's content nor the link arguments that
/// `cargo offload` adds. Returns whether it removed one.
pub(super) fn forget_programs_linked_otherwise(
    linked_programs: &[PathBuf],
    link_args: &[String],
) -> Result<bool> {
    let mut removed = false;
    for program in linked_programs {
        let record = link_record_text(program, link_args);
        if fs::read_to_string(link_record(program)).ok().as_deref() != Some(record.as_str()) {
            fs::remove_file(program).context_remove(program)?;
            removed = true;
        }
    }
    Ok(removed)
}

/// Removes each program that the one host run linked (`linked <path>` lines of its record in
/// `programs`, [`crate::wrapper`]) and whose manifest (in `manifests`) names a kernel that is
/// not among `imaged` (the symbols of the images it was linked with), with cargo's copies of
/// it (hard links beside it or one folder up): run, it would launch a kernel its images lack.
/// A program without a readable manifest is removed too.
pub(super) fn forget_programs_beyond(programs: &Path, manifests: &Path, imaged: &BTreeSet<String>) {
    for entry in fs::read_dir(programs).into_iter().flatten().flatten() {
        let record = fs::read_to_string(entry.path()).unwrap_or_default();
        let linked: Vec<&str> = record.lines().filter_map(|l| l.strip_prefix("linked ")).collect();
        let name = entry.file_name().to_string_lossy().into_owned();
        let manifest = manifests.join(format!("{name}.json"));
        let fits = offload_manifest_format::read(&manifest)
            .is_ok_and(|m| m.kernels.iter().all(|k| imaged.contains(&k.symbol)));
        if fits {
            continue;
        }
        for program in linked.iter().map(Path::new) {
            remove_with_copies(program);
        }
    }
}

/// Removes `program` and the hard links to it in its folder and the folder above (cargo's
/// copy of a program without the extra filename).
pub(super) fn remove_with_copies(program: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = fs::metadata(program) else { return };
    let folders = program.parent().into_iter().chain(program.parent().and_then(Path::parent));
    for folder in folders {
        for entry in fs::read_dir(folder).into_iter().flatten().flatten() {
            let same = fs::metadata(entry.path())
                .is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino());
            if same {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// Whether the device pass into `target_dir` must forget its image: whether `key` (what
/// selects its image: the pass's flags, the image builder's features and manifest) differs
/// from the last device pass's into the same profile, recorded in `<dir>/image-key` (`dir`: the
/// pass's profile folder). Cargo keeps one fingerprint per feature set of a crate's graph, and
/// sees nothing of a manifest's content, but `host.out` has one name: after switching back to
/// an earlier feature set cargo would find that build fresh and keep the other set's image.
/// The new key is recorded, and the last pass's [`BUILT`] file removed.
pub(super) fn image_key_changed(dir: &Path, key: &str) -> Result<bool> {
    let record = dir.join("image-key");
    if fs::read_to_string(&record).ok().as_deref() == Some(key) {
        return Ok(false);
    }
    let _ = fs::remove_file(dir.join(BUILT));
    fs::create_dir_all(dir).and_then(|()| fs::write(&record, key)).context_write(&record)?;
    Ok(true)
}

/// The file beside a device pass's outputs whose modification time is when the last pass that
/// succeeded began ([`Build::device_pass`]); removed with its image ([`image_key_changed`]).
pub(super) const BUILT: &str = "image-built";

/// Whether a file that the dep-info file `dep_info` (cargo's, beside a crate it built: the
/// sources of the crate and of its path dependencies, absolute, `\ ` for a space in a path)
/// lists, or one it no longer finds, is newer than the file `since`; `None` if either cannot
/// be read. (Cargo rewrites `dep_info` only when its list changes, so its own time tells
/// nothing.)
pub(super) fn edited_since(dep_info: &Path, since: &Path) -> Option<bool> {
    let written = fs::metadata(since).and_then(|m| m.modified()).ok()?;
    let text = fs::read_to_string(dep_info).ok()?;
    let (_, sources) = text.split_once(": ")?;
    let mut paths = Vec::new();
    let mut path = String::new();
    let mut chars = sources.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => path.extend(chars.next()),
            c if c.is_whitespace() => paths.extend((!path.is_empty()).then(|| take(&mut path))),
            c => path.push(c),
        }
    }
    paths.extend((!path.is_empty()).then_some(path));
    Some(paths.iter().any(|p| {
        fs::metadata(p).and_then(|m| m.modified()).map_or(true, |modified| modified > written)
    }))
}

/// Removes the image (`host.out` and its copy `device.bin`) and the outputs of crate `krate`
/// from `deps` (a device pass's output folder), so that cargo, which finds them missing, builds
/// the crate and its image again.
pub(super) fn forget_image(deps: &Path, krate: &str) {
    let prefix = format!("lib{krate}-");
    for entry in fs::read_dir(deps).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if matches!(&*name, "host.out" | "host.out.sha256" | "device.bin")
            || name.starts_with(&prefix)
        {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Makes the device passes into `target_dir` build everything for `arch`'s target again when
/// the last pass there built it for another arch of that target (`gfx942` after `gfx90a`):
/// the wrapper adds the arch's flags ([`crate::wrapper::device::wrap_device_rustc`]), of which
/// cargo's fingerprints know nothing, nor does cargo's cache of rustc's answers about the
/// target. The flags are recorded in `<target_dir>/<target>/offload-arch-flags`; when they
/// differ, that folder and the cache (`<target_dir>/.rustc_info.json`) are removed.
pub(super) fn forget_other_arch(target_dir: &Path, arch: &Arch) -> Result<()> {
    let folder = target_dir.join(&arch.target);
    let record = folder.join("offload-arch-flags");
    let flags = arch.pass_flags().join("\n");
    if fs::read_to_string(&record).ok().as_deref() == Some(flags.as_str()) {
        return Ok(());
    }
    if folder.exists() {
        fs::remove_dir_all(&folder).context_remove(&folder)?;
    }
    // Cargo keeps what rustc printed of each target (its `cfg`s, `target_feature` among them)
    // in this file, keyed by the probe's arguments, which lack the wrapper's flags.
    let _ = fs::remove_file(target_dir.join(".rustc_info.json"));
    fs::create_dir_all(&folder).and_then(|()| fs::write(&record, flags)).context_write(&record)
}

/// The key of what selects the image of a device pass with `flags` (the pass's rustc flags)
/// that `builder` builds: the flags, the manifest, and the image crate's `Cargo.toml` or the
/// program with its features. Recorded beside the pass's outputs ([`image_key_changed`]).
pub(super) fn image_key(builder: &ImageBuilder, flags: &[String]) -> String {
    let read = |path: PathBuf| fs::read_to_string(path).unwrap_or_default();
    let mut key = format!("{}\n{}\n", flags.join("\x1f"), read(builder.manifest()));
    match builder {
        ImageBuilder::ImageCrate(dir) => key.push_str(&read(dir.join("Cargo.toml"))),
        ImageBuilder::Program { program, features, .. } => {
            key.push_str(&format!("{program:?} {features:?}"))
        }
    }
    key
}

impl<'a> Build<'a> {
    /// The image crate of the last build ([`ImageBuilder::ImageCrate`]), if the last device
    /// pass of each arch of this run, in this profile, built its image from the image crate's
    /// files as they are now (its recorded [`image_key`] is theirs) and no source file of the
    /// crates it compiled was edited since that pass began ([`edited_since`], [`BUILT`]): then,
    /// unless the host pass changes the launches, the images it built stand. (A kernel's
    /// manifest entry carries a hash of its crate's source, so an edit of a kernel crate changes
    /// the manifest: its device passes then run after the host pass, as [`Build::host_first`]
    /// orders them. Which order is taken decides what runs, not which images and programs
    /// come out.)
    pub(super) fn last_image_crate(&self) -> Option<ImageBuilder> {
        let builder = ImageBuilder::ImageCrate(self.folders.dir.join("image"));
        let profile = if self.folders.profile == "debug" { "debug" } else { "release" };
        let batches = self.batches().ok()?;
        let built_now = batches.iter().all(|batch| {
            batch.archs.iter().all(|(_, arch)| {
                let folder = batch.target_dir.join(&arch.target).join(profile);
                let key = image_key(&builder, &self.device_flags(arch, &builder, &batch.core));
                let dep_info = folder.join(format!("lib{IMAGE_CRATE}.d"));
                fs::read_to_string(folder.join("image-key")).is_ok_and(|recorded| recorded == key)
                    && edited_since(&dep_info, &folder.join(BUILT)) == Some(false)
            })
        });
        (builder.manifest().is_file() && built_now).then_some(builder)
    }

    /// Makes the device pass of `arch` build its image again when what selects the image
    /// changed since its last pass into `target_dir` ([`image_key_changed`]), or the image
    /// (`host.out`) is missing or does not match its seal. The image crate's
    /// outputs are removed ([`forget_image`]). A program is cleaned with `cargo clean -p`: its
    /// `rlib` is not the file cargo expects, so a missing `rlib` does not make cargo build it
    /// again. (Cargo checks the files it expects: on the host it finds the program fresh once
    /// built; on a GPU target, where the program's file never appears, it compiles the program
    /// again in every device pass, about 0.2 s for the test's.)
    pub(super) fn forget_other_image(
        &self,
        builder: &ImageBuilder,
        arch: &Arch,
        target_dir: &Path,
        deps: &Path,
        flags: &[String],
    ) -> Result<()> {
        let key = image_key(builder, flags);
        // An image removed by hand: cargo, which does not know the file, would find the crate
        // fresh and never write it again.
        let changed = image_key_changed(deps.parent().unwrap_or(target_dir), &key)?;
        // Nor would it write an image again that was damaged since: one that does not match
        // its seal ([`crate::seal`], made when its pass ended) is built again.
        if !changed && crate::seal::intact(&deps.join("host.out")) {
            return Ok(());
        }
        forget_image(deps, builder.krate());
        if let ImageBuilder::Program { program, .. } = builder {
            let mut clean = cargo_command(&self.cargo, "clean");
            clean
                .args(manifest_path_args(&self.inv.cargo_args))
                .args(["-p", &program.package, "--target", &arch.target, "--target-dir"])
                .arg(target_dir)
                .args(profile_args(&self.inv.cargo_args));
            let _ = clean.stdout(Stdio::null()).stderr(Stdio::null()).status();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A source that the dep-info file lists and that is newer than the pass's [`BUILT`] file,
    /// or gone, is an edit; a path with a space is read whole; the dep-info file's own time
    /// does not count.
    #[test]
    fn a_source_newer_than_the_last_pass_is_an_edit() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-edited-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let (spaced, plain) = (dir.join("a b.rs"), dir.join("c.rs"));
        let (dep_info, built) = (dir.join("x.d"), dir.join(BUILT));
        let escaped = spaced.display().to_string().replace(' ', "\\ ");
        fs::write(&dep_info, format!("{}: {escaped} {}\n", dir.display(), plain.display()))
            .unwrap();
        assert_eq!(edited_since(&dep_info, &built), None, "no pass built");
        let now = std::time::SystemTime::now();
        let age = |path: &Path, seconds: u64| {
            fs::File::options()
                .append(true)
                .create(true)
                .open(path)
                .and_then(|f| f.set_modified(now - std::time::Duration::from_secs(seconds)))
                .unwrap()
        };
        age(&built, 10);
        age(&spaced, 20);
        age(&plain, 20);
        age(&dep_info, 30);
        assert_eq!(edited_since(&dep_info, &built), Some(false));
        age(&spaced, 5);
        assert_eq!(edited_since(&dep_info, &built), Some(true), "the spaced path edited");
        age(&dep_info, 1);
        let hidden = edited_since(&dep_info, &built);
        assert_eq!(hidden, Some(true), "a newer dep-info file hides no edit");
        age(&spaced, 20);
        fs::remove_file(&plain).unwrap();
        assert_eq!(edited_since(&dep_info, &built), Some(true), "a source gone");
        fs::remove_file(&dep_info).unwrap();
        assert_eq!(edited_since(&dep_info, &built), None, "no dep-info file");
        fs::remove_dir_all(&dir).unwrap();
    }

    /// After a failed build, a program that the one host run linked goes, with cargo's copy,
    /// when it launches a kernel that its images lack; one whose kernels they hold stays.
    #[test]
    fn a_program_beyond_its_images_is_removed() {
        use offload_manifest_format::{FORMAT_VERSION, MAGIC};
        let dir = std::env::temp_dir().join(format!("cargo-offload-beyond-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let (programs, manifests, deps) = (dir.join("p"), dir.join("m"), dir.join("debug/deps"));
        for folder in [&programs, &manifests, &deps] {
            fs::create_dir_all(folder).unwrap();
        }
        for (name, symbol) in [("new-1", "s_new"), ("old-2", "s_old")] {
            let kernel = json!({"kernel": "k::k", "link_name": "k", "symbol": symbol, "params": [],
                "launched_by": [name]});
            let manifest = json!({"magic": MAGIC, "format_version": FORMAT_VERSION,
                "rustc_commit": "c", "crate": name, "crate_graph": [name], "kernels": [kernel]});
            fs::write(manifests.join(format!("{name}.json")), manifest.to_string()).unwrap();
            let program = deps.join(name);
            fs::write(&program, "program").unwrap();
            let copy = dir.join("debug").join(name.split('-').next().unwrap());
            fs::hard_link(&program, copy).unwrap();
            let record = format!("/src/{name}.rs\nfalse\nlinked {}\n", program.display());
            fs::write(programs.join(name), record).unwrap();
        }
        forget_programs_beyond(&programs, &manifests, &BTreeSet::from(["s_old".to_string()]));
        assert!(!deps.join("new-1").exists() && !dir.join("debug/new").exists());
        assert!(deps.join("old-2").exists() && dir.join("debug/old").exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
