//! The kernels of the residency test: a saxpy, a 3-point Jacobi step and an increment.

#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};
use core::sync::atomic::AtomicU32;
use core::sync::atomic::Ordering::Relaxed;

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

/// Adds 10 to each counter through `&mut` (kept on the device by a loop of launches).
#[offload_kernel]
pub fn add_ten_atomic(counters: &mut [AtomicU32]) {
    let i = global_x();
    if i < counters.len() {
        counters[i].fetch_add(10, Relaxed);
    }
}

/// Adds one to each counter through a shared reference (never kept: another thread may
/// launch over the same counters).
#[offload_kernel]
pub fn add_one_atomic(counters: &[AtomicU32]) {
    let i = global_x();
    if i < counters.len() {
        counters[i].fetch_add(1, Relaxed);
    }
}

/// Writes 42 into the first element through a `*const` (after a cast): the launch copies
/// nothing back, so the host never sees it.
#[offload_kernel]
pub fn write_through_const(values: *const [f32; 8]) {
    if global_x() == 0 {
        // SAFETY: the launch maps the eight elements on the device, and one work item writes.
        unsafe { (*values.cast_mut())[0] = 42.0 };
    }
}
