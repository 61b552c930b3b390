//! The kernel suite of the device-pass benchmark (`./x.py bench`): eleven kernels of the kinds
//! HPC codes port to GPUs (FIR filter, 1-D and 2-D stencils, dot product, matrix-vector
//! product, sum and max reductions, histogram, prefix sum, and generic `axpy` and `scale`). The
//! host functions launch ten of them, twelve instances in all; one is never launched.
//!
//! The manifest pipeline launches the generic kernels' instances directly
//! (`axpy::<f32>`, `axpy::<f64>`, `scale::<f32>`, `scale::<i32>`). The base pass (bare
//! `-Zoffload=Device`) cannot instantiate a generic kernel, since no launch reaches it, so
//! with `--cfg offload_base` the generic functions are ordinary helpers and a non-generic
//! kernel per launched instance calls them: the same code reaches the device either way.
//!
//! The host module takes its launch shapes, arrays and `run_suite` from `host_harness.rs`, which
//! `suite_195.rs` shares.
//!
//! `./x.py bench` appends generated unrelated functions to this file for its scaling series.

#![feature(rustc_attrs)]
#![feature(core_intrinsics)]
#![no_std]
#![allow(internal_features)]

use core::ops::{Add, Mul};

/// The panic handler of the device image: kernels reach core's panic paths (bounds checks), and
/// nothing else is linked into the image. The host build takes its panic handler from `std`.
#[cfg(any(target_arch = "amdgpu", target_arch = "nvptx64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// Elements per vector.
pub const N: usize = 1024;
/// Rows and columns of the square matrices and grids.
pub const M: usize = 64;
/// Taps of the FIR filter.
pub const TAPS: usize = 16;
/// Bins of the histogram.
pub const BINS: usize = 32;

/// FIR filter: `y[i] = sum_k h[k] * x[i + k]`, for the `N - TAPS + 1` full windows.
#[rustc_offload_kernel]
pub fn fir(x: *const [f32; N], h: *const [f32; TAPS], y: *mut [f32; N]) {
    let (x, h, y) = unsafe { (&*x, &*h, &mut *y) };
    for (yi, window) in y.iter_mut().zip(x.windows(TAPS)) {
        *yi = window.iter().zip(h.iter()).map(|(a, b)| a * b).sum();
    }
}

/// 5-point 1-D stencil with fixed ends.
#[rustc_offload_kernel]
pub fn stencil5(input: *const [f32; N], out: *mut [f32; N]) {
    let (input, out) = unsafe { (&*input, &mut *out) };
    out[..2].copy_from_slice(&input[..2]);
    out[N - 2..].copy_from_slice(&input[N - 2..]);
    for (o, w) in out[2..N - 2].iter_mut().zip(input.windows(5)) {
        *o = 0.1 * w[0] + 0.2 * w[1] + 0.4 * w[2] + 0.2 * w[3] + 0.1 * w[4];
    }
}

/// One Jacobi step of a 5-point 2-D stencil on an `M x M` grid with fixed borders.
#[rustc_offload_kernel]
pub fn jacobi2d(input: *const [[f32; M]; M], out: *mut [[f32; M]; M]) {
    let (input, out) = unsafe { (&*input, &mut *out) };
    for i in 0..M {
        for j in 0..M {
            out[i][j] = if i == 0 || j == 0 || i == M - 1 || j == M - 1 {
                input[i][j]
            } else {
                0.25 * (input[i - 1][j] + input[i + 1][j] + input[i][j - 1] + input[i][j + 1])
            };
        }
    }
}

/// Dot product of `x` and `y` into `out[0]`, summed per 64-element block.
#[rustc_offload_kernel]
pub fn dot(x: *const [f32; N], y: *const [f32; N], out: *mut [f32; 1]) {
    let (x, y) = unsafe { (&*x, &*y) };
    let mut total = 0.0f32;
    for (bx, by) in x.chunks_exact(64).zip(y.chunks_exact(64)) {
        total += bx.iter().zip(by).fold(0.0f32, |acc, (a, b)| acc + a * b);
    }
    unsafe { (*out)[0] = total };
}

/// Matrix-vector product `y = A x` for an `M x M` matrix.
#[rustc_offload_kernel]
pub fn matvec(a: *const [[f32; M]; M], x: *const [f32; M], y: *mut [f32; M]) {
    let (a, x, y) = unsafe { (&*a, &*x, &mut *y) };
    for (yi, row) in y.iter_mut().zip(a.iter()) {
        *yi = row.iter().zip(x.iter()).map(|(a, b)| a * b).sum();
    }
}

/// Sum and maximum of `x` into `out[0]` and `out[1]`.
#[rustc_offload_kernel]
pub fn sum_max(x: *const [f32; N], out: *mut [f32; 2]) {
    let x = unsafe { &*x };
    let sum = x.iter().sum::<f32>();
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    unsafe { *out = [sum, max] };
}

