// An `unsafe` kernel that reaches `core::offload::launch` as a generic parameter is launched by
// code that names no kernel, so the unsafety check required no `unsafe` block for it: the host
// metadata pass refuses such a launch once it sees the kernel, naming it and saying how to
// launch it. The same helper launching a safe kernel is accepted.

//@ needs-offload
//@ edition: 2024
//@ compile-flags: -Zunstable-options
//@ compile-flags: -Zoffload=HostMetadata={{build-base}}/offload-manifest/unsafe-unnamed.json

#![feature(gpu_offload, tuple_trait)]
#![crate_type = "lib"]

use core::marker::Tuple;
use core::offload::{launch, offload_kernel};

#[offload_kernel]
pub unsafe fn unchecked(x: &mut [f32], i: usize) {
    unsafe { *x.get_unchecked_mut(i) = 1.0 };
}

#[offload_kernel]
pub fn checked(x: &mut [f32], i: usize) {
    x[i] = 1.0;
}

fn go<F, T: Tuple>(kernel: F, args: T) {
    launch::<F, T, ()>(kernel, [1, 1, 1], [1, 1, 1], 0, args)
    //~^ ERROR the kernel `unchecked` is `unsafe` to call, and this launch does not name it
}

pub fn safe_code(x: &mut [f32]) {
    go(checked, (&mut *x, 0usize));
    go(unchecked, (x, 0usize));
}
