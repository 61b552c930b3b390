//! `./x.py gpu-check`: a bundle that runs the bundled example on an NVIDIA GPU elsewhere.
//!
//! The GPU machine runs another distribution (Ubuntu 24.04, glibc 2.39) without our sysroot,
//! so the bundle carries what the program needs from trixie: the executable (built by
//! `cargo offload build --release --offload-arch=sm_90`), and, compressed in `libs.tar.xz`,
//! every shared library it loads (`libomptarget` 22, `libomp`, `libLLVM` 22, the C and C++
//! runtimes) with trixie's dynamic loader, which `run.sh` invokes directly
//! (`lib/ld-linux-x86-64.so.2 --library-path lib ./offload-example`). The GPU driver's
//! `libcuda.so.1` comes from the machine itself: the CUDA plugin opens it by name, and the
//! loader finds it in the machine's own library folders. `run.sh` prints the program's
//! output and exits 0 only if every kernel's result matched the host's reference (`: ok`).
//!
//! When `./x.py bench` has run, the bundle also holds `kernel-time/`: base's and ours' nvptx
//! kernels of the benchmark's first run as cubins, with `src/offload-bench/kernel_time.py`,
//! which `run.sh` then runs to time each kernel on the GPU in both modes and compare their
//! outputs (see that script). Without a benchmark run the bundle says so and leaves it out.
//!
//! The bundle is written to `gpu-check/` in the checkout (ignored by git), at most 64 MiB, so
//! that the device tool can carry it (`carry: ["gpu-check"]`, command `sh gpu-check/run.sh`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::Cache;
use crate::pins::HOST;
use crate::sysroot::Enter;
use crate::ui::{Failure, Result, Timer, fail, say};

const STEP: &str = "GPU-CHECK";

/// The bundle's size limit: what the device tool carries.
const LIMIT_BYTES: u64 = 64 << 20;

/// The GPU arch of the bundle: the H200 the device tool lends is `sm_90`.
const ARCH: &str = "sm_90";

const RUN_SH: &str = r#"#!/bin/sh
# Runs the bundled offload example (src/offload-example, built with
# `cargo offload build --release --offload-arch=sm_90`) on this machine's NVIDIA GPU, with
# trixie's loader and libraries from libs.tar.xz, and checks each kernel's result against the
# host's reference. Exit status 0 only if every kernel ran on the GPU and matched.
cd "$(dirname "$0")" || exit 2
if [ ! -x lib/ld-linux-x86-64.so.2 ]; then
    tar -xJf libs.tar.xz || { echo "gpu-check: cannot unpack libs.tar.xz" >&2; exit 2; }
fi
command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
LIBOMPTARGET_INFO="${LIBOMPTARGET_INFO:-0}" ./lib/ld-linux-x86-64.so.2 --library-path "$PWD/lib" \
    ./offload-example > output.txt 2>&1
status=$?
cat output.txt
kernels=$(grep -c ': ok$' output.txt)
timing=0
if [ -f kernel-time/kernels.json ]; then
    # Base's and ours' kernels of the benchmark, timed on this GPU (kernel_time.py).
    python3 kernel-time/kernel_time.py run kernel-time --json kernel-time/results.json || timing=1
fi
if [ "$status" -eq 0 ] && [ "$kernels" -eq 3 ] && [ "$timing" -eq 0 ]; then
    echo "gpu-check: passed: 3 kernels ran on the GPU and matched the host"
    exit 0
fi
echo "gpu-check: FAILED (program exit status $status, $kernels of 3 kernels matched, \
kernel timing status $timing)"
exit 1
"#;

