//! Launches written as direct calls of their kernels are written: `Vec`s, `Box`es, arrays and
//! `String`s for slice and `str` parameters, `&mut` references passed twice (reborrowed, not
//! moved), float literals for `f32`, a kernel declared inside `main`, `if`, `match` and block
//! arguments with branches of two types and a nested tuple, and rustc 1.95's
//! `core::intrinsics::offload` with a `&Vec`. Each result is compared with the host's.

#![feature(gpu_offload, core_intrinsics)]

use core::offload::{block_dim_x, block_idx_x, offload, offload_kernel, thread_idx_x};

const N: usize = 1000;

fn index() -> usize {
    (block_idx_x() * block_dim_x() + thread_idx_x()) as usize
}

#[offload_kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = index();
    if i < y.len() {
        y[i] += a * x[i];
    }
}

#[offload_kernel]
fn byte_sum(text: &str, out: &mut [u32]) {
    if index() == 0 {
        out[0] = text.bytes().map(u32::from).sum();
    }
}

fn blocks(n: usize) -> [u32; 3] {
    [n.div_ceil(256) as u32, 1, 1]
}

fn main() {
    let x: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; N];
    // `&Vec<f32>` and `&mut Vec<f32>` for `&[f32]` and `&mut [f32]`, a literal for `f32`.
    offload!(
        kernel = saxpy,
        workgroup_dim = blocks(N),
        thread_dim = [256, 1, 1],
        args = (2.0, &x, &mut y)
    );
    let host: Vec<f32> = (0..N).map(|i| 1.0 + 2.0 * i as f32).collect();
    println!("vec: {}", if y == host { "right" } else { "wrong" });

    // A `&mut [f32]` passed twice: each launch reborrows it, as a call would.
    let boxed: Box<[f32]> = x.clone().into_boxed_slice();
    let out: &mut [f32] = &mut y;
    offload!(
        kernel = saxpy,
        workgroup_dim = blocks(N),
        thread_dim = [256, 1, 1],
        args = (1.0, &boxed, out)
    );
    offload!(
        kernel = saxpy,
        workgroup_dim = blocks(N),
        thread_dim = [256, 1, 1],
        args = (-3.0, &boxed, out)
    );
    let host: Vec<f32> = (0..N).map(|i| 1.0 + 2.0 * i as f32 + i as f32 - 3.0 * i as f32).collect();
    println!("reborrow: {}", if out == &host[..] { "right" } else { "wrong" });

    // Arrays for slices (unsize).
    let a = [2.0f32; 64];
    let mut b = [1.0f32; 64];
    offload!(
        kernel = saxpy,
        workgroup_dim = [1, 1, 1],
        thread_dim = [64, 1, 1],
        args = (0.5, &a, &mut b)
    );
    println!("array: {}", if b == [2.0f32; 64] { "right" } else { "wrong" });

    // `&String` for `&str`.
    let text = String::from("offload");
    let mut sum = vec![0u32; 1];
    offload!(kernel = byte_sum, args = (&text, &mut sum));
    let host: u32 = text.bytes().map(u32::from).sum();
    println!("string: {}", if sum[0] == host { "right" } else { "wrong" });

    // A kernel declared inside the function that launches it, given a `&mut Vec<u32>`.
    #[offload_kernel]
    fn squares(v: &mut [u32]) {
        let i = index();
        if i < v.len() {
            v[i] = (i * i) as u32;
        }
    }
    let mut v = vec![0u32; N];
    offload!(
        kernel = squares,
        workgroup_dim = blocks(N),
        thread_dim = [256, 1, 1],
        args = (&mut v,)
    );
    let right = v.iter().enumerate().all(|(i, &s)| s == (i * i) as u32);
    println!("nested: {}", if right { "right" } else { "wrong" });

    branches(&x);

    // rustc 1.95's launch, with a `&Vec<f32>` and a `&mut Vec<f32>`.
    let mut z = vec![0.0f32; N];
    core::intrinsics::offload::<_, _, ()>(saxpy, blocks(N), [256, 1, 1], (1.5f32, &x, &mut z));
    let right = z.iter().enumerate().all(|(i, &s)| s == 1.5 * i as f32);
    println!("intrinsic: {}", if right { "right" } else { "wrong" });
}

/// `if`, `match` and block arguments, each branch coerced to the parameter as a call's
/// argument would be (a `&Vec` in one branch, an array in the other), and a nested tuple whose
/// literals take the types of the tuple parameter's fields (a tuple of two scalars would be
/// passed as two values, which a launch refuses: this one is passed in memory).
fn branches(x: &Vec<f32>) {
    let ones = [1.0f32; N];
    let mut w = vec![0.0f32; N];
    for pick in [true, false] {
        offload!(
            kernel = saxpy,
            workgroup_dim = blocks(N),
            thread_dim = [256, 1, 1],
            args = (if pick { 1.0 } else { 2.0 }, if pick { x } else { &ones }, &mut w)
        );
    }
    offload!(
        kernel = saxpy,
        workgroup_dim = blocks(N),
        thread_dim = [256, 1, 1],
        args = (
            match w.len() {
                0 => 0.0,
                _ => 0.5,
            },
            { if N > 0 { x } else { &ones } },
            &mut w
        )
    );
    #[offload_kernel]
    fn scaled(p: (f32, u32, [f32; 4]), y: &mut [f32]) {
        let i = index();
        if i < y.len() {
            y[i] *= p.0 * p.1 as f32 + p.2[i % 4];
        }
    }
    offload!(
        kernel = scaled,
        workgroup_dim = blocks(N),
        thread_dim = [256, 1, 1],
        args = ((0.5, 4, [0.0; 4]), &mut w)
    );
    let right = w.iter().enumerate().all(|(i, &s)| {
        let i = i as f32;
        s == (0.0 + 1.0 * i + 2.0 * 1.0 + 0.5 * i) * (0.5 * 4.0 + 0.0)
    });
    println!("branches: {}", if right { "right" } else { "wrong" });
}
