//! Running the cargo passes: each pass as one cargo command with its own target folder under
//! `<target dir>/offload/` and its progress lines, and [`run`], which drives them in order
//! (the host pass's compile run, which writes the manifests, one device pass per arch,
//! registration, the host pass's link run; or, when the last build's images may stand, the
//! device passes first and one host run that compiles and links) and then runs the programs
//! that `run` and `test` built.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::mem::take;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use offload_manifest_format::Manifest;
use serde_json::Value;

use crate::args::{Arch, Invocation, Verb};
use crate::env;
use crate::heal::{forget_damaged_manifests, remove_leftovers};
use crate::image_crate::{
    DEVICE_CFG, DeviceCore, IMAGE_CRATE, ImageBuilder, device_core, image_builder,
    no_device_sysroot_note, resolved_features,
};
use crate::launch::{bundle_folder, run_programs, write_bundle};
use crate::manifests::{Roots, merge_manifests, root_manifests};
use crate::registration::{link_record, link_record_text, wrap_images};
use crate::util::{
    Failure, Result, copy_if_changed, fail, forget_other_compilers_output, stop_point,
};
use crate::vendor::{device_binary, name_kernels, runtime_lib_dir};
use crate::workspace::{
    Workspace, check_gpu_archs, host_triple, manifest_path_args, profile_args, profile_dir,
    rustc_version, source_args, workspace,
};
use crate::wrapper::encode_target_flags;

/// Prints one progress line for a pass: `[cargo offload] <what> (<seconds> s)`.
fn progress(what: &str, start: Instant) {
    eprintln!("[cargo offload] {what} ({:.1} s)", start.elapsed().as_secs_f64());
}

/// Where a device pass writes its progress lines and cargo's messages: straight to standard
/// error, or into a buffer that is printed whole when the pass ends, so that the passes of
/// several arches, which run at once, do not mix their lines.
enum Log {
    Live,
    Buffered(Vec<u8>),
}

impl Log {
    fn line(&mut self, line: &str) {
        match self {
            Log::Live => eprintln!("[cargo offload] {line}"),
            Log::Buffered(buffer) => {
                buffer.extend_from_slice(format!("[cargo offload] {line}\n").as_bytes())
            }
        }
    }

    fn progress(&mut self, what: &str, start: Instant) {
        self.line(&format!("{what} ({:.1} s)", start.elapsed().as_secs_f64()));
    }

    /// Runs a cargo pass of a device (`what` names it) whose messages are only shown; fails
    /// when cargo fails. A crate that the pass compiled without finding `std` gets one error
    /// that names it and the lines that make it build for the device ([`needs_std_error`]), in
    /// place of rustc's, whose hint (`-Zbuild-std`) points the wrong way.
    /// The error names what failed as `failed` says, once cargo has ended.
    fn cargo_pass(
        &mut self,
        what: &str,
        mut cmd: Command,
        failed: impl FnOnce() -> String,
    ) -> Result<()> {
        let start = Instant::now();
        self.line(what);
        cmd.arg(message_format()).stdout(Stdio::piped());
        let mut needs_std = BTreeSet::new();
        let status = match self {
            Log::Live => (|| {
                let mut child = cmd.spawn()?;
                for line in lossy_lines(child.stdout.take().unwrap()) {
                    eprint!("{}", shown(&line, &mut needs_std));
                }
                child.wait()
            })(),
            // Cargo's lines (stderr) and rustc's diagnostics (stdout, JSON) in the order they
            // come, as a terminal would show them.
            Log::Buffered(buffer) => (|| {
                let mut child = cmd.stdin(Stdio::null()).stderr(Stdio::piped()).spawn()?;
                let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
                let lines = Mutex::new(Vec::new());
                std::thread::scope(|scope| {
                    scope.spawn(|| {
                        for line in lossy_lines(stderr) {
                            lines.lock().unwrap().extend_from_slice(format!("{line}\n").as_bytes());
                        }
                    });
                    for line in lossy_lines(stdout) {
                        let shown = shown(&line, &mut needs_std);
                        lines.lock().unwrap().extend_from_slice(shown.as_bytes());
                    }
                });
                buffer.extend_from_slice(&lines.into_inner().unwrap());
                child.wait()
            })(),
        };
        let status = status.map_err(|e| Failure::new(format!("cannot run cargo: {e}")))?;
        if !status.success() {
            let code = status.code().unwrap_or(1).clamp(1, 255) as u8;
            let failed = failed();
            let message = match needs_std_error(&failed, &needs_std) {
                Some(message) => message,
                None => format!("{failed} failed (cargo's messages are above)"),
            };
            return Err(Failure::with_status(message, code));
        }
        self.progress(&format!("{what}: done"), start);
        Ok(())
    }

    /// Prints what a buffered log holds.
    fn flush(self) {
        if let Log::Buffered(buffer) = self {
            let _ = std::io::stderr().write_all(&buffer);
        }
    }
}

/// The lines of `pipe` until it ends or fails, each without its line end; a line that is not
/// UTF-8 is read lossily rather than ending the reading (the writer would then find the pipe
/// closed).
fn lossy_lines(pipe: impl std::io::Read) -> impl Iterator<Item = String> {
    let mut reader = BufReader::new(pipe);
    std::iter::from_fn(move || {
        let mut bytes = Vec::new();
        match reader.read_until(b'\n', &mut bytes) {
            Ok(0) | Err(_) => None,
            Ok(_) => {
                let line = String::from_utf8_lossy(&bytes);
                Some(line.trim_end_matches(['\n', '\r']).to_string())
            }
        }
    })
}

/// Cargo's `--message-format` for a pass whose messages `cargo offload` reads: JSON, with
/// diagnostics rendered in colour only for a terminal, as cargo itself decides.
fn message_format() -> &'static str {
    if std::io::stderr().is_terminal() {
        "--message-format=json-diagnostic-rendered-ansi"
    } else {
        "--message-format=json"
    }
}

/// What a device pass shows of one line of cargo's JSON output: a diagnostic as rustc rendered
/// it, a line that is not JSON as it is, nothing else. rustc's error that a crate cannot find
/// `std` is not shown but recorded in `needs_std` (the crate's name and package id) for
/// [`needs_std_error`].
fn shown(line: &str, needs_std: &mut BTreeSet<(String, String)>) -> String {
    let Ok(message) = serde_json::from_str::<Value>(line) else {
        return format!("{line}\n");
    };
    if message["reason"].as_str() != Some("compiler-message") {
        return String::new();
    }
    let diagnostic = &message["message"];
    if diagnostic["code"]["code"].as_str() == Some("E0463")
        && diagnostic["message"].as_str() == Some("can't find crate for `std`")
    {
        let krate = message["target"]["name"].as_str().unwrap_or("").replace('-', "_");
        let id = message["package_id"].as_str().unwrap_or("").to_string();
        needs_std.insert((krate, id));
        return String::new();
    }
    diagnostic["rendered"].as_str().unwrap_or("").to_string()
}

