// A kernel parameter whose bytes a launch through `offload!` copies to the device must not
// hold host addresses: a `Vec`'s header behind a reference, references by value (in an `Option`,
// in an array), a closure that captures a reference. Each is refused at the launch with the
// parameter's name and what holds the address; a closure that captures nothing is plain data.
// Rustc 1.95's `core::intrinsics::offload` keeps taking such parameters, as 1.95 did.

//@ edition: 2024
//@ check-fail

#![feature(gpu_offload, core_intrinsics)]
#![crate_type = "lib"]

use core::offload::{offload, offload_kernel};

/// A `Vec`'s header behind a reference: the header holds the address of the host's heap.
#[offload_kernel]
pub fn header(v: &Vec<f32>, out: &mut [f32]) {
    out[0] = v[0];
}

/// References passed by value, inside an `Option` and an array.
#[offload_kernel]
pub fn maybe(x: Option<&mut f32>, pair: [&f32; 2]) {
    if let Some(x) = x {
        *x = *pair[0] + *pair[1];
    }
}

/// A closure is the values it captures: none, or a reference.
#[offload_kernel]
pub fn map<F: Fn(f32) -> f32>(f: F, out: &mut [f32]) {
    out[0] = f(out[0]);
}

pub fn parameters_that_hold_host_addresses(v: &Vec<f32>, x: &mut f32, y: &f32, out: &mut [f32]) {
    offload! { kernel = header, args = (v, &mut *out) }
    //~^ ERROR the kernel `header` takes data that holds host addresses (`Vec<f32>`)
    offload! { kernel = maybe, args = (Some(x), [y, y]) }
    //~^ ERROR the kernel `maybe` takes data that holds host addresses (`&mut f32`)
    //~| ERROR the kernel `maybe` takes data that holds host addresses (`&f32`)
    offload! { kernel = map, args = (|a: f32| a * 2.0, &mut *out) }
    offload! { kernel = map, args = (move |a: f32| a * *y, &mut *out) }
    //~^ ERROR takes data that holds host addresses (`&f32`) as parameter 1 (`f: {closure
    core::intrinsics::offload::<_, _, ()>(header, [1, 1, 1], [1, 1, 1], (v, out));
}
