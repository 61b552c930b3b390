// Upstream's launch surface in `core::offload`: `offload!` takes named fields in any order,
// `kernel` and `args` required, each field once, separated by commas, `args` a tuple literal;
// `#[offload_kernel]` applies to a non-associated function (on a method the error says how to
// make it one) and takes no arguments. A negative `device` literal is refused (a device number
// is 0 or more; without it, the default device). Each misuse is a compile error that says what
// to write instead. (Without `stmt_expr_attributes`, rustc refuses it on a statement first.)

//@ edition: 2024
//@ check-fail

#![feature(gpu_offload, stmt_expr_attributes)]
#![allow(unused)]
#![crate_type = "lib"]

use core::offload::{offload, offload_kernel};

#[offload_kernel]
pub fn scale(x: &mut [f32], factor: f32) {
    for v in x.iter_mut() {
        *v *= factor;
    }
}

pub fn launches(x: &mut [f32]) {
    offload! { args = (&mut *x, 2.0f32) };
    //~^ ERROR `offload!` needs the field `kernel`
    offload! { kernel = scale, thread_dim = [32, 1, 1] };
    //~^ ERROR `offload!` needs the field `args`
    offload! { kernel = scale, args = (&mut *x, 2.0f32), grid = [1, 1, 1] };
    //~^ ERROR `offload!` has no field `grid`
    offload! { kernel = scale, args = (&mut *x, 2.0f32), kernel = scale };
    //~^ ERROR `offload!` has the field `kernel` more than once
    offload! { kernel = scale, dyn_cache = 0, args = (&mut *x, 2.0f32), dyn_cache = 64 };
    //~^ ERROR `offload!` has the field `dyn_cache` more than once
    let args = (&mut *x, 2.0f32);
    offload! { kernel = scale, args = args };
    //~^ ERROR `args` of `offload!` must be a tuple literal of the kernel's arguments
    offload! { kernel = scale, args = (2.0f32) };
    //~^ ERROR `args` of `offload!` must be a tuple literal: write `(x,)` for one argument
    offload! { kernel: scale, args: (&mut *x, 2.0f32) };
    //~^ ERROR `offload!` takes fields `name = value`
    offload! { kernel = scale args = (&mut *x, 2.0f32) };
    //~^ ERROR `offload!` expects `,` after the value of `kernel`
    offload! { kernel = scale, args = (&mut *x, 2.0f32) thread_dim = [1, 1, 1] };
    //~^ ERROR `offload!` expects `,` after the value of `args`
    offload! { kernel = scale, device = -1, args = (&mut *x, 2.0f32) };
    //~^ ERROR `device` of `offload!` must not be negative
    // `-0` and `- -1` are not negative: device 0, and device 1.
    offload! { kernel = scale, device = -0, args = (&mut *x, 2.0f32) };
    offload! { kernel = scale, device = - -1, args = (&mut *x, 2.0f32) };
}

#[offload_kernel]
pub struct NotAFunction;
//~^^ ERROR the `#[offload_kernel]` attribute may only be used on a non-associated function

#[offload_kernel(fast)]
pub fn with_arguments(x: &mut [f32]) {}
//~^^ ERROR malformed `offload_kernel` attribute input

pub struct S;

impl S {
    #[offload_kernel]
    pub fn method(x: &mut [f32]) {}
    //~^^ ERROR the `#[offload_kernel]` attribute may only be used on a non-associated function
}

pub fn statement_and_closure() {
    // A function declared inside a block is a kernel like any other.
    #[offload_kernel]
    fn nested(x: &mut [f32]) {}

    #[offload_kernel]
    let x = 1;
    //~^^ ERROR the `#[offload_kernel]` attribute may only be used on a non-associated function
    let closure = #[offload_kernel] |x: u32| x;
    //~^ ERROR the `#[offload_kernel]` attribute may only be used on a non-associated function
}
