//! A kernel library as a registry serves it (the test packs it into a local registry): a
//! generic kernel that the program launches, a kernel that this crate launches itself, and a
//! kernel that only the feature `extra` defines. The grid's functions come from the prelude.

#![feature(gpu_offload, core_intrinsics)]
#![allow(internal_features)]
#![no_std]

use core::offload::{offload, offload_kernel};
use core::ops::{Add, Mul};

/// The device image's panic handler (`cargo offload` sets `offload_device` in its device
/// passes; the host takes `std`'s).
#[cfg(offload_device)]
#[panic_handler]
fn on_panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}

/// The index of this work item in the whole grid (x dimension).
fn global_x() -> usize {
    (block_idx_x() * block_dim_x() + thread_idx_x()) as usize
}

/// `x[i] = a * x[i] + b` over the grid.
#[offload_kernel]
pub fn axpb<T: Copy + Mul<Output = T> + Add<Output = T>>(x: &mut [T], a: T, b: T) {
    let i = global_x();
    if i < x.len() {
        x[i] = a * x[i] + b;
    }
}

/// `x[i] += i` over the grid; launched by [`launch_add_index`].
#[offload_kernel]
pub fn add_index(x: &mut [u32]) {
    let i = global_x();
    if i < x.len() {
        x[i] += i as u32;
    }
}

/// Launches [`add_index`] over `x`, in blocks of 64 work items.
pub fn launch_add_index(x: &mut [u32]) {
    let blocks = x.len().div_ceil(64) as u32;
    offload! {
        kernel = add_index,
        workgroup_dim = [blocks, 1, 1],
        thread_dim = [64, 1, 1],
        args = (x,),
    }
}

/// `x[i] = x[i] * x[i]` over the grid.
#[cfg(feature = "extra")]
#[offload_kernel]
pub fn square(x: &mut [f64]) {
    let i = global_x();
    if i < x.len() {
        x[i] *= x[i];
    }
}
