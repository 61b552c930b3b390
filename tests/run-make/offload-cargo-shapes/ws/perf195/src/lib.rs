//! The offload authors' RAJAPerf ports in rustc 1.95's style: a `#![no_std]` `cdylib` whose
//! kernels live in submodules (`apps/`), each defined for the devices as a `#[no_mangle]
//! extern "gpu-kernel"` function and declared for the host in an `extern "C"` block, the two
//! sides `cfg`'d by `offload_device`; the exported `main` that a launcher calls launches them.
//! This file names no kernel: the compiler tells `cargo offload` which crate defines them.

#![feature(abi_gpu_kernel, rustc_attrs, core_intrinsics, gpu_offload)]
#![allow(internal_features)]
#![no_std]

#[cfg(not(offload_device))]
use core::ffi::{c_char, c_int};

mod apps;

/// Elements of each array.
const N: usize = 100;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}

#[cfg(not(offload_device))]
unsafe extern "C" {
    fn printf(format: *const c_char, ...) -> c_int;
}

/// What a launcher calls: `y = 2 x + y`, then `x . y`, printed as `axpy: <y>` and `dot: <v>`.
#[cfg(not(offload_device))]
#[unsafe(no_mangle)]
#[inline(never)]
fn main() {
    let x: [f64; N] = core::array::from_fn(|i| i as f64);
    let mut y: [f64; N] = core::array::from_fn(|i| 1.0 + i as f64);
    apps::axpy::run(2.0, &x, &mut y);
    let mut dot = 0.0;
    apps::dot::run(&x, &y, &mut dot);
    unsafe { printf(c"axpy:".as_ptr()) };
    for v in y {
        unsafe { printf(c" %.1f".as_ptr(), v) };
    }
    unsafe { printf(c"\ndot: %.1f\n".as_ptr(), dot) };
}
