// Launches a kernel of its dependency and one of its own with the same name (S4, S9, S10).

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

/// The panic handler of the device image (core's panic paths reach it).
#[cfg(not(target_arch = "x86_64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

#[rustc_offload_kernel]
pub fn fill(x: *mut [f32; 32]) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v = dep::smooth(*v + 1.0);
    }
}

// `inline(never)`: a small function that only launches kernels is otherwise cross-crate
// inlinable at opt-level 3, and then codegened (launches included) by its callers only.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn run(x: &mut [f32; 32]) {
    core::intrinsics::offload::<_, _, ()>(dep::fill, [1, 1, 1], [32, 1, 1], (x as *mut _,));
    core::intrinsics::offload::<_, _, ()>(fill, [1, 1, 1], [32, 1, 1], (x as *mut _,));
}
