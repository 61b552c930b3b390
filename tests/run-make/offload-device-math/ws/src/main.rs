//! `std`'s float functions in kernels, on every device: one kernel per float type evaluates
//! each function over a set of arguments (ordinary values, large ones, subnormals, zeros,
//! infinities and NaN), and the host compares each result with its own, in ULPs (units in the
//! last place), against the bound that `src/doc/cargo-offload.md` ("Math in kernels") gives for
//! the device. It prints one line per function with the largest distance seen and how many
//! results were past the bound, then one `<type>: N of M wrong` line.

#![feature(gpu_offload)]

use std::offload::{offload, offload_kernel};

/// Applies `$apply!` to each function's name, its ULP bound on a GPU (compiler-builtins' libm
/// against the exact result, from its tests' `precision.rs`, plus one for the host's own error),
/// and its expression in `x` and `y` (the second argument of binary functions).
macro_rules! functions {
    ($apply:ident, $t:ty) => {
        $apply!($t;
            sin 2 |x, _y| x.sin(),
            cos 2 |x, _y| x.cos(),
            tan 2 |x, _y| x.tan(),
            asin 2 |x, _y| x.asin(),
            acos 2 |x, _y| x.acos(),
            atan 2 |x, _y| x.atan(),
            atan2 3 |x, y| x.atan2(y),
            sinh 3 |x, _y| x.sinh(),
            cosh 3 |x, _y| x.cosh(),
            tanh 5 |x, _y| x.tanh(),
            asinh 3 |x, _y| x.asinh(),
            acosh 5 |x, _y| x.acosh(),
            atanh 3 |x, _y| x.atanh(),
            exp 2 |x, _y| x.exp(),
            exp2 2 |x, _y| x.exp2(),
            exp_m1 2 |x, _y| x.exp_m1(),
            ln 2 |x, _y| x.ln(),
            log 4 |x, y| x.log(y),
            log2 2 |x, _y| x.log2(),
            log10 2 |x, _y| x.log10(),
            ln_1p 2 |x, _y| x.ln_1p(),
            powf 2 |x, y| x.powf(y),
            powi 2 |x, _y| x.powi(5),
            powi_neg 2 |x, _y| x.powi(-3),
            sqrt 0 |x, _y| x.sqrt(),
            cbrt 3 |x, _y| x.cbrt(),
            hypot 2 |x, y| x.hypot(y),
            mul_add 0 |x, y| x.mul_add(y, 0.25),
            floor 0 |x, _y| x.floor(),
            ceil 0 |x, _y| x.ceil(),
            round 0 |x, _y| x.round(),
            trunc 0 |x, _y| x.trunc(),
            abs 0 |x, _y| x.abs(),
            rem 0 |x, y| x % y,
        )
    };
}

/// The number of functions.
macro_rules! count {
    ($t:ty; $($name:ident $bound:literal |$x:ident, $y:ident| $e:expr,)*) => {
        [$(stringify!($name)),*].len()
    };
}

/// Each function's name and bound.
macro_rules! table {
    ($t:ty; $($name:ident $bound:literal |$x:ident, $y:ident| $e:expr,)*) => {
        [$((stringify!($name), $bound as u64)),*]
    };
}

/// Writes every function of `x[i]`, `y[i]` into `out[i * F + k]`.
macro_rules! evaluate {
    ($t:ty; $($name:ident $bound:literal |$x:ident, $y:ident| $e:expr,)*) => {
        |x: $t, y: $t, out: &mut [$t]| {
            let mut k = 0;
            $(
                {
                    let ($x, $y) = (x, y);
                    out[k] = $e;
                    k += 1;
                }
            )*
            let _ = k;
        }
    };
}

const F32: usize = functions!(count, f32);
const F64: usize = functions!(count, f64);

/// Every function of `f32` over `x[i]` and `y[i]`, one work item per argument.
#[offload_kernel]
fn math32(x: &[f32], y: &[f32], out: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        let eval = functions!(evaluate, f32);
        eval(x[i], y[i], &mut out[i * F32..(i + 1) * F32]);
    }
}

