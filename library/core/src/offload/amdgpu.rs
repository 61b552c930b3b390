//! The `amdgcn` backend of `core::offload`: the work-item and workgroup ids of
//! `core::arch::amdgpu`, the implicit kernel arguments of a code object v5 kernel for the
//! dimensions, `s_barrier` between workgroup-scope fences, and the kernel's `extern`
//! block-shared array.
//!
//! The implicit arguments and the barrier are loaded by functions that the device pass of the
//! compiler defines (`rustc_codegen_llvm::back::offload_device`), since Rust has no pointer into
//! the constant address space that `llvm.amdgcn.implicitarg.ptr` returns.

use crate::arch::amdgpu;

unsafe extern "C" {
    /// `hidden_group_size_{x,y,z}` (`dim` 0, 1, 2): the threads per block.
    safe fn __rust_offload_amdgpu_group_size(dim: u32) -> u32;
    /// `hidden_block_count_{x,y,z}` (`dim` 0, 1, 2): the blocks of the grid.
    safe fn __rust_offload_amdgpu_block_count(dim: u32) -> u32;
    /// A release fence of workgroup scope, `s_barrier`, an acquire fence of workgroup scope
    /// (Rust's fences have no scope).
    fn __rust_offload_amdgpu_sync_threads();
    /// Defined by the device pass (`rustc_codegen_llvm::back::offload_device`).
    safe fn __rust_offload_dynamic_shared_memory() -> *mut u8;
}

#[inline]
pub(super) fn thread_idx(dim: usize) -> u32 {
    match dim {
        0 => amdgpu::workitem_id_x(),
        1 => amdgpu::workitem_id_y(),
        _ => amdgpu::workitem_id_z(),
    }
}

#[inline]
pub(super) fn block_idx(dim: usize) -> u32 {
    match dim {
        0 => amdgpu::workgroup_id_x(),
        1 => amdgpu::workgroup_id_y(),
        _ => amdgpu::workgroup_id_z(),
    }
}

#[inline]
pub(super) fn block_dim(dim: usize) -> u32 {
    __rust_offload_amdgpu_group_size(dim as u32)
}

#[inline]
pub(super) fn grid_dim(dim: usize) -> u32 {
    __rust_offload_amdgpu_block_count(dim as u32)
}

/// The barrier; only `core::offload::sync_threads`, whose contract is the barrier's, calls it.
#[inline]
pub(super) fn sync_threads() {
    // SAFETY: the caller (`core::offload::sync_threads`) holds `s_barrier`'s contract.
    unsafe { __rust_offload_amdgpu_sync_threads() }
}

#[inline]
pub(super) fn dynamic_shared_memory() -> *mut u8 {
    __rust_offload_dynamic_shared_memory()
}
