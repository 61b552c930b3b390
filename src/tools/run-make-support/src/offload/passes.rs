//! The passes of the offload pipeline as the tests run them by hand, one function per pass:
//! the host metadata pass, the device pass (manifest-driven or bare) for a GPU target or the
//! CPU device, and the host pass. Each returns the [`Rustc`] of the fork's toolchain with the
//! pass's flags; the test adds its input, crate type, output folder and anything else.

use std::path::Path;

use super::toolchain::{device_sysroot, gpu_sysroot, rustc};
use crate::Rustc;

/// The host metadata pass, which writes the crate's offload manifest to `manifest`
/// (`-Zoffload=HostMetadata=<manifest>`).
pub fn host_metadata_pass(manifest: &Path) -> Rustc {
    let mut r = rustc();
    r.arg(format!("-Zoffload=HostMetadata={}", manifest.display()));
    r
}

/// The manifest-driven device pass (`-Zoffload=Device=<manifest>`) for `target` on `cpu`; see
/// [`device_pass`].
pub fn manifest_device_pass(target: Option<&str>, cpu: Option<&str>, manifest: &Path) -> Rustc {
    device_pass(target, cpu, &format!("Device={}", manifest.display()))
}

/// A device pass with `-Zoffload=<offload>` (`Device=<manifest>`, or the bare `Device` of the
/// base pipeline): for the GPU target `target` with the GPU sysroot's `core`, on the GPU `cpu`
/// (`-Ctarget-cpu`, such as `gfx90a`) if given; with `target` `None`, for the CPU device (the
/// host's own target, with the device sysroot's `core`, which has the CPU device's grid runner).
pub fn device_pass(target: Option<&str>, cpu: Option<&str>, offload: &str) -> Rustc {
    let mut r = rustc();
    r.arg(format!("-Zoffload={offload}"));
    match target {
        Some(target) => r.target(target).sysroot(gpu_sysroot()),
        None => r.sysroot(device_sysroot()),
    };
    if let Some(cpu) = cpu {
        r.target_cpu(cpu);
    }
    r
}

/// The host pass that registers the device image `image` with the offload runtime and launches
/// its kernels (`-Zoffload=Host=<image>`).
pub fn host_pass(image: &Path) -> Rustc {
    let mut r = rustc();
    r.arg(format!("-Zoffload=Host={}", image.display()));
    r
}
