// A kernel calls a function through an `extern` declaration whose symbol two crates of the
// graph define.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

extern crate twice_dep;

unsafe extern "C" {
    fn offload_test_twice(x: f32) -> f32;
}

#[cfg(twice)]
#[unsafe(export_name = "offload_test_twice")]
pub extern "C" fn also_twice(x: f32) -> f32 {
    x + 2.0
}

#[rustc_offload_kernel]
pub fn bump(x: *mut f32) {
    unsafe { *x = offload_test_twice(*x) };
}

#[cfg(target_os = "linux")]
pub fn launch(x: &mut f32) {
    core::intrinsics::offload::<_, _, ()>(bump, [1, 1, 1], [1, 1, 1], (x as *mut f32,));
}

#[cfg(not(target_os = "linux"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}