/// The error of a device pass (`what`) in which the crates `needs_std` (name, package id)
/// found no `std`: it names each, and says what makes such a crate build for a device.
/// `None` when no crate missed `std`.
fn needs_std_error(what: &str, needs_std: &BTreeSet<(String, String)>) -> Option<String> {
    if needs_std.is_empty() {
        return None;
    }
    let crates: Vec<String> =
        needs_std.iter().map(|(krate, id)| format!("`{krate}` (package `{id}`)")).collect();
    Some(format!(
        "{what} failed: {} cannot find `std`: when `core` is built from source (`--build-std`, \
         or no device sysroot in `{}`), every device pass compiles against `core` only (the \
         toolchain's device sysroot has `core` and `std`, and a GPU's kernels may use what of \
         `std` has a device form). The device pass compiles the crates that define kernels, \
         and their dependencies, for the device. Such a crate builds there under \
         `--build-std` when its root file starts with\n\n    \
         #![cfg_attr(offload_device, no_std)]\n\n\
         and what needs `std` (`fn main`, printing, `Vec`, ...) is under \
         `#[cfg(not(offload_device))]` (the device passes set `offload_device`, the host \
         passes do not). A crate of a registry or a git repository changes with its authors, \
         or with a `[patch]` of your workspace that points at a changed copy",
        crates.join(", "),
        crate::env::DEVICE_SYSROOT
    ))
}

/// Runs a cargo pass; its JSON messages are read for the artifacts, diagnostics are shown as
/// rendered (with `errors_only`, only errors: cargo repeats the warnings of the crates it finds
/// fresh, which the host pass's compile run has shown). Returns the `compiler-artifact`
/// messages.
fn cargo_pass(what: &str, mut cmd: Command, errors_only: bool) -> Result<Vec<Value>> {
    let start = Instant::now();
    eprintln!("[cargo offload] {what}");
    let mut artifacts = Vec::new();
    cmd.arg(message_format()).stdout(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| Failure::new(format!("cannot run cargo: {e}")))?;
    for line in BufReader::new(child.stdout.take().unwrap()).lines().map_while(|l| l.ok()) {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            println!("{line}");
            continue;
        };
        match message["reason"].as_str() {
            Some("compiler-message") => {
                // Every crate writes the manifest of its graph, and a library whose kernels
                // other crates launch writes an empty one, about which rustc warns; only
                // the merged manifest matters here, and an empty one gets its own note.
                let text = message["message"]["message"].as_str().unwrap_or("");
                if text.starts_with("the offload manifest `")
                    && text.contains("` lists no kernels: neither")
                {
                    continue;
                }
                let error =
                    message["message"]["level"].as_str().is_some_and(|l| l.contains("error"));
                if let Some(rendered) = message["message"]["rendered"].as_str()
                    && (error || !errors_only)
                {
                    eprint!("{rendered}");
                }
            }
            Some("compiler-artifact") => artifacts.push(message),
            _ => {}
        }
    }
    let status = child.wait().map_err(|e| Failure::new(format!("cargo did not finish: {e}")))?;
    if !status.success() {
        let code = status.code().unwrap_or(1).clamp(1, 255) as u8;
        return Err(Failure::with_status(
            format!("{what} failed (cargo's messages are above)"),
            code,
        ));
    }
    progress(&format!("{what}: done"), start);
    Ok(artifacts)
}

/// A cargo command for a pass, with the environment of the caller minus what would leak
/// between passes.
fn cargo_command(cargo: &OsString, verb: &str) -> Command {
    let mut cmd = Command::new(cargo);
    cmd.arg(verb)
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        // Only this `cargo offload` writes the plan: a nested one (in a build script or a test)
        // runs its programs itself.
        .env_remove(env::RUN_PLAN)
        // A build script of a pass sees these; a nested `cargo offload` sets its own, and
        // `cargo-offload` takes the role that they name (a wrapper) before any other.
        .env_remove(env::HOST_METADATA_DIR)
        .env_remove(env::DEVICE_TARGET_FLAGS)
        .env_remove(env::DEVICE_PROGRAM)
        .env_remove(env::DEVICE_FAILURES)
        .env_remove(env::HOST_LINK)
        .env_remove(env::HOST_COMPILE_AND_LINK);
    cmd
}

/// Builds what `inv` asks for, in one of two orders ([`Build::host_first`] or, when the last
/// build's images may stand, [`Build::images_first`]); `run` and `test` then run the programs.
pub(crate) fn run(inv: &Invocation) -> Result<ExitCode> {
    let mut build = Build::new(inv)?;
    // A bundle's folder is checked before the build, which takes a while.
    let bundle_out = inv.bundle_out.clone().unwrap_or_else(|| build.dir.join("bundle"));
    if inv.verb == Verb::Bundle {
        bundle_folder(&bundle_out)?;
    }
    // The runs share the target folder's files between their steps (the manifests, the
    // `.rlink` files, the images): one `cargo offload` at a time per target folder.
    let _lock = build.lock()?;
    build.heal()?;
    let (compiled, artifacts) = match build.last_image_crate() {
        Some(last) => build.images_first(&last)?,
        None => build.host_first()?,
    };
    let kernels = compiled.kernels;
    let programs = build.products(&artifacts, kernels > 0);
    if inv.verb == Verb::Bundle {
        write_bundle(&bundle_out, &programs)?;
        return Ok(ExitCode::SUCCESS);
    }
    run_programs(inv.verb, &programs, &inv.program_args)
}

