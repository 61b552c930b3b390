//! Launches the kernels of `kern` over 2^20 elements (4096 blocks of 256 work items) and
//! compares each result with the same computation on the host. Prints `name: mismatches value`
//! per result; `value` is what the test recomputes on its own (a sum, a count, a checksum).
//! With `copies` it launches two small kernels once each, for the runtime's info lines; with
//! `meet`, two blocks that wait for each other, and prints how many saw the other.

#![feature(gpu_offload)]

use core::cell::Cell;
use core::offload::{PreloadMut, offload};
use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64};

use kern::{
    Stats, bump, cas_count, double, float_sum, histogram, histogram_mut, max, meet, per_block,
    release_device, release_system, scoped_bits, scoped_cas, scoped_float_sum, scoped_max,
    scoped_sum, stats, sum,
};

const N: usize = 1 << 20;
const BINS: usize = 256;
const GRID: [u32; 3] = [(N / 256) as u32, 1, 1];

/// Prints `name: mismatches value`: 0 when `got` is `want`, else 1.
fn report(name: &str, got: u64, want: u64) {
    println!("{name}: {} {got}", u64::from(got != want));
}

/// The sum of `(i + 1) * bins[i]`, and 0 mismatches when every bin is `want`'s.
fn report_bins(name: &str, bins: &[AtomicU32], want: &[u32]) {
    let got: Vec<u32> =
        bins.iter().map(|b| b.load(core::sync::atomic::Ordering::Relaxed)).collect();
    let mismatches =
        got.iter().zip(want).filter(|(g, w)| g != w).count() + got.len().abs_diff(want.len());
    let checksum = got.iter().enumerate().map(|(i, &v)| (i as u64 + 1) * u64::from(v)).sum::<u64>();
    println!("{name}: {mismatches} {checksum}");
}

fn main() {
    let x: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 12).collect();
    if std::env::args().nth(1).as_deref() == Some("meet") {
        // Two blocks that wait for each other: do they run at the same time?
        let flags = [AtomicU32::new(0), AtomicU32::new(0)];
        let met = AtomicU32::new(0);
        offload! { kernel = meet, workgroup_dim = [2, 1, 1], args = (&flags[..], &met) };
        println!("meet: {}", met.into_inner());
        return;
    }
    if std::env::args().nth(1).as_deref() == Some("copies") {
        // One launch with plain data behind `&` (12 bytes), one with a struct of atomics behind
        // `&` (16 bytes): the runtime's info lines show which comes back.
        let from = [1u32, 2, 3];
        let mut out = 0u64;
        offload! { kernel = double, args = (&from, &mut out) };
        let counters = Stats { count: AtomicU32::new(0), sum: AtomicU64::new(0) };
        offload! { kernel = stats, thread_dim = [5, 1, 1], args = (&x[..5], &counters) };
        println!("copies: {out} {}", counters.count.into_inner());
        return;
    }

    let total = AtomicU32::new(0);
    let total64 = AtomicU64::new(0);
    offload! {
        kernel = sum, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (&x[..], &total, &total64),
    }
    let want64: u64 = x.iter().map(|&v| u64::from(v)).sum();
    report("sum32", u64::from(total.into_inner()), want64 as u32 as u64);
    report("sum64", total64.into_inner(), want64);

    let mut want = vec![0u32; BINS];
    for &v in &x {
        want[v as usize % BINS] += 1;
    }
    let bins: Vec<AtomicU32> = (0..BINS).map(|_| AtomicU32::new(0)).collect();
    offload! {
        kernel = histogram, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (&x[..], &bins[..]),
    }
    report_bins("histogram", &bins, &want);
    let mut bins_mut: Vec<AtomicU32> = (0..BINS).map(|_| AtomicU32::new(0)).collect();
    offload! {
        kernel = histogram_mut, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (&x[..], &mut bins_mut[..]),
    }
    report_bins("histogram_mut", &bins_mut, &want);
    // Kept on the device across three launches, back when the `PreloadMut` is dropped.
    let mut kept_bins: Vec<AtomicU32> = (0..BINS).map(|_| AtomicU32::new(0)).collect();
    {
        let kept = PreloadMut::new(&mut kept_bins[..]);
        for _ in 0..3 {
            offload! {
                kernel = histogram, workgroup_dim = GRID, thread_dim = [256, 1, 1],
                args = (&x[..], &*kept),
            }
        }
    }
    let thrice: Vec<u32> = want.iter().map(|&w| 3 * w).collect();
    report_bins("histogram_preload", &kept_bins, &thrice);

    let (max32, max64) = (AtomicU32::new(0), AtomicU64::new(0));
    offload! {
        kernel = max, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (&x[..], &max32, &max64),
    }
    let want_max = *x.iter().max().unwrap();
    report("max32", u64::from(max32.into_inner()), u64::from(want_max));
    report("max64", max64.into_inner(), u64::from(want_max) << 20);

    let (counter, counter64) = (AtomicU32::new(0), AtomicU64::new(0));
    offload! {
        kernel = cas_count, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (N, &counter, &counter64),
    }
    report("cas32", u64::from(counter.into_inner()), N as u64);
    report("cas64", counter64.into_inner(), N as u64);

    // Integers below 2^24 in every partial sum: exact in any order.
    let xf: Vec<f32> = (0..N).map(|i| (i % 8) as f32).collect();
    let total_bits = AtomicU32::new(0.0f32.to_bits());
    offload! {
        kernel = float_sum, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (&xf[..], &total_bits),
    }
    let float_total = f32::from_bits(total_bits.into_inner());
    let want_float: f32 = xf.iter().sum();
    // `as u64` of a NaN is 0, so the mismatch flag, not the value, carries the comparison.
    println!("float_sum: {} {}", u64::from(float_total != want_float), float_total as u64);

    let counters = Stats { count: AtomicU32::new(0), sum: AtomicU64::new(0) };
    offload! {
        kernel = stats, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (&x[..], &counters),
    }
    report("stats_count", u64::from(counters.count.into_inner()), N as u64);
    report("stats_sum", counters.sum.into_inner(), want64);

    let cell = Cell::new(40u32);
    offload! { kernel = bump, args = (2u32, &cell) };
    report("cell", u64::from(cell.get()), 42);

    scoped(&x, &xf, want64, want_max, want_float);
}

