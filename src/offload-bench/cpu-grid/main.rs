//! The CPU device's cost of running a grid: a saxpy over 1,000,000 `f32` as a plain loop on the
//! host, as a launch of one work item per element (3,907 blocks of 256 threads), and as a launch
//! of one work item that loops over the array, each timed in this process (median of
//! `RUNS`), with the ratios to the plain loop. Both launches map the same data (4 MB in and
//! back for `y`, 4 MB in for `x`), so their difference is what running the grid costs.
//! Run with `../../../x.py cargo offload run --release --offload-arch=host` in this folder;
//! `RUST_OFFLOAD_CPU_WORKERS` caps the worker threads.

#![feature(core_intrinsics)]
#![allow(internal_features)]

use std::hint::black_box;
use std::time::Instant;

use core::intrinsics::offload;
use cpu_grid_bench::{N, saxpy_grid, saxpy_loop};

const RUNS: usize = 21;

/// The median of `RUNS` timings of `f`, in milliseconds, after `RUNS` untimed runs: the
/// runtime allocates the device's copies with `malloc` at each launch, and its first launches
/// pay page faults until the C library's allocation thresholds settle (a profile of the first
/// version of this benchmark had 47% of the time in the kernel's page faults).
fn median_ms(mut f: impl FnMut()) -> f64 {
    for _ in 0..RUNS {
        f();
    }
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[RUNS / 2]
}

fn main() {
    let x: Box<[f32; N]> = vec![0.5f32; N].into_boxed_slice().try_into().unwrap();
    let mut y: Box<[f32; N]> = vec![1.0f32; N].into_boxed_slice().try_into().unwrap();
    let a = black_box(1e-6f32);
    let host = median_ms(|| {
        for (yi, xi) in y.iter_mut().zip(x.iter()) {
            *yi = a * *xi + *yi;
        }
        black_box(&mut y);
    });
    let grid = median_ms(|| {
        offload::<_, _, ()>(
            saxpy_grid,
            [N.div_ceil(256) as u32, 1, 1],
            [256, 1, 1],
            (a, &*x as *const _, &mut *y as *mut _),
        )
    });
    let one = median_ms(|| {
        offload::<_, _, ()>(
            saxpy_loop,
            [1, 1, 1],
            [1, 1, 1],
            (a, &*x as *const _, &mut *y as *mut _),
        )
    });
    let workers = std::env::var("RUST_OFFLOAD_CPU_WORKERS").unwrap_or_else(|_| "default".into());
    println!("saxpy over {N} f32, median of {RUNS} runs, workers: {workers}");
    println!("host loop                     {host:8.3} ms");
    println!("CPU device, grid of 1,000,192 {grid:8.3} ms  {:6.2}x the host loop", grid / host);
    println!("CPU device, one work item     {one:8.3} ms  {:6.2}x the host loop", one / host);
    let per_item = (grid - one) * 1e6 / (N.div_ceil(256) * 256) as f64;
    println!(
        "grid over one work item       {:8.3} ms  ({per_item:.2} ns per work item)",
        grid - one
    );
}
