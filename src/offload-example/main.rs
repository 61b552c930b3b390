//! Runs the bundled example's kernels through the offload runtime and checks each result
//! against the same computation done on the host, without offload. Prints one line per
//! kernel: the first values of both, the largest difference, how many elements differ (a NaN or
//! a missing element counts), and `ok` or `MISMATCH`; exits with status 1 on a mismatch.

use offload_example::{N, launch_saxpy, launch_stencil3, launch_sum_reduce};

/// Relative tolerance: the device may round differently (a fused multiply-add, another
/// summation order in `sum_reduce`'s blocks), never by more than this.
const TOLERANCE: f32 = 1e-5;

fn check(name: &str, device: &[f32], reference: &[f32]) -> bool {
    // Every element is compared, and a comparison with NaN is false: a NaN or a missing
    // element is a mismatch (`f32::max` would drop a NaN difference).
    let relative = |(d, r): (&f32, &f32)| (d - r).abs() / r.abs().max(1.0);
    let mismatches = device.iter().zip(reference).filter(|&p| !(relative(p) <= TOLERANCE)).count()
        + device.len().abs_diff(reference.len());
    let diff = device
        .iter()
        .zip(reference)
        .map(relative)
        .fold(0.0f32, |max, d| if d.is_nan() || max.is_nan() { f32::NAN } else { max.max(d) });
    let ok = mismatches == 0;
    let head = |v: &[f32]| v.iter().take(4).map(|x| format!("{x}")).collect::<Vec<_>>().join(", ");
    println!(
        "{name}: device [{}, ...] reference [{}, ...] max relative difference {diff:e}, \
         {mismatches} of {} elements differ: {}",
        head(device),
        head(reference),
        reference.len(),
        if ok { "ok" } else { "MISMATCH" }
    );
    ok
}

fn main() {
    let x: [f32; N] = core::array::from_fn(|i| (i % 17) as f32 * 0.25);
    let y0: [f32; N] = core::array::from_fn(|i| (i % 5) as f32 - 1.0);
    let a = 1.5f32;

    let mut y = y0;
    launch_saxpy(a, &x, &mut y);
    let saxpy: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| a * x + y).collect();

    let mut smooth = [0.0f32; N];
    launch_stencil3(&x, &mut smooth);
    let mut stencil = x.to_vec();
    for i in 1..N - 1 {
        stencil[i] = (x[i - 1] + x[i] + x[i + 1]) * (1.0 / 3.0);
    }

    let sum = launch_sum_reduce(&x);
    let reference_sum: f32 = x.chunks(64).map(|c| c.iter().sum::<f32>()).sum();

    let ok = [
        check("saxpy", &y, &saxpy),
        check("stencil3", &smooth, &stencil),
        check("sum_reduce", &[sum], &[reference_sum]),
    ];
    if ok.contains(&false) {
        std::process::exit(1);
    }
}
