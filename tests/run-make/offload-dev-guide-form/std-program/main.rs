// The dev-guide's launch in a `std` program that runs on the CPU device: a generic kernel
// launched without generic arguments, by `offload!` and by `core::offload::launch`, and
// literals for `u32` and `f32` parameters (`3_000_000_000` is past `i32::MAX`), which take the
// kernel's parameter types. A 1.95 launch with an `i32` literal for a `u32` parameter runs too.
// The grid's functions come from `std`'s prelude: nothing imports them.
#![cfg_attr(offload_device, no_std)]
#![feature(gpu_offload, core_intrinsics)]
#![allow(internal_features)]

use core::offload::{offload, offload_kernel};

#[offload_kernel]
fn fill<T: Copy>(x: *mut [T; 256], value: T) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < 256 {
        unsafe { (*x)[i] = value };
    }
}

#[offload_kernel]
fn affine(x: &mut [u32], base: u32, step: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        x[i] = base + step * i as u32;
    }
}

#[cfg(not(offload_device))]
fn main() {
    let mut x = [0.0f64; 256];
    offload! {
        kernel = fill,
        workgroup_dim = [4, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&mut x as *mut [f64; 256], 2.5),
    }
    println!("fill f64: {}", x.iter().filter(|&&v| v == 2.5).count());
    let mut y = [0.0f32; 256];
    let y_ptr = &mut y as *mut [f32; 256];
    core::offload::launch::<_, _, ()>(fill, [2, 1, 1], [128, 1, 1], 0, (y_ptr, 0.5));
    println!("fill f32: {}", y.iter().filter(|&&v| v == 0.5).count());
    let mut z = vec![0u32; 100];
    offload! {
        kernel = affine,
        workgroup_dim = [2, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&mut z[..], 3_000_000_000, 7),
    }
    let wrong = z.iter().enumerate().filter(|&(i, &v)| v != 3_000_000_000 + 7 * i as u32).count();
    println!("affine: {wrong} of {} wrong", z.len());
    core::intrinsics::offload::<_, _, ()>(affine, [2, 1, 1], [64, 1, 1], (&mut z[..], 40, 2));
    let wrong = z.iter().enumerate().filter(|&(i, &v)| v != 40 + 2 * i as u32).count();
    println!("affine 1.95: {wrong} of {} wrong", z.len());
}
