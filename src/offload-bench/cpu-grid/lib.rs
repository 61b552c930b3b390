//! Kernels of the CPU device's grid benchmark (`main.rs`): the same saxpy written one work item
//! per element, as GPU kernels are, and as one work item that loops over the whole array.

#![feature(rustc_attrs, core_intrinsics, gpu_offload)]
#![allow(internal_features)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, thread_idx_x};

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
