//! `app [N]`: runs `saxpy` and `scale::<f64>` over `N` elements (default 1000) in blocks of 128
//! work items, counts the elements that differ from the host's values with the registry crate
//! `tally`, and prints one line per kernel; exits with 1 when an element is wrong.
#![feature(gpu_offload)]

use core::offload::offload;

/// The wrong elements of `saxpy(2, i, 1)` and `scale(i, 0.5)` over `n` elements.
fn wrong(n: usize) -> (usize, usize) {
    let blocks = kernels::blocks(n, 128);
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; n];
    offload! {
        kernel = kernels::saxpy,
        workgroup_dim = [blocks, 1, 1],
        thread_dim = [128, 1, 1],
        args = (2.0f32, &x[..], &mut y[..]),
    }
    let mut z: Vec<f64> = (0..n).map(|i| i as f64).collect();
    offload! {
        kernel = kernels::scale::<f64>,
        workgroup_dim = [blocks, 1, 1],
        thread_dim = [128, 1, 1],
        args = (&mut z[..], 0.5f64),
    }
    let saxpy = tally::mismatches(&y, |i| 2.0 * i as f32 + 1.0);
    let scale = tally::mismatches(&z, |i| i as f64 * 0.5);
    (saxpy, scale)
}

fn main() {
    let n: usize = std::env::args().nth(1).map_or(1000, |n| n.parse().expect("N: a number"));
    let (saxpy, scale) = wrong(n);
    println!("build script: {}", env!("APP_BUILD_SCRIPT"));
    println!("saxpy: {saxpy} of {n} wrong");
    println!("scale: {scale} of {n} wrong");
    std::process::exit(i32::from(saxpy + scale != 0));
}

#[cfg(test)]
mod tests {
    #[test]
    fn kernels_on_the_device() {
        assert_eq!(super::wrong(300), (0, 0));
    }
}
