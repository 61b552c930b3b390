#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};

/// What `scale_all` does to each element.
pub trait Scale: Copy {
    fn scale(self) -> Self;
}

#[offload_kernel]
pub fn scale_all<T: Scale>(y: &mut [T]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < y.len() {
        y[i] = y[i].scale();
    }
}
