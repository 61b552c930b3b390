//! The kernels of the data-movement benchmark: a 5-point Jacobi step on a square grid, a
//! saxpy, the two steps of a pipeline and a block sum. One work item per element, blocks of
//! [`BLOCK`] threads.

#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};

/// Threads per block.
pub const BLOCK: u32 = 256;

fn global_x() -> usize {
    (block_idx_x() * block_dim_x() + thread_idx_x()) as usize
}

/// One Jacobi step on a `side` x `side` grid (row-major): each inner point of `next` becomes
/// the mean of its four neighbours in `now`; the border is copied. Writes all of `next`.
#[offload_kernel]
pub fn jacobi(now: &[f32], next: &mut [f32], side: usize) {
    let i = global_x();
    if i >= next.len() {
        return;
    }
    let (row, column) = (i / side, i % side);
    next[i] = if row == 0 || column == 0 || row + 1 == side || column + 1 == side {
        now[i]
    } else {
        0.25 * (now[i - 1] + now[i + 1] + now[i - side] + now[i + side])
    };
}

/// `y[i] = a * x[i] + y[i]`.
#[offload_kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// The pipeline's first step: `scaled[i] = a * x[i]` (writes all of `scaled`).
#[offload_kernel]
pub fn scale(a: f32, x: &[f32], scaled: &mut [f32]) {
    let i = global_x();
    if i < scaled.len() {
        scaled[i] = a * x[i];
    }
}

/// The pipeline's second step: `y[i] += scaled[i] * x[i]`.
#[offload_kernel]
pub fn accumulate(scaled: &[f32], x: &[f32], y: &mut [f32]) {
    let i = global_x();
    if i < y.len() {
        y[i] += scaled[i] * x[i];
    }
}

/// `sums[b]` = the sum of block `b`'s elements of `x`, by its thread 0 (a serial sum per
/// block, the same on every device).
#[offload_kernel]
pub fn block_sums(x: &[f32], sums: &mut [f32]) {
    if thread_idx_x() != 0 {
        return;
    }
    let block = block_idx_x() as usize;
    let start = block * BLOCK as usize;
    let end = (start + BLOCK as usize).min(x.len());
    let mut sum = 0.0;
    let mut i = start;
    while i < end {
        sum += x[i];
        i += 1;
    }
    if block < sums.len() {
        sums[block] = sum;
    }
}
