// Launches nothing (B8): its manifest lists no kernels. Has a generic kernel that bare
// `-Zoffload=Device` cannot build.

#![feature(rustc_attrs)]
#![no_std]
#![allow(internal_features)]

#[rustc_offload_kernel]
pub fn generic_fill<T: Copy>(x: *mut [T; 16], v: T) {
    for e in unsafe { &mut *x }.iter_mut() {
        *e = v;
    }
}
