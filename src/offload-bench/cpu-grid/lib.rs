//! Kernels of the CPU device's grid benchmark (`main.rs`): the same saxpy written one work item
//! per element, as GPU kernels are, and as one work item that loops over the whole array; and
//! a tiled matrix multiply with block-shared memory and barriers.

#![feature(rustc_attrs, core_intrinsics, gpu_offload)]
#![allow(internal_features)]
#![no_std]

use core::offload::{
    block_dim_x, block_idx_x, block_idx_y, block_shared, sync_threads, thread_idx_x, thread_idx_y,
};

#[cfg(offload_device)]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}

/// Elements of the arrays.
pub const N: usize = 1_000_000;

/// `y[i] = a * x[i] + y[i]` for the work item's `i`, bounds-checked.
#[rustc_offload_kernel]
pub fn saxpy_grid(a: f32, x: *const [f32; N], y: *mut [f32; N]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < N {
        unsafe { (*y)[i] = a * (*x)[i] + (*y)[i] };
    }
}

/// `y = a * x + y` over the whole array, in one work item.
#[rustc_offload_kernel]
pub fn saxpy_loop(a: f32, x: *const [f32; N], y: *mut [f32; N]) {
    let (x, y) = unsafe { (&*x, &mut *y) };
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi = a * *xi + *yi;
    }
}

/// Side of the square matrices (row-major) of the matrix multiply, and of its tiles.
pub const MM: usize = 512;
pub const TILE: usize = 16;

block_shared! {
    /// The tiles of `a` and `b` that a block multiplies.
    static TILE_A: [[f32; TILE]; TILE];
    static TILE_B: [[f32; TILE]; TILE];
}

/// `c = a * b`, one element of `c` per work item over `TILE` x `TILE` blocks, through tiles in
/// block-shared memory with two barriers per tile.
#[rustc_offload_kernel]
pub fn matmul_tiled(a: *const [f32; MM * MM], b: *const [f32; MM * MM], c: *mut [f32; MM * MM]) {
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    let col = block_idx_x() as usize * TILE + tx;
    let row = block_idx_y() as usize * TILE + ty;
    let (tile_a, tile_b) = (TILE_A.get(), TILE_B.get());
    let mut sum = 0.0f32;
    for t in 0..MM / TILE {
        // SAFETY: every thread of the block reaches both barriers of each tile.
        unsafe {
            (*tile_a)[ty][tx] = (*a)[row * MM + t * TILE + tx];
            (*tile_b)[ty][tx] = (*b)[(t * TILE + ty) * MM + col];
            sync_threads();
            for k in 0..TILE {
                sum += (*tile_a)[ty][k] * (*tile_b)[k][tx];
            }
            sync_threads();
        }
    }
    unsafe { (*c)[row * MM + col] = sum };
}

/// Does nothing: what a launch costs without work or data.
#[rustc_offload_kernel]
pub fn empty(_unused: u32) {}
