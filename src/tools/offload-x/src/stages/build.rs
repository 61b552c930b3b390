//! The build stage (`./x.py build`): the stage-1 toolchain, the GPU and device sysroots, the
//! vendors' tools and `cargo offload`.

use std::path::Path;

use super::prepare;
use crate::bootstrap::bootstrap;
use crate::cache::{Cache, copy_dir, gpu_sysroot};
use crate::pins::HOST;
use crate::toolchain_lock::{ToolchainLock, Use};
use crate::tools::install_cargo_offload;
use crate::ui::{Context, Result, Timer};

/// `[BUILD]`: stage-1 compiler, host std, `core` and `alloc` for the GPU targets.
///
/// One bootstrap invocation for all targets: each invocation assembles the stage-1 sysroot
/// afresh, keeping only the libraries of the targets it built.
pub fn build(project: &Path, cache: &Cache) -> Result<()> {
    prepare(project, cache)?;
    // From the first bootstrap invocation to the installed `cargo-offload`, the toolchain is
    // being replaced.
    let _replacing = ToolchainLock::take(cache, "BUILD", Use::Replace)?;
    let targets = library_targets();
    let timer = Timer::start(
        "BUILD",
        format!(
            "stage-1 compiler, library for {targets} (cold: about 27 minutes; up to date: seconds)"
        ),
    );
    bootstrap(cache, "BUILD", &["build", "--stage", "1", "library", "--target", &targets])?;
    timer.done();
    save_gpu_sysroot(cache)?;
    crate::device_sysroot::ensure(cache)?;
    crate::cuda::ensure_cuda_tools(cache)?;
    install_cargo_offload(project, cache)?;
    Ok(())
}

/// The targets of the stage-1 sysroot's libraries, comma-separated: the host and the GPU
/// targets.
pub(crate) fn library_targets() -> String {
    let mut targets = vec![HOST.to_string()];
    targets.extend(offload_targets::gpu_targets().map(|t| t.triple.to_string()));
    targets.join(",")
}

/// Copies the GPU targets' libraries from the stage-1 sysroot to [`gpu_sysroot`].
fn save_gpu_sysroot(cache: &Cache) -> Result<()> {
    for target in offload_targets::gpu_targets().map(|t| t.triple) {
        let rel = format!("lib/rustlib/{target}/lib");
        copy_dir(&cache.stage1().join(&rel), &gpu_sysroot(cache).join(&rel))
            .context("BUILD", || {
                format!("cannot save the {target} libraries of the stage-1 sysroot")
            })?;
    }
    Ok(())
}

/// Puts the GPU targets' libraries back into the stage-1 sysroot after a bootstrap invocation
/// that removed them, so that `./x.py rustc --target <gpu>` keeps working.
pub(crate) fn restore_gpu_sysroot(cache: &Cache) -> Result<()> {
    for target in offload_targets::gpu_targets().map(|t| t.triple) {
        let rel = format!("lib/rustlib/{target}/lib");
        if !cache.stage1().join(&rel).exists() {
            copy_dir(&gpu_sysroot(cache).join(&rel), &cache.stage1().join(&rel))
                .context("TEST", || {
                    format!("cannot restore the {target} libraries of the stage-1 sysroot")
                })?;
        }
    }
    Ok(())
}
