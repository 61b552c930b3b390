// A kernel library in the form of the rustc-dev-guide's offload usage example (its page
// `src/offload/usage.md`): one `no_std` file, a generic `#[offload_kernel]`, a `#[no_mangle]`
// `main` for Linux hosts that launches it with `offload!` and `kernel = kernel` (no generic
// arguments: the launch's arguments give `T = f64`), and a literal for the value. Unlike the
// page, the kernel takes its indices from `core::offload`, which every device has.
#![allow(internal_features)]
#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}

// Generic, as the page's kernel: the host metadata pass records the instance the host needs.
#[offload_kernel]
fn kernel<T: Copy>(x: *mut [T; 256], value: T) {
    unsafe {
        let n = (*x).len();
        let i = (thread_idx_x() + block_idx_x() * block_dim_x()) as usize;
        if i < n {
            (*x)[i] = value;
        }
    }
}

#[cfg(target_os = "linux")]
#[unsafe(no_mangle)]
fn main() {
    let mut x = [0.0f64; 256];
    core::offload::offload! {
        kernel = kernel,
        workgroup_dim = [256, 1, 1],
        args = (&mut x as *mut [f64; 256], 2.5),
    }
    for i in 0..x.len() {
        assert_eq!(x[i], 2.5);
    }
}
