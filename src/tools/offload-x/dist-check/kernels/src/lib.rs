//! The kernels of the dist check: a bounds-checked saxpy and a generic scale, over a grid, and
//! the grid's size, whose doctest `cargo +offload test --doc` runs with the toolchain's rustdoc.
#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};
use core::ops::Mul;

/// The number of blocks of `block` work items that cover `n` elements.
///
/// ```
/// assert_eq!(kernels::blocks(1000, 128), 8);
/// assert_eq!(kernels::blocks(1024, 128), 8);
/// ```
pub const fn blocks(n: usize, block: usize) -> u32 {
    n.div_ceil(block) as u32
}

/// `y[i] = a * x[i] + y[i]`, one element per work item.
#[offload_kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// `x[i] = x[i] * by`, one element per work item, for any copyable product.
#[offload_kernel]
pub fn scale<T: Copy + Mul<Output = T>>(x: &mut [T], by: T) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        x[i] = x[i] * by;
    }
}
