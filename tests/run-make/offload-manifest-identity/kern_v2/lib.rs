// Version 2 of the crate `kern`. A graph links both versions under renamed dependencies, and
// the two `fill` kernels have one def path: only the crate's source tells them apart.

#![feature(rustc_attrs)]
#![no_std]
#![allow(internal_features)]

#[rustc_offload_kernel]
pub fn fill(x: *mut [u32; 4]) {
    unsafe { (*x)[0] = 2222 };
}
