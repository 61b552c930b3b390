// Kernels in the style rustc 1.95 accepts (and the offload authors' RAJAPerf ports use): the
// host declares each kernel in an `extern "C"` block, the GPU build defines it
// `#[no_mangle] #[rustc_offload_kernel] extern "gpu-kernel"`, the two sides `cfg`'d by
// `target_os`. Launched from trait methods and from plain functions; one kernel is never
// launched. Built as a `cdylib` with fat LTO and `panic = "abort"`, as HPC users build.

#![feature(rustc_attrs, core_intrinsics, abi_gpu_kernel)]
#![no_std]
#![allow(internal_features)]

#[cfg(target_os = "linux")]
unsafe extern "C" {
    fn suite_daxpy(n: usize, a: f64, x: *const f64, y: *mut f64);
    fn suite_dot(n: usize, x: *const f64, y: *const f64, out: *mut f64);
    fn suite_stencil3(n: usize, input: *const f32, output: *mut f32);
    fn suite_minmax(n: usize, x: *const i32, out: *mut [i32; 2]);
}

#[cfg(not(target_os = "linux"))]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub unsafe extern "gpu-kernel" fn suite_daxpy(n: usize, a: f64, x: *const f64, y: *mut f64) {
    let (x, y) =
        unsafe { (core::slice::from_raw_parts(x, n), core::slice::from_raw_parts_mut(y, n)) };
    for (y, x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

#[cfg(not(target_os = "linux"))]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub unsafe extern "gpu-kernel" fn suite_dot(n: usize, x: *const f64, y: *const f64, out: *mut f64) {
    let (x, y) = unsafe { (core::slice::from_raw_parts(x, n), core::slice::from_raw_parts(y, n)) };
    unsafe { *out = x.iter().zip(y).map(|(a, b)| a * b).sum() };
}

#[cfg(not(target_os = "linux"))]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub unsafe extern "gpu-kernel" fn suite_stencil3(n: usize, input: *const f32, output: *mut f32) {
    let (input, output) = unsafe {
        (core::slice::from_raw_parts(input, n), core::slice::from_raw_parts_mut(output, n))
    };
    for i in 1..n - 1 {
        output[i] = (input[i - 1] + input[i] + input[i + 1]) / 3.0;
    }
}

#[cfg(not(target_os = "linux"))]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub unsafe extern "gpu-kernel" fn suite_minmax(n: usize, x: *const i32, out: *mut [i32; 2]) {
    let x = unsafe { core::slice::from_raw_parts(x, n) };
    let lo = x.iter().copied().min().unwrap();
    let hi = x.iter().copied().max().unwrap();
    unsafe { *out = [lo, hi] };
}

/// Defined for the GPU like the others, launched by nothing.
#[cfg(not(target_os = "linux"))]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub unsafe extern "gpu-kernel" fn suite_never_launched(x: *mut f64) {
    unsafe { *x = 0.0 };
}

/// A kernel of the suite as the host runs it.
#[cfg(target_os = "linux")]
pub trait KernelBase {
    fn run(&mut self);
}

#[cfg(target_os = "linux")]
pub struct Daxpy<'a> {
    pub a: f64,
    pub x: &'a [f64],
    pub y: &'a mut [f64],
}

#[cfg(target_os = "linux")]
impl KernelBase for Daxpy<'_> {
    fn run(&mut self) {
        let args = (self.y.len(), self.a, self.x.as_ptr(), self.y.as_mut_ptr());
        core::intrinsics::offload::<_, _, ()>(suite_daxpy, [4, 1, 1], [64, 1, 1], args);
    }
}

#[cfg(target_os = "linux")]
pub struct Dot<'a> {
    pub x: &'a [f64],
    pub y: &'a [f64],
    pub out: f64,
}

#[cfg(target_os = "linux")]
impl KernelBase for Dot<'_> {
    fn run(&mut self) {
        let args = (self.x.len(), self.x.as_ptr(), self.y.as_ptr(), &raw mut self.out);
        core::intrinsics::offload::<_, _, ()>(suite_dot, [1, 1, 1], [64, 1, 1], args);
    }
}

/// Plain functions that launch the other two.
#[cfg(target_os = "linux")]
pub fn stencil(input: &[f32], output: &mut [f32]) {
    let args = (input.len(), input.as_ptr(), output.as_mut_ptr());
    core::intrinsics::offload::<_, _, ()>(suite_stencil3, [1, 1, 1], [64, 1, 1], args);
}

#[cfg(target_os = "linux")]
#[unsafe(no_mangle)]
pub extern "C" fn suite_run_minmax(x: *const i32, n: usize, out: *mut [i32; 2]) {
    core::intrinsics::offload::<_, _, ()>(suite_minmax, [1, 1, 1], [1, 1, 1], (n, x, out));
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}
