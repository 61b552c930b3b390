//! Kernels in the 1.95 style, as the offload authors write them: on the host an `extern "C"`
//! declaration, on the GPU a `#[no_mangle] #[rustc_offload_kernel] extern "gpu-kernel"`
//! definition, the two `cfg`'d by `target_os`; Cargo features pick the kernels; a launch
//! passes a raw pointer where the kernel takes a reference to the same array, as rustc 1.95
//! accepts.

#![feature(abi_gpu_kernel, rustc_attrs, core_intrinsics)]
#![allow(internal_features)]
#![no_std]

#[cfg(not(target_os = "linux"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}

#[cfg(target_os = "linux")]
unsafe extern "C" {
    #[cfg(feature = "scale")]
    fn k195_scale(x: *mut [f64; 64], factor: f64);
    #[cfg(feature = "sum")]
    fn k195_sum(x: &[f64; 64], out: *mut f64);
}

#[cfg(all(not(target_os = "linux"), feature = "scale"))]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub extern "gpu-kernel" fn k195_scale(x: *mut [f64; 64], factor: f64) {
    let x = unsafe { &mut *x };
    for v in x.iter_mut() {
        *v *= factor;
    }
}

#[cfg(all(not(target_os = "linux"), feature = "sum"))]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub extern "gpu-kernel" fn k195_sum(x: &[f64; 64], out: *mut f64) {
    unsafe { *out = x.iter().sum() };
}

/// Defined, never launched: no image holds it.
#[cfg(not(target_os = "linux"))]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub extern "gpu-kernel" fn k195_unlaunched(x: *mut f64) {
    unsafe { *x = 1.0 };
}

#[cfg(all(target_os = "linux", feature = "scale"))]
pub fn scale(x: &mut [f64; 64], factor: f64) {
    core::intrinsics::offload::<_, _, ()>(k195_scale, [1, 1, 1], [1, 1, 1], (x as *mut _, factor));
}

#[cfg(all(target_os = "linux", feature = "sum"))]
pub fn sum(x: &[f64; 64]) -> f64 {
    let mut out = 0.0;
    // `*const` where the kernel takes `&`: one ABI, accepted as rustc 1.95 accepts it.
    let x = x as *const [f64; 64];
    core::intrinsics::offload::<_, _, ()>(k195_sum, [1, 1, 1], [1, 1, 1], (x, &raw mut out));
    out
}
