//! The kernels of the residency test: a saxpy, a 3-point Jacobi step and an increment.

#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};

/// The work item's index in a 1-D grid.
fn global_x() -> usize {
    (block_idx_x() * block_dim_x() + thread_idx_x()) as usize
}

/// `y[i] = a * x[i] + y[i]`, one element per work item.
#[offload_kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// One Jacobi step: each inner element of `next` becomes the mean of its three neighbours in
/// `now`; the two ends are copied. Writes every element of `next`.
#[offload_kernel]
pub fn smooth(now: &[f32], next: &mut [f32]) {
    let i = global_x();
    let n = next.len();
    if i < n {
        next[i] =
            if i == 0 || i + 1 == n { now[i] } else { (now[i - 1] + now[i] + now[i + 1]) / 3.0 };
    }
}

/// Adds one to every element, one element per work item.
#[offload_kernel]
pub fn add_one(values: &mut [f32]) {
    let i = global_x();
    if i < values.len() {
        values[i] += 1.0;
    }
}

/// Parameters passed by value through memory (32 bytes: larger than two registers).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Params {
    pub values: [f32; 8],
}

/// Sets each element to `params.values[i % 8]`.
#[offload_kernel]
pub fn fill_from(values: &mut [f32], params: Params) {
    let i = global_x();
    if i < values.len() {
        values[i] = params.values[i % 8];
    }
}

/// Adds one to each of the four elements behind a raw pointer (work item 0 alone).
#[offload_kernel]
pub fn add_one_raw(values: *mut [f32; 4]) {
    if global_x() == 0 {
        // SAFETY: the launch maps the four elements, and one work item writes them.
        unsafe {
            for value in (*values).iter_mut() {
                *value += 1.0;
            }
        }
    }
}
