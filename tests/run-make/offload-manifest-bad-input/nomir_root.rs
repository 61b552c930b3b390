// A kernel that calls a function of a dependency built without the device pass's flag.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[rustc_offload_kernel]
pub fn twice(x: *mut f32) {
    unsafe { *x = nomir_dep::helper(*x) };
}

#[cfg(target_os = "linux")]
pub fn launch(x: &mut f32) {
    core::intrinsics::offload::<_, _, ()>(twice, [1, 1, 1], [1, 1, 1], (x as *mut f32,));
}
