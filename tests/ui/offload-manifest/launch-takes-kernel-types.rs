// `offload!` and `core::offload::launch*` give a launch's arguments the kernel's parameter
// types, as a direct call of the kernel would: a generic kernel named without its generic
// arguments gets them from the arguments (the rustc-dev-guide's `kernel = kernel`), and an
// integer literal gets its parameter's type (`4_000_000_000` for a `u32` parameter compiles
// under `deny(overflowing_literals)`, which as the fallback `i32` it would not). rustc 1.95's
// `core::intrinsics::offload` keeps 1.95's types: an `i32` literal for a `u32` parameter (and
// an array of them for `[u32; 2]`) is accepted, since integers of one size hand the kernel the
// bytes it reads; an integer of another size is refused, and the error names the first
// parameter that the tuple does not fit. A real mismatch through `offload!` is refused the
// same way.

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

pub fn mismatched(x: &mut [f64; 256], c: &mut [u32]) {
    offload! { kernel = step, args = (&mut *c, 1.5, [1, 2]) }
    //~^ ERROR `offload` passes `(&mut [u32], f64, [u32; 2])` to the kernel `step`
    offload! { kernel = fill, args = (x as *mut [f64; 256], 1u8) }
    //~^ ERROR `offload` passes `(*mut [f64; 256], u8)` to the kernel `fill::<f64>`
}
