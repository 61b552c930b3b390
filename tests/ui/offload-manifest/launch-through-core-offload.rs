// A launch through `core::offload` (`offload!`, `launch`, `launch_on_device`) is checked where
// the user's code launches, as a launch of the `offload` intrinsic is: a wrong argument, a
// slice whose elements hold addresses and the lint `offload_shared_for_mutable` point at the
// `offload!` or the call, not into `core`, with and without the MIR inliner (which inlines
// `core::offload`'s `#[inline]` launch functions into the caller at `-Copt-level=3`, and at
// the `inline` revision's thresholds both of them, nested), where the lint's level is the
// caller's. The lint is reported inside `offload!` too, although the macro is `core`'s. A launch
// function reached only through a callback is checked in its own body, in `core`.

//@ needs-offload
//@ edition: 2024
//@ revisions: debug opt inline
//@[opt] compile-flags: -Copt-level=3
//@[inline] compile-flags: -Copt-level=3 -Zinline-mir=yes -Zinline-mir-threshold=100000
//@[inline] compile-flags: -Zinline-mir-hint-threshold=100000
//@ compile-flags: -Zunstable-options
//@ compile-flags: -Zoffload=HostMetadata={{build-base}}/offload-manifest/through-core.json

#![feature(gpu_offload)]
#![crate_type = "lib"]

use core::offload::{launch, launch_on_device, offload, offload_kernel};

#[offload_kernel]
pub fn scale(x: &mut [f32], factor: f32) {
    let _ = (x, factor);
}

#[offload_kernel]
pub fn sum_lengths(words: &[&str], out: &mut u32) {
    let _ = (words, out);
}

pub fn wrong_argument(x: &mut [f32]) {
    offload! { kernel = scale, args = (&mut *x, 2.0f64) };
    //~^ ERROR `offload` passes `(&mut [f32], f64)` to the kernel `scale`, which takes `(&mut [f32], f32)`
}

pub fn wrong_argument_by_call(x: &mut [f32]) {
    launch::<_, _, ()>(scale, [1, 1, 1], [1, 1, 1], 0, (2.0f32, &mut *x));
    //~^ ERROR `offload` passes `(f32, &mut [f32])` to the kernel `scale`
    launch_on_device::<_, _, ()>(scale, [1, 1, 1], [1, 1, 1], 0, 0, (&mut *x,));
    //~^ ERROR `offload` passes `(&mut [f32],)` to the kernel `scale`
}

pub fn addresses(words: &[&str], out: &mut u32) {
    offload! { kernel = sum_lengths, args = (words, out) };
    //~^ ERROR the kernel `sum_lengths` takes a slice of `&str` as parameter 1 (`&[&str]`), which holds host addresses
}

#[deny(offload_shared_for_mutable)]
pub fn shared_for_mutable(x: &[f32]) {
    offload! { kernel = scale, args = (x as *const [f32], 1.0f32) };
    //~^ ERROR `offload` passes `*const [f32]` to the kernel `scale`, whose parameter is `&mut [f32]`
}

pub fn shared_for_mutable_warned(x: &[f32]) {
    launch::<_, _, ()>(scale, [1, 1, 1], [1, 1, 1], 0, (x as *const [f32], 1.0f32));
    //~^ WARN `offload` passes `*const [f32]` to the kernel `scale`, whose parameter is `&mut [f32]`
}

pub fn fine(x: &mut [f32]) {
    offload! { kernel = scale, workgroup_dim = [4, 1, 1], args = (&mut *x, 0.5f32) };
}

fn apply<L: FnOnce(K, [u32; 3], [u32; 3], u32, A), K, A>(launcher: L, kernel: K, args: A) {
    launcher(kernel, [1, 1, 1], [1, 1, 1], 0, args)
}

pub fn through_a_callback(x: &mut [f32]) {
    apply(launch::<_, _, ()>, scale, (2u32, &mut *x));
}
//~? ERROR `offload` passes `(u32, &mut [f32])` to the kernel `scale`
