// The bottom of a four-crate graph (scenarios S5, S6): kernels only, no launches.

#![feature(rustc_attrs)]
#![no_std]
#![allow(internal_features)]

#[rustc_offload_kernel]
pub fn axpy(x: *mut [f32; 32], y: *const [f32; 32]) {
    let (x, y) = unsafe { (&mut *x, &*y) };
    for (x, y) in x.iter_mut().zip(y.iter()) {
        *x = 2.0 * *x + *y;
    }
}

#[rustc_offload_kernel]
pub fn scale<T: Copy + core::ops::Mul<Output = T>>(x: *mut [T; 32], a: T) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v = *v * a;
    }
}

/// Launched by nobody: absent from the image.
#[rustc_offload_kernel]
pub fn never_launched(x: *mut [f32; 32]) {
    unsafe { (*x)[0] = 0.0 };
}