/// The scoped atomics of `core::offload::atomic`, each result beside the host's.
fn scoped(x: &[u32], xf: &[f32], want64: u64, want_max: u32, want_float: f32) {
    let (total, total64) = (AtomicU32::new(0), AtomicU64::new(0));
    offload! {
        kernel = scoped_sum, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (x, &total, &total64),
    }
    report("scoped_sum32", u64::from(total.into_inner()), want64 as u32 as u64);
    report("scoped_sum64", total64.into_inner(), want64);

    let (max32, min64) = (AtomicU32::new(0), AtomicI64::new(0));
    offload! {
        kernel = scoped_max, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (x, &max32, &min64),
    }
    report("scoped_max32", u64::from(max32.into_inner()), u64::from(want_max));
    let want_min = -(i64::from(want_max) << 20);
    let min = min64.into_inner();
    // The magnitude, which the test recomputes; the flag compares the signed values.
    println!("scoped_min64: {} {}", u64::from(min != want_min), min.unsigned_abs());

    let (counter, counter64) = (AtomicU32::new(0), AtomicU64::new(0));
    offload! {
        kernel = scoped_cas, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (N, &counter, &counter64),
    }
    report("scoped_cas32", u64::from(counter.into_inner()), N as u64);
    report("scoped_cas64", counter64.into_inner(), N as u64);

    let total_bits = AtomicU32::new(0.0f32.to_bits());
    offload! {
        kernel = scoped_float_sum, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (xf, &total_bits),
    }
    let float_total = f32::from_bits(total_bits.into_inner());
    println!("scoped_float_sum: {} {}", u64::from(float_total != want_float), float_total as u64);

    let blocks = GRID[0] as usize;
    let counts: Vec<AtomicU32> = (0..blocks).map(|_| AtomicU32::new(0)).collect();
    let cas_counts: Vec<AtomicU64> = (0..blocks).map(|_| AtomicU64::new(0)).collect();
    offload! {
        kernel = per_block, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (&counts[..], &cas_counts[..]),
    }
    let counts: Vec<u64> = counts.into_iter().map(|c| u64::from(c.into_inner())).collect();
    let cas_counts: Vec<u64> = cas_counts.into_iter().map(AtomicU64::into_inner).collect();
    for (name, got) in [("per_block", counts), ("per_block_cas", cas_counts)] {
        // Every block's slot counts its 256 work items; the value is their total.
        let mismatches = got.iter().filter(|&&c| c != 256).count();
        println!("{name}: {mismatches} {}", got.iter().sum::<u64>());
    }

    let ones = AtomicU32::new(0);
    let all = AtomicU32::new(u32::MAX);
    let parity = AtomicU32::new(0);
    let rest = AtomicU64::new(want64);
    let last = AtomicU32::new(0);
    offload! {
        kernel = scoped_bits, workgroup_dim = GRID, thread_dim = [256, 1, 1],
        args = (x, &ones, &all, &parity, &rest, &last),
    }
    report("scoped_or", u64::from(ones.into_inner()), u64::from(x.iter().fold(0, |a, v| a | v)));
    report("scoped_and", u64::from(all.into_inner()), u64::from(x.iter().fold(!0, |a, v| a & v)));
    report("scoped_xor", u64::from(parity.into_inner()), u64::from(x.iter().fold(0, |a, v| a ^ v)));
    report("scoped_sub", rest.into_inner(), 0);
    // Some work item swapped last: any of 1..=N, printed as 1 when in range.
    let last = last.into_inner();
    println!("scoped_swap: {} 1", u64::from(!(1..=N as u32).contains(&last)));

    let (device, system) = (AtomicU32::new(0), AtomicU32::new(0));
    offload! {
        kernel = release_device, workgroup_dim = GRID, thread_dim = [256, 1, 1], args = (&device,)
    }
    offload! {
        kernel = release_system, workgroup_dim = GRID, thread_dim = [256, 1, 1], args = (&system,)
    }
    report("release_device", u64::from(device.into_inner()), N as u64);
    report("release_system", u64::from(system.into_inner()), N as u64);
}
