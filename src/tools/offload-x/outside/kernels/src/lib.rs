//! The kernel of the outside-the-sysroot test: a bounds-checked saxpy over a grid.
#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};

/// `y[i] = a * x[i] + y[i]`, one element per work item.
#[offload_kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}
