//! Launches the `no_std` crate's two math kernels over special and ordinary arguments and
//! compares each result, bit for bit (a NaN with any NaN), with what the host computes with the
//! same functions. Prints one `<kernel>: N of M differ` line each, and the first differences.

#![feature(gpu_offload)]

use core::offload::offload;

/// Arguments: zeros, subnormals, ordinary and large values of both signs, infinities, NaN.
fn arguments() -> Vec<f32> {
    let mut x = vec![
        0.0,
        -0.0,
        f32::from_bits(1),
        -f32::from_bits(0x0040_0000),
        f32::MIN_POSITIVE,
        0.5,
        -0.75,
        1.0,
        2.5,
        -3.25,
        10.0,
        88.5,
        -103.0,
        1.0e10,
        -3.0e38,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    x.extend((0..237).map(|i| (i as f32 - 118.0) * 0.173));
    x
}

/// Counts the results of `device` that differ from `host`; prints the first few.
fn compare(name: &str, x: &[f32], per: usize, device: &[f64], host: &[f64]) {
    let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    let mut differ = 0;
    for (k, (&d, &h)) in device.iter().zip(host).enumerate() {
        if !same(d, h) {
            if differ < 5 {
                println!(
                    "{name}: x = {:e}, function {}: device {d:e}, host {h:e}",
                    x[k / per],
                    k % per
                );
            }
            differ += 1;
        }
    }
    println!("{name}: {differ} of {} differ", host.len());
}

fn main() {
    let x = arguments();
    let blocks = x.len().div_ceil(64) as u32;
    let mut core_out = vec![0.0f64; x.len() * kernels::CORE_FUNCTIONS];
    offload! {
        kernel = kernels::core_math,
        workgroup_dim = [blocks, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&x[..], &mut core_out[..]),
    }
    let mut libm_out = vec![0.0f64; x.len() * kernels::LIBM_FUNCTIONS];
    offload! {
        kernel = kernels::libm_math,
        workgroup_dim = [blocks, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&x[..], &mut libm_out[..]),
    }
    let mut core_host = vec![0.0f64; core_out.len()];
    let mut libm_host = vec![0.0f64; libm_out.len()];
    for (i, &v) in x.iter().enumerate() {
        kernels::core_row(v, &mut core_host[i * kernels::CORE_FUNCTIONS..]);
        kernels::libm_row(v, &mut libm_host[i * kernels::LIBM_FUNCTIONS..]);
    }
    compare("core_math", &x, kernels::CORE_FUNCTIONS, &core_out, &core_host);
    compare("libm_math", &x, kernels::LIBM_FUNCTIONS, &libm_out, &libm_host);
}
