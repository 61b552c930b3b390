//! `[DOWNLOAD]` NVIDIA's PTX assembler and device linker, to check nvptx device images.
//!
//! An nvptx image is correct only when NVIDIA's own tools accept it: `ptxas -c` assembles the
//! PTX into a relocatable cubin and `nvlink` links it, reporting every undefined function or
//! global. (Whole-program `ptxas` alone is not enough: it silently allocates an undefined
//! `.extern .global` as zeros.) Both come in PyPI's `nvidia-cuda-nvcc` wheel 13.0.88, CUDA 13.0,
//! the version of the GPU machine's driver stack; they run without a GPU.
//!
//! The wheel is fetched with the machine's own `pip` (its index comes from pip's configuration,
//! never from this project), checked against the pinned sha256, kept in the cache's
//! `downloads/`, and its two binaries are unpacked with `unzip` to
//! `build/<host>/offload-cuda/bin/`, where the run-make tests find them (beside the GPU
//! sysroot, under compiletest's `BUILD_ROOT`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::Cache;
use crate::fetch::verify;
use crate::pins::{CUDA_TOOLS_WHEEL, CUDA_TOOLS_WHEEL_REQUIREMENT, HOST};
use crate::ui::{Context, Result, Timer, fail, run_captured};

const STEP: &str = "DOWNLOAD";

/// The folder that holds `ptxas` and `nvlink` once [`ensure_cuda_tools`] ran.
pub fn cuda_bin(cache: &Cache) -> PathBuf {
    cache.build().join(HOST).join("offload-cuda/bin")
}

/// The wheel's members that the tests use.
const TOOLS: &[&str] = &["ptxas", "nvlink"];

/// Makes sure `ptxas` and `nvlink` of the pinned wheel are in [`cuda_bin`]: downloads the wheel
/// if the cache lacks it, then unpacks the tools if they are missing or come from another wheel
/// (a stamp beside them holds the wheel's sha256). Returns their folder.
pub fn ensure_cuda_tools(cache: &Cache) -> Result<PathBuf> {
    let bin = cuda_bin(cache);
    let stamp = bin.join(".wheel-sha256");
    let unpacked = TOOLS.iter().all(|t| bin.join(t).exists())
        && fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == CUDA_TOOLS_WHEEL.sha256);
    if unpacked {
        return Ok(bin);
    }
    let downloads = cache.root.join("downloads");
    let wheel = downloads.join(CUDA_TOOLS_WHEEL.name);
    if !verify(&wheel, &CUDA_TOOLS_WHEEL)? {
        download_wheel(&downloads, &wheel)?;
    }
    let timer =
        Timer::start("BUILD", format!("unpacking {} to {}", TOOLS.join(" and "), bin.display()));
    let _ = fs::remove_dir_all(&bin);
    fs::create_dir_all(&bin).creating("BUILD", &bin)?;
    let mut unzip = Command::new("unzip");
    unzip.args(["-q", "-o", "-j"]).arg(&wheel);
    unzip.args(TOOLS.iter().map(|t| format!("nvidia/cu13/bin/{t}")));
    unzip.arg("-d").arg(&bin);
    run_captured("BUILD", &mut unzip)?;
    for tool in TOOLS {
        let path = bin.join(tool);
        set_executable(&path)?;
    }
    fs::write(&stamp, CUDA_TOOLS_WHEEL.sha256).writing("BUILD", &stamp)?;
    timer.done();
    Ok(bin)
}

fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .context("BUILD", || format!("cannot make {} executable", path.display()))
}

/// `pip download` of the pinned wheel into a fresh folder under `downloads`, checked, then moved
/// to `wheel`. A download whose sum differs is deleted.
fn download_wheel(downloads: &Path, wheel: &Path) -> Result<()> {
    let timer = Timer::start(
        STEP,
        format!("{} ({} bytes, with pip)", CUDA_TOOLS_WHEEL.name, CUDA_TOOLS_WHEEL.size),
    );
    let tmp = downloads.join("cuda-wheel.tmp");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).creating(STEP, &tmp)?;
    let status = Command::new("python3")
        .args(["-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--dest"])
        .arg(&tmp)
        .arg(CUDA_TOOLS_WHEEL_REQUIREMENT)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            return fail(
                STEP,
                format!(
                    "`pip download {CUDA_TOOLS_WHEEL_REQUIREMENT}` failed ({s}); check that pip \
                     reaches its package index and rerun"
                ),
            );
        }
        Err(e) => {
            return fail(STEP, format!("cannot run `python3 -m pip`: {e}; install pip and rerun"));
        }
    }
    let fetched = tmp.join(CUDA_TOOLS_WHEEL.name);
    if !fetched.exists() {
        return fail(
            STEP,
            format!("pip did not write {}; the index serves another file name", fetched.display()),
        );
    }
    if let Err(failure) = verify(&fetched, &CUDA_TOOLS_WHEEL) {
        let _ = fs::remove_dir_all(&tmp);
        return Err(failure);
    }
    fs::rename(&fetched, wheel)
        .context(STEP, || format!("cannot move the wheel to {}", wheel.display()))?;
    let _ = fs::remove_dir_all(&tmp);
    timer.done();
    Ok(())
}
