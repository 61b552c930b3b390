//! A one-file `std` program as CUDA programmers write one: kernels, and a `main` that reads its
//! command line, fills a `Vec`, launches the kernels and prints with `println!`. No `no_std`,
//! no `cfg`. One kernel uses `std` itself (a `Vec` per work item, a line printed by work item
//! 0); with `oob` on the command line, a kernel indexes one past the end of its slice.

#![feature(gpu_offload)]

use std::offload::{offload, offload_kernel};

/// `x[i] = x[i] * by + i` over the grid.
#[offload_kernel]
fn scale(x: &mut [f32], by: f32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        x[i] = x[i] * by + i as f32;
    }
}

/// `out[i] = 0 + i + 2i + 3i`, summed from a `Vec` that each work item allocates.
#[offload_kernel]
fn from_vec(out: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < out.len() {
        let terms: Vec<u32> = (0..4).map(|k| k * i as u32).collect();
        out[i] = terms.iter().sum();
    }
    if i == 0 {
        println!("from_vec: work item 0 of {}", out.len());
    }
}

/// `x[i] += 1` with no bounds check of its own: the slice's index panics past the end.
#[offload_kernel]
fn unchecked(x: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    x[i] += 1.0;
}

fn main() {
    let n: usize = std::env::args().nth(1).map_or(1000, |a| a.parse().expect("a length"));
    let blocks = n.div_ceil(256) as u32;
    let mut x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    if std::env::args().nth(2).as_deref() == Some("oob") {
        offload! {
            kernel = unchecked,
            workgroup_dim = [blocks, 1, 1],
            thread_dim = [256, 1, 1],
            args = (&mut x[..],),
        }
        return;
    }
    offload! {
        kernel = scale,
        workgroup_dim = [blocks, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&mut x[..], 2.0),
    }
    let wrong = x.iter().enumerate().filter(|&(i, &v)| v != 3.0 * i as f32).count();
    println!("scale: {wrong} of {n} wrong, last {:?}", x.last());
    let mut sums = vec![0u32; n];
    offload! {
        kernel = from_vec,
        workgroup_dim = [blocks, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&mut sums[..],),
    }
    let wrong = sums.iter().enumerate().filter(|&(i, &s)| s != 6 * i as u32).count();
    println!("from_vec: {wrong} of {n} wrong");
}
