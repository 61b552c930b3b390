//! A workspace library with a kernel, which a program that defines kernels of its own also
//! launches: that program's device image holds both.

#![feature(rustc_attrs, core_intrinsics, gpu_offload)]
#![allow(internal_features)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, thread_idx_x};

/// The device image's panic handler (`cargo offload` sets `offload_device` in its device
/// passes; the host takes std's).
#[cfg(offload_device)]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}

pub const M: usize = 128;

/// `x[i] = a * x[i] + b`, one work item per element.
#[rustc_offload_kernel]
pub fn axpb(a: f32, x: *mut [f32; M], b: f32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < M {
        unsafe { (*x)[i] = a * (*x)[i] + b };
    }
}

/// Launches [`axpb`] over `x`: 2 blocks of 64 work items.
pub fn axpb_all(a: f32, x: &mut [f32; M], b: f32) {
    core::intrinsics::offload::<_, _, ()>(axpb, [2, 1, 1], [64, 1, 1], (a, x as *mut _, b));
}
