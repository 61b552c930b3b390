// A corpus of realistic kernels (issue: complete device images). Each kernel reaches code that
// a device image must define itself: core's panic paths and the panic handler of a dependency,
// statics of this crate, of a dependency and of core, vtables, tables of function pointers,
// items of a dependency bound by symbol. Host code launches each one.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

use core::sync::atomic::{AtomicU32, Ordering};

use devlib::{Circle, Shape, Square};

/// A lookup table of this crate.
static LOCAL_LUT: [u32; 16] = [0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4];

unsafe extern "C" {
    /// Defined `#[no_mangle]` by `devlib`.
    fn devlib_saturate(x: f32) -> f32;
    /// Defined `#[no_mangle]` by `devlib`.
    static DEVLIB_TABLE: [u32; 8];
}

/// Bounds-checked indexing: `x[idx[i]]` panics through core's `panic_bounds_check` (S11).
#[rustc_offload_kernel]
pub fn gather(out: *mut f32, x: *const f32, idx: *const u32, n: usize) {
    let (out, x, idx) = unsafe {
        (
            core::slice::from_raw_parts_mut(out, n),
            core::slice::from_raw_parts(x, n),
            core::slice::from_raw_parts(idx, n),
        )
    };
    for i in 0..n {
        out[i] = x[idx[i] as usize];
    }
}

/// Iterator chains: `zip`, `step_by`, `enumerate`, and a closure.
#[rustc_offload_kernel]
pub fn strided_dot(out: *mut f32, a: *const f32, b: *const f32, n: usize) {
    let (a, b) = unsafe { (core::slice::from_raw_parts(a, n), core::slice::from_raw_parts(b, n)) };
    let weight = |i: usize| if i % 2 == 0 { 1.0 } else { 0.5 };
    let sum: f32 =
        a.iter().zip(b).step_by(2).enumerate().map(|(i, (x, y))| weight(i) * x * y).sum();
    unsafe { *out = sum };
}

/// Integer division (panics on zero), `Option::unwrap`, `checked_*`.
#[rustc_offload_kernel]
pub fn divide(a: *mut u32, d: *const u32, n: usize) {
    let (a, d) =
        unsafe { (core::slice::from_raw_parts_mut(a, n), core::slice::from_raw_parts(d, n)) };
    for (v, d) in a.iter_mut().zip(d) {
        *v = *v / *d + v.checked_rem(*d).unwrap();
    }
}

/// Statics of this crate, of a dependency (through its path and through an `extern`
/// declaration; S12), and a dependency function bound by symbol.
#[rustc_offload_kernel]
pub fn tables(out: *mut f32, bits: *mut u32, n: usize) {
    let (out, bits) = unsafe {
        (core::slice::from_raw_parts_mut(out, n), core::slice::from_raw_parts_mut(bits, n))
    };
    for (i, (o, b)) in out.iter_mut().zip(bits.iter_mut()).enumerate() {
        *o = unsafe { devlib_saturate(devlib::poly(*o)) };
        *b = LOCAL_LUT[(*b & 15) as usize] + unsafe { DEVLIB_TABLE[i % 8] };
    }
}

