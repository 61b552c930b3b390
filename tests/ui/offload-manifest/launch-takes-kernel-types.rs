// `offload!` and `core::offload::launch*` give a launch's arguments the kernel's parameter
// types, as a direct call of the kernel would: a generic kernel named without its generic
// arguments gets them from the arguments (the rustc-dev-guide's `kernel = kernel`), and an
// integer literal gets its parameter's type (`4_000_000_000` for a `u32` parameter compiles
// under `deny(overflowing_literals)`, which as the fallback `i32` it would not). rustc 1.95's
// `core::intrinsics::offload` keeps 1.95's types: an `i32` literal for a `u32` parameter (and
// an array of them for `[u32; 2]`) is accepted, since integers of one size hand the kernel the
// bytes it reads; an integer of another size is refused, and the error names the first
// parameter that the tuple does not fit. A real mismatch through `offload!` is refused the
// same way. Both forms give each argument the coercions of a call, so the host metadata pass
// finds the kernel's types: `&mut Vec<u32>` and `&mut [u32; 4]` for `&mut [u32]`, a `&mut
// [u32]` reborrowed by two launches in a row, `&Vec<f64>` for `&[f64]`. A mismatch names every
// parameter that differs, with a fix where one is plain (a reference, a conversion), or says
// that the arguments are the parameters' types in another order.

//@ needs-offload
//@ edition: 2024
//@ compile-flags: -Zunstable-options
//@ compile-flags: -Zoffload=HostMetadata={{build-base}}/offload-manifest/kernel-types.json

#![feature(gpu_offload, core_intrinsics)]
#![crate_type = "lib"]
#![deny(overflowing_literals)]

use core::offload::{launch, launch_on_device, offload, offload_kernel};

#[offload_kernel]
pub fn fill<T: Copy>(x: *mut [T; 256], value: T) {
    unsafe { (*x)[0] = value };
}

#[offload_kernel]
pub fn step(x: &mut [u32], by: u32, pair: [u32; 2]) {
    x[0] = by + pair[0];
}

pub fn inferred(x: &mut [f64; 256], c: &mut [u32]) {
    offload! {
        kernel = fill,
        workgroup_dim = [256, 1, 1],
        args = (x as *mut [f64; 256], 2.5),
    }
    launch::<_, _, ()>(fill, [1, 1, 1], [1, 1, 1], 0, (x as *mut [f64; 256], 1.0));
    offload! { kernel = step, args = (&mut c[..], 4_000_000_000, [3_000_000_000, 1]) }
    launch_on_device::<_, _, ()>(step, [1, 1, 1], [1, 1, 1], 0, -1, (&mut *c, 7, [1, 2]));
}

pub fn intrinsic_195(c: &mut [u32]) {
    core::intrinsics::offload::<_, _, ()>(step, [1, 1, 1], [1, 1, 1], (&mut *c, 40, [1, 2]));
    core::intrinsics::offload::<_, _, ()>(step, [1, 1, 1], [1, 1, 1], (&mut *c, 40i64, [1, 2]));
    //~^ ERROR `offload` passes `(&mut [u32], i64, [i32; 2])` to the kernel `step`
}

#[offload_kernel]
pub fn sum(x: &[f64], out: &mut [f64]) {
    out[0] = x[0];
}

pub fn coerced(w: &mut Vec<u32>, four: &mut [u32; 4], c: &mut [u32], x: &Vec<f64>) {
    offload! { kernel = step, args = (&mut *w, 5, [1, 2]) }
    offload! { kernel = step, args = (four, 5, [1, 2]) }
    offload! { kernel = step, args = (c, 5, [1, 2]) }
    offload! { kernel = step, args = (c, 6, [1, 2]) }
    let mut out = vec![0.0; 1];
    offload! { kernel = sum, args = (x, &mut out) }
    core::intrinsics::offload::<_, _, ()>(step, [1, 1, 1], [1, 1, 1], (w, 40, [1, 2]));
    core::intrinsics::offload::<_, _, ()>(sum, [1, 1, 1], [1, 1, 1], (x, &mut out));
}

#[offload_kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    y[0] += a * x[0];
}

pub fn badly_ordered(x: Vec<f32>, y: &mut Vec<f32>) {
    offload! { kernel = saxpy, args = (&x[..], 2.0f32, &mut y[..]) }
    //~^ ERROR `offload` passes `(&[f32], f32, &mut [f32])` to the kernel `saxpy`
    offload! { kernel = saxpy, args = (2.0, x, 3u8) }
    //~^ ERROR `offload` passes `(f32, Vec<f32>, u8)` to the kernel `saxpy`
}

pub fn mismatched(x: &mut [f64; 256], c: &mut [u32]) {
    offload! { kernel = step, args = (&mut *c, 1.5, [1, 2]) }
    //~^ ERROR `offload` passes `(&mut [u32], f64, [u32; 2])` to the kernel `step`
    offload! { kernel = fill, args = (x as *mut [f64; 256], 1u8) }
    //~^ ERROR `offload` passes `(*mut [f64; 256], u8)` to the kernel `fill::<f64>`
}