/// Every function of `f64` over `x[i]` and `y[i]`, one work item per argument.
#[offload_kernel]
fn math64(x: &[f64], y: &[f64], out: &mut [f64]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        let eval = functions!(evaluate, f64);
        eval(x[i], y[i], &mut out[i * F64..(i + 1) * F64]);
    }
}

/// The arguments: special values, then a sweep over many magnitudes of both signs.
fn arguments() -> Vec<f64> {
    let mut x = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        10.0,
        100.0,
        -100.0,
        1e-3,
        0.999,
        1.001,
        std::f64::consts::PI,
        -std::f64::consts::FRAC_PI_2,
        88.5,
        89.0,
        -87.0,
        -104.0,
        709.0,
        710.0,
        1e10,
        -1e10,
        1e30,
        1e300,
        1e-40,
        -1e-40,
        1e-310,
        f64::MIN_POSITIVE,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        3.0e38,
        -3.0e38,
        12345.678,
        0.1,
        0.2,
    ];
    for e in -30..=30 {
        let m = 10f64.powi(e / 3) * (1.0 + (e as f64 * 0.37).sin().abs());
        x.push(m);
        x.push(-m * 0.77);
    }
    x
}

/// The distance between `a` and `b` in representable values of their type (`bits` of each as
/// given by `to_bits`, `sign`: the sign bit), 0 when both are NaN, `u64::MAX` when only one is.
fn ulps(a: u64, b: u64, sign: u64, a_nan: bool, b_nan: bool) -> u64 {
    if a_nan || b_nan {
        return if a_nan && b_nan { 0 } else { u64::MAX };
    }
    // Map the sign-magnitude bits onto a line on which neighbours differ by one.
    let line = |v: u64| if v & sign != 0 { sign.wrapping_sub(v & !sign) } else { v + sign };
    line(a).abs_diff(line(b))
}

macro_rules! check {
    ($t:ty, $f:expr, $kernel:ident, $label:literal) => {{
        let table = functions!(table, $t);
        let eval = functions!(evaluate, $t);
        let x: Vec<$t> = arguments().into_iter().map(|v| v as $t).collect();
        // The second argument: the same values in another order.
        let y: Vec<$t> = x.iter().rev().copied().collect();
        let n = x.len();
        let mut out = vec![0.0 as $t; n * $f];
        offload! {
            kernel = $kernel,
            workgroup_dim = [(n as u32).div_ceil(64), 1, 1],
            thread_dim = [64, 1, 1],
            args = (&x[..], &y[..], &mut out[..]),
        }
        let mut expected = vec![0.0 as $t; $f];
        let mut worst = vec![0u64; $f];
        let mut past = vec![0usize; $f];
        let sign = 1u64 << (8 * std::mem::size_of::<$t>() - 1);
        for i in 0..n {
            eval(x[i], y[i], &mut expected);
            for k in 0..$f {
                let (got, want) = (out[i * $f + k], expected[k]);
                let d = ulps(
                    got.to_bits() as u64,
                    want.to_bits() as u64,
                    sign,
                    got.is_nan(),
                    want.is_nan(),
                );
                worst[k] = worst[k].max(d);
                if d > table[k].1 {
                    past[k] += 1;
                    if std::env::var_os("MATH_VERBOSE").is_some() {
                        println!(
                            "  {}({:e}, {:e}) = {:e}, host {:e}",
                            table[k].0, x[i], y[i], got, want
                        );
                    }
                }
            }
        }
        let mut wrong = 0;
        for k in 0..$f {
            let worst = if worst[k] == u64::MAX {
                "NaN against a number".to_string()
            } else {
                worst[k].to_string()
            };
            println!(
                "{} {}: at most {} ulp (bound {}), {} past it",
                $label, table[k].0, worst, table[k].1, past[k]
            );
            wrong += past[k];
        }
        println!("{}: {} of {} wrong", $label, wrong, n * $f);
    }};
}

fn main() {
    check!(f32, F32, math32, "f32");
    check!(f64, F64, math64, "f64");
}
