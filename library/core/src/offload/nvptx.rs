//! The `nvptx64` backend of `core::offload`: the special registers that `core::arch::nvptx`
//! reads (`%tid`, `%ctaid`, `%ntid`, `%nctaid`), `bar.sync 0`, and the kernel's `extern`
//! block-shared array.

use crate::arch::nvptx;

#[inline]
pub(super) fn thread_idx(dim: usize) -> u32 {
    // SAFETY: reads a special register that every thread of a kernel has.
    unsafe {
        match dim {
            0 => nvptx::_thread_idx_x(),
            1 => nvptx::_thread_idx_y(),
            _ => nvptx::_thread_idx_z(),
        }
    }
}

#[inline]
pub(super) fn block_idx(dim: usize) -> u32 {
    // SAFETY: as for `thread_idx`.
    unsafe {
        match dim {
            0 => nvptx::_block_idx_x(),
            1 => nvptx::_block_idx_y(),
            _ => nvptx::_block_idx_z(),
        }
    }
}

#[inline]
pub(super) fn block_dim(dim: usize) -> u32 {
    // SAFETY: as for `thread_idx`.
    unsafe {
        match dim {
            0 => nvptx::_block_dim_x(),
            1 => nvptx::_block_dim_y(),
            _ => nvptx::_block_dim_z(),
        }
    }
}

#[inline]
pub(super) fn grid_dim(dim: usize) -> u32 {
    // SAFETY: as for `thread_idx`.
    unsafe {
        match dim {
            0 => nvptx::_grid_dim_x(),
            1 => nvptx::_grid_dim_y(),
            _ => nvptx::_grid_dim_z(),
        }
    }
}

/// `bar.sync 0`; only `core::offload::sync_threads`, whose contract is the barrier's, calls it.
#[inline]
pub(super) fn sync_threads() {
    // SAFETY: the caller (`core::offload::sync_threads`) holds `bar.sync`'s contract.
    unsafe { nvptx::_syncthreads() }
}

#[inline]
pub(super) fn dynamic_shared_memory() -> *mut u8 {
    unsafe extern "C" {
        /// Defined by the device pass (`rustc_codegen_llvm::back::offload_device`).
        safe fn __rust_offload_dynamic_shared_memory() -> *mut u8;
    }
    __rust_offload_dynamic_shared_memory()
}
