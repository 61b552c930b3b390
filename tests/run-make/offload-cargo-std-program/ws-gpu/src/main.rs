//! A one-file `std` program for every device: kernels beside a `main` that uses `std` on the
//! host (command line, `Vec`, `HashMap`, `println!`). The kernels use `std`'s float methods and
//! what `std` re-exports from `core`, which have a device form; nothing else of `std`.

#![feature(gpu_offload)]

use std::collections::HashMap;
use std::offload::{offload, offload_kernel};

/// `x[i] = x[i] * by + i` over the grid.
#[offload_kernel]
fn scale(x: &mut [f32], by: f32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        x[i] = x[i] * by + i as f32;
    }
}

/// `out[i] = sqrt(x[i]^2 + y[i]^2)`, with `std`'s `f32::sqrt` and `f32::mul_add`.
#[offload_kernel]
fn norm(x: &[f32], y: &[f32], out: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < out.len() {
        out[i] = x[i].mul_add(x[i], y[i] * y[i]).sqrt();
    }
}

fn main() {
    let n: usize = std::env::args().nth(1).map_or(1000, |a| a.parse().expect("a length"));
    let blocks = n.div_ceil(256) as u32;
    let mut x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    offload! {
        kernel = scale,
        workgroup_dim = [blocks, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&mut x[..], 2.0),
    }
    let mut wrong: HashMap<&str, usize> = HashMap::new();
    *wrong.entry("scale").or_default() +=
        x.iter().enumerate().filter(|&(i, &v)| v != 3.0 * i as f32).count();
    let (a, b): (Vec<f32>, Vec<f32>) = (0..n).map(|i| (3.0 * i as f32, 4.0 * i as f32)).unzip();
    let mut out = vec![0.0f32; n];
    offload! {
        kernel = norm,
        workgroup_dim = [blocks, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&a[..], &b[..], &mut out[..]),
    }
    // The same operations on the host, each correctly rounded on every device.
    let expected = a.iter().zip(&b).map(|(&a, &b)| a.mul_add(a, b * b).sqrt());
    *wrong.entry("norm").or_default() +=
        out.iter().zip(expected).filter(|&(&v, e)| v.to_bits() != e.to_bits()).count();
    for kernel in ["scale", "norm"] {
        println!("{kernel}: {} of {n} wrong", wrong[kernel]);
    }
}
