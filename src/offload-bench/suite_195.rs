//! The benchmark's kernel suite (`suite.rs`) in the style rustc 1.95 accepts, input (d) of
//! `./x.py bench`: the GPU build defines each kernel `#[unsafe(no_mangle)]
//! #[rustc_offload_kernel] extern "gpu-kernel"`, the host declares it in an `extern "C"` block
//! and launches it by that declaration; the two sides are `cfg`'d by `target_os`. The kernels'
//! bodies are `suite.rs`'s; the generic `axpy` and `scale` are helpers that a non-generic kernel
//! per launched instance calls (`axpy_f32`, ...), as 1.95 requires. `unused_transpose` is never
//! launched.
//!
//! The benchmark builds it as an `rlib` in the modes of the other inputs, and as a `cdylib`
//! with fat LTO and `panic = "abort"` through the base pass: the offload authors' own
//! configuration, in which LTO keeps only what the `#[no_mangle]` kernels reach.

#![feature(rustc_attrs, core_intrinsics, abi_gpu_kernel)]
#![no_std]
#![allow(internal_features)]

/// Elements per vector.
pub const N: usize = 1024;
/// Rows and columns of the square matrices and grids.
pub const M: usize = 64;
/// Taps of the FIR filter.
pub const TAPS: usize = 16;
/// Bins of the histogram.
pub const BINS: usize = 32;

/// The device side: the kernels' definitions.
#[cfg(not(target_os = "linux"))]
mod device {
    use core::ops::{Add, Mul};

    use super::{BINS, M, N, TAPS};

    /// The panic handler of the device image, which links nothing else.
    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
        loop {}
    }

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn fir(
        x: *const [f32; N],
        h: *const [f32; TAPS],
        y: *mut [f32; N],
    ) {
        let (x, h, y) = unsafe { (&*x, &*h, &mut *y) };
        for (yi, window) in y.iter_mut().zip(x.windows(TAPS)) {
            *yi = window.iter().zip(h.iter()).map(|(a, b)| a * b).sum();
        }
    }

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn stencil5(input: *const [f32; N], out: *mut [f32; N]) {
        let (input, out) = unsafe { (&*input, &mut *out) };
        out[..2].copy_from_slice(&input[..2]);
        out[N - 2..].copy_from_slice(&input[N - 2..]);
        for (o, w) in out[2..N - 2].iter_mut().zip(input.windows(5)) {
            *o = 0.1 * w[0] + 0.2 * w[1] + 0.4 * w[2] + 0.2 * w[3] + 0.1 * w[4];
        }
    }

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn jacobi2d(
        input: *const [[f32; M]; M],
        out: *mut [[f32; M]; M],
    ) {
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

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn dot(
        x: *const [f32; N],
        y: *const [f32; N],
        out: *mut [f32; 1],
    ) {
        let (x, y) = unsafe { (&*x, &*y) };
        let mut total = 0.0f32;
        for (bx, by) in x.chunks_exact(64).zip(y.chunks_exact(64)) {
            total += bx.iter().zip(by).fold(0.0f32, |acc, (a, b)| acc + a * b);
        }
        unsafe { (*out)[0] = total };
    }

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn matvec(
        a: *const [[f32; M]; M],
        x: *const [f32; M],
        y: *mut [f32; M],
    ) {
        let (a, x, y) = unsafe { (&*a, &*x, &mut *y) };
        for (yi, row) in y.iter_mut().zip(a.iter()) {
            *yi = row.iter().zip(x.iter()).map(|(a, b)| a * b).sum();
        }
    }

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn sum_max(x: *const [f32; N], out: *mut [f32; 2]) {
        let x = unsafe { &*x };
        let sum = x.iter().sum::<f32>();
        let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        unsafe { *out = [sum, max] };
    }

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn histogram(x: *const [f32; N], bins: *mut [u32; BINS]) {
        let (x, bins) = unsafe { (&*x, &mut *bins) };
        bins.fill(0);
        for v in x {
            let bin = ((v.clamp(0.0, 0.999_999) * BINS as f32) as usize).min(BINS - 1);
            bins[bin] += 1;
        }
    }

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn prefix_sum(x: *const [u32; N], out: *mut [u32; N]) {
        let (x, out) = unsafe { (&*x, &mut *out) };
        let mut acc = 0u32;
        for (o, v) in out.iter_mut().zip(x) {
            acc = acc.wrapping_add(*v);
            *o = acc;
        }
    }

    /// `y = a * x + y`, for any numeric type.
    fn axpy<T: Copy + Add<Output = T> + Mul<Output = T>>(a: T, x: *const [T; N], y: *mut [T; N]) {
        let (x, y) = unsafe { (&*x, &mut *y) };
        for (yi, xi) in y.iter_mut().zip(x.iter()) {
            *yi = a * *xi + *yi;
        }
    }

    /// `x = a * x`, for any numeric type.
    fn scale<T: Copy + Mul<Output = T>>(x: *mut [T; N], a: T) {
        for v in unsafe { &mut *x }.iter_mut() {
            *v = *v * a;
        }
    }

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn axpy_f32(a: f32, x: *const [f32; N], y: *mut [f32; N]) {
        axpy(a, x, y)
    }

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn axpy_f64(a: f64, x: *const [f64; N], y: *mut [f64; N]) {
        axpy(a, x, y)
    }

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn scale_f32(x: *mut [f32; N], a: f32) {
        scale(x, a)
    }

    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn scale_i32(x: *mut [i32; N], a: i32) {
        scale(x, a)
    }

    /// A kernel that the host never launches.
    #[unsafe(no_mangle)]
    #[rustc_offload_kernel]
    pub unsafe extern "gpu-kernel" fn unused_transpose(
        a: *const [[f32; M]; M],
        t: *mut [[f32; M]; M],
    ) {
        let (a, t) = unsafe { (&*a, &mut *t) };
        for i in 0..M {
            for j in 0..M {
                t[j][i] = a[i][j];
            }
        }
    }
}

