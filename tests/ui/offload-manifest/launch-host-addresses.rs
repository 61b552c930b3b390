// What a launch hands to the device must mean something there. A host function pointer is the
// address of host code, and a pointer to a trait object carries the address of a host vtable:
// each parameter that is or holds one (by value in a struct, behind pointers) is an error at the
// launch that names the kernel's path, the parameter (its name and type) and why, with a fix,
// instead of an error without a location from the host's codegen (a function pointer) or a
// refusal that called a trait object interior-mutable data. A launch whose tuple differs from
// the kernel's parameters in several places names every one of them, each with the type it was
// given, in one error.

//@ needs-offload
//@ edition: 2024
//@ compile-flags: -Zunstable-options
//@ compile-flags: -Zoffload=HostMetadata={{build-base}}/offload-manifest/launch-host-addresses.json

#![feature(rustc_attrs, core_intrinsics)]
#![allow(internal_features)]
#![crate_type = "lib"]

use core::intrinsics::offload;

pub trait Shape {
    fn area(&self) -> f32;
}

pub mod kernels {
    #[rustc_offload_kernel]
    pub fn apply(f: fn(f32) -> f32, out: *mut f32) {
        let _ = (f, out);
    }

    #[rustc_offload_kernel]
    pub fn areas(shape: &dyn super::Shape, out: *mut f32) {
        let _ = (shape, out);
    }

    /// Host code inside a by-value parameter.
    #[rustc_offload_kernel]
    pub fn wrapped(op: super::Op, out: *mut f32) {
        let _ = (op, out);
    }

    /// A trait object behind two pointers.
    #[rustc_offload_kernel]
    pub fn boxed(shapes: &Box<dyn Fn(f32) -> f32>, out: *mut f32) {
        let _ = (shapes, out);
    }

    #[rustc_offload_kernel]
    pub fn step(out: *mut f32, by: u32, scale: f32, len: usize) {
        let _ = (out, by, scale, len);
    }
}

#[derive(Clone, Copy)]
pub struct Op {
    pub scale: f32,
    pub f: Option<fn(f32) -> f32>,
}

pub fn square(x: f32) -> f32 {
    x * x
}

pub fn refused(out: *mut f32, shape: &dyn Shape, op: Op, f: &Box<dyn Fn(f32) -> f32>) {
    offload::<_, _, ()>(kernels::apply, [1, 1, 1], [1, 1, 1], (square as fn(f32) -> f32, out));
    //~^ ERROR the kernel `apply` takes a host function pointer (`fn(f32) -> f32`) as parameter 1
    offload::<_, _, ()>(kernels::areas, [1, 1, 1], [1, 1, 1], (shape, out));
    //~^ ERROR the kernel `areas` takes a trait object (`dyn Shape`) as parameter 1 (`shape: &dyn Shape`)
    offload::<_, _, ()>(kernels::wrapped, [1, 1, 1], [1, 1, 1], (op, out));
    //~^ ERROR the kernel `wrapped` takes a host function pointer (`fn(f32) -> f32`) as parameter 1 (`op: Op`)
    offload::<_, _, ()>(kernels::boxed, [1, 1, 1], [1, 1, 1], (f, out));
    //~^ ERROR the kernel `boxed` takes a trait object (`dyn Fn(f32) -> f32`) as parameter 1
    offload::<_, _, ()>(kernels::step, [1, 1, 1], [1, 1, 1], (out, 1.5f64, 2u8, 4usize));
    //~^ ERROR `offload` passes `(*mut f32, f64, u8, usize)` to the kernel `step`
}
