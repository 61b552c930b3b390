//! The data-movement benchmark of the fork's issue 65: four loops of [`STEPS`] launches over
//! buffers of 2^20 `f32` (4 MiB), each written in three forms,
//! - `natural`: a slice per launch, as a user writes it first; run twice, with the residency
//!   pass's keeping (the default) and without it (`RUST_OFFLOAD_RESIDENCY=0`: every launch maps
//!   its slices, as before the pass);
//! - `preload`: the same loop over `Preload`/`PreloadMut`;
//! - `minimum`: each buffer in once and its result out once (`PreloadMut::without_copy_in` for
//!   outputs that the kernels write first, `discard` for temporaries; for the reduction, whose
//!   host reads the sums at every step, the sums come back at every step).
//!
//! The loops: a 5-point Jacobi step on a 1024 x 1024 grid followed by `mem::swap` of its two
//! `Vec`s; a saxpy on the same `x` and `y`; a pipeline of two kernels (`scale`, then
//! `accumulate` over the scaled temporary); a block sum whose 4096 partial sums the host adds
//! up after every launch.
//!
//! Without arguments it runs each (loop, form) in a child process of its own: once with the
//! offload runtime's copy log (`LIBOMPTARGET_INFO=32`, one line per copy, with its size) to
//! count copies and bytes each way, then [`TIMED_RUNS`] times without it for the median time of
//! the loop; then it prints a Markdown table, each form's bytes also as a ratio to its loop's
//! `preload` form and to the minimum, and whether every form of a loop computed the same
//! result (bit for bit). `--run LOOP FORM` runs one and prints `<milliseconds> <checksum>`.
//! Each child starts as the program was started (its `argv[0]`), so run it from a bundle,
//! whose start script brings the toolchain's loader and libraries: in this folder,
//! `../../../x.py cargo offload bundle --release --offload-arch=host`, then
//! `target/offload/bundle/residency-bench`. (`cargo offload run` starts the program through
//! the loader with the program's own path as `argv[0]`, which a child cannot start alone.)

#![feature(gpu_offload)]

use std::process::Command;
use std::time::Instant;

use core::offload::{Preload, PreloadMut, offload};
use residency_bench::{BLOCK, accumulate, block_sums, jacobi, saxpy, scale};

/// Launches per loop.
const STEPS: usize = 100;
/// Timed child runs per (loop, form); the table gives their median.
const TIMED_RUNS: usize = 3;
/// The Jacobi grid's side: `SIDE * SIDE` = 2^20 points.
const SIDE: usize = 1024;
/// Elements per buffer.
const N: usize = SIDE * SIDE;
/// The block sum's partial sums, one per block.
const SUMS: usize = N / BLOCK as usize;
const MIB: f64 = 1024.0 * 1024.0;

const GRID: [u32; 3] = [N.div_ceil(BLOCK as usize) as u32, 1, 1];
const THREADS: [u32; 3] = [BLOCK, 1, 1];

/// The loops, each with its forms and its minimum in bytes (in, back).
const LOOPS: [(&str, [u64; 2]); 4] = [
    ("jacobi", [4 << 20, 4 << 20]),
    ("saxpy", [8 << 20, 4 << 20]),
    ("pipeline", [8 << 20, 4 << 20]),
    ("reduction", [4 << 20, (STEPS * SUMS * 4) as u64]),
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--run") {
        let start = Instant::now();
        let checksum = run(&args[2], &args[3]);
        println!("{:.3} {checksum:.6e}", start.elapsed().as_secs_f64() * 1000.0);
        return;
    }
    table(&args[0]);
}

/// Runs `form` of loop `name`; returns the sum of its result's elements.
fn run(name: &str, form: &str) -> f64 {
    let result = match name {
        "jacobi" => jacobi_loop(form),
        "saxpy" => saxpy_loop(form),
        "pipeline" => pipeline_loop(form),
        "reduction" => return reduction_loop(form),
        _ => panic!("unknown loop `{name}`"),
    };
    result.iter().map(|&v| f64::from(v)).sum()
}

fn start_values() -> Vec<f32> {
    (0..N).map(|i| (i % 17) as f32 * 0.25).collect()
}

