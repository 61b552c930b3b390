//! A `std` program whose kernels all come from the registry crate `regkern`: a generic one
//! launched here at two types, one that `regkern` launches itself, and one of its feature
//! `extra`. Prints each result as `name: v0 v1 ...`; the test computes the expected values.

#![feature(gpu_offload)]

use core::offload::offload;

fn show<T: std::fmt::Display>(name: &str, values: &[T]) {
    let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    println!("{name}: {}", values.join(" "));
}

fn main() {
    let mut x: Vec<f32> = (0..300).map(|i| i as f32 * 0.5).collect();
    offload! {
        kernel = regkern::axpb,
        workgroup_dim = [5, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&mut x[..], 2.0, 1.0),
    }
    show("axpb_f32", &x);
    let mut n: Vec<i64> = (0..100).collect();
    offload! {
        kernel = regkern::axpb,
        workgroup_dim = [2, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&mut n[..], -3, 7),
    }
    show("axpb_i64", &n);
    let mut y = vec![7u32; 200];
    regkern::launch_add_index(&mut y);
    show("add_index", &y);
    let mut z: Vec<f64> = (0..100).map(|i| i as f64 * 0.25).collect();
    offload! {
        kernel = regkern::square,
        workgroup_dim = [4, 1, 1],
        thread_dim = [32, 1, 1],
        args = (&mut z[..],),
    }
    show("square", &z);
}
