//! Where a work item of an offload launch is in its grid, on every device that a kernel runs on.
//!
//! A launch (`core::intrinsics::offload(kernel, blocks, threads, args)`) runs `kernel` once per
//! *work item* of a grid: `blocks` blocks (workgroups) in three dimensions, each of `threads`
//! threads in three dimensions. The functions of this module tell a work item where it is:
//! its thread index within its block, its block index within the grid, the block's dimensions
//! (`threads`) and the grid's (`blocks`). Each is an `fn() -> u32` and reads the same on each
//! device, so that one kernel source serves all of them:
//!
//! - `nvptx64-nvidia-cuda`: the special registers that `core::arch::nvptx` reads (`%tid`,
//!   `%ctaid`, `%ntid`, `%nctaid`);
//! - `amdgcn-amd-amdhsa`: the work-item and workgroup ids of `core::arch::amdgpu`, and for the
//!   dimensions, the implicit kernel arguments that the runtime passes to a code object v5
//!   kernel (`hidden_group_size_*` and `hidden_block_count_*`, where clang's HIP headers read
//!   `blockDim` and `gridDim`), which the device pass of the compiler loads for us;
//! - the offload runtime's CPU device (an image for the host's own target): the work item that
//!   the image's grid runner (`cpu_device`) is running on the calling thread.
//!
//! Outside a launch (a kernel called as a plain function on the host) a caller is work item 0
//! of a grid of one block of one thread.
//!
//! This module is an extension of the fork's: upstream's `core::offload` (feature
//! `gpu_offload`) has no portable indices.

#[cfg(all(
    offload_device,
    target_thread_local,
    target_os = "linux",
    not(any(target_arch = "nvptx64", target_arch = "amdgpu"))
))]
mod cpu_device;

/// The implicit kernel arguments of an `amdgcn` kernel, loaded by functions that the device
/// pass of the compiler defines (`rustc_codegen_llvm::back::offload_device`), since Rust has
/// no pointer into the constant address space that `llvm.amdgcn.implicitarg.ptr` returns.
#[cfg(target_arch = "amdgpu")]
mod amdgpu {
    unsafe extern "C" {
        /// `hidden_group_size_{x,y,z}` (`dim` 0, 1, 2): the threads per block.
        pub(super) safe fn __rust_offload_amdgpu_group_size(dim: u32) -> u32;
        /// `hidden_block_count_{x,y,z}` (`dim` 0, 1, 2): the blocks of the grid.
        pub(super) safe fn __rust_offload_amdgpu_block_count(dim: u32) -> u32;
    }
}

/// The work item that runs outside any launch: work item 0 of one block of one thread.
#[cfg(not(any(
    target_arch = "nvptx64",
    target_arch = "amdgpu",
    all(offload_device, target_thread_local, target_os = "linux")
)))]
mod outside_launch {
    pub(super) const fn thread_idx(_dim: usize) -> u32 {
        0
    }
    pub(super) const fn block_idx(_dim: usize) -> u32 {
        0
    }
    pub(super) const fn block_dim(_dim: usize) -> u32 {
        1
    }
    pub(super) const fn grid_dim(_dim: usize) -> u32 {
        1
    }
}

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[cfg(all(offload_device, target_thread_local, target_os = "linux"))]
use cpu_device as host;
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[cfg(not(all(offload_device, target_thread_local, target_os = "linux")))]
use outside_launch as host;

macro_rules! grid_functions {
    ($(
        $(#[$doc:meta])*
        fn $name:ident: nvptx $nvptx:ident, amdgpu $amdgpu:expr, host $host:ident($dim:literal);
    )*) => {$(
        $(#[$doc])*
        #[inline]
        #[must_use]
        #[unstable(feature = "gpu_offload", issue = "none")]
        pub fn $name() -> u32 {
            #[cfg(target_arch = "nvptx64")]
            {
                // SAFETY: reads a special register that every thread of a kernel has.
                unsafe { crate::arch::nvptx::$nvptx() }
            }
            #[cfg(target_arch = "amdgpu")]
            {
                $amdgpu
            }
            #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
            {
                host::$host($dim)
            }
        }
    )*};
}

grid_functions! {
    /// The x index of the calling thread within its block, `0..block_dim_x()`.
    fn thread_idx_x: nvptx _thread_idx_x, amdgpu crate::arch::amdgpu::workitem_id_x(),
        host thread_idx(0);
    /// The y index of the calling thread within its block, `0..block_dim_y()`.
    fn thread_idx_y: nvptx _thread_idx_y, amdgpu crate::arch::amdgpu::workitem_id_y(),
        host thread_idx(1);
    /// The z index of the calling thread within its block, `0..block_dim_z()`.
    fn thread_idx_z: nvptx _thread_idx_z, amdgpu crate::arch::amdgpu::workitem_id_z(),
        host thread_idx(2);
    /// The x index of the calling thread's block within the grid, `0..grid_dim_x()`.
    fn block_idx_x: nvptx _block_idx_x, amdgpu crate::arch::amdgpu::workgroup_id_x(),
        host block_idx(0);
    /// The y index of the calling thread's block within the grid, `0..grid_dim_y()`.
    fn block_idx_y: nvptx _block_idx_y, amdgpu crate::arch::amdgpu::workgroup_id_y(),
        host block_idx(1);
    /// The z index of the calling thread's block within the grid, `0..grid_dim_z()`.
    fn block_idx_z: nvptx _block_idx_z, amdgpu crate::arch::amdgpu::workgroup_id_z(),
        host block_idx(2);
    /// The threads per block along x: the launch's `threads[0]`.
    fn block_dim_x: nvptx _block_dim_x, amdgpu amdgpu::__rust_offload_amdgpu_group_size(0),
        host block_dim(0);
    /// The threads per block along y: the launch's `threads[1]`.
    fn block_dim_y: nvptx _block_dim_y, amdgpu amdgpu::__rust_offload_amdgpu_group_size(1),
        host block_dim(1);
    /// The threads per block along z: the launch's `threads[2]`.
    fn block_dim_z: nvptx _block_dim_z, amdgpu amdgpu::__rust_offload_amdgpu_group_size(2),
        host block_dim(2);
    /// The blocks of the grid along x: the launch's `blocks[0]`.
    fn grid_dim_x: nvptx _grid_dim_x, amdgpu amdgpu::__rust_offload_amdgpu_block_count(0),
        host grid_dim(0);
    /// The blocks of the grid along y: the launch's `blocks[1]`.
    fn grid_dim_y: nvptx _grid_dim_y, amdgpu amdgpu::__rust_offload_amdgpu_block_count(1),
        host grid_dim(1);
    /// The blocks of the grid along z: the launch's `blocks[2]`.
    fn grid_dim_z: nvptx _grid_dim_z, amdgpu amdgpu::__rust_offload_amdgpu_block_count(2),
        host grid_dim(2);
}