fn jacobi_loop(form: &str) -> Vec<f32> {
    let (mut a, mut b) = (start_values(), vec![0.0f32; N]);
    match form {
        "natural" => {
            for _ in 0..STEPS {
                offload! {
                    kernel = jacobi,
                    workgroup_dim = GRID,
                    thread_dim = THREADS,
                    args = (&a, &mut b, SIDE),
                }
                std::mem::swap(&mut a, &mut b);
            }
        }
        _ => {
            let mut kept_a = PreloadMut::new(&mut a[..]);
            let mut kept_b = if form == "minimum" {
                // SAFETY: the first step writes every element of `b` before anything reads it.
                unsafe { PreloadMut::without_copy_in(&mut b[..]) }
            } else {
                PreloadMut::new(&mut b[..])
            };
            for step in 0..STEPS {
                let (now, next) =
                    if step % 2 == 0 { (&*kept_a, &mut *kept_b) } else { (&*kept_b, &mut *kept_a) };
                offload! {
                    kernel = jacobi,
                    workgroup_dim = GRID,
                    thread_dim = THREADS,
                    args = (now, next, SIDE),
                }
            }
            if form == "minimum" {
                kept_b.discard();
            }
        }
    }
    // `STEPS` is even: the last step wrote `a` (after the natural loop's last swap, too).
    a
}

fn saxpy_loop(form: &str) -> Vec<f32> {
    let x = start_values();
    let mut y = vec![1.0f32; N];
    if form == "natural" {
        for _ in 0..STEPS {
            offload! { kernel = saxpy, workgroup_dim = GRID, thread_dim = THREADS,
            args = (0.5f32, &x, &mut y) }
        }
    } else {
        let kept_x = Preload::new(&x[..]);
        let mut kept_y = PreloadMut::new(&mut y[..]);
        for _ in 0..STEPS {
            offload! { kernel = saxpy, workgroup_dim = GRID, thread_dim = THREADS,
            args = (0.5f32, &*kept_x, &mut *kept_y) }
        }
    }
    y
}

fn pipeline_loop(form: &str) -> Vec<f32> {
    let x = start_values();
    let (mut scaled, mut y) = (vec![0.0f32; N], vec![1.0f32; N]);
    if form == "natural" {
        for _ in 0..STEPS {
            offload! { kernel = scale, workgroup_dim = GRID, thread_dim = THREADS,
            args = (0.5f32, &x, &mut scaled) }
            offload! { kernel = accumulate, workgroup_dim = GRID, thread_dim = THREADS,
            args = (&scaled, &x, &mut y) }
        }
    } else {
        let kept_x = Preload::new(&x[..]);
        let mut kept_scaled = if form == "minimum" {
            // SAFETY: `scale` writes every element before `accumulate` reads it.
            unsafe { PreloadMut::without_copy_in(&mut scaled[..]) }
        } else {
            PreloadMut::new(&mut scaled[..])
        };
        let mut kept_y = PreloadMut::new(&mut y[..]);
        for _ in 0..STEPS {
            offload! { kernel = scale, workgroup_dim = GRID, thread_dim = THREADS,
            args = (0.5f32, &*kept_x, &mut *kept_scaled) }
            offload! { kernel = accumulate, workgroup_dim = GRID, thread_dim = THREADS,
            args = (&*kept_scaled, &*kept_x, &mut *kept_y) }
        }
        if form == "minimum" {
            kept_scaled.discard();
        }
    }
    y
}

/// Returns the sum of the host's totals of every step.
fn reduction_loop(form: &str) -> f64 {
    let x = start_values();
    let mut sums = vec![0.0f32; SUMS];
    let mut total = 0.0f64;
    if form == "natural" {
        for _ in 0..STEPS {
            offload! { kernel = block_sums, workgroup_dim = GRID, thread_dim = THREADS,
            args = (&x, &mut sums) }
            total += sums.iter().map(|&s| f64::from(s)).sum::<f64>();
        }
    } else {
        let kept_x = Preload::new(&x[..]);
        for _ in 0..STEPS {
            if form == "minimum" {
                // SAFETY: `block_sums` writes every partial sum, and they all come back.
                let mut kept = unsafe { PreloadMut::without_copy_in(&mut sums[..]) };
                offload! { kernel = block_sums, workgroup_dim = GRID, thread_dim = THREADS,
                args = (&*kept_x, &mut *kept) }
                drop(kept);
            } else {
                offload! { kernel = block_sums, workgroup_dim = GRID, thread_dim = THREADS,
                args = (&*kept_x, &mut sums) }
            }
            total += sums.iter().map(|&s| f64::from(s)).sum::<f64>();
        }
    }
    total
}

