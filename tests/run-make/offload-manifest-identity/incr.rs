// A generic kernel and its launches, which the test edits between incremental host metadata
// passes: the kernel's body, a launch added, a launch removed.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[cfg(not(target_arch = "x86_64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

#[rustc_offload_kernel]
pub fn scale<T: Copy + core::ops::Mul<Output = T>>(x: *mut [T; 4], a: T) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v = *v * a;
    }
}

#[cfg(target_arch = "x86_64")]
pub fn launch_f32(x: &mut [f32; 4]) {
    core::intrinsics::offload::<_, _, ()>(scale::<f32>, [1, 1, 1], [1, 1, 1], (x as *mut _, 2.0f32))
}
