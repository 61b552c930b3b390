//! Kernels over slices, beside one in rustc 1.95's form (a pointer to a fixed-size array).

#![feature(rustc_attrs, gpu_offload)]
#![allow(internal_features)]
#![no_std]

use core::offload::{
    block_dim_x, block_idx_x, dynamic_shared_memory, offload_kernel, sync_threads, thread_idx_x,
};

/// The work item's index in a 1-D grid.
fn global_x() -> usize {
    (block_idx_x() * block_dim_x() + thread_idx_x()) as usize
}

/// `y[i] = a * x[i] + y[i]` for the work item's `i`, over as many elements as `y` has; `x`
/// must be at least as long (the bounds check stops the kernel otherwise).
#[rustc_offload_kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// What work item 0 sees of its slices: the lengths of `a`, `b` and `text`, the sums of `a`,
/// `b` and `text`'s bytes, whether `a`'s and `b`'s data pointers are aligned for `u32`, and
/// the last element of `b` (0 when empty).
#[rustc_offload_kernel]
pub fn views(a: &[u32], b: &[u32], text: &str, out: &mut [u64; 8]) {
    if global_x() != 0 {
        return;
    }
    let sum = |s: &[u32]| s.iter().map(|&v| u64::from(v)).sum::<u64>();
    let aligned = |s: &[u32]| (s.as_ptr() as usize % align_of::<u32>() == 0) as u64;
    out[0] = a.len() as u64;
    out[1] = b.len() as u64;
    out[2] = text.len() as u64;
    out[3] = sum(a);
    out[4] = sum(b);
    out[5] = text.bytes().map(u64::from).sum();
    out[6] = aligned(a) + aligned(b);
    out[7] = b.last().map_or(0, |&v| u64::from(v));
}

/// Sets every element of `values` to `value`, one element per work item.
#[rustc_offload_kernel]
pub fn fill<T: Copy>(values: &mut [T], value: T) {
    let i = global_x();
    if i < values.len() {
        values[i] = value;
    }
}

/// Doubles every element through a raw slice pointer, one element per work item.
#[rustc_offload_kernel]
pub fn double_raw(values: *mut [f32]) {
    let i = global_x();
    if i < values.len() {
        // SAFETY: the launch maps all of `values`, and each work item writes its own element.
        unsafe { (*values)[i] *= 2.0 };
    }
}

/// Rustc 1.95's form: a pointer to a fixed-size array, scaled by `factor`.
#[rustc_offload_kernel]
pub fn scale16(values: *mut [f32; 16], factor: f32) {
    let i = global_x();
    if i < 16 {
        // SAFETY: the launch maps the whole array, and each work item writes its own element.
        unsafe { (*values)[i] *= factor };
    }
}

/// Upstream's form of a kernel: the sum of each block's elements of `x` into `sums`, through the
/// launch's dynamic block-shared memory (`dyn_cache`: 4 bytes per thread of the block).
#[offload_kernel]
pub fn block_sums(x: &[u32], sums: &mut [u32]) {
    let (t, b, n) = (thread_idx_x() as usize, block_idx_x() as usize, block_dim_x() as usize);
    let shared = dynamic_shared_memory().cast::<u32>();
    let i = b * n + t;
    // SAFETY: each thread writes its own element of the block's `n` (the launch gives `4 * n`
    // bytes).
    unsafe { shared.add(t).write(if i < x.len() { x[i] } else { 0 }) };
    // SAFETY: every thread of the block reaches this barrier.
    unsafe { sync_threads() };
    if t == 0 {
        // SAFETY: the other threads' writes are ordered before the barrier.
        let sum = (0..n).fold(0u32, |sum, j| sum.wrapping_add(unsafe { shared.add(j).read() }));
        sums[b] = sum;
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

/// One Jacobi step of a 1-D three-point average: `dst[i] = (src[i - 1] + src[i] + src[i + 1])
/// / 3` inside, `dst[i] = src[i]` at both ends. Writes every element of `dst`, reads none.
#[offload_kernel]
pub fn smooth(src: &[f32], dst: &mut [f32]) {
    let i = global_x();
    if i < dst.len() {
        dst[i] = if i == 0 || i + 1 == src.len() {
            src[i]
        } else {
            (src[i - 1] + src[i] + src[i + 1]) / 3.0
        };
    }
}

/// `dst[i] = 1000 * src.len() + i` for the work item's `i`: a launch passes two raw slices of one
/// buffer that overlap (`src` the first elements, `dst` all but the first).
#[offload_kernel]
pub fn overlapping(src: *const [f32], dst: *mut [f32]) {
    let i = global_x();
    if i < dst.len() {
        // SAFETY: the launch maps all of `dst`, and each work item writes its own element.
        unsafe { (*dst)[i] = 1000.0 * src.len() as f32 + i as f32 };
    }
}
