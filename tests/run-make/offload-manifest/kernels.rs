// The crate of the offload-manifest run-make test: kernels defined once for the host and the
// GPU, launched directly and through a generic helper.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

use core::ops::Mul;

/// Two kernels named `fill` in different modules (S9).
pub mod a {
    #[rustc_offload_kernel]
    pub fn fill(x: *mut [f32; 64]) {
        for (i, v) in unsafe { &mut *x }.iter_mut().enumerate() {
            *v = i as f32;
        }
    }
}

pub mod b {
    #[rustc_offload_kernel]
    pub fn fill(x: *mut [u32; 64]) {
        for (i, v) in unsafe { &mut *x }.iter_mut().enumerate() {
            *v = i as u32;
        }
    }
}

/// A generic kernel (S2, S3).
#[rustc_offload_kernel]
pub fn scale<T: Copy + Mul<Output = T>>(x: *mut [T; 64], a: T) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v = *v * a;
    }
}

/// A kernel whose helpers come from `core` (S10).
#[rustc_offload_kernel]
pub fn clamp_abs(x: *mut [f32; 64], hi: f32) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v = v.abs().min(hi);
    }
}

/// A kernel launched only from a small function that, at opt-level 3, is cross-crate
/// inlinable and so not codegened in this crate.
#[rustc_offload_kernel]
pub fn negate(x: *mut [f32; 64]) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v = -*v;
    }
}

/// A kernel whose helpers a library exports to its downstream crates: a public function, an
/// `#[inline(never)]` generic one and a `#[no_mangle]` one. No crate links against the device
/// image, so there the first two are internal and the third is hidden.
#[rustc_offload_kernel]
pub fn mix(x: *mut [u32; 64], y: u32) {
    let x = unsafe { &mut *x };
    for v in x.iter_mut() {
        *v = public_step(*v, y);
    }
    x[0] = generic_step(x[0], y);
    x[1] = offload_test_unmangled_step(x[1]);
}

/// A public helper of `mix`.
#[inline(never)]
pub fn public_step(a: u32, b: u32) -> u32 {
    a.rotate_left(5) ^ b
}

/// A helper of `mix` whose symbol its author chose: hidden in the image, not exported.
#[unsafe(no_mangle)]
#[inline(never)]
pub fn offload_test_unmangled_step(a: u32) -> u32 {
    a.wrapping_mul(3)
}

/// An `#[inline(never)]` generic helper of `mix`.
#[inline(never)]
pub fn generic_step<T: Copy + core::ops::BitXor<Output = T>>(a: T, b: T) -> T {
    a ^ b
}

/// The panic handler of the device image, which core's panics (here at opt-level 0) reach.
#[cfg(not(target_arch = "x86_64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// A kernel that nothing launches (S7).
#[rustc_offload_kernel]
pub fn never_launched(x: *mut [f32; 64]) {
    unsafe { (*x)[0] = 1.0 };
}

/// A public function that no kernel reaches (S8).
pub fn unreached_public_helper(x: u32) -> u32 {
    x.wrapping_mul(2654435761)
}

/// A generic launch helper (S3).
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn launch_scale<T: Copy + Mul<Output = T>>(x: &mut [T; 64], a: T) {
    core::intrinsics::offload::<_, _, ()>(scale::<T>, [1, 1, 1], [64, 1, 1], (x as *mut _, a))
}

/// Launches everything the test expects in the manifest (S1, S2, S3, S9, S10).
#[cfg(target_arch = "x86_64")]
pub fn run_all(x: &mut [f32; 64], y: &mut [u32; 64], z: &mut [f64; 64]) {
    core::intrinsics::offload::<_, _, ()>(a::fill, [1, 1, 1], [64, 1, 1], (x as *mut _,));
    core::intrinsics::offload::<_, _, ()>(b::fill, [1, 1, 1], [64, 1, 1], (y as *mut _,));
    core::intrinsics::offload::<_, _, ()>(
        scale::<f32>,
        [1, 1, 1],
        [64, 1, 1],
        (x as *mut _, 2.0f32),
    );
    launch_scale::<f64>(z, 3.0);
    launch_scale::<u32>(y, 5);
    core::intrinsics::offload::<_, _, ()>(clamp_abs, [1, 1, 1], [64, 1, 1], (x as *mut _, 1.0f32));
    core::intrinsics::offload::<_, _, ()>(mix, [1, 1, 1], [64, 1, 1], (y as *mut _, 7u32));
}

/// A leaf launch helper: cross-crate inlinable at opt-level 3.
#[cfg(target_arch = "x86_64")]
pub fn launch_negate(x: &mut [f32; 64]) {
    core::intrinsics::offload::<_, _, ()>(negate, [1, 1, 1], [64, 1, 1], (x as *mut _,))
}