/// Histogram of values in `[0, 1)` into `BINS` bins; values outside are clamped.
#[rustc_offload_kernel]
pub fn histogram(x: *const [f32; N], bins: *mut [u32; BINS]) {
    let (x, bins) = unsafe { (&*x, &mut *bins) };
    bins.fill(0);
    for v in x {
        let bin = ((v.clamp(0.0, 0.999_999) * BINS as f32) as usize).min(BINS - 1);
        bins[bin] += 1;
    }
}

/// Inclusive prefix sum.
#[rustc_offload_kernel]
pub fn prefix_sum(x: *const [u32; N], out: *mut [u32; N]) {
    let (x, out) = unsafe { (&*x, &mut *out) };
    let mut acc = 0u32;
    for (o, v) in out.iter_mut().zip(x) {
        acc = acc.wrapping_add(*v);
        *o = acc;
    }
}

/// `y = a * x + y`, for any numeric type.
#[cfg_attr(not(offload_base), rustc_offload_kernel)]
pub fn axpy<T: Copy + Add<Output = T> + Mul<Output = T>>(a: T, x: *const [T; N], y: *mut [T; N]) {
    let (x, y) = unsafe { (&*x, &mut *y) };
    for (yi, xi) in y.iter_mut().zip(x.iter()) {
        *yi = a * *xi + *yi;
    }
}

/// `x = a * x`, for any numeric type.
#[cfg_attr(not(offload_base), rustc_offload_kernel)]
pub fn scale<T: Copy + Mul<Output = T>>(x: *mut [T; N], a: T) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v = *v * a;
    }
}

/// A kernel that the host never launches.
#[rustc_offload_kernel]
pub fn unused_transpose(a: *const [[f32; M]; M], t: *mut [[f32; M]; M]) {
    let (a, t) = unsafe { (&*a, &mut *t) };
    for i in 0..M {
        for j in 0..M {
            t[j][i] = a[i][j];
        }
    }
}

/// The generic kernels' launched instances as non-generic kernels, for the base pass.
#[cfg(offload_base)]
pub mod base_instances {
    use super::N;

    #[rustc_offload_kernel]
    pub fn axpy_f32(a: f32, x: *const [f32; N], y: *mut [f32; N]) {
        super::axpy(a, x, y)
    }

    #[rustc_offload_kernel]
    pub fn axpy_f64(a: f64, x: *const [f64; N], y: *mut [f64; N]) {
        super::axpy(a, x, y)
    }

    #[rustc_offload_kernel]
    pub fn scale_f32(x: *mut [f32; N], a: f32) {
        super::scale(x, a)
    }

    #[rustc_offload_kernel]
    pub fn scale_i32(x: *mut [i32; N], a: i32) {
        super::scale(x, a)
    }
}

/// Host side: launches every kernel but `unused_transpose` once, with the shapes a GPU would
/// use. Host-only code sits behind `cfg`: a launch cannot be codegened for the GPU.
#[cfg(target_arch = "x86_64")]
pub mod host {
    use core::intrinsics::offload;

    use super::*;

    include!("host_harness.rs");

    /// Launches the generic kernels' instances, last in `run_suite`: `axpy::<f32>` and the other
    /// three themselves in the manifest pipeline, their non-generic stand-ins (`axpy_f32`, ...)
    /// with `--cfg offload_base`.
    fn launch_instances(b: &mut Buffers) {
        #[cfg(not(offload_base))]
        {
            offload::<_, _, ()>(
                axpy::<f32>,
                GRID,
                BLOCK,
                (2.0f32, &b.x as *const _, &mut b.y as *mut _),
            );
            offload::<_, _, ()>(
                axpy::<f64>,
                GRID,
                BLOCK,
                (2.0f64, &b.xd as *const _, &mut b.yd as *mut _),
            );
            offload::<_, _, ()>(scale::<f32>, GRID, BLOCK, (&mut b.y as *mut _, 0.5f32));
            offload::<_, _, ()>(scale::<i32>, GRID, BLOCK, (&mut b.xi as *mut _, 3i32));
        }
        #[cfg(offload_base)]
        {
            use super::base_instances::*;
            offload::<_, _, ()>(
                axpy_f32,
                GRID,
                BLOCK,
                (2.0f32, &b.x as *const _, &mut b.y as *mut _),
            );
            offload::<_, _, ()>(
                axpy_f64,
                GRID,
                BLOCK,
                (2.0f64, &b.xd as *const _, &mut b.yd as *mut _),
            );
            offload::<_, _, ()>(scale_f32, GRID, BLOCK, (&mut b.y as *mut _, 0.5f32));
            offload::<_, _, ()>(scale_i32, GRID, BLOCK, (&mut b.xi as *mut _, 3i32));
        }
    }
}
