//! `saxpy` launched with its arguments in another order (`x` first), which `cargo check` reports.
#![feature(gpu_offload)]

use core::offload::offload;

fn main() {
    let x = vec![1.0f32; 256];
    let mut y = vec![0.0f32; 256];
    offload! {
        kernel = kernels::saxpy,
        workgroup_dim = [2, 1, 1],
        thread_dim = [128, 1, 1],
        args = (&x[..], 2.0f32, &mut y[..]),
    }
    println!("{}", y[0]);
}
