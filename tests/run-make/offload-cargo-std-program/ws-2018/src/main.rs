//! A one-file `std` program of edition 2018, whose `panic!("...")` and `assert!(c, "...")`
//! enter `std`'s `begin_panic` (edition 2021 enters `core`'s `panic_fmt`). On a GPU those
//! panics trap like any other, so the kernel builds for every device.

#![feature(gpu_offload)]

use std::offload::{offload, offload_kernel};

/// `x[i] = sqrt(x[i])`, panicking on a negative or infinite element.
#[offload_kernel]
fn checked_sqrt(x: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        if x[i] < 0.0 {
            panic!("negative input");
        }
        assert!(x[i].is_finite(), "infinite input");
        x[i] = x[i].sqrt();
    }
}

fn main() {
    let n: usize = std::env::args().nth(1).map_or(1000, |a| a.parse().expect("a length"));
    let mut x: Vec<f32> = (0..n).map(|i| (i * i) as f32).collect();
    if std::env::args().nth(2).as_deref() == Some("negative") {
        x[n - 1] = -1.0;
    }
    let blocks = ((n + 255) / 256) as u32;
    offload! {
        kernel = checked_sqrt,
        workgroup_dim = [blocks, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&mut x[..],),
    }
    let wrong = x.iter().enumerate().filter(|&(i, &v)| v != i as f32).count();
    println!("checked_sqrt: {} of {} wrong", wrong, n);
}
