// A sibling of `mid` (both depend on `kernels`, neither on the other) that also launches a
// kernel from a non-generic function the root calls (S5, S6).

#![feature(core_intrinsics)]
#![no_std]

#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn util_launch(x: &mut [i32; 32]) {
    core::intrinsics::offload::<_, _, ()>(
        kernels::scale::<i32>,
        [1, 1, 1],
        [32, 1, 1],
        (x as *mut _, 3i32),
    );
}
