//! What a launch costs the CPU device without work or data: [`LAUNCHES`] launches of an empty
//! kernel over three grids, in microseconds per launch, with the runner's worker pool (this
//! process) and without it (a child process of the same program with `RUST_OFFLOAD_CPU_POOL=0`,
//! where each launch of several blocks starts and joins its worker threads).

use std::hint::black_box;
use std::time::Instant;

use core::intrinsics::offload;
use cpu_grid_bench::empty;

/// Launches per timed round.
const LAUNCHES: u32 = 10_000;
/// Timed rounds per grid; the median is reported.
const ROUNDS: usize = 5;
/// The child run's argument: print [`PREFIX`] and the costs, nothing else.
pub const COSTS_ONLY: &str = "--launch-costs-only";
/// The line of the child's costs.
const PREFIX: &str = "launch costs (us):";

/// The grids: blocks, threads per block, and how the table names them.
const GRIDS: [([u32; 3], [u32; 3], &str); 3] = [
    ([1, 1, 1], [1, 1, 1], "1 block of 1 thread"),
    ([2, 1, 1], [1, 1, 1], "2 blocks of 1 thread"),
    ([256, 1, 1], [256, 1, 1], "256 blocks of 256 threads"),
];

/// Microseconds per launch for each of [`GRIDS`]: the median of [`ROUNDS`] rounds of
/// [`LAUNCHES`] launches, after one untimed round.
fn costs_us() -> Vec<f64> {
    GRIDS
        .iter()
        .map(|&(blocks, threads, _)| {
            let round = || {
                let start = Instant::now();
                for i in 0..LAUNCHES {
                    offload::<_, _, ()>(empty, blocks, threads, (black_box(i),));
                }
                start.elapsed().as_secs_f64() * 1e6 / f64::from(LAUNCHES)
            };
            round();
            let mut times: Vec<f64> = (0..ROUNDS).map(|_| round()).collect();
            times.sort_by(f64::total_cmp);
            times[ROUNDS / 2]
        })
        .collect()
}

/// The child's part: one line with the costs.
pub fn print_costs() {
    let costs: Vec<String> = costs_us().iter().map(|c| format!("{c:.3}")).collect();
    println!("{PREFIX} {}", costs.join(" "));
}

/// The table: each grid with the pool, without it (the child), and their ratio.
pub fn report() {
    let pooled = costs_us();
    // The program's own path as it was started (see `main`).
    let program = std::env::args_os().next().unwrap();
    let output = std::process::Command::new(program)
        .arg(COSTS_ONLY)
        .env("RUST_OFFLOAD_CPU_POOL", "0")
        .output()
        .unwrap();
    assert!(output.status.success(), "the launches without the pool failed: {}", output.status);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().find_map(|l| l.strip_prefix(PREFIX)).expect("the child's costs");
    let own: Vec<f64> = line.split_whitespace().map(|c| c.parse().unwrap()).collect();
    let workers = std::env::var("RUST_OFFLOAD_CPU_WORKERS").unwrap_or_else(|_| "default".into());
    println!(
        "empty launches, us per launch (median of {ROUNDS} rounds of {LAUNCHES}), workers: \
         {workers}"
    );
    println!("{:<28}{:>8}{:>22}{:>8}", "grid", "pool", "threads per launch", "ratio");
    for ((&(_, _, name), pool), own) in GRIDS.iter().zip(&pooled).zip(&own) {
        println!("{name:<28}{pool:>8.2}{own:>22.2}{:>7.2}x", own / pool);
    }
}
