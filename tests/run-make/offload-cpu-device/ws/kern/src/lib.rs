//! Kernels of the CPU device test. Each is launched as a single work item (`[1, 1, 1]` blocks
//! of `[1, 1, 1]` threads) and loops over its whole array: the CPU device runs a kernel on one
//! thread, and none of these reads a GPU thread index.

#![feature(rustc_attrs, core_intrinsics)]
#![allow(internal_features)]
#![no_std]

/// The device image's panic handler (`cargo offload` sets `offload_device` in its device
/// passes; the host takes std's).
#[cfg(offload_device)]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}

pub const N: usize = 256;

/// `y = a * x + y`: a scalar, data in, data back.
#[rustc_offload_kernel]
pub fn saxpy(a: f32, x: *const [f32; N], y: *mut [f32; N]) {
    let (x, y) = unsafe { (&*x, &mut *y) };
    for (yi, xi) in y.iter_mut().zip(x.iter()) {
        *yi = a * *xi + *yi;
    }
}

/// A generic kernel, launched at two types.
#[rustc_offload_kernel]
pub fn scale<T: Copy + core::ops::Mul<Output = T>>(x: *mut [T; 8], a: T) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v = *v * a;
    }
}

/// A `#[repr(C)]` struct passed by value (24 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Affine {
    pub scale: f32,
    pub offset: f32,
    pub count: u32,
    pub shift: [u32; 3],
}

/// A struct and an array passed by value.
#[rustc_offload_kernel]
pub fn affine(out: *mut [f32; 8], p: Affine, taps: [f32; 8]) {
    let out = unsafe { &mut *out };
    for (i, o) in out.iter_mut().enumerate().take(p.count as usize) {
        *o = taps[(i + p.shift[0] as usize) % 8] * p.scale + p.offset;
    }
}

/// Reads through one pointer and writes through another.
#[rustc_offload_kernel]
pub fn copy_scaled(src: *const [i32; 16], dst: *mut [i32; 16], k: i32) {
    let (src, dst) = unsafe { (&*src, &mut *dst) };
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s * k - 1;
    }
}

/// Scalars of several widths, in an order that a swap would change: `3x - y + z`.
#[rustc_offload_kernel]
pub fn mixed(x: i64, y: i32, z: u8, w: f64, out: *mut [f64; 2]) {
    let out = unsafe { &mut *out };
    out[0] = (3 * x - y as i64 + z as i64) as f64;
    out[1] = w * 0.5;
}

/// A launch from a library function (recorded in this crate's metadata, not the program's).
#[inline(never)]
pub fn launch_saxpy(a: f32, x: &[f32; N], y: &mut [f32; N]) {
    core::intrinsics::offload::<_, _, ()>(
        saxpy,
        [1, 1, 1],
        [1, 1, 1],
        (a, x as *const _, y as *mut _),
    )
}