/// The host side: declares the launched kernels and launches each once, with the shapes a GPU
/// would use.
#[cfg(target_os = "linux")]
pub mod host {
    use core::intrinsics::offload;

    use super::{BINS, M, N, TAPS};

    unsafe extern "C" {
        fn fir(x: *const [f32; N], h: *const [f32; TAPS], y: *mut [f32; N]);
        fn stencil5(input: *const [f32; N], out: *mut [f32; N]);
        fn jacobi2d(input: *const [[f32; M]; M], out: *mut [[f32; M]; M]);
        fn dot(x: *const [f32; N], y: *const [f32; N], out: *mut [f32; 1]);
        fn matvec(a: *const [[f32; M]; M], x: *const [f32; M], y: *mut [f32; M]);
        fn sum_max(x: *const [f32; N], out: *mut [f32; 2]);
        fn histogram(x: *const [f32; N], bins: *mut [u32; BINS]);
        fn prefix_sum(x: *const [u32; N], out: *mut [u32; N]);
        fn axpy_f32(a: f32, x: *const [f32; N], y: *mut [f32; N]);
        fn axpy_f64(a: f64, x: *const [f64; N], y: *mut [f64; N]);
        fn scale_f32(x: *mut [f32; N], a: f32);
        fn scale_i32(x: *mut [i32; N], a: i32);
    }

    include!("host_harness.rs");

    /// Launches the non-generic kernels that stand for the generic `axpy` and `scale`, last in
    /// `run_suite`.
    fn launch_instances(b: &mut Buffers) {
        offload::<_, _, ()>(axpy_f32, GRID, BLOCK, (2.0f32, &b.x as *const _, &mut b.y as *mut _));
        offload::<_, _, ()>(
            axpy_f64,
            GRID,
            BLOCK,
            (2.0f64, &b.xd as *const _, &mut b.yd as *mut _),
        );
        offload::<_, _, ()>(scale_f32, GRID, BLOCK, (&mut b.y as *mut _, 0.5f32));
        offload::<_, _, ()>(scale_i32, GRID, BLOCK, (&mut b.xi as *mut _, 3i32));
    }

    /// The `cdylib`'s one export, so that LTO keeps the launches on the host.
    #[unsafe(no_mangle)]
    pub extern "C" fn suite_195_run(b: &mut Buffers) {
        run_suite(b)
    }

    /// The host `cdylib` links no `std`.
    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
        loop {}
    }
}
