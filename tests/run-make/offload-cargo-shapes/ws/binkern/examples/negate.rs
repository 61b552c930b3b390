//! The example shape: an example that defines and launches its kernel, which the device passes
//! compile as a library. `saxlib` gives the device image its panic handler.

#![feature(rustc_attrs, core_intrinsics, gpu_offload)]
#![allow(internal_features)]
#![cfg_attr(offload_device, no_std)]

use core::offload::thread_idx_x;

/// `x[i] = -x[i]` for the 32 work items of one block.
#[rustc_offload_kernel]
pub fn negate(x: *mut [i32; 32]) {
    let i = thread_idx_x() as usize;
    unsafe { (*x)[i] = -(*x)[i] };
}

#[cfg(not(offload_device))]
fn main() {
    let mut x: [i32; 32] = core::array::from_fn(|i| i as i32 * 3);
    core::intrinsics::offload::<_, _, ()>(negate, [1, 1, 1], [32, 1, 1], (&raw mut x,));
    let line: Vec<String> = x.iter().map(|v| v.to_string()).collect();
    println!("negated: {}", line.join(" "));
}
