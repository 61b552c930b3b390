//! Float math in a `no_std` kernel crate, the two ways such a crate has it: `core`'s own float
//! functions (`core::f32::math`, `core::f64::math`: the rounding functions, `mul_add`, `sqrt`,
//! `powi`, `cbrt`, the Euclidean division) and the `libm` crate (a port of musl's libm, the one
//! that compiler-builtins ships). Each kernel writes, for the argument `x[i]`, every function's
//! result into `out[i * N..]`; [`core_row`] and [`libm_row`] are the same code that the host
//! runs to check them.

#![feature(gpu_offload, core_intrinsics, core_float_math)]
#![allow(internal_features)]
#![no_std]

use core::f32::math as m32;
use core::f64::math as m64;
use core::offload::offload_kernel;

/// The device image's panic handler (`cargo offload` sets `offload_device` in its device
/// passes; the host takes `std`'s).
#[cfg(offload_device)]
#[panic_handler]
fn on_panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}

/// The number of results per argument of [`core_row`].
pub const CORE_FUNCTIONS: usize = 16;

/// How many of [`core_row`]'s results come first from `f32` functions (the rest are `f64`'s).
pub const CORE_F32_FUNCTIONS: usize = 10;

/// The largest distance, in ULPs of the function's own type, between [`core_row`]'s result on
/// the CPU device and on the host: 0 for every function. `cbrt`, which `core` declares from the
/// C library, included: a host program takes compiler-builtins' (a port of musl's, linked ahead
/// of glibc's), and so does the CPU device's image (patch 0066); before, the image called
/// glibc's, 1 ULP (`f32`) or 2 (`f64`) away over these arguments
/// (`src/doc/cargo-offload.md`, "Math in kernels").
pub const CORE_BOUNDS: [u64; CORE_FUNCTIONS] = [0; CORE_FUNCTIONS];

/// The number of results per argument of [`libm_row`].
pub const LIBM_FUNCTIONS: usize = 16;

/// `core`'s float functions of `x`, `f32` then `f64`, into `out` ([`CORE_FUNCTIONS`] values).
pub fn core_row(x: f32, out: &mut [f64]) {
    let d = x as f64;
    let row: [f64; CORE_FUNCTIONS] = [
        m32::floor(x) as f64,
        m32::ceil(x) as f64,
        m32::round(x) as f64,
        m32::trunc(x) as f64,
        m32::mul_add(x, 1.5, -0.25) as f64,
        m32::sqrt(x) as f64,
        m32::powi(x, 3) as f64,
        m32::cbrt(x) as f64,
        m32::rem_euclid(x, 0.75) as f64,
        m32::div_euclid(x, 0.75) as f64,
        m64::round_ties_even(d),
        m64::fract(d),
        m64::sqrt(d),
        m64::powi(d, -2),
        m64::cbrt(d),
        m64::mul_add(d, d, 1.0),
    ];
    out[..CORE_FUNCTIONS].copy_from_slice(&row);
}

/// The `libm` crate's functions of `x`, `f32` then `f64`, into `out` ([`LIBM_FUNCTIONS`]
/// values).
pub fn libm_row(x: f32, out: &mut [f64]) {
    let d = x as f64;
    let row: [f64; LIBM_FUNCTIONS] = [
        libm::sinf(x) as f64,
        libm::cosf(x) as f64,
        libm::expf(x) as f64,
        libm::logf(x) as f64,
        libm::powf(x, 1.25) as f64,
        libm::atan2f(x, 0.5) as f64,
        libm::tanhf(x) as f64,
        libm::erff(x) as f64,
        libm::sin(d),
        libm::tan(d),
        libm::exp(d),
        libm::log10(d),
        libm::pow(d, -0.5),
        libm::hypot(d, 3.0),
        libm::asinh(d),
        libm::lgamma(d),
    ];
    out[..LIBM_FUNCTIONS].copy_from_slice(&row);
}

/// The index of this work item in the whole grid (x dimension).
fn global_x() -> usize {
    (block_idx_x() * block_dim_x() + thread_idx_x()) as usize
}

/// [`core_row`] of each `x[i]` into `out[i * CORE_FUNCTIONS..]`.
#[offload_kernel]
pub fn core_math(x: &[f32], out: &mut [f64]) {
    let i = global_x();
    if i < x.len() {
        core_row(x[i], &mut out[i * CORE_FUNCTIONS..]);
    }
}

/// [`libm_row`] of each `x[i]` into `out[i * LIBM_FUNCTIONS..]`.
#[offload_kernel]
pub fn libm_math(x: &[f32], out: &mut [f64]) {
    let i = global_x();
    if i < x.len() {
        libm_row(x[i], &mut out[i * LIBM_FUNCTIONS..]);
    }
}
