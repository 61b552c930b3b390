//! The `bin` shape: a program that defines its kernels and launches them itself, with a kernel
//! of the workspace library `saxlib` besides. Each device pass compiles this file as a library
//! for the device (`offload_device`, without `std`); `main` is the host's.

#![feature(rustc_attrs, core_intrinsics, gpu_offload)]
#![allow(internal_features)]
#![cfg_attr(offload_device, no_std)]

use core::offload::{block_dim_x, block_idx_x, thread_idx_x};

pub const N: usize = 256;

/// `x[i] = x[i] * x[i]`, one work item per element.
#[rustc_offload_kernel]
pub fn square(x: *mut [f32; N]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < N {
        unsafe { (*x)[i] *= (*x)[i] };
    }
}

/// `x[i] += i`: launched only with the feature `extra`.
#[cfg(feature = "extra")]
#[rustc_offload_kernel]
pub fn add_index(x: *mut [f32; N]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < N {
        unsafe { (*x)[i] += i as f32 };
    }
}

/// Defined, never launched: no image holds it.
#[allow(dead_code)]
#[rustc_offload_kernel]
pub fn unlaunched(x: *mut [f32; N]) {
    unsafe { (*x)[0] = -1.0 };
}

#[cfg(not(offload_device))]
fn main() {
    let mut x: [f32; N] = core::array::from_fn(|i| i as f32 * 0.5);
    core::intrinsics::offload::<_, _, ()>(square, [4, 1, 1], [64, 1, 1], (&raw mut x,));
    #[cfg(feature = "extra")]
    core::intrinsics::offload::<_, _, ()>(add_index, [4, 1, 1], [64, 1, 1], (&raw mut x,));
    let mut y: [f32; saxlib::M] = core::array::from_fn(|i| i as f32);
    saxlib::axpb_all(2.0, &mut y, 1.0);
    let line = |v: &[f32]| v.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" ");
    println!("x: {}", line(&x));
    println!("y: {}", line(&y));
}
