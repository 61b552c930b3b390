//! `./x.py gpu-check`: one bundle that runs every offload program that the tests run on the CPU
//! device, on an NVIDIA GPU elsewhere, and checks each against its CPU-device output.
//!
//! The GPU machine runs another distribution (Ubuntu 24.04, glibc 2.39) without our sysroot,
//! so the check is built on `cargo offload bundle`: each program of [`programs::BUILDS`] (the
//! programs of the run-make tests that run on the CPU device, the first program of
//! `src/doc/cargo-offload.md`, the bundled example, the CPU device's grid benchmark), built
//! from the project's own sources with `--release --offload-arch=sm_90,gfx90a,host` (without
//! `gfx90a` where that arch does not build: said in the output), into `bundle/<name>/`, with
//! every library it loads and trixie's dynamic loader. The bundles' identical libraries
//! (`libLLVM` and the runtime, about 190 MB in each) are hard links to one copy, which `tar`
//! stores once. Then, on this machine, `sh run.sh --record` runs each of [`programs::ROWS`] on
//! the CPU device with `OFFLOAD_REPORT=1` and keeps its output, exit status and kernels in
//! `bundle/reference/`. All of it is compressed into `bundle.tar.xz` for the device tool's
//! 64 MiB. On the GPU machine, `run.sh` ([`script`]) runs each row again and prints one table:
//! program, kernels, GPU ok / wrong / did not run, seconds. The GPU driver's `libcuda.so.1`
//! comes from the machine itself, as a native program finds it.
//!
//! When `./x.py bench` has run, the bundle also holds `kernel-time/`: base's and ours' nvptx
//! kernels of the benchmark's first run as cubins, with `src/offload-bench/kernel_time.py`,
//! which `run.sh` then runs (when a row ran on the GPU) to time each kernel in both modes and
//! compare their outputs (see that script). Without a benchmark run the bundle says so and
//! leaves it out.
//!
//! The bundle is written to `gpu-check/` in the checkout (ignored by git), at most 64 MiB, so
//! that the device tool can carry it (`carry: ["gpu-check"]`, command `sh gpu-check/run.sh`).
//! [`check_without_gpu`] is the same check on a machine without a GPU, for `./x.py test`.

pub mod programs;
pub mod script;

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use programs::{BUILDS, Build, ROWS, Workspace};

use crate::cache::Cache;
use crate::sysroot::Enter;
use crate::ui::{Context, Result, Timer, fail, say};

const STEP: &str = "GPU-CHECK";

/// The bundle's size limit: what the device tool carries.
const LIMIT_BYTES: u64 = 64 << 20;

/// Builds the bundle (see the module's documentation); returns its folder, `gpu-check/` in the
/// checkout, which holds `bundle.tar.xz`, `run.sh` and, after `./x.py bench`, `kernel-time/`.
/// Fails when a program does not build, when a run's reference cannot be recorded (it failed,
/// launched nothing, or a kernel did not run on the CPU device), or when the folder is over
/// 64 MiB.
pub fn run(project: &Path, cache: &Cache) -> Result<PathBuf> {
    crate::stages::build(project, cache)?;
    let out = project.join("gpu-check");
    let _ = fs::remove_dir_all(&out);
    let bundles = out.join("bundle");
    fs::create_dir_all(&bundles).at(STEP, &bundles)?;
    let work = cache.job().join("gpu-check-work");
    let mut prepared: Vec<&str> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for build in BUILDS {
        let ws = work.join(build.workspace.name());
        // A workspace that several builds share is written once.
        if !prepared.contains(&build.workspace.name()) {
            prepare_workspace(project, &ws, &build.workspace)?;
            prepared.push(build.workspace.name());
        }
        bundle(cache, &ws, build, &bundles.join(build.bundle), &mut notes)?;
        let saved = link_same_libraries(&bundles)?;
        if saved > 0 {
            say(STEP, format!("  {} MB of libraries are hard links to a copy", saved / 1_000_000));
        }
    }
    let run_sh = out.join("run.sh");
    fs::write(&run_sh, script::default_run_sh()).at(STEP, &run_sh)?;
    record_references(&run_sh, &work, &bundles)?;
    compress(&out, &bundles)?;
    kernel_time(project, cache, &out)?;

    let total = folder_bytes(&out)?;
    for entry in fs::read_dir(&out).at(STEP, &out)?.flatten() {
        let bytes = folder_bytes(&entry.path())?;
        say(STEP, format!("  {:>10} bytes  {}", bytes, entry.file_name().to_string_lossy()));
    }
    for note in &notes {
        say(STEP, note);
    }
    if total > LIMIT_BYTES {
        return fail(
            STEP,
            format!("the bundle is {total} bytes, over the device tool's {LIMIT_BYTES}"),
        );
    }
    say(
        STEP,
        format!(
            "bundle {} ({total} bytes): run `sh gpu-check/run.sh` on the GPU machine",
            out.display()
        ),
    );
    Ok(out)
}

