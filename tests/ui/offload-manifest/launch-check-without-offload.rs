// A compilation without `-Zoffload` (`cargo check`, clippy, rust-analyzer's check on save)
// reports the launch errors whose types it knows without monomorphization, as the host
// metadata pass of `cargo offload` does: arguments that do not fit the kernel (here in another
// order), through `offload!` and rustc 1.95's `core::intrinsics::offload`, and a launched
// function that is not a kernel. Launches that fit, with the coercions of a call, are
// accepted. A launch in generic code whose types depend on the function's generic parameters
// is left to `cargo offload`'s host pass, which sees each instance.

//@ edition: 2024
//@ check-fail

#![feature(gpu_offload, core_intrinsics)]
#![crate_type = "lib"]

use core::offload::{offload, offload_kernel};

#[offload_kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    y[0] += a * x[0];
}

pub fn fits(x: &Vec<f32>, y: &mut Vec<f32>) {
    offload! { kernel = saxpy, args = (2.0, x, y) }
    core::intrinsics::offload::<_, _, ()>(saxpy, [1, 1, 1], [1, 1, 1], (2.0f32, x, y));
}

pub fn another_order(x: &[f32], y: &mut [f32]) {
    offload! { kernel = saxpy, args = (x, 2.0f32, &mut *y) }
    //~^ ERROR `offload` passes `(&[f32], f32, &mut [f32])` to the kernel `saxpy`
    core::intrinsics::offload::<_, _, ()>(saxpy, [1, 1, 1], [1, 1, 1], (x, 2.0f32, y));
    //~^ ERROR `offload` passes `(&[f32], f32, &mut [f32])` to the kernel `saxpy`
}

fn plain(x: &mut [f32]) {
    x[0] = 1.0;
}

pub fn not_a_kernel(x: &mut [f32]) {
    offload! { kernel = plain, args = (x,) }
    //~^ ERROR
}

pub fn generic<T: Copy>(a: T, x: &[f32], y: &mut [f32]) {
    offload! { kernel = saxpy, args = (a, x, y) }
}

// A function without a launch gets no MIR built by the check: a check build reports no MIR lint
// (`unconditional_panic`) that `cargo build` would.
pub fn no_launch() -> i32 {
    let x = [1, 2];
    x[3]
}