/// Builds the bundle; returns its folder.
pub fn run(project: &Path, cache: &Cache) -> Result<PathBuf> {
    crate::commands::build(project, cache)?;
    let target = cache.job().join("gpu-check-target");
    let timer = Timer::start(STEP, format!("cargo offload build --release --offload-arch={ARCH}"));
    let out =
        crate::commands::toolchain(cache, &project.join("src/offload-example"), "/usr/bin/env")
            .arg(crate::cache::stage0_toolchain().join("bin/cargo"))
            .args(["offload", "build", "--release", &format!("--offload-arch={ARCH}")])
            .env("RUSTC_BOOTSTRAP", "1")
            .env("CARGO_TARGET_DIR", &target)
            .bind(cache.job())
            .command(cache)?
            .output()
            .map_err(|e| Failure { step: STEP, message: format!("cannot start unshare: {e}") })?;
    if !out.status.success() {
        return fail(
            STEP,
            format!("cargo offload failed:\n{}", String::from_utf8_lossy(&out.stderr)),
        );
    }
    timer.done();
    let exe = target.join("offload/host").join(HOST).join("release/offload-example");

    let bundle = project.join("gpu-check");
    let _ = fs::remove_dir_all(&bundle);
    let lib = bundle.join("lib");
    fs::create_dir_all(&lib).map_err(|e| io(&lib, e))?;
    fs::copy(&exe, bundle.join("offload-example")).map_err(|e| io(&exe, e))?;
    fs::write(bundle.join("run.sh"), RUN_SH).map_err(|e| io(&bundle, e))?;

    // The libraries, as the sysroot's loader resolves them for the program, plus `libomp.so`,
    // the name under which the runtime opens `libomp` again (OMPT).
    let timer = Timer::start(STEP, "the program's libraries from the sysroot");
    let ldd = Enter::new(cache, &target, "ldd")
        .arg(&exe)
        .command(cache)?
        .output()
        .map_err(|e| Failure { step: STEP, message: format!("cannot run ldd: {e}") })?;
    let mut count = 0;
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next().unwrap_or(""),
            None => line.split_whitespace().next().unwrap_or(""),
        };
        if !path.starts_with('/') {
            continue;
        }
        let name = Path::new(path).file_name().unwrap();
        let inside = resolve_in_sysroot(&cache.sysroot(), Path::new(path))?;
        fs::copy(&inside, lib.join(name)).map_err(|e| io(&inside, e))?;
        count += 1;
    }
    if !lib.join("ld-linux-x86-64.so.2").is_file() || !lib.join("libomptarget.so.22.1").is_file() {
        return fail(
            STEP,
            format!("ldd listed no loader or no libomptarget for {}", exe.display()),
        );
    }
    // A link, not a copy: the loader tells libraries apart by file, and a second `libomp`
    // aborts the program ("OMP: Error #15").
    std::os::unix::fs::symlink("libomp.so.5", lib.join("libomp.so")).map_err(|e| io(&lib, e))?;
    timer.done();
    say(STEP, format!("{} libraries", count + 1));

    let timer = Timer::start(STEP, "compress the libraries (xz -9)");
    let status = Command::new("tar")
        .args(["-cJf", "libs.tar.xz", "lib"])
        .env("XZ_OPT", "-9 -T2")
        .current_dir(&bundle)
        .status()
        .map_err(|e| Failure { step: STEP, message: format!("cannot run tar: {e}") })?;
    if !status.success() {
        return fail(STEP, "tar -cJf libs.tar.xz failed");
    }
    fs::remove_dir_all(&lib).map_err(|e| io(&lib, e))?;
    timer.done();

    kernel_time(project, cache, &bundle)?;

    let mut total = 0;
    for entry in fs::read_dir(&bundle).map_err(|e| io(&bundle, e))?.flatten() {
        let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
        say(STEP, format!("  {:>10} bytes  {}", bytes, entry.file_name().to_string_lossy()));
        total += bytes;
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
            bundle.display()
        ),
    );
    Ok(bundle)
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
        .command(cache)?
        .status()
        .map_err(|e| Failure { step: STEP, message: format!("cannot start unshare: {e}") })?;
    if !status.success() {
        return fail(STEP, "kernel_time.py prepare failed; its output is above");
    }
    timer.done();
    Ok(())
}

/// `path` as seen inside the sysroot, with its symbolic links resolved inside it.
fn resolve_in_sysroot(root: &Path, path: &Path) -> Result<PathBuf> {
    let mut current = root.join(path.strip_prefix("/").unwrap_or(path));
    for _ in 0..16 {
        match fs::read_link(&current) {
            Ok(target) if target.is_absolute() => {
                current = root.join(target.strip_prefix("/").unwrap_or(&target));
            }
            Ok(target) => current = current.parent().unwrap().join(target),
            Err(_) => return Ok(current),
        }
    }
    fail(STEP, format!("too many symbolic links at {}", path.display()))
}

fn io(path: &Path, e: std::io::Error) -> Failure {
    Failure { step: STEP, message: format!("{}: {e}", path.display()) }
}