/// One child run of `form` of `name`: its stdout (`<ms> <checksum>`) and stderr.
fn child(program: &str, name: &str, form: &str, env: &[(&str, &str)]) -> (String, String) {
    let output = Command::new(program)
        .args(["--run", name, form])
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("{program} --run {name} {form}: {e}"));
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), &output.stderr);
    let stderr = String::from_utf8_lossy(stderr).into_owned();
    assert!(output.status.success(), "{name} {form} failed: {stderr}");
    (stdout.into_owned(), stderr)
}

/// Bytes and copies to the devices, then back, from the runtime's copy log.
fn moved(stderr: &str) -> [u64; 4] {
    let copied = |direction: &str| {
        let line = format!("Copying data from {direction}");
        stderr.lines().filter(|l| l.contains(&line)).fold((0, 0), |(bytes, copies), l| {
            let size = l.split("Size=").nth(1).and_then(|rest| rest.split(',').next());
            (bytes + size.and_then(|n| n.parse::<u64>().ok()).unwrap_or(0), copies + 1)
        })
    };
    let ((to, to_copies), (back, back_copies)) =
        (copied("host to device"), copied("device to host"));
    [to, to_copies, back, back_copies]
}

/// Passes on, once each, the lines of `OFFLOAD_REPORT=1` that say where a child's kernels ran:
/// the table's launches are the children's, and `gpu-check` reads these lines from this
/// process.
fn forward_kernel_reports(stderr: &str, reported: &mut Vec<String>) {
    for line in stderr.lines().filter(|l| l.starts_with("[offload report] kernel ")) {
        if !reported.iter().any(|seen| seen == line) {
            eprintln!("{line}");
            reported.push(line.to_string());
        }
    }
}

/// Runs every (loop, form) and prints the table.
fn table(program: &str) {
    println!("| loop | form | copies in / back | MiB moved | x preload | x minimum | ms |");
    println!("|---|---|---|---|---|---|---|");
    let forms: [(&str, &str, &[(&str, &str)]); 4] = [
        ("natural", "natural", &[]),
        ("natural", "natural, no residency", &[("RUST_OFFLOAD_RESIDENCY", "0")]),
        ("preload", "preload", &[]),
        ("minimum", "minimum", &[]),
    ];
    let mut reported = Vec::new();
    for (name, minimum) in LOOPS {
        let minimum = (minimum[0] + minimum[1]) as f64;
        let mut rows = Vec::new();
        let mut checksums = Vec::new();
        for (form, label, env) in forms {
            let mut counted = env.to_vec();
            counted.push(("LIBOMPTARGET_INFO", "32"));
            let (stdout, stderr) = child(program, name, form, &counted);
            forward_kernel_reports(&stderr, &mut reported);
            let m = moved(&stderr);
            checksums.push(stdout.split_whitespace().nth(1).unwrap_or("").to_string());
            let mut times: Vec<f64> = (0..TIMED_RUNS)
                .map(|_| {
                    let (stdout, _) = child(program, name, form, env);
                    stdout.split_whitespace().next().and_then(|t| t.parse().ok()).unwrap_or(0.0)
                })
                .collect();
            times.sort_by(f64::total_cmp);
            rows.push((label, m, times[TIMED_RUNS / 2]));
        }
        let preload = rows.iter().find(|r| r.0 == "preload").map_or(1, |r| r.1[0] + r.1[2]);
        for (label, m, ms) in rows {
            let bytes = (m[0] + m[2]) as f64;
            println!(
                "| {name} | {label} | {} / {} | {:.1} | {:.2} | {:.2} | {ms:.1} |",
                m[1],
                m[3],
                bytes / MIB,
                bytes / preload as f64,
                bytes / minimum,
            );
        }
        let same = checksums.iter().all(|c| *c == checksums[0]);
        println!("| {name} | results equal | {} | | | | |", if same { "yes" } else { "NO" });
    }
}
