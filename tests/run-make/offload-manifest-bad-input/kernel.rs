// One launched kernel, for the bad-input test. `--cfg renamed` renames it (a stale manifest).

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[cfg(not(renamed))]
#[rustc_offload_kernel]
pub fn double(x: *mut [f32; 16]) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v *= 2.0;
    }
}

#[cfg(renamed)]
#[rustc_offload_kernel]
pub fn twice(x: *mut [f32; 16]) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v *= 2.0;
    }
}

#[cfg(all(target_arch = "x86_64", not(renamed)))]
pub fn launch(x: &mut [f32; 16]) {
    core::intrinsics::offload::<_, _, ()>(double, [1, 1, 1], [16, 1, 1], (x as *mut _,))
}