/// Runs `run.sh --record` (the script at `run_sh`) on this machine's CPU device, which records
/// each run's results in `bundles`' reference folder (`work` holds its scratch results), and
/// says how many runs and kernels it recorded. Fails when a run's reference could not be
/// recorded.
fn record_references(run_sh: &Path, work: &Path, bundles: &Path) -> Result<()> {
    let timer = Timer::start(STEP, "each run on this machine's CPU device: sh run.sh --record");
    let status = Command::new("sh")
        .arg(run_sh)
        .arg("--record")
        .env("GPU_CHECK_RESULTS", work.join("record-results"))
        .status()
        .running(STEP, "sh")?;
    if !status.success() {
        return fail(STEP, "a run's reference could not be recorded; its output is above");
    }
    timer.done();
    let kernels = recorded_kernels(&bundles.join("reference"))?;
    say(
        STEP,
        format!(
            "{} runs of {} programs recorded, {kernels} kernels launched on the CPU device",
            ROWS.len(),
            BUILDS.len()
        ),
    );
    Ok(())
}

/// Compresses `out`'s `bundle` folder (`bundles`) into `bundle.tar.xz` and removes the folder.
fn compress(out: &Path, bundles: &Path) -> Result<()> {
    let timer = Timer::start(STEP, "compress the bundle (xz -9)");
    let status = Command::new("tar")
        .args(["-cJf", "bundle.tar.xz", "bundle"])
        .env("XZ_OPT", "-9 -T2")
        .current_dir(out)
        .status()
        .running(STEP, "tar")?;
    if !status.success() {
        return fail(STEP, "tar -cJf bundle.tar.xz failed");
    }
    fs::remove_dir_all(bundles).at(STEP, bundles)?;
    timer.done();
    Ok(())
}

/// The check of `./x.py gpu-check` on a machine without a GPU (this one), for `./x.py test`:
/// builds the bundle ([`run`]), runs `sh gpu-check/run.sh` here (the results in the cache, so
/// that `gpu-check/` stays as the device tool carries it) and fails unless it exits with status
/// 3 and every row of its table says "did not run", with the CPU device's output and exit
/// status the recorded ones ([`script::without_gpu_mismatch`]).
pub fn check_without_gpu(project: &Path, cache: &Cache) -> Result<()> {
    let out = run(project, cache)?;
    let timer = Timer::start(STEP, "sh gpu-check/run.sh on this machine, without a GPU");
    let results = cache.job().join("gpu-check-results");
    let output = Command::new("sh")
        .arg(out.join("run.sh"))
        .env("GPU_CHECK_RESULTS", &results)
        .output()
        .running(STEP, "sh")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    print!("{stdout}");
    if let Some(message) = script::without_gpu_mismatch(&stdout, output.status.code(), ROWS) {
        return fail(
            STEP,
            format!(
                "run.sh without a GPU: {message}\n{}(each run's output: {})",
                String::from_utf8_lossy(&output.stderr),
                results.display()
            ),
        );
    }
    timer.done();
    say(
        STEP,
        format!("all {} rows did not run on a GPU, and matched on the CPU device", ROWS.len()),
    );
    Ok(())
}

