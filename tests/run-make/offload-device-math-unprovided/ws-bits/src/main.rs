//! What a GPU computes among `f16`, `f128` and 128-bit values: one kernel that moves `f128`
//! bits (`from_bits`, `abs`, `copysign`, `black_box`, a volatile read, `to_bits`), computes
//! with `f16` arithmetic and `sqrt`, and converts an `f32` through `u64`. It builds for every
//! device; `main` checks it on the CPU device against the same expression on the host.

#![feature(gpu_offload, f16, f128)]

use std::offload::{offload, offload_kernel};

/// The element that the kernel computes, also the host's reference.
fn element(bits: u128, x: f32) -> f32 {
    let wide = core::hint::black_box(f128::from_bits(bits));
    let sign = unsafe { core::ptr::read_volatile(&wide) };
    let moved = wide.abs().copysign(sign).to_bits();
    let half = ((x as f16) * (x as f16) + 1.0).sqrt();
    (moved >> 112) as u32 as f32 + half as f32 + (x.abs() * 1000.0) as u64 as f32
}

#[offload_kernel]
fn bits(wide: &[u128], x: &[f32], out: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        out[i] = element(wide[i], x[i]);
    }
}

fn main() {
    let x: Vec<f32> = (0..256).map(|i| i as f32 * 0.05 - 6.0).collect();
    let wide: Vec<u128> = x.iter().map(|&x| ((x as f64) * -2.5).to_bits() as u128).collect();
    let mut out = vec![0.0f32; x.len()];
    offload! {
        kernel = bits,
        workgroup_dim = [4, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&wide[..], &x[..], &mut out[..]),
    }
    let differ = (0..x.len()).filter(|&i| out[i] != element(wide[i], x[i])).count();
    println!("bits: {differ} of {} differ", x.len());
}
