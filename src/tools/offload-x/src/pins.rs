//! What the fork is built from, pinned.

/// The Debian source package the fork is based on: upstream rustc commit 59807616e, the same
/// commit as the rustup 1.95.0 release used as stage 0.
pub const DEBIAN_SOURCE_PACKAGE: &str = "rustc";
pub const DEBIAN_VERSION: &str = "1.95.0+dfsg1-2";

/// One file fetched from the mirror's pool: name, size in bytes, sha256 (lowercase hex).
pub struct PinnedFile {
    pub name: &'static str,
    pub size: u64,
    pub sha256: &'static str,
}

/// The two tarballs of the source package. Debian's mirrors serve them, but not the `.dsc`
/// that `apt-get source` and `dpkg-source` need, so we fetch them by their pool path and check
/// them ourselves.
pub const SOURCE_FILES: [PinnedFile; 2] = [
    PinnedFile {
        name: "rustc_1.95.0+dfsg1.orig.tar.xz",
        size: 88_190_992,
        sha256: "fee0a232c32b6f919b2166efc441a7c37884905bdcc2170163579eeed5feee6b",
    },
    PinnedFile {
        name: "rustc_1.95.0+dfsg1-2.debian.tar.xz",
        size: 153_548,
        sha256: "f0408cafd8942c9f1762d5ca10750d70996f678b616a4e4b6ed3e3e299a071b6",
    },
];

/// The top directory of the `.orig` tarball.
pub const ORIG_TOP_DIR: &str = "rustc-1.95.0-src";

/// Pool directory of the source package, relative to a Debian mirror's root.
pub const POOL_DIR: &str = "pool/main/r/rustc";

/// The rustup toolchain used as stage 0 (`build.local-rebuild`).
pub const STAGE0_TOOLCHAIN: &str = "1.95.0-x86_64-unknown-linux-gnu";

/// Debian release of the sysroot that provides LLVM 22.
pub const SYSROOT_SUITE: &str = "trixie";

/// Packages installed into the sysroot on top of `debootstrap --variant=minbase`: the build
/// tools bootstrap needs, and LLVM 22 with its offload runtime (`liboffload-22-dev`,
/// `libomp-22-dev`) and the Polly archives its static link needs (`libpolly-22-dev`), the
/// prebuilt compiler-rt builtins, and jemalloc for the compiler.
pub const SYSROOT_PACKAGES: &[&str] = &[
    "build-essential",
    "cmake",
    "ninja-build",
    "python3",
    "pkg-config",
    "git",
    "curl",
    "ca-certificates",
    "file",
    "zlib1g-dev",
    "libzstd-dev",
    "liblzma-dev",
    "libffi-dev",
    "libxml2-dev",
    "libssl-dev",
    "llvm-22-dev",
    "llvm-22-tools",
    "clang-22",
    "lld-22",
    "libclang-rt-22-dev",
    "liboffload-22-dev",
    "libomp-22-dev",
    // Trixie's LLVM links Polly into its passes (`getPollyPluginInfo`): a compiler that links
    // LLVM statically (`llvm.link-shared = false` in `config.example.toml`) needs its archives.
    "libpolly-22-dev",
    // The compiler's allocator (`rust.jemalloc` in `config.example.toml`, patch 0028).
    "libjemalloc-dev",
];

/// Workspaces whose `Cargo.lock` Debian's `debian/rules` moves aside before configuring, so
/// that the vendored build may write fresh ones.
pub const RUSTC_WORKSPACES: &[&str] = &[
    ".",
    "src/bootstrap",
    "library",
    "src/tools/clippy/clippy_test_deps",
    "src/tools/rust-analyzer",
    "src/tools/cargo",
    "src/tools/rustbook",
];

/// The folder of LLVM 22's tools inside the sysroot (trixie's `llvm-22`, `llvm-22-tools`,
/// `lld-22`): `llc`, `ld.lld`, `llvm-offload-binary`, `llvm-nm`, ...
pub const SYSROOT_LLVM_BIN: &str = "/usr/lib/llvm-22/bin";

/// The host triple of the build (the CPU device's target in `offload_targets`).
pub const HOST: &str = offload_targets::HOST_TRIPLE;

// The GPU targets whose `core` and `alloc` the build puts into the stage-1 sysroot are the
// device targets' table's: `offload_targets::gpu_targets()`.

/// PyPI's `nvidia-cuda-nvcc` 13.0.88 (CUDA 13.0, what the lent H200 machine runs): `ptxas` and
/// `nvlink`, which check the nvptx device images (see `cuda`).
pub const CUDA_TOOLS_WHEEL: PinnedFile = PinnedFile {
    name: "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    size: 37_384_532,
    sha256: "56fe502eb77625a12f25172caa3cdddb4e4c8ba2c8c17dba44b164761b380f03",
};

/// The requirement `pip download` is given for [`CUDA_TOOLS_WHEEL`].
pub const CUDA_TOOLS_WHEEL_REQUIREMENT: &str = "nvidia-cuda-nvcc==13.0.88";
