//! The CPU device's cost of running a grid: a saxpy over 1,000,000 `f32` as a plain loop on the
//! host, as a launch of one work item per element (3,907 blocks of 256 threads), and as a launch
//! of one work item that loops over the array, each timed in this process (median of
//! `RUNS`), with the ratios to the plain loop. Both launches map the same data (4 MB in and
//! back for `y`, 4 MB in for `x`), so their difference is what running the grid costs.
//! Run from a bundle, since the program starts itself again in child processes: `../../../x.py
//! cargo offload bundle --release --offload-arch=host` in this folder, then
//! `target/offload/bundle/cpu-grid-bench` (`cargo offload run` starts it through the toolchain's
//! loader, which a child started by its path would lack). `RUST_OFFLOAD_CPU_WORKERS` caps the
//! worker threads.
//!
//! The saxpy runs twice: in this process with the runtime's settings as given, then (when
//! [`POOL_VARIABLE`] is not set) in a child process of the same program with the runtime's
//! memory pool holding buffers up to [`POOL_BYTES`], so that the runtime stops giving its copies'
//! memory back to the system and faulting it in again at every launch.
//!
//! Last, [`launches`] times empty launches with the runner's worker pool and without it.

#![feature(core_intrinsics)]
#![allow(internal_features)]

use std::hint::black_box;
use std::time::Instant;

use core::intrinsics::offload;
use cpu_grid_bench::{MM, N, TILE, matmul_tiled, saxpy_grid, saxpy_loop};

mod launches;

const RUNS: usize = 21;
/// The offload runtime's variable for the largest buffer its memory pool keeps for reuse after
/// it is freed (bytes; 8 KiB when unset). It is read once, when the runtime starts its devices.
const POOL_VARIABLE: &str = "LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD";
/// The pool's limit for the child run: above the benchmark's 4 MB buffers.
const POOL_BYTES: &str = "67108864";
/// The child run's argument: the saxpy alone.
const SAXPY_ONLY: &str = "--saxpy-only";
/// Runs of the matrix multiply, whose launch takes much longer.
const MM_RUNS: usize = 5;

/// The median of `RUNS` timings of `f`, in milliseconds, after `RUNS` untimed runs: the
/// runtime allocates the device's copies with `malloc` at each launch, and its first launches
/// pay page faults until the C library's allocation thresholds settle (a profile of the first
/// version of this benchmark had 47% of the time in the kernel's page faults).
fn median_ms(f: impl FnMut()) -> f64 {
    median_ms_of(RUNS, f)
}

/// The median of `runs` timings of `f` after `runs` untimed runs, in milliseconds.
fn median_ms_of(runs: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..runs {
        f();
    }
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

fn main() {
    if std::env::args().any(|arg| arg == launches::COSTS_ONLY) {
        launches::print_costs();
        return;
    }
    saxpy();
    if std::env::args().any(|arg| arg == SAXPY_ONLY) {
        return;
    }
    if std::env::var_os(POOL_VARIABLE).is_none() {
        println!("the same with {POOL_VARIABLE}={POOL_BYTES}:");
        // The program's own path as it was started: `current_exe` needs `/proc`, which the
        // build sysroot that `x.py cargo offload run` uses lacks.
        let program = std::env::args_os().next().unwrap();
        let status = std::process::Command::new(program)
            .arg(SAXPY_ONLY)
            .env(POOL_VARIABLE, POOL_BYTES)
            .status()
            .unwrap();
        assert!(status.success(), "the saxpy with the runtime's pool failed: {status}");
    }
    matmul();
    launches::report();
}

/// The saxpy's part: host loop, grid launch, one-item launch.
fn saxpy() {
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
    let pool = std::env::var(POOL_VARIABLE).unwrap_or_else(|_| "unset".into());
    println!(
        "saxpy over {N} f32, median of {RUNS} runs, workers: {workers}, {POOL_VARIABLE}: {pool}"
    );
    println!("host loop                     {host:8.3} ms");
    println!("CPU device, grid of 1,000,192 {grid:8.3} ms  {:6.2}x the host loop", grid / host);
    println!("CPU device, one work item     {one:8.3} ms  {:6.2}x the host loop", one / host);
    let per_item = (grid - one) * 1e6 / (N.div_ceil(256) * 256) as f64;
    println!(
        "grid over one work item       {:8.3} ms  ({per_item:.2} ns per work item)",
        grid - one
    );
}

/// The matrix multiply's part: host loop against the tiled kernel, with the check that both
/// give the same `c` (small integers: every sum is exact).
fn matmul() {
    let boxed = |f: &dyn Fn(usize) -> f32| -> Box<[f32; MM * MM]> {
        (0..MM * MM).map(f).collect::<Vec<_>>().into_boxed_slice().try_into().unwrap()
    };
    let a = boxed(&|i| (i % 7) as f32);
    let b = boxed(&|i| (i % 5) as f32 - 2.0);
    let mut c_host = boxed(&|_| 0.0);
    let mut c_device = boxed(&|_| 0.0);
    let host = median_ms_of(MM_RUNS, || {
        c_host.fill(0.0);
        for i in 0..MM {
            for k in 0..MM {
                let aik = a[i * MM + k];
                for j in 0..MM {
                    c_host[i * MM + j] += aik * b[k * MM + j];
                }
            }
        }
        black_box(&mut c_host);
    });
    let blocks = [(MM / TILE) as u32, (MM / TILE) as u32, 1];
    let device = median_ms_of(MM_RUNS, || {
        offload::<_, _, ()>(
            matmul_tiled,
            blocks,
            [TILE as u32, TILE as u32, 1],
            (&*a as *const _, &*b as *const _, &mut *c_device as *mut _),
        )
    });
    let same = c_host == c_device;
    println!("matrix multiply {MM} x {MM}, median of {MM_RUNS} runs, results equal: {same}");
    println!("host loop (i, k, j)           {host:8.3} ms");
    println!("CPU device, tiled, barriers   {device:8.3} ms  {:6.2}x the host loop", device / host);
    let switches = (MM / TILE) * (MM / TILE) * TILE * TILE * (2 * MM / TILE + 1);
    println!(
        "                              ({:.1} ns per switch into a work item and back, {switches})",
        device * 1e6 / switches as f64
    );
}
