//! The bundled offload example of the fork's main job: three kernels of the kinds HPC codes
//! port (a saxpy, a 3-point stencil, a sum reduction) and host functions that launch them
//! through `core::intrinsics::offload`.
//!
//! Each kernel is defined once, as a plain Rust function marked `#[rustc_offload_kernel]`,
//! without `#[no_mangle]`: the fork's device pass gives it the GPU kernel calling convention,
//! and host and device agree on its symbol without naming it. Only the host functions that
//! launch kernels sit behind `cfg`: the base compiler's bare `-Zoffload=Device` pass codegens
//! every public function, and a launch cannot be codegened for the GPU.
//!
//! The main job compiles this file through
//! - the base pipeline: bare `-Zoffload=Device` (every mono root), then `-Zoffload=Host`;
//! - the manifest pipeline: `-Zoffload=HostMetadata=<manifest>` on the host, then
//!   `-Zoffload=Device=<manifest>` (exactly the launched kernels and what they reach), then
//!   `-Zoffload=Host=<image>`.
//!
//! Each kernel is one loop over its whole array, run by every thread of the launch. Kernels
//! that read none of what they write (`stencil3`, `sum_reduce`) give the same result for any
//! launch shape, so they are launched with the shapes a GPU would use. `saxpy` reads and
//! writes `y`: several threads would each add `a * x` to it (on an H200 with 16 x 256 threads,
//! `y` came out up to 12.25 times the reference), so it runs on one thread.

#![feature(rustc_attrs)]
#![feature(core_intrinsics)]
#![no_std]
#![allow(internal_features)]

/// The panic handler of the device image: kernels reach core's panic paths (bounds checks), and
/// nothing else is linked into the image. The host build takes its panic handler from `std`.
/// `cargo offload` sets `offload_device` in its device passes, whose CPU device image
/// (`--offload-arch=host`) is built for the host's own target. A panic stops the kernel (a trap).
#[cfg(any(target_arch = "amdgpu", target_arch = "nvptx64", offload_device))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}

/// Elements per array.
pub const N: usize = 4096;

/// `y[i] = a * x[i] + y[i]` for every `i`.
#[rustc_offload_kernel]
pub fn saxpy(a: f32, x: *const [f32; N], y: *mut [f32; N]) {
    let (x, y) = unsafe { (&*x, &mut *y) };
    for (yi, xi) in y.iter_mut().zip(x.iter()) {
        *yi = a * *xi + *yi;
    }
}

/// 3-point Jacobi stencil with fixed ends: `out[i] = (in[i-1] + in[i] + in[i+1]) / 3`.
#[rustc_offload_kernel]
pub fn stencil3(input: *const [f32; N], out: *mut [f32; N]) {
    let (input, out) = unsafe { (&*input, &mut *out) };
    out[0] = input[0];
    out[N - 1] = input[N - 1];
    for (o, w) in out[1..N - 1].iter_mut().zip(input.windows(3)) {
        *o = (w[0] + w[1] + w[2]) * (1.0 / 3.0);
    }
}

/// Sum of `x` into `out[0]`, summed per 64-element block to keep the rounding error small.
#[rustc_offload_kernel]
pub fn sum_reduce(x: *const [f32; N], out: *mut [f32; 1]) {
    let x = unsafe { &*x };
    let mut total = 0.0f32;
    for block in x.chunks_exact(64) {
        total += block.iter().fold(0.0f32, |acc, v| acc + v);
    }
    unsafe { (*out)[0] = total };
}

/// A kernel that the host never launches: the manifest pipeline leaves it out of the image.
#[rustc_offload_kernel]
pub fn unused_fill(y: *mut [f32; N], value: f32) {
    let y = unsafe { &mut *y };
    y.fill(value);
}

/// `y = a * x + y` on the GPU, on one thread (see the module documentation).
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn launch_saxpy(a: f32, x: &[f32; N], y: &mut [f32; N]) {
    core::intrinsics::offload::<_, _, ()>(
        saxpy,
        [1, 1, 1],
        [1, 1, 1],
        (a, x as *const _, y as *mut _),
    )
}

/// One Jacobi step of `input` into `out` on the GPU.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn launch_stencil3(input: &[f32; N], out: &mut [f32; N]) {
    core::intrinsics::offload::<_, _, ()>(
        stencil3,
        [16, 1, 1],
        [256, 1, 1],
        (input as *const _, out as *mut _),
    )
}

/// The sum of `x`, computed on the GPU.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn launch_sum_reduce(x: &[f32; N]) -> f32 {
    let mut out = [0.0f32; 1];
    core::intrinsics::offload::<_, _, ()>(
        sum_reduce,
        [1, 1, 1],
        [64, 1, 1],
        (x as *const _, &mut out as *mut _),
    );
    out[0]
}
