// In an offload device pass for a target without a kernel ABI (LLVM offload's CPU device, which
// compiles for the host's own target), `extern "gpu-kernel"` is the C ABI: kernels written for
// the GPUs build unchanged, and their function types are `extern "C"` ones. Every other
// compilation for such a target keeps E0570.

//@ revisions: device host
//@ only-x86_64
//@[device] check-pass
//@[device] compile-flags: -Zunstable-options -Zoffload=Device
//@[host] check-fail

#![feature(abi_gpu_kernel, rustc_attrs)]
#![crate_type = "lib"]

#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub extern "gpu-kernel" fn kernel(x: *mut u32) {
    //[host]~^ ERROR is not a supported ABI
    unsafe { *x = 1 };
}

pub fn as_c(f: extern "gpu-kernel" fn(*mut u32)) -> extern "C" fn(*mut u32) {
    //[host]~^ ERROR is not a supported ABI
    f
    //[host]~^ ERROR mismatched types
}