/// Removes each of the `linked_programs` (program files that exist after a host run:
/// [`Roots::linked_programs`]) that was linked with other images or link arguments than
/// `link_args`, or changed since its link (its [`link_record`] holds another
/// [`link_record_text`], or none), so that cargo finds
/// it missing and the link run links it again. Cargo sees neither the registration's content
/// nor the link arguments that `cargo offload` adds. Returns whether it removed one.
fn forget_programs_linked_otherwise(
    linked_programs: &[PathBuf],
    link_args: &[String],
) -> Result<bool> {
    let mut removed = false;
    for program in linked_programs {
        let record = link_record_text(program, link_args);
        if fs::read_to_string(link_record(program)).ok().as_deref() != Some(record.as_str()) {
            fs::remove_file(program)
                .map_err(|e| Failure::new(format!("cannot remove {}: {e}", program.display())))?;
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
fn forget_programs_beyond(programs: &Path, manifests: &Path, imaged: &BTreeSet<String>) {
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
fn remove_with_copies(program: &Path) {
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
fn image_key_changed(dir: &Path, key: &str) -> Result<bool> {
    let record = dir.join("image-key");
    if fs::read_to_string(&record).ok().as_deref() == Some(key) {
        return Ok(false);
    }
    let _ = fs::remove_file(dir.join(BUILT));
    fs::create_dir_all(dir)
        .and_then(|()| fs::write(&record, key))
        .map_err(|e| Failure::new(format!("cannot write {}: {e}", record.display())))?;
    Ok(true)
}

/// The file beside a device pass's outputs whose modification time is when the last pass that
/// succeeded began ([`Build::device_pass`]); removed with its image ([`image_key_changed`]).
const BUILT: &str = "image-built";

/// Whether a file that the dep-info file `dep_info` (cargo's, beside a crate it built: the
/// sources of the crate and of its path dependencies, absolute, `\ ` for a space in a path)
/// lists, or one it no longer finds, is newer than the file `since`; `None` if either cannot
/// be read. (Cargo rewrites `dep_info` only when its list changes, so its own time tells
/// nothing.)
fn edited_since(dep_info: &Path, since: &Path) -> Option<bool> {
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
fn forget_image(deps: &Path, krate: &str) {
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

/// What the host pass's compile run found.
struct CompileRun {
    /// The merged manifest of the root crates.
    manifest: Manifest,
    /// Its number of kernel instances.
    kernels: usize,
    /// The features that the host build resolved for the workspace's crates
    /// ([`resolved_features`]).
    features: BTreeMap<String, BTreeSet<String>>,
    /// The root crates' own manifests, and the program files that exist after the run.
    roots: Roots,
}

/// The path of this `cargo-offload`, which cargo runs as `RUSTC_WRAPPER`.
fn current_exe() -> Result<PathBuf> {
    std::env::current_exe()
        .map_err(|e| Failure::new(format!("cannot find the cargo-offload program: {e}")))
}

/// The outcome of one batch's device passes ([`Build::device_pass`]): its lines, and each
/// arch's place in `--offload-arch` with its image (`host.out`) and packaged image.
type DevicePass = (Log, Result<Vec<(usize, (PathBuf, PathBuf))>>);

/// The images of `batches` (each a [`DevicePass`]'s) in the order of `--offload-arch`.
fn in_arch_order(batches: Vec<Vec<(usize, (PathBuf, PathBuf))>>) -> Vec<(PathBuf, PathBuf)> {
    let mut images: Vec<_> = batches.into_iter().flatten().collect();
    images.sort_by_key(|(index, _)| *index);
    images.into_iter().map(|(_, image)| image).collect()
}

/// The batches of archs ([`Build::batches`]) of `archs` (each arch's target and `core`, in the
/// order of `--offload-arch`): the places in `archs` of each batch's archs. An arch joins the
/// first batch of its `core` that has no arch of its target.
fn batch_indexes<C: PartialEq>(archs: &[(&str, C)]) -> Vec<Vec<usize>> {
    let mut batches: Vec<Vec<usize>> = Vec::new();
    for (index, (target, core)) in archs.iter().enumerate() {
        let fits = |batch: &&mut Vec<usize>| {
            archs[batch[0]].1 == *core && batch.iter().all(|&i| archs[i].0 != *target)
        };
        match batches.iter_mut().find(fits) {
            Some(batch) => batch.push(index),
            None => batches.push(vec![index]),
        }
    }
    batches
}

/// Archs whose device passes share one cargo run ([`Build::batches`]).
struct Batch<'a> {
    /// Each arch's place in `--offload-arch`, and the arch; no two of one target.
    archs: Vec<(usize, &'a Arch)>,
    /// Where their `core` comes from.
    core: DeviceCore,
    /// The cargo run's target folder.
    target_dir: PathBuf,
}

/// Makes the device passes into `target_dir` build everything for `arch`'s target again when
/// the last pass there built it for another arch of that target (`gfx942` after `gfx90a`):
/// the wrapper adds the arch's flags ([`crate::wrapper::wrap_device_rustc`]), of which cargo's
/// fingerprints know nothing, nor does cargo's cache of rustc's answers about the target. The
/// flags are recorded in `<target_dir>/<target>/offload-arch-flags`; when they differ, that
/// folder and the cache (`<target_dir>/.rustc_info.json`) are removed.
fn forget_other_arch(target_dir: &Path, arch: &Arch) -> Result<()> {
    let folder = target_dir.join(&arch.target);
    let record = folder.join("offload-arch-flags");
    let flags = arch.pass_flags().join("\n");
    if fs::read_to_string(&record).ok().as_deref() == Some(flags.as_str()) {
        return Ok(());
    }
    if folder.exists() {
        fs::remove_dir_all(&folder)
            .map_err(|e| Failure::new(format!("cannot remove {}: {e}", folder.display())))?;
    }
    // Cargo keeps what rustc printed of each target (its `cfg`s, `target_feature` among them)
    // in this file, keyed by the probe's arguments, which lack the wrapper's flags.
    let _ = fs::remove_file(target_dir.join(".rustc_info.json"));
    fs::create_dir_all(&folder)
        .and_then(|()| fs::write(&record, flags))
        .map_err(|e| Failure::new(format!("cannot write {}: {e}", record.display())))
}

/// The key of what selects the image of a device pass with `flags` (the pass's rustc flags)
/// that `builder` builds: the flags, the manifest, and the image crate's `Cargo.toml` or the
/// program with its features. Recorded beside the pass's outputs ([`image_key_changed`]).
fn image_key(builder: &ImageBuilder, flags: &[String]) -> String {
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

/// What the passes of one `cargo offload` run share.
struct Build<'a> {
    inv: &'a Invocation,
    /// The cargo that runs every pass (`CARGO`, as cargo sets it for its subcommands).
    cargo: OsString,
    /// The host's target triple.
    host: String,
    archs: Vec<Arch>,
    ws: Workspace,
    /// `<target dir>/offload`: the target folders of the passes and what they share.
    dir: PathBuf,
    /// The manifests that the host pass writes, one per crate.
    manifests: PathBuf,
    /// `<dir>/images`: the loadable images of the last build, and the image the host pass
    /// names; each profile's images and registration are in a folder of it
    /// ([`Build::profile_images`]).
    images_dir: PathBuf,
    /// The profile folder (`debug`, `release`, ...) of the user's cargo args.
    profile: String,
    /// `--check-cfg` of [`DEVICE_CFG`], so that a crate may test it without a warning.
    check_cfg: String,
}

impl<'a> Build<'a> {
    /// Reads the toolchain and the workspace, forgets another compiler's output and makes the
    /// manifests' folder.
    fn new(inv: &'a Invocation) -> Result<Build<'a>> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let version = rustc_version()?;
        let host = host_triple(&version)?;
        let archs = inv.archs.iter().map(|a| Arch::parse(a, &host)).collect::<Result<Vec<_>>>()?;
        let ws = workspace(&cargo, &inv.cargo_args)?;
        let dir = ws.target_dir.join("offload");
        forget_other_compilers_output(&dir)?;
        fs::create_dir_all(&dir)
            .map_err(|e| Failure::new(format!("cannot create {}: {e}", dir.display())))?;
        check_gpu_archs(&archs, &dir, &version)?;
        let manifests = dir.join("manifests");
        let images_dir = dir.join("images");
        let profile = profile_dir(&inv.cargo_args);
        // The profile's own folder of images is made once a cargo pass took the profile's
        // name (which becomes a path there), after the device passes' cargo run.
        for folder in [&manifests, &images_dir] {
            fs::create_dir_all(folder)
                .map_err(|e| Failure::new(format!("cannot create {}: {e}", folder.display())))?;
        }
        Ok(Build {
            inv,
            cargo,
            host,
            archs,
            ws,
            dir,
            manifests,
            images_dir,
            profile,
            check_cfg: format!("--check-cfg=cfg({DEVICE_CFG})"),
        })
    }

    /// The cargo command of the host pass, both runs: `cargo build`, or `cargo test --no-run`
    /// (`run` and `test` build with cargo and run the programs themselves: cargo would put the
    /// toolchain's library folder on `LD_LIBRARY_PATH`, whose copy of `libomp` the runtime would
    /// then load a second time beside the program's own), with `cargo-offload` as
    /// `RUSTC_WRAPPER` ([`crate::wrapper::wrap_host_rustc`]). Both runs have the same flags, so
    /// that the second finds fresh what the first compiled. The user's flags reach the host
    /// crates as they reach those of `cargo build --target <host>` (`RUSTFLAGS`, or else
    /// `target.<triple>.rustflags`, or else `build.rustflags` of `.cargo/config.toml`): cargo
    /// picks them, and the wrapper adds the offload flags.
    fn host_command(&self) -> Result<Command> {
        let (inv, host) = (self.inv, &self.host);
        let mut cmd =
            cargo_command(&self.cargo, if inv.verb == Verb::Test { "test" } else { "build" });
        cmd.args(&inv.cargo_args)
            .args(if inv.verb == Verb::Test { &["--no-run"][..] } else { &[] })
            .args(["--target", host, "--target-dir"])
            .arg(self.dir.join("host"))
            // The passes' folders are apart only if cargo's build folder (`build.build-dir`)
            // follows the target folder.
            .env("CARGO_BUILD_BUILD_DIR", self.dir.join("host"))
            .env("RUSTC_WRAPPER", current_exe()?)
            .env(env::HOST_METADATA_DIR, &self.manifests)
            .env(env::HOST_IMAGE, self.images_dir.join("host.out"))
            .env(env::HOST_PROGRAMS, self.programs_dir());
        Ok(cmd)
    }

    /// Takes the lock of this target folder's offload build (`<dir>/lock`), waiting while
    /// another `cargo offload` holds it; the lock goes with the returned file.
    fn lock(&self) -> Result<fs::File> {
        let path = self.dir.join("lock");
        let file = fs::File::create(&path)
            .map_err(|e| Failure::new(format!("cannot create {}: {e}", path.display())))?;
        if file.try_lock().is_err() {
            eprintln!(
                "[cargo offload] waiting for another cargo offload in {}",
                self.dir.display()
            );
            file.lock()
                .map_err(|e| Failure::new(format!("cannot lock {}: {e}", path.display())))?;
        }
        Ok(file)
    }

    /// Where this profile's images are made, and registered (`<dir>/images/<profile>`): each
    /// profile keeps its own, so that a build of another profile in between does not make the
    /// vendor tools and the link run again (a program of each profile is linked with its own
    /// images). The loadable images of the last build are copied to `<dir>/images`.
    fn profile_images(&self) -> PathBuf {
        self.images_dir.join(&self.profile)
    }

    /// Removes from `<dir>/images` what is not this build's: the loadable images and PTX of
    /// archs that it does not build, and the files that builds before each profile had its own
    /// folder made there (the vendor tools' outputs and records, the registration). What is
    /// left there is the last build's, as the docs say.
    fn forget_unpublished(&self) {
        let ours: BTreeSet<&str> = self.archs.iter().map(|a| a.name.as_str()).collect();
        for entry in fs::read_dir(&self.images_dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            let (Some(stem), Some(ext)) = (path.file_stem(), path.extension()) else { continue };
            let (stem, ext) = (stem.to_string_lossy(), ext.to_string_lossy());
            let published = matches!(&*ext, "so" | "cubin" | "ptx");
            let earlier_layout = stem.starts_with("offload-registration")
                || matches!(&*ext, "vendor-record" | "offload" | "bc" | "o");
            if (published && !ours.contains(&*stem)) || earlier_layout {
                let _ = fs::remove_file(&path);
            }
        }
    }

    /// Removes what killed builds left behind and what a damaged file would make wrong, before
    /// any pass: temporary files ([`remove_leftovers`]), and each crate's manifest that does
    /// not match its seal, with the crate's outputs, so that cargo compiles the crate again
    /// ([`forget_damaged_manifests`]). Every other reused file is checked where it is reused.
    fn heal(&self) -> Result<()> {
        remove_leftovers(&self.dir);
        forget_damaged_manifests(&self.manifests, &self.dir.join("host").join(&self.host))
    }

    /// The registration object of this profile's images ([`Build::profile_images`]).
    fn registration(&self) -> PathBuf {
        self.profile_images().join("offload-registration.o")
    }

    /// Where the host pass's compile run records the programs it compiled.
    fn programs_dir(&self) -> PathBuf {
        self.dir.join("host-programs")
    }

    /// The build when no images of an earlier build may stand: 1. the host pass's compile run
    /// (every crate compiled once, writing its manifest, no program linked), 2. the device
    /// passes of the merged manifest and the registration of their images, 3. the link run.
    /// Returns what the compile run found and the link run's artifacts.
    fn host_first(&mut self) -> Result<(CompileRun, Vec<Value>)> {
        let artifacts = self.host_compile(None)?;
        let compiled = self.compile_run(&artifacts)?;
        let link_args = match self.image_builder(&compiled)? {
            Some((builder, _)) => self.images(&builder)?,
            None => Vec::new(),
        };
        forget_programs_linked_otherwise(&compiled.roots.linked_programs, &link_args)?;
        let artifacts = self.host_link(&compiled, &link_args)?;
        Ok((compiled, artifacts))
    }

    /// The build when the last build's images came from the image crate as it is (`last`:
    /// [`Build::last_image_crate`]), as after most edits, which change no launch: 1. the device
    /// passes of `last` (cargo finds them fresh unless a crate of theirs changed) and the
    /// registration of their images, 2. one host run that compiles and links, as plain `cargo
    /// build` does. The images stand if that run left the launches, and so the image crate, as
    /// they were; otherwise (`the image crate changed` is printed) the device passes of the new
    /// image crate run, and a link run links again each program whose images changed (one that
    /// the host run compiled is compiled again: that run left no `.rlink`). If a device pass of
    /// `last` fails, its lines are dropped and the build is [`Build::host_first`]'s: the edit
    /// may be the fix of what failed. Returns what the host run found and the artifacts of the
    /// last host run.
    fn images_first(&mut self, last: &ImageBuilder) -> Result<(CompileRun, Vec<Value>)> {
        let passes = self.device_passes(last, false);
        if passes.iter().any(|(_, result)| result.is_err()) {
            return self.host_first();
        }
        let mut packaged = Vec::new();
        for (log, result) in passes {
            log.flush();
            packaged.extend(result.ok());
        }
        let link_args = self.register(&in_arch_order(packaged))?;
        // The kernels of the images that the host run links with: a build that fails after it
        // must not leave a program behind that launches others.
        let imaged = offload_manifest_format::read(&last.manifest())
            .map(|m| m.kernels.into_iter().map(|k| k.symbol).collect())
            .unwrap_or_default();
        self.host_after_images(&link_args)
            .inspect_err(|_| forget_programs_beyond(&self.programs_dir(), &self.manifests, &imaged))
    }

    /// [`Build::images_first`] once the images of the last image crate are registered
    /// (`link_args`): the one host run, then what its launches need.
    fn host_after_images(&mut self, link_args: &[String]) -> Result<(CompileRun, Vec<Value>)> {
        let artifacts = self.host_compile(Some(link_args))?;
        let compiled = self.compile_run(&artifacts)?;
        let linked = &compiled.roots.linked_programs;
        let builder = self.image_builder(&compiled)?;
        if let Some((ImageBuilder::ImageCrate(_), false)) = &builder {
            // The images stand. A program that the run found fresh may have been linked with
            // other images.
            if !forget_programs_linked_otherwise(linked, link_args)? {
                return Ok((compiled, artifacts));
            }
            let artifacts = self.host_link(&compiled, link_args)?;
            return Ok((compiled, artifacts));
        }
        let new_link_args = match &builder {
            Some((builder, _)) => {
                eprintln!(
                    "[cargo offload] the image crate changed (launches, features or locked \
                     versions): the device passes run again"
                );
                self.images(builder)?
            }
            None => Vec::new(),
        };
        forget_programs_linked_otherwise(linked, &new_link_args)?;
        let artifacts = self.host_link(&compiled, &new_link_args)?;
        Ok((compiled, artifacts))
    }

    /// The host pass's first run: with `link_args` (the images are built), the one run, which
    /// compiles and links every program ([`env::HOST_COMPILE_AND_LINK`]); without, the compile
    /// run, which links none. Each crate writes its manifest. Returns cargo's artifact messages
    /// ([`Build::compile_run`] reads them).
    fn host_compile(&self, link_args: Option<&[String]>) -> Result<Vec<Value>> {
        stop_point("host-compile");
        let programs = self.programs_dir();
        if programs.exists() {
            fs::remove_dir_all(&programs)
                .map_err(|e| Failure::new(format!("cannot remove {}: {e}", programs.display())))?;
        }
        let mut cmd = self.host_command()?;
        let what = match link_args {
            Some(link_args) => {
                cmd.env(env::HOST_LINK, link_args.join("\x1f"))
                    .env(env::HOST_COMPILE_AND_LINK, "1");
                "compile and link"
            }
            None => "compile",
        };
        cargo_pass(&format!("host pass ({}): {what}", self.host), cmd, false)
    }

    /// What the compile run with `artifacts` found: the manifests of the root crates, merged,
    /// and the features it resolved; the path dependencies it built join the workspace.
    fn compile_run(&mut self, artifacts: &[Value]) -> Result<CompileRun> {
        let host = &self.host;
        let programs = self.programs_dir();
        let roots = root_manifests(artifacts, &self.ws, host, &self.manifests, &programs)?;
        let manifest = merge_manifests(&roots.manifests)?;
        let kernels = manifest.kernels.len();
        let count = roots.manifests.len();
        eprintln!(
            "[cargo offload] {kernels} kernel instance{} in the manifests of {count} root crate{}",
            if kernels == 1 { "" } else { "s" },
            if count == 1 { "" } else { "s" }
        );
        // The path dependencies outside the workspace may define kernels too.
        self.ws.add_dependencies(artifacts, host);
        let features = resolved_features(artifacts, &self.ws, host);
        Ok(CompileRun { manifest, kernels, features, roots })
    }

    /// The image crate of the last build ([`ImageBuilder::ImageCrate`]), if the last device
    /// pass of each arch of this run, in this profile, built its image from the image crate's
    /// files as they are now (its recorded [`image_key`] is theirs) and no source file of the
    /// crates it compiled was edited since that pass began ([`edited_since`], [`BUILT`]): then,
    /// unless the host pass changes the launches, the images it built stand. (A kernel's
    /// manifest entry carries a hash of its crate's source, so an edit of a kernel crate changes
    /// the manifest: its device passes then run after the host pass, as [`Build::host_first`]
    /// orders them. Which order is taken decides what runs, not which images and programs
    /// come out.)
    fn last_image_crate(&self) -> Option<ImageBuilder> {
        let builder = ImageBuilder::ImageCrate(self.dir.join("image"));
        let profile = if self.profile == "debug" { "debug" } else { "release" };
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

    /// The archs of `--offload-arch` in batches whose device passes share one cargo run: archs
    /// of distinct targets with the same `core` ([`device_core`]). One cargo run for all
    /// targets compiles the build scripts of the kernel crates' dependencies once, starts
    /// cargo once and runs as many jobs as the machine has CPUs, where one run per arch did
    /// each three times over on the same CPUs (dev `gfx90a,sm_90,host` in the benchmark's
    /// workspace, 2 CPUs: 4.3-5.0 s per pass at once, 3.2 s for the one run). Two archs of one
    /// target (`gfx90a,gfx942`) need two runs, as does a target whose `core` the device sysroot
    /// lacks beside one whose it has. The first batch builds into `<dir>/device`, each other
    /// into `<dir>/device-<its first arch>`, so that the usual single batch finds its folder
    /// warm whichever archs are asked for. Fails if an arch has no `core`.
    fn batches(&self) -> Result<Vec<Batch<'_>>> {
        let cores = self
            .archs
            .iter()
            .map(|arch| device_core(arch, self.inv.build_std))
            .collect::<Result<Vec<_>>>()?;
        let keys: Vec<(&str, &DeviceCore)> =
            self.archs.iter().map(|a| a.target.as_str()).zip(&cores).collect();
        let batches = batch_indexes(&keys).into_iter().enumerate().map(|(n, indexes)| {
            let first = &self.archs[indexes[0]];
            let folder = if n == 0 { "device".into() } else { format!("device-{}", first.name) };
            Batch {
                archs: indexes.iter().map(|&i| (i, &self.archs[i])).collect(),
                core: cores[indexes[0]].clone(),
                target_dir: self.dir.join(folder),
            }
        });
        Ok(batches.collect())
    }

    /// The device passes of `builder`, one cargo run per batch of archs ([`Build::batches`]).
    /// The batches share nothing but their inputs (each has its own target folder and image
    /// files), so they run at once. Each batch's lines are kept in its log ([`Log::Buffered`]),
    /// but for a `live` single batch, which prints them as they come ([`Log::Live`]).
    fn device_passes(&self, builder: &ImageBuilder, live: bool) -> Vec<DevicePass> {
        let batches = match self.batches() {
            Ok(batches) => batches,
            Err(e) => return vec![(Log::Buffered(Vec::new()), Err(e))],
        };
        if let ([batch], true) = (&batches[..], live) {
            let mut log = Log::Live;
            let result = self.device_pass(batch, builder, &mut log);
            return vec![(log, result)];
        }
        std::thread::scope(|scope| {
            let threads: Vec<_> = batches
                .iter()
                .map(|batch| {
                    scope.spawn(move || {
                        let mut log = Log::Buffered(Vec::new());
                        let result = self.device_pass(batch, builder, &mut log);
                        (log, result)
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().expect("a device pass panicked")).collect()
        })
    }

    /// What builds the images of `compiled`, written ([`image_builder`]), with whether a file
    /// of it changed; none when no kernel is launched. Unless that is the image crate, the
    /// image crate's manifest is removed, so that the next build does not build the images of
    /// its launches first ([`Build::last_image_crate`]).
    fn image_builder(&self, compiled: &CompileRun) -> Result<Option<(ImageBuilder, bool)>> {
        let CompileRun { manifest, features, roots, kernels } = compiled;
        let builder = if *kernels == 0 {
            eprintln!("[cargo offload] no kernel launches: the program gets no device image");
            None
        } else {
            Some(image_builder(&self.dir, &self.ws, manifest, features, &roots.manifests)?)
        };
        if !matches!(builder, Some((ImageBuilder::ImageCrate(_), _))) {
            let _ = fs::remove_file(ImageBuilder::ImageCrate(self.dir.join("image")).manifest());
        }
        Ok(builder)
    }

    /// The device passes of `builder`, their lines printed batch by batch, and the
    /// registration of their images; the first failure in the order of the batches is the
    /// error. Returns the link arguments of the host pass's link run.
    fn images(&self, builder: &ImageBuilder) -> Result<Vec<String>> {
        let mut results = Vec::new();
        for (log, result) in self.device_passes(builder, true) {
            log.flush();
            results.push(result);
        }
        let packaged = results.into_iter().collect::<Result<Vec<_>>>()?;
        self.register(&in_arch_order(packaged))
    }

    /// The rustc flags of `arch`'s device pass of `builder`, whose `core` is `core`: those
    /// that every target of its cargo run shares ([`Build::shared_device_flags`]), then the
    /// arch's own ([`Arch::pass_flags`]).
    fn device_flags(&self, arch: &Arch, builder: &ImageBuilder, core: &DeviceCore) -> Vec<String> {
        let mut flags = self.shared_device_flags(builder, core);
        flags.extend(arch.pass_flags());
        flags
    }

    /// The rustc flags that the device passes of `builder` with `core` share, whatever the
    /// arch. Cargo hashes them into each crate's fingerprint (`CARGO_ENCODED_RUSTFLAGS`).
    fn shared_device_flags(&self, builder: &ImageBuilder, core: &DeviceCore) -> Vec<String> {
        let mut flags = vec!["-Zunstable-options".to_string()];
        flags.push(format!("-Zoffload=Device={}", builder.manifest().display()));
        flags.push(format!("--cfg={DEVICE_CFG}"));
        flags.push(self.check_cfg.clone());
        if let DeviceCore::Toolchain(sysroot) = core {
            flags.push("--sysroot".to_string());
            flags.push(sysroot.display().to_string());
        }
        if let ImageBuilder::Program { .. } = builder {
            // The program's own profile, whose panic strategy may be `unwind`: the image
            // has no unwinder, and the device's `core` aborts.
            flags.push("-Cpanic=abort".to_string());
        }
        flags
    }

    /// The device passes of `batch`: one cargo run builds the image builder for each arch's
    /// target, then the vendor tools make each arch's image, the archs at once. Returns each
    /// arch's place in `--offload-arch` with its image (`host.out`) and packaged image.
    fn device_pass(
        &self,
        batch: &Batch<'_>,
        builder: &ImageBuilder,
        log: &mut Log,
    ) -> Result<Vec<(usize, (PathBuf, PathBuf))>> {
        stop_point("device-passes");
        let core = &batch.core;
        let target_dir = &batch.target_dir;
        let (mut build, profile, output_folder) = self.device_cargo(builder)?;
        let mut target_flags = Vec::new();
        let mut heads = Vec::new();
        for (_, arch) in &batch.archs {
            if *core == DeviceCore::BuildStd && !self.inv.build_std {
                log.line(&no_device_sysroot_note(arch));
            }
            let deps = target_dir.join(&arch.target).join(&profile).join(output_folder);
            forget_other_arch(target_dir, arch)?;
            self.forget_other_image(
                builder,
                arch,
                target_dir,
                &deps,
                &self.device_flags(arch, builder, core),
            )?;
            build.args(["--target", &arch.target]);
            target_flags.push((arch.target.as_str(), arch.pass_flags()));
            heads.push(format!("device pass {} ({}, {})", arch.name, arch.target, core.describe()));
        }
        build
            .args(if *core == DeviceCore::BuildStd { &["-Zbuild-std=core"][..] } else { &[] })
            // A crate that fails for one target does not stop the others: each arch's errors
            // are shown, as when each arch had a run of its own.
            .arg("--keep-going")
            .arg("--target-dir")
            .arg(target_dir)
            // The image and the records beside it are looked for under the target folder, which
            // a user's `build.build-dir` would otherwise move the crates' outputs out of.
            .env("CARGO_BUILD_BUILD_DIR", target_dir)
            // An incremental build that reuses its one codegen unit skips the optimization in
            // which rustc writes the image, leaving `host.out` missing or another build's.
            .env("CARGO_INCREMENTAL", "0")
            .env("CARGO_ENCODED_RUSTFLAGS", self.shared_device_flags(builder, core).join("\x1f"))
            .env("RUSTC_WRAPPER", current_exe()?)
            .env(env::DEVICE_TARGET_FLAGS, encode_target_flags(&target_flags));
        let what = match &heads[..] {
            [one] => one.clone(),
            _ => {
                for head in &heads {
                    log.line(head);
                }
                let names: Vec<&str> = batch.archs.iter().map(|(_, a)| a.name.as_str()).collect();
                format!("device passes {} (one cargo run)", names.join(", "))
            }
        };
        let failures = target_dir.join("offload-failed-targets");
        let _ = fs::remove_file(&failures);
        build.env(env::DEVICE_FAILURES, &failures);
        // The archs whose targets had a compilation fail, or the whole run if none is known.
        let failed = || {
            let targets = fs::read_to_string(&failures).unwrap_or_default();
            let failed: Vec<&str> = (batch.archs.iter().zip(&heads))
                .filter(|((_, arch), _)| targets.lines().any(|t| t == arch.target))
                .map(|(_, head)| head.as_str())
                .collect();
            if failed.is_empty() { what.clone() } else { failed.join(" and ") }
        };
        let began = SystemTime::now();
        log.cargo_pass(&what, build, failed)?;
        let folders =
            |arch: &Arch| target_dir.join(&arch.target).join(&profile).join(output_folder);
        let made = self.vendor_images(batch, builder, &folders, profile != "debug", began)?;
        // Every arch's line first: one arch's failure does not hide what the others made.
        for (_, line) in &made {
            if let Some(line) = line {
                log.line(line);
            }
        }
        let images = batch
            .archs
            .iter()
            .zip(made)
            .map(|((index, _), (result, _))| result.map(|image| (*index, image)));
        images.collect()
    }

    /// The vendor tools of `batch`'s archs at once (each runs one process at a time), on the
    /// images that `builder`'s device passes, which began at `began`, wrote into each arch's
    /// output folder (`folders`); [`Build::vendor_image`] for each arch, in the batch's order.
    /// A refusal names each kernel by its Rust path beside its symbol ([`name_kernels`], from
    /// `builder`'s manifest). Fails only if this profile's images folder cannot be made.
    fn vendor_images(
        &self,
        batch: &Batch<'_>,
        builder: &ImageBuilder,
        folders: &(dyn Fn(&Arch) -> PathBuf + Sync),
        release: bool,
        began: SystemTime,
    ) -> Result<Vec<(Result<(PathBuf, PathBuf)>, Option<String>)>> {
        let kernels: Vec<(String, String)> = offload_manifest_format::read(&builder.manifest())
            .map(|m| m.kernels.into_iter().map(|k| (k.symbol, k.kernel)).collect())
            .unwrap_or_default();
        let kernels = &kernels;
        let profile_images = self.profile_images();
        fs::create_dir_all(&profile_images).map_err(|e| {
            Failure::new(format!("cannot create {}: {e}", profile_images.display()))
        })?;
        Ok(std::thread::scope(|scope| {
            let threads: Vec<_> = batch
                .archs
                .iter()
                .map(|(_, arch)| {
                    let deps = folders(arch);
                    scope.spawn(move || {
                        let (made, line) = self.vendor_image(arch, &deps, release, began);
                        (made.map_err(|failure| name_kernels(failure, kernels)), line)
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().expect("a vendor step panicked")).collect()
        }))
    }

    /// The image of `arch` from its device pass's output folder `deps`, made by the vendor
    /// tools (optimizing as for `release`, [`device_binary`]); the pass began at `began`,
    /// recorded in its [`BUILT`] file. Returns the image (`host.out`) and the packaged image,
    /// with the line that reports it (none for a failure: its error says it).
    fn vendor_image(
        &self,
        arch: &Arch,
        deps: &Path,
        release: bool,
        began: SystemTime,
    ) -> (Result<(PathBuf, PathBuf)>, Option<String>) {
        stop_point("vendor");
        let start = Instant::now();
        let image = deps.join("host.out");
        let made = (|| {
            if !image.is_file() {
                return fail(format!(
                    "the device pass for `{}` wrote no image ({} is missing)",
                    arch.name,
                    image.display()
                ));
            }
            // The image is as its pass wrote it: [`Build::forget_other_image`] checked the one
            // that the pass found fresh.
            crate::seal::seal(&image)?;
            let (binary, summary) =
                device_binary(&self.profile_images(), &self.images_dir, arch, &image, release)?;
            let built = deps.parent().unwrap_or(deps).join(BUILT);
            fs::File::create(&built)
                .and_then(|f| f.set_modified(began))
                .map_err(|e| Failure::new(format!("cannot write {}: {e}", built.display())))?;
            Ok((binary, summary))
        })();
        match made {
            Ok((binary, summary)) => {
                let line = format!(
                    "image {}: {summary} ({:.1} s)",
                    arch.name,
                    start.elapsed().as_secs_f64()
                );
                (Ok((image, binary)), Some(line))
            }
            Err(e) => (Err(e), None),
        }
    }

    /// The cargo command of a device pass that builds `builder`, without the target, its
    /// folder and the flags ([`Build::device_flags`]): the image crate with cargo's built-in
    /// profiles, or the program with the user's profile and features, named to the wrapper
    /// ([`env::DEVICE_PROGRAM`]). Returns it with the profile folder and the folder under it
    /// where the image goes.
    fn device_cargo(&self, builder: &ImageBuilder) -> Result<(Command, String, &'static str)> {
        Ok(match builder {
            ImageBuilder::ImageCrate(image_crate) => {
                // The image crate has cargo's two built-in profiles: a custom profile of the
                // user's workspace (`--profile NAME`) gets the optimized one.
                let profile = if self.profile == "debug" { "debug" } else { "release" };
                let mut build = cargo_command(&self.cargo, "build");
                build
                    .arg("--manifest-path")
                    .arg(image_crate.join("Cargo.toml"))
                    .args(source_args(&self.inv.cargo_args))
                    .args(if profile == "release" { &["--release"][..] } else { &[] });
                (build, profile.to_string(), "deps")
            }
            ImageBuilder::Program { krate, program, features, .. } => {
                let mut build = cargo_command(&self.cargo, "build");
                build
                    .args(manifest_path_args(&self.inv.cargo_args))
                    .args(["-p", &program.package])
                    .args(&program.selector)
                    .args(profile_args(&self.inv.cargo_args))
                    .args(source_args(&self.inv.cargo_args))
                    .arg("--no-default-features");
                if !features.is_empty() {
                    let list: Vec<&str> = features.iter().map(String::as_str).collect();
                    build.args(["--features", &list.join(",")]);
                }
                // `cargo-offload` is every device pass's `RUSTC_WRAPPER` ([`Build::device_pass`]).
                build.env(env::DEVICE_PROGRAM, krate);
                (build, self.profile.clone(), program.output_folder())
            }
        })
    }

    /// Makes the device pass of `arch` build its image again when what selects the image
    /// changed since its last pass into `target_dir` ([`image_key_changed`]), or the image
    /// (`host.out`) is missing or does not match its seal. The image crate's
    /// outputs are removed ([`forget_image`]). A program is cleaned with `cargo clean -p`: its
    /// `rlib` is not the file cargo expects, so a missing `rlib` does not make cargo build it
    /// again. (Cargo checks the files it expects: on the host it finds the program fresh once
    /// built; on a GPU target, where the program's file never appears, it compiles the program
    /// again in every device pass, about 0.2 s for the test's.)
    fn forget_other_image(
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

    /// The registration object of the `packaged` images, and the image the host pass names.
    /// Returns the link arguments of the host pass's link run.
    fn register(&self, packaged: &[(PathBuf, PathBuf)]) -> Result<Vec<String>> {
        stop_point("registration");
        self.forget_unpublished();
        let start = Instant::now();
        let registration = self.registration();
        wrap_images(&self.profile_images(), &self.host, packaged, &registration)?;
        let images = if packaged.len() == 1 { "" } else { "s" };
        progress(
            &format!(
                "registration of {} image{images}: {}",
                packaged.len(),
                registration.display()
            ),
            start,
        );
        // The host pass names an image (`host.out`), which it does not read; the first arch's.
        copy_if_changed(&packaged[0].0, &self.images_dir.join("host.out"))?;
        let rt = runtime_lib_dir().display().to_string();
        // The registration calls `atexit`, which glibc keeps in its static part
        // (`libc_nonshared.a`, named by the `libc.so` linker script): rustc names `-lc` before
        // the link arguments, so the object needs its own `-lc` after it.
        // `--allow-shlib-undefined`: without it GNU ld reads every library that `libomptarget`
        // needs (`libLLVM`, with its whole symbol table) to check that library's own undefined
        // symbols, which doubled the link of a small debug program (0.85 s against 0.39 s,
        // `-Clinker` timing script, 2 CPUs). The program's own undefined symbols stay errors;
        // the loader resolves the runtime's when the program starts.
        Ok(vec![
            registration.display().to_string(),
            format!("-L{rt}"),
            "-lomptarget".to_string(),
            "-lomp".to_string(),
            format!("-Wl,-rpath,{rt}"),
            "-Wl,--allow-shlib-undefined".to_string(),
            "-lc".to_string(),
        ])
    }

    /// The host pass's link run: the same cargo command as the first run, which links the
    /// programs that it finds missing with `link_args` (`-Zlink-only`,
    /// [`crate::wrapper::wrap_host_rustc`]). Fails if the launches then differ from those of
    /// `compiled`, the first run's, of which the images were built. Returns the run's artifacts.
    fn host_link(&self, compiled: &CompileRun, link_args: &[String]) -> Result<Vec<Value>> {
        stop_point("host-link");
        let mut cmd = self.host_command()?;
        cmd.env(env::HOST_LINK, link_args.join("\x1f"));
        let artifacts = cargo_pass(&format!("host pass ({}): link", self.host), cmd, true)?;
        // A file edited while this build ran may have changed the launches after the images
        // were built: the programs are linked, but with images of the earlier launches.
        if merge_manifests(&compiled.roots.manifests)? != compiled.manifest {
            return fail(
                "the sources changed while this build ran: the launches that the host pass \
                 recorded differ from those the device images were built from; build again",
            );
        }
        Ok(artifacts)
    }

    /// The programs among the host pass's `artifacts` (for `test`, the test harnesses, not the
    /// examples that `cargo test` builds beside them), each named on one line; a static library
    /// is named with what to link it with, when there are `images`.
    fn products(&self, artifacts: &[Value], images: bool) -> Vec<String> {
        let test = self.inv.verb == Verb::Test;
        let programs: Vec<String> = artifacts
            .iter()
            .filter(|a| !test || a["profile"]["test"].as_bool() == Some(true))
            .filter_map(|a| a["executable"].as_str())
            .map(str::to_string)
            .collect();
        for program in &programs {
            eprintln!("[cargo offload] built {program}");
        }
        // A static library carries no link arguments: whoever links it links the registration.
        for artifact in artifacts {
            let kinds = artifact["target"]["kind"].as_array().into_iter().flatten();
            if kinds.filter_map(Value::as_str).any(|k| k == "staticlib") && images {
                let files = artifact["filenames"].as_array().into_iter().flatten();
                for lib in files.filter_map(Value::as_str).filter(|f| f.ends_with(".a")) {
                    eprintln!(
                        "[cargo offload] built {lib}: link it with {} -L{rt} -lomptarget -lomp \
                         -Wl,-rpath,{rt} -Wl,--allow-shlib-undefined",
                        self.registration().display(),
                        rt = runtime_lib_dir().display()
                    );
                }
            }
        }
        programs
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

    #[test]
    fn archs_of_distinct_targets_and_one_core_share_a_batch() {
        let (amd, nv, cpu) =
            ("amdgcn-amd-amdhsa", "nvptx64-nvidia-cuda", "x86_64-unknown-linux-gnu");
        // `gfx90a,sm_90,host`: one cargo run.
        assert_eq!(batch_indexes(&[(amd, 0), (nv, 0), (cpu, 0)]), [vec![0, 1, 2]]);
        // `gfx90a,gfx942,sm_90`: the second amdgcn arch needs a run of its own.
        assert_eq!(batch_indexes(&[(amd, 0), (amd, 0), (nv, 0)]), [vec![0, 2], vec![1]]);
        // `core` from the sysroot beside `core` built from source: two runs.
        assert_eq!(batch_indexes(&[(amd, 0), (nv, 1), (cpu, 0)]), [vec![0, 2], vec![1]]);
    }

    #[test]
    fn a_line_that_is_not_utf8_does_not_end_the_reading() {
        let bytes: &[u8] = b"first\n\xff\xfe second\r\nthird";
        let lines: Vec<String> = lossy_lines(bytes).collect();
        assert_eq!(lines, ["first", "\u{fffd}\u{fffd} second", "third"]);
    }

    #[test]
    fn images_come_back_in_the_order_of_the_archs() {
        let image = |name: &str| (PathBuf::from(name), PathBuf::from(format!("{name}.offload")));
        let batches = vec![vec![(0, image("a")), (2, image("c"))], vec![(1, image("b"))]];
        assert_eq!(in_arch_order(batches), [image("a"), image("b"), image("c")]);
    }

    #[test]
    fn a_crate_without_std_gets_the_device_lines() {
        let mut needs_std = BTreeSet::new();
        let diagnostic = |code: &str, text: &str| {
            json!({
                "reason": "compiler-message",
                "package_id": "registry+https://r/index#std-kern@1.0.0",
                "target": {"name": "std-kern"},
                "message": {"code": {"code": code}, "message": text, "rendered": "rendered\n"}
            })
            .to_string()
        };
        // rustc's own error is replaced; others are shown as rendered, other lines as they are.
        assert_eq!(shown(&diagnostic("E0463", "can't find crate for `std`"), &mut needs_std), "");
        assert_eq!(
            shown(&diagnostic("E0463", "can't find crate for `alloc`"), &mut needs_std),
            "rendered\n"
        );
        let artifact = json!({"reason": "compiler-artifact"}).to_string();
        assert_eq!(shown(&artifact, &mut needs_std), "");
        assert_eq!(shown("plain text", &mut needs_std), "plain text\n");
        let id = "registry+https://r/index#std-kern@1.0.0".to_string();
        assert_eq!(needs_std, BTreeSet::from([("std_kern".to_string(), id)]));
        let error = needs_std_error("device pass sm_90", &needs_std).unwrap();
        assert!(
            error.starts_with(
                "device pass sm_90 failed: `std_kern` (package \
                 `registry+https://r/index#std-kern@1.0.0`) cannot find `std`: when `core` is \
                 built from source (`--build-std`, or no device sysroot in \
                 `CARGO_OFFLOAD_DEVICE_SYSROOT`)"
            ) && error.contains("\n\n    #![cfg_attr(offload_device, no_std)]\n\n")
                && error.contains("`#[cfg(not(offload_device))]`")
                && !error.contains("-Zbuild-std"),
            "{error}"
        );
        assert_eq!(needs_std_error("device pass sm_90", &BTreeSet::new()), None);
    }
}
