// A crate that launches a kernel, built without the offload passes (plain `cargo build`):
// codegen stops at the launch with upstream's two errors, each of which names `cargo offload
// build` as the command that builds such a program.

//@ build-fail
//@ edition: 2024
//@ needs-offload

#![feature(gpu_offload)]

use core::offload::{offload, offload_kernel};

#[offload_kernel]
fn scale(x: &mut [f32], by: f32) {
    x[0] *= by;
}

fn main() {
    let mut x = vec![1.0f32; 4];
    offload! { kernel = scale, args = (&mut x, 2.0) }
}

//~? ERROR using the offload feature requires -Z offload
//~? ERROR using the offload feature requires -C lto=fat
