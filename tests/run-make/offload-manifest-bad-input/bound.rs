// A generic kernel launched at `k::<W<u32>>`, where `W<T: Tag>`. With `--cfg stricter`, `W`
// also requires `T: Strict`, which `u32` does not implement: the manifest is stale, and the
// device pass must say so before it builds `W<u32>` (a type whose bounds do not hold, which
// layout and codegen would take as well-formed).

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[cfg(not(target_arch = "x86_64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

pub trait Tag {}
impl Tag for u32 {}
pub trait Strict {}

#[cfg(not(stricter))]
#[derive(Clone, Copy)]
pub struct W<T: Tag>(pub T);

#[cfg(stricter)]
#[derive(Clone, Copy)]
pub struct W<T: Tag + Strict>(pub T);

#[rustc_offload_kernel]
pub fn k<T: Copy>(x: *mut [u32; 4], _w: *const T) {
    unsafe { (*x)[0] = 1 };
}

#[cfg(all(target_arch = "x86_64", not(stricter)))]
pub fn launch(x: &mut [u32; 4]) {
    let w = W(5u32);
    core::intrinsics::offload::<_, _, ()>(
        k::<W<u32>>,
        [1, 1, 1],
        [1, 1, 1],
        (x as *mut _, &w as *const _),
    )
}
