// The root of the graph: launches a kernel of its own, a generic kernel of the bottom crate,
// a kernel that the middle crate launches too, and calls the launchers of `mid` and `util`.

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
        *v = 1.0;
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn run(x: &mut [f32; 32], y: &[f32; 32], z: &mut [f64; 32], w: &mut [i32; 32]) {
    core::intrinsics::offload::<_, _, ()>(fill, [1, 1, 1], [32, 1, 1], (x as *mut _,));
    core::intrinsics::offload::<_, _, ()>(
        kernels::scale::<f32>,
        [1, 1, 1],
        [32, 1, 1],
        (x as *mut _, 0.5f32),
    );
    core::intrinsics::offload::<_, _, ()>(
        kernels::axpy,
        [1, 1, 1],
        [32, 1, 1],
        (x as *mut _, y as *const _),
    );
    mid::mid_launch(x, y, z);
    util::util_launch(w);
}
