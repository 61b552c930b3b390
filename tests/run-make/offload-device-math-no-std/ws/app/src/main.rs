//! Launches the `no_std` crate's two math kernels over special and ordinary arguments and
//! compares each result with what the host computes with the same functions: within
//! `kernels::CORE_BOUNDS` ULPs for `core`'s functions (0 each: bit for bit) and bit for bit for
//! the `libm` crate's (a NaN matches any NaN). Prints one `<kernel>: N of M differ` line each
//! (a result past its bound differs), and the first differences.

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

/// The distance of `a` and `b` in ULPs: of `f32` when `single` (both are `f32` values widened),
/// else of `f64`; 0 for two NaNs, `u64::MAX` for a NaN and a number.
fn ulps(a: f64, b: f64, single: bool) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() { 0 } else { u64::MAX };
    }
    // Bit patterns made monotonic in the value: negative numbers count down from zero.
    let key = |bits: i64, sign: i64| if bits < 0 { sign - bits } else { bits };
    let (a, b) = if single {
        let (a, b) = ((a as f32).to_bits() as i32 as i64, (b as f32).to_bits() as i32 as i64);
        (key(a, i32::MIN as i64), key(b, i32::MIN as i64))
    } else {
        (key(a.to_bits() as i64, i64::MIN), key(b.to_bits() as i64, i64::MIN))
    };
    (a as i128 - b as i128).unsigned_abs().min(u64::MAX as u128) as u64
}

/// Counts the results of `device` that differ from `host` by more than their function's
/// bound (`bounds[k % per]`; the first `singles` functions of a row give `f32` values); prints
/// the first few.
fn compare(name: &str, x: &[f32], row: (usize, usize, &[u64]), device: &[f64], host: &[f64]) {
    let (per, singles, bounds) = row;
    let mut differ = 0;
    for (k, (&d, &h)) in device.iter().zip(host).enumerate() {
        let function = k % per;
        if ulps(d, h, function < singles) > bounds[function] {
            if differ < 5 {
                let at = x[k / per];
                println!("{name}: x = {at:e}, function {function}: device {d:e}, host {h:e}");
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
    let core = (kernels::CORE_FUNCTIONS, kernels::CORE_F32_FUNCTIONS, &kernels::CORE_BOUNDS[..]);
    compare("core_math", &x, core, &core_out, &core_host);
    // `libm` is Rust on every device: the same code as the host's, bit for bit.
    let libm = (kernels::LIBM_FUNCTIONS, 8, &[0; kernels::LIBM_FUNCTIONS][..]);
    compare("libm_math", &x, libm, &libm_out, &libm_host);
}
