//! The realistic corpus of `offload-manifest-complete` in a form that runs on the CPU device:
//! the same kernels, over `*mut [T; M]` arrays (the runtime copies `size_of` of the pointee, so
//! a `*mut f32` would bring one element) and launched as single work items. Each reaches code
//! that the image defines itself: core's panic paths, statics of this crate, of a dependency
//! and of core, an item of a dependency bound by symbol, vtables and a table of function
//! pointers.

#![feature(rustc_attrs)]
#![allow(internal_features)]
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};

pub const M: usize = 64;

/// A lookup table of this crate.
static LOCAL_LUT: [u32; 16] = [0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4];

unsafe extern "C" {
    /// Defined `#[no_mangle]` by `kern2`.
    fn kern2_saturate(x: f32) -> f32;
    /// Defined `#[no_mangle]` by `kern2`.
    static KERN2_TABLE: [u32; 8];
}

/// Bounds-checked indexing through an index array.
#[rustc_offload_kernel]
pub fn gather(out: *mut [f32; M], x: *const [f32; M], idx: *const [u32; M]) {
    let (out, x, idx) = unsafe { (&mut *out, &*x, &*idx) };
    for i in 0..M {
        out[i] = x[idx[i] as usize];
    }
}

/// Iterator chains: `zip`, `step_by`, `enumerate`, and a closure.
#[rustc_offload_kernel]
pub fn strided_dot(out: *mut [f32; 1], a: *const [f32; M], b: *const [f32; M]) {
    let (a, b) = unsafe { (&*a, &*b) };
    let weight = |i: usize| if i % 2 == 0 { 1.0 } else { 0.5 };
    let sum: f32 =
        a.iter().zip(b).step_by(2).enumerate().map(|(i, (x, y))| weight(i) * x * y).sum();
    unsafe { (*out)[0] = sum };
}

/// Integer division, `checked_rem` and `unwrap`.
#[rustc_offload_kernel]
pub fn divide(a: *mut [u32; M], d: *const [u32; M]) {
    let (a, d) = unsafe { (&mut *a, &*d) };
    for (v, d) in a.iter_mut().zip(d) {
        *v = *v / *d + v.checked_rem(*d).unwrap();
    }
}

/// Statics of this crate and of a dependency (by path and by symbol), a dependency's function
/// bound by symbol.
#[rustc_offload_kernel]
pub fn tables(out: *mut [f32; M], bits: *mut [u32; M]) {
    let (out, bits) = unsafe { (&mut *out, &mut *bits) };
    for (i, (o, b)) in out.iter_mut().zip(bits.iter_mut()).enumerate() {
        *o = unsafe { kern2_saturate(kern2::poly(*o)) };
        *b = LOCAL_LUT[(*b & 15) as usize] + unsafe { KERN2_TABLE[i % 8] };
    }
}

/// `char` and Unicode: core's tables behind `is_alphabetic` and `to_digit`.
#[rustc_offload_kernel]
pub fn classify(codes: *const [u32; M], out: *mut [u32; M]) {
    let (codes, out) = unsafe { (&*codes, &mut *out) };
    for (c, o) in codes.iter().zip(out.iter_mut()) {
        *o = match char::from_u32(*c) {
            Some(c) if c.is_alphabetic() => 1,
            Some(c) => c.to_digit(16).map_or(2, |d| 16 + d),
            None => 0,
        };
    }
}

/// Float math through core.
#[rustc_offload_kernel]
pub fn float_math(x: *mut [f32; M]) {
    for v in unsafe { &mut *x } {
        *v = v.abs().min(4.0).max(-4.0).copysign(-1.0) + f32::from_bits(v.to_bits() & 0x7f80_0000);
    }
}

/// Atomics: a histogram of 16 bins. `*mut`, although atomics need only a shared reference:
/// the runtime copies back only what a kernel takes mutably.
#[rustc_offload_kernel]
pub fn histogram(bins: *mut [AtomicU32; 16], values: *const [u32; M]) {
    let (bins, values) = unsafe { (&*bins, &*values) };
    for v in values {
        bins[(*v % 16) as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// A small `#[repr(C)]` struct (12 bytes) and an array (16 bytes) by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Params {
    pub scale: f32,
    pub offset: f32,
    pub count: u32,
}

#[rustc_offload_kernel]
pub fn affine(out: *mut [f32; M], params: Params, taps: [f32; 4]) {
    let out = unsafe { &mut *out };
    for (i, o) in out.iter_mut().enumerate().take(params.count as usize) {
        *o = taps[i % 4] * params.scale + params.offset;
    }
}

/// A generic kernel, launched at `f32` and `u64`.
#[rustc_offload_kernel]
pub fn axpy<T: Copy + core::ops::Mul<Output = T> + core::ops::Add<Output = T>>(
    y: *mut [T; M],
    x: *const [T; M],
    a: T,
) {
    let (y, x) = unsafe { (&mut *y, &*x) };
    for (y, x) in y.iter_mut().zip(x) {
        *y = a * *x + *y;
    }
}

/// A `dyn Trait` call: vtables of a dependency's types.
#[rustc_offload_kernel]
pub fn areas(out: *mut [f32; M], kinds: *const [u32; M]) {
    let (out, kinds) = unsafe { (&mut *out, &*kinds) };
    let (circle, square) = (kern2::Circle(1.5), kern2::Square(2.0));
    for (o, k) in out.iter_mut().zip(kinds) {
        let shape: &dyn kern2::Shape = if *k == 0 { &circle } else { &square };
        *o = shape.area();
    }
}

fn double(x: f32) -> f32 {
    x * 2.0
}
fn square(x: f32) -> f32 {
    x * x
}
fn negate(x: f32) -> f32 {
    -x
}

/// A table of function pointers in a static.
static OPS: [fn(f32) -> f32; 3] = [double, square, negate];

#[rustc_offload_kernel]
pub fn apply_ops(x: *mut [f32; M], ops: *const [u32; M]) {
    let (x, ops) = unsafe { (&mut *x, &*ops) };
    for (v, op) in x.iter_mut().zip(ops) {
        *v = OPS[*op as usize % 3](*v);
    }
}

/// 128-bit integers: multiplication and division.
#[rustc_offload_kernel]
pub fn wide(a: *mut [u64; M], b: *const [u64; M]) {
    let (a, b) = unsafe { (&mut *a, &*b) };
    for (a, b) in a.iter_mut().zip(b) {
        let p = *a as i128 * *b as i128;
        *a = (p / (*b as i128 | 1)) as u64;
    }
}
