// A generic kernel launched at `k::<W<u32>>`. With `--cfg lifetime`, `W` takes a lifetime
// where it took a type: the manifest is stale, and the device pass must say so rather than
// build `W<u32>` (an ADT type with a type where a lifetime belongs breaks the queries that
// look at it).

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[cfg(not(target_arch = "x86_64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

#[cfg(not(lifetime))]
#[derive(Clone, Copy)]
pub struct W<T>(pub T);

#[cfg(lifetime)]
#[derive(Clone, Copy)]
pub struct W<'a>(pub &'a u32);

#[rustc_offload_kernel]
pub fn k<T: Copy>(x: *mut [u32; 4], _w: *const T) {
    unsafe { (*x)[0] = 1 };
}

#[cfg(all(target_arch = "x86_64", not(lifetime)))]
pub fn launch(x: &mut [u32; 4]) {
    let w = W(5u32);
    core::intrinsics::offload::<_, _, ()>(
        k::<W<u32>>,
        [1, 1, 1],
        [1, 1, 1],
        (x as *mut _, &w as *const _),
    )
}
