//! The rustc-dev-guide's 1.95 form as one program: the kernels declared on the host in an
//! `extern "C"` block and defined for the GPU as `#[no_mangle] #[rustc_offload_kernel] extern
//! "gpu-kernel"` functions, the two `cfg`'d by `target_os`, in the file whose `main` launches
//! them. (GPU only: on the CPU device `target_os` is the host's.)

#![feature(abi_gpu_kernel, rustc_attrs, core_intrinsics)]
#![allow(internal_features)]
#![cfg_attr(not(target_os = "linux"), no_std)]

#[cfg(not(target_os = "linux"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}

#[cfg(target_os = "linux")]
unsafe extern "C" {
    fn bin195_twice(x: *mut [f64; 16]);
    fn bin195_sum(x: &[f64; 16], out: *mut f64);
}

#[cfg(not(target_os = "linux"))]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub extern "gpu-kernel" fn bin195_twice(x: *mut [f64; 16]) {
    for v in unsafe { (*x).iter_mut() } {
        *v *= 2.0;
    }
}

#[cfg(not(target_os = "linux"))]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub extern "gpu-kernel" fn bin195_sum(x: &[f64; 16], out: *mut f64) {
    unsafe { *out = x.iter().sum() };
}

/// Defined, never launched: no image holds it.
#[cfg(not(target_os = "linux"))]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub extern "gpu-kernel" fn bin195_unlaunched(x: *mut f64) {
    unsafe { *x = 1.0 };
}

#[cfg(target_os = "linux")]
fn main() {
    let mut x: [f64; 16] = core::array::from_fn(|i| i as f64);
    core::intrinsics::offload::<_, _, ()>(bin195_twice, [1, 1, 1], [1, 1, 1], (&raw mut x,));
    let mut sum = 0.0;
    // `*const` where the kernel takes `&`: one ABI, accepted as rustc 1.95 accepts it.
    core::intrinsics::offload::<_, _, ()>(
        bin195_sum,
        [1, 1, 1],
        [1, 1, 1],
        (&raw const x, &raw mut sum),
    );
    println!("sum: {sum}");
}