/// Writes the workspace of `workspace` into `dir` (see [`Workspace`]), each file only when its
/// contents change (cargo then finds the last build in `dir/target` fresh).
fn prepare_workspace(project: &Path, dir: &Path, workspace: &Workspace) -> Result<()> {
    match workspace {
        Workspace::Copy { from, .. } => sync_dir(&project.join(from), dir, true),
        Workspace::DocFirstProgram => {
            let page = project.join("src/doc/cargo-offload.md");
            let text = fs::read_to_string(&page).at(STEP, &page)?;
            let files = programs::first_program(&text).at(STEP, &page)?;
            for (path, contents) in files {
                write_if_changed(&dir.join(path), contents.as_bytes())?;
            }
            Ok(())
        }
        Workspace::Package { package, main, .. } => {
            // A workspace of its own, whichever folders are above the cache.
            let manifest = programs::package_manifest(package, "", "\n[workspace]\n");
            write_if_changed(&dir.join("Cargo.toml"), manifest.as_bytes())?;
            let source = project.join(main);
            let text = fs::read(&source).at(STEP, &source)?;
            write_if_changed(&dir.join("src/main.rs"), &text)
        }
    }
}

/// Makes `to` hold what `from` holds: files written when they differ, entries that `from` lacks
/// removed, but for `to`'s own `target/` and `Cargo.lock` (at the `top`) and `from`'s
/// `target/`, which is not copied.
fn sync_dir(from: &Path, to: &Path, top: bool) -> Result<()> {
    fs::create_dir_all(to).at(STEP, to)?;
    let mut names = Vec::new();
    for entry in fs::read_dir(from).at(STEP, from)?.flatten() {
        let name = entry.file_name();
        if top && name == "target" {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            sync_dir(&path, &to.join(&name), false)?;
        } else {
            let bytes = fs::read(&path).at(STEP, &path)?;
            write_if_changed(&to.join(&name), &bytes)?;
        }
        names.push(name);
    }
    for entry in fs::read_dir(to).at(STEP, to)?.flatten() {
        let name = entry.file_name();
        let kept = top && (name == "target" || name == "Cargo.lock");
        if !kept && !names.contains(&name) {
            let path = entry.path();
            let removed =
                if path.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
            removed.at(STEP, &path)?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` (and its folders) unless it holds them already.
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).at(STEP, parent)?;
    }
    fs::write(path, bytes).at(STEP, path)
}

/// `cargo offload bundle --release --offload-arch=ARCHS SELECT --out OUT` in `ws`, with its
/// target folder in `ws/target` as the tests have it. When the build with every arch of
/// [`script::archs`] fails, it is built again without `gfx90a` (no AMD GPU runs the bundle; its
/// images only show that the program builds for it), and `notes` says so.
fn bundle(
    cache: &Cache,
    ws: &Path,
    build: &Build,
    out: &Path,
    notes: &mut Vec<String>,
) -> Result<()> {
    let all = script::archs();
    let amd = offload_targets::AMDGCN.default_arch;
    let timer = Timer::start(
        STEP,
        format!(
            "{}: cargo offload bundle --release --offload-arch={all} {}",
            build.bundle,
            build.select.join(" ")
        ),
    );
    let mut built = cargo_bundle(cache, ws, build, &all, out)?;
    if !built.succeeded {
        let without: Vec<&str> = all.split(',').filter(|a| *a != amd).collect();
        let without = without.join(",");
        let first = &built.stderr;
        let reason = first.lines().find(|l| l.starts_with("error")).unwrap_or("").to_string();
        say(STEP, format!("  it failed; again with --offload-arch={without}"));
        built = cargo_bundle(cache, ws, build, &without, out)?;
        notes.push(format!("{}: built without {amd}, which failed: {reason}", build.bundle));
    }
    let stderr = built.stderr;
    if !built.succeeded {
        return fail(STEP, format!("{}: cargo offload bundle failed:\n{stderr}", build.bundle));
    }
    timer.done();
    for line in stderr.lines().filter(|l| l.starts_with("[cargo offload] bundle ")) {
        say(STEP, format!("  {line}"));
    }
    if !out.join(build.program).is_file() {
        return fail(
            STEP,
            format!("{}: the bundle has no program `{}`:\n{stderr}", build.bundle, build.program),
        );
    }
    Ok(())
}

/// How one `cargo offload bundle` ended.
struct Bundled {
    succeeded: bool,
    /// What it printed on its standard error: the bundle's lines, or why it failed.
    stderr: String,
}

/// One `cargo offload bundle` for `archs`.
fn cargo_bundle(
    cache: &Cache,
    ws: &Path,
    build: &Build,
    archs: &str,
    out: &Path,
) -> Result<Bundled> {
    let mut args: Vec<std::ffi::OsString> =
        ["offload", "bundle", "--release"].iter().map(Into::into).collect();
    args.push(format!("--offload-arch={archs}").into());
    args.extend(build.select.iter().map(Into::into));
    args.push("--out".into());
    args.push(out.into());
    let (mut cargo, _plan) = crate::toolchain::cargo_with_plan(
        cache,
        ws,
        args,
        &[("CARGO_TARGET_DIR", ws.join("target").into_os_string())],
    )?;
    let output = crate::sysroot::output(STEP, &mut cargo)?;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    Ok(Bundled { succeeded: output.status.success(), stderr })
}

/// Replaces each plain file of a bundle's `lib/` under `root` (`root/*/lib/*`) by a hard link to
/// an earlier bundle's file of the same name and bytes: every `cargo offload bundle` copies the
/// same runtime and `libLLVM`, and `tar` stores the further names of a file without its bytes.
/// Returns the bytes that this call turned into links.
fn link_same_libraries(root: &Path) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut bundles: Vec<PathBuf> = fs::read_dir(root)
        .at(STEP, root)?
        .flatten()
        .map(|e| e.path().join("lib"))
        .filter(|lib| lib.is_dir())
        .collect();
    bundles.sort();
    // Name -> the first files of that name (one per distinct content).
    let mut kept: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let mut saved = 0;
    for lib in bundles {
        let mut files: Vec<PathBuf> =
            fs::read_dir(&lib).at(STEP, &lib)?.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files {
            let meta = fs::symlink_metadata(&file).at(STEP, &file)?;
            if !meta.is_file() {
                continue;
            }
            let name = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
            let candidates = kept.entry(name).or_default();
            let mut linked = false;
            for candidate in candidates.iter() {
                let other = fs::metadata(candidate).at(STEP, candidate)?;
                if other.ino() == meta.ino() && other.dev() == meta.dev() {
                    linked = true;
                    break;
                }
                if other.len() == meta.len() && same_bytes(candidate, &file)? {
                    let link = file.with_extension("gpu-check-link");
                    let _ = fs::remove_file(&link);
                    fs::hard_link(candidate, &link).at(STEP, &link)?;
                    fs::rename(&link, &file).at(STEP, &file)?;
                    saved += meta.len();
                    linked = true;
                    break;
                }
            }
            if !linked {
                candidates.push(file);
            }
        }
    }
    Ok(saved)
}

/// Whether the files `a` and `b` hold the same bytes (read in pieces: `libLLVM` is 150 MB).
fn same_bytes(a: &Path, b: &Path) -> Result<bool> {
    let open = |p: &Path| fs::File::open(p).at(STEP, p);
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let na = read_full(&mut fa, &mut ba).at(STEP, a)?;
        let nb = read_full(&mut fb, &mut bb).at(STEP, b)?;
        if na != nb || ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
    }
}

/// Reads until `buf` is full or the file ends; the bytes read.
fn read_full(file: &mut fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            read => n += read,
        }
    }
    Ok(n)
}

/// The number of kernels that the recorded runs launched (the lines of `reference/*.kernels`),
/// after checking that every row has its three reference files.
fn recorded_kernels(reference: &Path) -> Result<usize> {
    let mut kernels = 0;
    for row in ROWS {
        for ext in ["out", "status", "kernels"] {
            let file = reference.join(format!("{}.{ext}", row.name));
            let text = fs::read_to_string(&file).at(STEP, &file)?;
            if ext == "kernels" {
                kernels += text.lines().count();
            }
        }
    }
    Ok(kernels)
}

/// The bytes of the plain files under `path` (a file's own size; links count as themselves).
fn folder_bytes(path: &Path) -> Result<u64> {
    let meta = fs::symlink_metadata(path).at(STEP, path)?;
    if !meta.is_dir() {
        return Ok(meta.len());
    }
    let mut total = 0;
    for entry in fs::read_dir(path).at(STEP, path)?.flatten() {
        total += folder_bytes(&entry.path())?;
    }
    Ok(total)
}

/// Writes `kernel-time/` into the bundle from the benchmark's first run (its nvptx images of
/// base and ours), or says why it is left out.
fn kernel_time(project: &Path, cache: &Cache, bundle: &Path) -> Result<()> {
    let images = cache.root.join("bench/images/nvptx64-nvidia-cuda");
    if !images.join("base").is_dir() || !images.join("ours").is_dir() {
        say(STEP, "no nvptx images of `./x.py bench`: the bundle leaves out the kernel timing");
        return Ok(());
    }
    let timer =
        Timer::start(STEP, "base's and ours' benchmark kernels as cubins (kernel_time.py prepare)");
    let status = Enter::new(cache, project, "python3")
        .arg(project.join("src/offload-bench/kernel_time.py"))
        .arg("prepare")
        .arg("--work")
        .arg(cache.root.join("bench"))
        .arg("--cuda-bin")
        .arg(crate::cuda::cuda_bin(cache))
        .arg("--out")
        .arg(bundle.join("kernel-time"))
        .status(cache, STEP)?;
    if !status.success() {
        return fail(STEP, "kernel_time.py prepare failed; its output is above");
    }
    timer.done();
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("gpu-check-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn identical_libraries_become_one_file() {
        let root = scratch("link");
        for (bundle, libomp) in [("a", "omp"), ("b", "omp"), ("c", "other omp")] {
            let lib = root.join(bundle).join("lib");
            fs::create_dir_all(&lib).unwrap();
            fs::write(lib.join("libomp.so.5"), libomp).unwrap();
            fs::write(lib.join("libLLVM.so"), vec![7u8; 3 << 20]).unwrap();
            std::os::unix::fs::symlink("libomp.so.5", lib.join("libomp.so")).unwrap();
            fs::write(root.join(bundle).join("app"), bundle).unwrap();
        }
        assert_eq!(link_same_libraries(&root).unwrap(), 2 * (3 << 20) + 3);
        let ino = |p: &str| fs::metadata(root.join(p)).unwrap().ino();
        assert_eq!(ino("a/lib/libLLVM.so"), ino("c/lib/libLLVM.so"));
        assert_eq!(ino("a/lib/libomp.so.5"), ino("b/lib/libomp.so.5"));
        assert_ne!(ino("a/lib/libomp.so.5"), ino("c/lib/libomp.so.5"));
        assert!(fs::symlink_metadata(root.join("b/lib/libomp.so")).unwrap().is_symlink());
        assert_eq!(fs::read_to_string(root.join("c/lib/libomp.so.5")).unwrap(), "other omp");
        // Once linked, nothing more to do.
        assert_eq!(link_same_libraries(&root).unwrap(), 0);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn workspaces_are_synced_without_their_target() {
        let root = scratch("sync");
        let (from, to) = (root.join("from"), root.join("to"));
        fs::create_dir_all(from.join("app/src")).unwrap();
        fs::create_dir_all(from.join("target")).unwrap();
        fs::write(from.join("Cargo.toml"), "ws").unwrap();
        fs::write(from.join("app/src/main.rs"), "fn main() {}").unwrap();
        fs::create_dir_all(to.join("target/release")).unwrap();
        fs::create_dir_all(to.join("gone")).unwrap();
        fs::write(to.join("Cargo.lock"), "lock").unwrap();
        fs::write(to.join("app.rs"), "old").unwrap();
        sync_dir(&from, &to, true).unwrap();
        assert_eq!(fs::read_to_string(to.join("app/src/main.rs")).unwrap(), "fn main() {}");
        assert!(to.join("target/release").is_dir() && to.join("Cargo.lock").is_file());
        assert!(!to.join("gone").exists() && !to.join("app.rs").exists());
        // An unchanged file is not written again (cargo would rebuild it).
        let modified = || fs::metadata(to.join("Cargo.toml")).unwrap().modified().unwrap();
        let before = modified();
        std::thread::sleep(std::time::Duration::from_millis(20));
        sync_dir(&from, &to, true).unwrap();
        assert_eq!(modified(), before);
        fs::remove_dir_all(&root).unwrap();
    }
}
