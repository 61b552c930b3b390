// A crate outside the graph of `app`: its manifest must not replace `app`'s.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[rustc_offload_kernel]
pub fn other_kernel(x: *mut [f32; 32]) {
    unsafe { (*x)[0] = 1.0 };
}

#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn run(x: &mut [f32; 32]) {
    core::intrinsics::offload::<_, _, ()>(other_kernel, [1, 1, 1], [32, 1, 1], (x as *mut _,));
}
