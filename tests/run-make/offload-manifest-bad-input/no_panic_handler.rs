// A kernel that can panic (a bounds-checked index) in a crate graph that defines no panic
// handler for the GPU target.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[rustc_offload_kernel]
pub fn pick(out: *mut f32, x: *const [f32; 16], i: usize) {
    unsafe { *out = (*x)[i] };
}

#[cfg(target_os = "linux")]
pub fn launch(out: &mut f32, x: &[f32; 16], i: usize) {
    core::intrinsics::offload::<_, _, ()>(
        pick,
        [1, 1, 1],
        [1, 1, 1],
        (out as *mut f32, x as *const _, i),
    );
}
