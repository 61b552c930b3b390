// The middle of the graph: launches kernels from a non-generic function that the root calls
// (S5), one of them its own, one also launched by the root (S6).

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[rustc_offload_kernel]
pub fn norm(x: *mut [f64; 32]) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v = v.abs();
    }
}

// `inline(never)`: otherwise a small launching function is cross-crate inlinable at opt-level
// 3 and its launches are also found by the caller's collection; here only the metadata of
// this crate can tell the root's pass about them.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn mid_launch(x: &mut [f32; 32], y: &[f32; 32], z: &mut [f64; 32]) {
    core::intrinsics::offload::<_, _, ()>(
        kernels::axpy,
        [1, 1, 1],
        [32, 1, 1],
        (x as *mut _, y as *const _),
    );
    core::intrinsics::offload::<_, _, ()>(
        kernels::scale::<f64>,
        [1, 1, 1],
        [32, 1, 1],
        (z as *mut _, 2.0f64),
    );
    core::intrinsics::offload::<_, _, ()>(norm, [1, 1, 1], [32, 1, 1], (z as *mut _,));
}
