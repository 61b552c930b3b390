//! `./x.py gpu-check`: a bundle that runs the bundled example on an NVIDIA GPU elsewhere.
//!
//! The GPU machine runs another distribution (Ubuntu 24.04, glibc 2.39) without our sysroot,
//! so the check is built on `cargo offload bundle`: the example (`src/offload-example`, built
//! with `--release --offload-arch=sm_90`), every library it loads and trixie's dynamic loader,
//! with a start script (`bundle/offload-example`), compressed into `bundle.tar.xz` for the
//! device tool's 64 MiB. The GPU driver's `libcuda.so.1` comes from the machine itself, as a
//! native program finds it. `run.sh` unpacks the bundle, runs the example with
//! `OFFLOAD_REPORT=1`, prints its output and exits 0 only if every kernel's result matched the
//! host's reference (`: ok`) and the report says that each ran from the `sm_90` image.
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
use crate::sysroot::Enter;
use crate::ui::{Failure, Result, Timer, fail, say};

const STEP: &str = "GPU-CHECK";

/// The bundle's size limit: what the device tool carries.
const LIMIT_BYTES: u64 = 64 << 20;

/// The GPU arch of the bundle: the H200 the device tool lends is `sm_90`, the table's default
/// NVIDIA arch (`offload_targets`); `RUN_SH` names it as text.
const ARCH: &str = offload_targets::NVPTX.default_arch;

const RUN_SH: &str = r#"#!/bin/sh
# Runs the bundled offload example (src/offload-example, `cargo offload bundle --release
# --offload-arch=sm_90`) on this machine's NVIDIA GPU from bundle.tar.xz (the program, trixie's
# loader and libraries, a start script), and checks each kernel's result against the host's
# reference. Exit status 0 only if every kernel ran from the sm_90 image and matched.
cd "$(dirname "$0")" || exit 2
if [ ! -x bundle/offload-example ]; then
    tar -xJf bundle.tar.xz || { echo "gpu-check: cannot unpack bundle.tar.xz" >&2; exit 2; }
fi
command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
OFFLOAD_REPORT=1 ./bundle/offload-example > output.txt 2>&1
status=$?
cat output.txt
kernels=$(grep -c ': ok$' output.txt)
report='^\[offload report\] kernel .* ran on device .*(nvptx64-nvidia-cuda sm_90)$'
on_gpu=$(grep -c "$report" output.txt)
timing=0
if [ -f kernel-time/kernels.json ]; then
    # Base's and ours' kernels of the benchmark, timed on this GPU (kernel_time.py).
    python3 kernel-time/kernel_time.py run kernel-time --json kernel-time/results.json || timing=1
fi
if [ "$status" -eq 0 ] && [ "$kernels" -eq 3 ] && [ "$on_gpu" -eq 3 ] &&
    [ "$timing" -eq 0 ]; then
    echo "gpu-check: passed: 3 kernels ran on the GPU (sm_90 image) and matched the host"
    exit 0
fi
echo "gpu-check: FAILED (program exit status $status, $kernels of 3 kernels matched," \
    "$on_gpu of 3 reported on the sm_90 image, kernel timing status $timing)"
exit 1
"#;

/// Builds the bundle; returns its folder.
pub fn run(project: &Path, cache: &Cache) -> Result<PathBuf> {
    crate::commands::build(project, cache)?;
    let bundle = project.join("gpu-check");
    let _ = fs::remove_dir_all(&bundle);
    fs::create_dir_all(&bundle).map_err(|e| io(&bundle, e))?;
    let timer = Timer::start(STEP, format!("cargo offload bundle --release --offload-arch={ARCH}"));
    let (mut cargo, _plan) = crate::toolchain::cargo_with_plan(
        cache,
        &project.join("src/offload-example"),
        ["offload", "bundle", "--release", &format!("--offload-arch={ARCH}"), "--out"]
            .iter()
            .map(Into::into)
            .chain([bundle.join("bundle").into_os_string()])
            .collect(),
        &[("CARGO_TARGET_DIR", cache.job().join("gpu-check-target").into_os_string())],
    )?;
    let out = crate::sysroot::output(STEP, &mut cargo)?;
    if !out.status.success() {
        return fail(
            STEP,
            format!("cargo offload failed:\n{}", String::from_utf8_lossy(&out.stderr)),
        );
    }
    timer.done();
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stderr.lines().filter(|l| l.starts_with("[cargo offload] bundle ")) {
        say(STEP, line);
    }
    fs::write(bundle.join("run.sh"), RUN_SH).map_err(|e| io(&bundle, e))?;

    let timer = Timer::start(STEP, "compress the bundle (xz -9)");
    let status = Command::new("tar")
        .args(["-cJf", "bundle.tar.xz", "bundle"])
        .env("XZ_OPT", "-9 -T2")
        .current_dir(&bundle)
        .status()
        .map_err(|e| Failure { step: STEP, message: format!("cannot run tar: {e}") })?;
    if !status.success() {
        return fail(STEP, "tar -cJf bundle.tar.xz failed");
    }
    fs::remove_dir_all(bundle.join("bundle")).map_err(|e| io(&bundle, e))?;
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
        .status(cache, STEP)?;
    if !status.success() {
        return fail(STEP, "kernel_time.py prepare failed; its output is above");
    }
    timer.done();
    Ok(())
}

fn io(path: &Path, e: std::io::Error) -> Failure {
    Failure { step: STEP, message: format!("{}: {e}", path.display()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_script_names_the_bundles_arch_and_target() {
        let report = format!("({} {ARCH})$'", offload_targets::NVPTX.triple);
        assert!(RUN_SH.contains(&report), "{report}");
        assert!(RUN_SH.contains(&format!("--offload-arch={ARCH}`")));
        assert_eq!(RUN_SH.matches(&format!("{ARCH} image")).count(), 3);
    }
}
