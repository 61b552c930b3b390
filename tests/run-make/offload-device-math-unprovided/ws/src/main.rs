//! Float math that no GPU provides: `f16` functions and `%`, `f128` computations, the SIMD
//! float functions and conversions through `u128`.
//! Each kernel builds and runs on the CPU device, where the host's C library computes them;
//! the device pass for a GPU refuses each one, naming it (`rmake.rs` checks both).

#![feature(gpu_offload, f16, f128, portable_simd)]

use std::offload::{offload, offload_kernel};
use std::simd::{StdFloat, f32x4};

/// `f16::sin` in the kernel's own body.
#[offload_kernel]
fn half_sin(x: &[f32], out: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        out[i] = (x[i] as f16).sin() as f32;
    }
}

/// `f128::exp` two functions down, to show the chain.
#[offload_kernel]
fn quad_exp(x: &[f32], out: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        out[i] = wide(x[i]);
    }
}

#[inline(never)]
fn wide(x: f32) -> f32 {
    wider(x as f128) as f32
}

#[inline(never)]
fn wider(x: f128) -> f128 {
    x.exp()
}

/// `f128::sqrt` of `f128` data: no operator, only the intrinsic `sqrtf128`.
#[offload_kernel]
fn quad_sqrt(x: &[f128], out: &mut [f128]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        out[i] = x[i].sqrt();
    }
}

/// `%` of `f16`, which the GPU back ends would expand into `x - trunc(x / y) * y`.
#[offload_kernel]
fn half_rem(x: &[f32], out: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        out[i] = ((x[i] * 1000.0) as f16 % (0.7 as f16)) as f32;
    }
}

/// A conversion through `u128`, a library call on every target.
#[offload_kernel]
fn wide_int(x: &[f32], out: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        out[i] = (x[i].abs() * 1000.0) as u128 as u32 as f32;
    }
}

/// `StdFloat::cos` of a SIMD vector.
#[offload_kernel]
fn lanes_cos(x: &[f32], out: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        out[i] = f32x4::splat(x[i]).cos()[0];
    }
}

fn main() {
    let x: Vec<f32> = (0..256).map(|i| i as f32 * 0.05 - 6.0).collect();
    let mut out = vec![0.0f32; x.len()];
    let grid = [4, 1, 1];
    let block = [64, 1, 1];
    offload! {
        kernel = half_sin,
        workgroup_dim = grid,
        thread_dim = block,
        args = (&x[..], &mut out[..]),
    }
    let half = x.iter().zip(&out).filter(|&(&x, &o)| o != (x as f16).sin() as f32).count();
    offload! {
        kernel = quad_exp,
        workgroup_dim = grid,
        thread_dim = block,
        args = (&x[..], &mut out[..]),
    }
    let quad = x.iter().zip(&out).filter(|&(&x, &o)| o != wide(x)).count();
    offload! {
        kernel = lanes_cos,
        workgroup_dim = grid,
        thread_dim = block,
        args = (&x[..], &mut out[..]),
    }
    let lanes = x.iter().zip(&out).filter(|&(&x, &o)| o != f32x4::splat(x).cos()[0]).count();
    let wide_x: Vec<f128> = x.iter().map(|&x| x as f128 + 6.0).collect();
    let mut wide_out = vec![0.0f128; x.len()];
    offload! {
        kernel = quad_sqrt,
        workgroup_dim = grid,
        thread_dim = block,
        args = (&wide_x[..], &mut wide_out[..]),
    }
    let root = wide_x.iter().zip(&wide_out).filter(|&(&x, &o)| o != x.sqrt()).count();
    offload! {
        kernel = half_rem,
        workgroup_dim = grid,
        thread_dim = block,
        args = (&x[..], &mut out[..]),
    }
    let rem = x.iter().zip(&out).filter(|&(&x, &o)| o != ((x * 1000.0) as f16 % 0.7) as f32);
    let rem = rem.count();
    offload! {
        kernel = wide_int,
        workgroup_dim = grid,
        thread_dim = block,
        args = (&x[..], &mut out[..]),
    }
    let int = x.iter().zip(&out).filter(|&(&x, &o)| o != (x.abs() * 1000.0) as u128 as u32 as f32);
    let int = int.count();
    println!("f16 sin: {half} of {} differ", x.len());
    println!("f16 rem: {rem} of {} differ", x.len());
    println!("u128 conversion: {int} of {} differ", x.len());
    println!("f128 sqrt: {root} of {} differ", x.len());
    println!("f128 exp: {quad} of {} differ", x.len());
    println!("simd cos: {lanes} of {} differ", x.len());
}