/// `char` and Unicode: core's tables behind `is_alphabetic` and `to_digit` (S13).
#[rustc_offload_kernel]
pub fn classify(codes: *const u32, out: *mut u32, n: usize) {
    let (codes, out) =
        unsafe { (core::slice::from_raw_parts(codes, n), core::slice::from_raw_parts_mut(out, n)) };
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
pub fn float_math(x: *mut f32, n: usize) {
    let x = unsafe { core::slice::from_raw_parts_mut(x, n) };
    for v in x {
        *v = v.abs().min(4.0).max(-4.0).copysign(-1.0) + f32::from_bits(v.to_bits() & 0x7f80_0000);
    }
}

/// Atomics: a histogram.
#[rustc_offload_kernel]
pub fn histogram(bins: *const AtomicU32, values: *const u32, n: usize) {
    let (bins, values) =
        unsafe { (core::slice::from_raw_parts(bins, 16), core::slice::from_raw_parts(values, n)) };
    for v in values {
        bins[(*v % 16) as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// A `#[repr(C)]` struct and an array passed by value (S15).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Params {
    pub scale: f32,
    pub offset: f32,
    pub count: u32,
}

#[rustc_offload_kernel]
pub fn affine(out: *mut f32, params: Params, taps: [f32; 4]) {
    let out = unsafe { core::slice::from_raw_parts_mut(out, params.count as usize) };
    for (i, o) in out.iter_mut().enumerate() {
        *o = taps[i % 4] * params.scale + params.offset;
    }
}

/// A generic kernel (for the base pipeline, which cannot instantiate generic kernels, the
/// non-generic kernels of `base_instances` call it).
#[cfg_attr(not(offload_base), rustc_offload_kernel)]
pub fn axpy<T: Copy + core::ops::Mul<Output = T> + core::ops::Add<Output = T>>(
    y: *mut T,
    x: *const T,
    a: T,
    n: usize,
) {
    let (y, x) =
        unsafe { (core::slice::from_raw_parts_mut(y, n), core::slice::from_raw_parts(x, n)) };
    for (y, x) in y.iter_mut().zip(x) {
        *y = a * *x + *y;
    }
}

#[cfg(offload_base)]
pub mod base_instances {
    #[rustc_offload_kernel]
    pub fn axpy_f32(y: *mut f32, x: *const f32, a: f32, n: usize) {
        super::axpy(y, x, a, n)
    }

    #[rustc_offload_kernel]
    pub fn axpy_u64(y: *mut u64, x: *const u64, a: u64, n: usize) {
        super::axpy(y, x, a, n)
    }
}

/// A `dyn Trait` call: vtables of a dependency's types (S14).
#[rustc_offload_kernel]
pub fn areas(out: *mut f32, kinds: *const u32, n: usize) {
    let (out, kinds) =
        unsafe { (core::slice::from_raw_parts_mut(out, n), core::slice::from_raw_parts(kinds, n)) };
    let (circle, square) = (Circle(1.5), Square(2.0));
    for (o, k) in out.iter_mut().zip(kinds) {
        let shape: &dyn Shape = if *k == 0 { &circle } else { &square };
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

/// A table of function pointers in a static (S14).
static OPS: [fn(f32) -> f32; 3] = [double, square, negate];

#[rustc_offload_kernel]
pub fn apply_ops(x: *mut f32, ops: *const u32, n: usize) {
    let (x, ops) =
        unsafe { (core::slice::from_raw_parts_mut(x, n), core::slice::from_raw_parts(ops, n)) };
    for (v, op) in x.iter_mut().zip(ops) {
        *v = OPS[*op as usize % 3](*v);
    }
}

/// 128-bit integers: multiplication and division.
#[rustc_offload_kernel]
pub fn wide(a: *mut u64, b: *const u64, n: usize) {
    let (a, b) =
        unsafe { (core::slice::from_raw_parts_mut(a, n), core::slice::from_raw_parts(b, n)) };
    for (a, b) in a.iter_mut().zip(b) {
        let p = *a as i128 * *b as i128;
        *a = (p / (*b as i128 | 1)) as u64;
    }
}

/// Launches every kernel of the corpus.
#[cfg(target_arch = "x86_64")]
pub fn run_all(f: &mut [f32; 64], g: &mut [f32; 64], u: &mut [u32; 64], w: &mut [u64; 64]) {
    use core::intrinsics::offload;
    let n = 64usize;
    let (fp, gp, up, wp) = (f.as_mut_ptr(), g.as_mut_ptr(), u.as_mut_ptr(), w.as_mut_ptr());
    let grid = [1, 1, 1];
    let block = [1, 1, 1];
    offload::<_, _, ()>(gather, grid, block, (fp, gp as *const f32, up as *const u32, n));
    offload::<_, _, ()>(strided_dot, grid, block, (fp, gp as *const f32, gp as *const f32, n));
    offload::<_, _, ()>(divide, grid, block, (up, up as *const u32, n));
    offload::<_, _, ()>(tables, grid, block, (fp, up, n));
    offload::<_, _, ()>(classify, grid, block, (up as *const u32, up, n));
    offload::<_, _, ()>(float_math, grid, block, (fp, n));
    offload::<_, _, ()>(histogram, grid, block, (up as *const AtomicU32, up as *const u32, n));
    let params = Params { scale: 2.0, offset: 1.0, count: 64 };
    offload::<_, _, ()>(affine, grid, block, (fp, params, [1.0f32, 2.0, 3.0, 4.0]));
    offload::<_, _, ()>(axpy::<f32>, grid, block, (fp, gp as *const f32, 2.0f32, n));
    offload::<_, _, ()>(axpy::<u64>, grid, block, (wp, wp as *const u64, 3u64, n));
    offload::<_, _, ()>(areas, grid, block, (fp, up as *const u32, n));
    offload::<_, _, ()>(apply_ops, grid, block, (fp, up as *const u32, n));
    offload::<_, _, ()>(wide, grid, block, (wp, wp as *const u64, n));
}
