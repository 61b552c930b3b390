// A kernel declared in an `extern` block on the host (the 1.95 style) whose GPU definition is
// missing, or lacks `#[rustc_offload_kernel]` (`--cfg not_a_kernel`).

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[cfg(target_os = "linux")]
unsafe extern "C" {
    fn declared_kernel(x: *mut f32);
}

#[cfg(target_os = "linux")]
pub fn launch(x: &mut f32) {
    core::intrinsics::offload::<_, _, ()>(declared_kernel, [1, 1, 1], [1, 1, 1], (x as *mut f32,));
}

#[cfg(all(not(target_os = "linux"), not_a_kernel))]
#[unsafe(no_mangle)]
pub extern "C" fn declared_kernel(x: *mut f32) {
    unsafe { *x = 1.0 };
}
