// A launch through `offload!` is checked as a direct call of its kernel would be: an `unsafe`
// kernel needs an unsafe block (E0133), the kernel's lifetimes bind the borrows passed to it
// (E0597 for a local given to a `&'static` parameter), and `if`, `match` and block arguments
// and nested tuples coerce to the kernel's parameters (a `Vec` in one branch and an array in the
// other for a slice parameter; literals in a tuple take the types of the tuple parameter's
// fields). Rustc 1.95's `core::intrinsics::offload` keeps 1.95's rules: it launches an `unsafe`
// kernel from safe code, and its lifetimes are not related to the kernel's.

//@ edition: 2024
//@ check-fail

#![feature(gpu_offload, core_intrinsics)]
#![crate_type = "lib"]

use core::offload::{offload, offload_kernel};

#[offload_kernel]
pub unsafe fn unchecked(x: &mut [f32], i: usize) {
    unsafe { *x.get_unchecked_mut(i) = 1.0 };
}

#[offload_kernel]
pub fn keeps(x: &'static [f32], y: &mut [f32]) {
    y[0] = x[0];
}

#[offload_kernel]
pub fn sums(x: &[f32], y: &mut [f32]) {
    y[0] = x[0] + x[1];
}

#[offload_kernel]
pub fn scaled(p: (f32, u32, [f32; 4]), y: &mut [f32]) {
    y[0] *= p.0 * p.1 as f32 + p.2[0];
}

pub fn safe_launch_of_unsafe_kernel(x: &mut [f32]) {
    offload! { kernel = unchecked, args = (x, 0) }
    //~^ ERROR call to unsafe function `unchecked` is unsafe and requires unsafe block
}

pub fn unsafe_launch_of_unsafe_kernel(x: &mut [f32]) {
    unsafe { offload! { kernel = unchecked, args = (x, 0) } }
}

pub fn intrinsic_launch_of_unsafe_kernel_as_in_1_95(x: &mut [f32]) {
    core::intrinsics::offload::<_, _, ()>(unchecked, [1, 1, 1], [1, 1, 1], (x, 0usize));
}

pub fn borrow_shorter_than_the_kernel_asks(y: &mut [f32]) {
    let local = vec![1.0f32; 4];
    offload! { kernel = keeps, args = (&local, y) }
    //~^ ERROR `local` does not live long enough
}

pub fn borrow_of_a_static(y: &mut [f32]) {
    static DATA: [f32; 4] = [1.0; 4];
    offload! { kernel = keeps, args = (&DATA, y) }
}

pub fn intrinsic_lifetimes_as_in_1_95(y: &mut [f32]) {
    let local = vec![1.0f32; 4];
    core::intrinsics::offload::<_, _, ()>(keeps, [1, 1, 1], [1, 1, 1], (&local[..], y));
}

pub fn arguments_that_take_the_parameter_type(
    c: bool,
    v: &Vec<f32>,
    a: &[f32; 4],
    y: &mut Vec<f32>,
) {
    offload! { kernel = sums, args = (if c { v } else { a }, &mut *y) }
    offload! { kernel = sums, args = (match c { true => v, false => a }, &mut *y) }
    offload! { kernel = sums, args = ({ let w = a; w }, &mut *y) }
    offload! { kernel = scaled, args = ((1.5, 2, [0.0; 4]), y) }
}
