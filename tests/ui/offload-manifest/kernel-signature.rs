// The host metadata pass checks every `#[rustc_offload_kernel]` function of the crate where it
// is defined, and every launch where it is: the offload runtime calls a kernel with a fixed
// list of arguments and no return value, so a kernel returns `()` and is neither `async`, nor
// `#[track_caller]` (a hidden argument), nor C-variadic; a launch passes a tuple of the kernel's
// parameter types (`launch-pointer-args.rs`: the pointers and references that may stand in).

//@ needs-offload
//@ edition: 2024
//@ compile-flags: -Zunstable-options
//@ compile-flags: -Zoffload=HostMetadata={{build-base}}/offload-manifest/kernel-signature.json

#![feature(rustc_attrs, core_intrinsics, c_variadic)]
#![allow(internal_features)]
#![crate_type = "lib"]

#[rustc_offload_kernel]
pub fn returns_value(x: *mut f32) -> f32 {
    //~^ ERROR the offload kernel `returns_value` returns `f32`
    unsafe { *x }
}

#[rustc_offload_kernel]
pub async fn is_async(x: *mut f32) {
    //~^ ERROR the offload kernel `is_async` is `async`
    unsafe { *x = 1.0 };
}

#[rustc_offload_kernel]
#[track_caller]
pub fn tracks_caller(x: *mut f32) {
    //~^ ERROR the offload kernel `tracks_caller` is `#[track_caller]`
    unsafe { *x = 1.0 };
}

#[rustc_offload_kernel]
pub unsafe extern "C" fn variadic(x: *mut f32, mut rest: ...) {
    //~^ ERROR the offload kernel `variadic` is C-variadic
    unsafe { *x = rest.arg::<f64>() as f32 };
}

#[rustc_offload_kernel]
pub fn fine(x: *mut f32, n: u32) {
    unsafe { *x = n as f32 };
}

pub fn launch(x: &mut f32) {
    core::intrinsics::offload::<_, _, ()>(fine, [1, 1, 1], [1, 1, 1], (x as *mut f32, 1u32));
    core::intrinsics::offload::<_, _, ()>(fine, [1, 1, 1], [1, 1, 1], (x as *mut f32,));
    //~^ ERROR `offload` passes `(*mut f32,)` to the kernel `fine`, which takes `(*mut f32, u32)`
    core::intrinsics::offload::<_, _, ()>(fine, [1, 1, 1], [1, 1, 1], (x as *mut f32, 1u64));
    //~^ ERROR `offload` passes `(*mut f32, u64)` to the kernel `fine`, which takes `(*mut f32, u32)`
    let other_pointee = x as *mut f32 as *mut i32;
    core::intrinsics::offload::<_, _, ()>(fine, [1, 1, 1], [1, 1, 1], (other_pointee, 1u32));
    //~^ ERROR `offload` passes `(*mut i32, u32)` to the kernel `fine`, which takes `(*mut f32, u32)`
}
