//! The backend of `core::offload` outside any launch (a kernel called as a plain function on the
//! host, or code built for a target without a device): the caller is work item 0 of one block
//! of one thread.

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

/// The one thread of its block has nothing to wait for.
pub(super) const fn sync_threads() {}

/// Outside a launch there is no block-shared memory.
pub(super) const fn dynamic_shared_memory() -> *mut u8 {
    crate::ptr::null_mut()
}
