// More bad input, selected by `--cfg`: a kernel called by another kernel (`calls`), two
// kernels whose identity text coincides (`clash`, accepted now that symbols hash the
// definition), and a type argument whose type changed shape since the host metadata pass
// (`shape_a` when it ran, `shape_b` now).

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[cfg(calls)]
#[rustc_offload_kernel]
pub fn callee(x: *mut [f32; 16]) {
    unsafe { (*x)[0] = 1.0 };
}

#[cfg(calls)]
#[rustc_offload_kernel]
pub fn caller(x: *mut [f32; 16]) {
    callee(x);
}

#[cfg(all(calls, target_arch = "x86_64"))]
#[inline(never)]
pub fn launch(x: &mut [f32; 16]) {
    core::intrinsics::offload::<_, _, ()>(caller, [1, 1, 1], [1, 1, 1], (x as *mut _,));
}

#[cfg(all(clash, not(target_arch = "x86_64")))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

#[cfg(clash)]
pub mod m {
    #[rustc_offload_kernel]
    pub fn k(x: *mut [f32; 16]) {
        unsafe { (*x)[0] = 5.0 };
    }
}

// On every target: the device pass resolves the kernel inside it (the manifest-driven pass
// never codegens `m` itself, which only the host can).
#[cfg(clash)]
#[inline(never)]
pub fn m(x: &mut [f32; 16]) {
    #[rustc_offload_kernel]
    fn k(x: *mut [f32; 16]) {
        unsafe { (*x)[0] = 4.0 };
    }
    core::intrinsics::offload::<_, _, ()>(k, [1, 1, 1], [1, 1, 1], (x as *mut _,));
    core::intrinsics::offload::<_, _, ()>(m::k, [1, 1, 1], [1, 1, 1], (x as *mut _,));
}

#[cfg(shape_a)]
pub struct L<T>(pub T);

#[cfg(shape_b)]
pub struct L<'a>(pub &'a u8);

#[cfg(any(shape_a, shape_b))]
#[rustc_offload_kernel]
pub fn gk<T>(x: *mut T) {
    let _ = x;
}

#[cfg(all(shape_a, target_arch = "x86_64"))]
#[inline(never)]
pub fn launch(x: &mut L<u8>) {
    core::intrinsics::offload::<_, _, ()>(gk::<L<u8>>, [1, 1, 1], [1, 1, 1], (x as *mut _,));
}
