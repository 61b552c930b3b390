// A kernel, in a module file, that the test edits between the host metadata pass and the
// device pass (and then this crate root file).

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[cfg(not(target_arch = "x86_64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

#[path = "edit_kernels.rs"]
pub mod kernels;

#[cfg(target_arch = "x86_64")]
pub fn launch(x: &mut [f32; 4]) {
    core::intrinsics::offload::<_, _, ()>(kernels::scale, [1, 1, 1], [1, 1, 1], (x as *mut _,))
}
