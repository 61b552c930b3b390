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
//! `saxpy` and `stencil3` compute one element per work item, which reads its place in the
//! grid through `core::offload` (the same on every device: GPUs and the CPU device), and they
//! are launched over 16 blocks of 256 threads, one work item per element. `sum_reduce` is one
//! loop over the whole array, run by each of its 64 threads; it reads none of what it writes,
//! so every thread writes the same sum. (A first `saxpy` looped over the whole array in every
//! work item: on an H200 with 16 x 256 threads, `y` came out up to 12.25 times the reference.)

#![feature(rustc_attrs)]
#![feature(core_intrinsics)]
#![feature(gpu_offload)]
#![no_std]
#![allow(internal_features)]

use core::offload::{block_dim_x, block_idx_x, thread_idx_x};

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

/// The element of the calling work item: its index in a 1-D grid.
fn element() -> usize {
    (block_idx_x() * block_dim_x() + thread_idx_x()) as usize
}

/// `y[i] = a * x[i] + y[i]` for the work item's `i`.
#[rustc_offload_kernel]
pub fn saxpy(a: f32, x: *const [f32; N], y: *mut [f32; N]) {
    let i = element();
    if i < N {
        // Raw places, not references: other work items write other elements of `y` meanwhile.
        unsafe { (*y)[i] = a * (*x)[i] + (*y)[i] };
    }
}

/// 3-point Jacobi stencil with fixed ends: `out[i] = (in[i-1] + in[i] + in[i+1]) / 3` for the
/// work item's `i`.
#[rustc_offload_kernel]
pub fn stencil3(input: *const [f32; N], out: *mut [f32; N]) {
    let i = element();
    let input = unsafe { &*input };
    let value = match i {
        0 => input[0],
        _ if i == N - 1 => input[N - 1],
        _ if i < N => (input[i - 1] + input[i] + input[i + 1]) * (1.0 / 3.0),
        _ => return,
    };
    unsafe { (*out)[i] = value };
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

/// `y = a * x + y` on the GPU, one work item per element.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn launch_saxpy(a: f32, x: &[f32; N], y: &mut [f32; N]) {
    core::intrinsics::offload::<_, _, ()>(
        saxpy,
        [(N / 256) as u32, 1, 1],
        [256, 1, 1],
        (a, x as *const _, y as *mut _),
    )
}

/// One Jacobi step of `input` into `out` on the GPU, one work item per element.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn launch_stencil3(input: &[f32; N], out: &mut [f32; N]) {
    core::intrinsics::offload::<_, _, ()>(
        stencil3,
        [(N / 256) as u32, 1, 1],
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
