//! Where the offload tests find the fork's toolchain: the stage-1 compiler with the flags every
//! `-Zoffload` mode needs, the GPU sysroots and the device sysroot that `./x.py build` keeps
//! beside bootstrap's, LLVM's and NVIDIA's tools, and the installed `cargo-offload`.

use std::path::PathBuf;

use crate::external_deps::llvm::llvm_bin_dir;
use crate::{Rustc, env_var, rfs, source_root};

/// `rustc` with `-Zunstable-options`, which every `-Zoffload` mode requires.
pub fn rustc() -> Rustc {
    let mut r = crate::rustc();
    r.arg("-Zunstable-options");
    r
}

/// The stage-1 sysroot's libraries for the GPU targets, which `./x.py build` keeps beside
/// bootstrap's sysroot (bootstrap's test run assembles a sysroot for the host only).
pub fn gpu_sysroot() -> PathBuf {
    let sysroot = PathBuf::from(env_var("BUILD_ROOT")).join("offload-gpu-sysroot");
    assert!(sysroot.exists(), "{} is missing: run `./x.py build`", sysroot.display());
    sysroot
}

/// An LLVM tool of the LLVM the compiler was built with. Debian puts the unversioned tools
/// beside FileCheck (`/usr/lib/llvm-<N>/bin`), while `LLVM_BIN_DIR` is where `llvm-config-<N>`
/// lives (`/usr/bin`, versioned names only).
pub fn llvm_tool(name: &str) -> PathBuf {
    let filecheck = PathBuf::from(env_var("LLVM_FILECHECK"));
    let beside_filecheck = filecheck.parent().unwrap().join(name);
    if beside_filecheck.exists() { beside_filecheck } else { llvm_bin_dir().join(name) }
}

/// NVIDIA's `ptxas` or `nvlink`, which `./x.py build` unpacks from the pinned
/// `nvidia-cuda-nvcc` wheel beside the GPU sysroot.
pub fn cuda_tool(name: &str) -> PathBuf {
    let tool = PathBuf::from(env_var("BUILD_ROOT")).join("offload-cuda/bin").join(name);
    assert!(tool.exists(), "{} is missing: run `./x.py build`", tool.display());
    tool
}

/// Bootstrap's cargo: the `cargo = "..."` line of the tree's `bootstrap.toml`.
pub fn stage0_cargo() -> PathBuf {
    let config = rfs::read_to_string(source_root().join("bootstrap.toml"));
    let line = config
        .lines()
        .find(|l| l.trim_start().starts_with("cargo ="))
        .expect("bootstrap.toml names no cargo");
    PathBuf::from(line.split('"').nth(1).expect("cargo = \"PATH\""))
}

/// The folder of the installed `cargo-offload`.
pub fn offload_tools_bin() -> PathBuf {
    let bin = PathBuf::from(env_var("BUILD_ROOT")).join("offload-tools/bin");
    assert!(
        bin.join("cargo-offload").is_file(),
        "{} has no cargo-offload: run `./x.py build`",
        bin.display()
    );
    bin
}

/// The report library that `OFFLOAD_REPORT=1` preloads (`src/tools/offload-report`), installed
/// beside `cargo-offload` (`bin/../lib`).
pub fn report_library() -> PathBuf {
    offload_tools_bin().parent().unwrap().join("lib/liboffload_report.so")
}

/// The device sysroot that `./x.py build` writes (`core` with the MIR of every function for
/// each device target, the CPU device's included), as `./x.py cargo` gives it to `cargo offload`.
pub fn device_sysroot() -> PathBuf {
    let sysroot = PathBuf::from(env_var("BUILD_ROOT")).join("offload-device-sysroot");
    assert!(sysroot.is_dir(), "{} is missing: run `./x.py build`", sysroot.display());
    sysroot
}

/// The project's bundled example (`src/offload-example`, a Cargo package), which the harness
/// makes visible to the tests.
pub fn project_example() -> PathBuf {
    PathBuf::from(env_var("OFFLOAD_FORK_PROJECT")).join("src/offload-example")
}
