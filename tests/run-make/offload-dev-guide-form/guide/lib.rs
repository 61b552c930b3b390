// A kernel library in the shape of the rustc-dev-guide's offload usage page
// (`src/offload/usage.md`), written for this test: one `no_std` file; the grid's functions
// imported per GPU under `cfg(target_arch)`, with nothing imported for the host and no
// `block_dim_x` for amdgpu (the prelude gives those); a generic `#[offload_kernel]`; a
// `#[no_mangle]` `main` for Linux hosts that launches it by `offload!` with the kernel named
// without its generic arguments and literals for its scalars.
#![allow(internal_features)]
#![feature(gpu_offload)]
#![cfg_attr(target_arch = "amdgpu", feature(stdarch_amdgpu))]
#![cfg_attr(target_arch = "nvptx64", feature(stdarch_nvptx))]
#![no_std]

use core::offload::offload_kernel;
use core::ops::{Add, Mul};

#[panic_handler]
fn on_panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[cfg(target_arch = "amdgpu")]
use core::arch::amdgpu::{workgroup_id_x as block_idx_x, workitem_id_x as thread_idx_x};
#[cfg(target_arch = "nvptx64")]
use core::arch::nvptx::{
    _block_dim_x as block_dim_x, _block_idx_x as block_idx_x, _thread_idx_x as thread_idx_x,
};

#[offload_kernel]
fn axpb<T: Copy + Mul<Output = T> + Add<Output = T>>(x: *mut [T; 512], a: T, b: T) {
    unsafe {
        let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
        if i < (*x).len() {
            (*x)[i] = a * (*x)[i] + b;
        }
    }
}

#[cfg(target_os = "linux")]
#[unsafe(no_mangle)]
fn main() {
    let mut x = [1.0f64; 512];
    core::offload::offload! {
        kernel = axpb,
        workgroup_dim = [2, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&mut x as *mut [f64; 512], 3.0, 0.5),
    }
    for v in x {
        assert_eq!(v, 3.5);
    }
}
