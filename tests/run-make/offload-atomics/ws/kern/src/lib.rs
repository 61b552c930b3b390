//! Kernels that write through shared references to atomics and `Cell`s, as CUDA programs write
//! `atomicAdd(&total, v)`: a sum, a histogram, maxima, counters made of `compare_exchange`
//! loops, a float sum on an integer's bits, a struct of atomics, and a `Cell` written by one work
//! item. Beside them a kernel that reads plain data behind `&` and writes nothing there.
//!
//! The `scoped_*`, `per_block` and `release_*` kernels do the same with the scoped atomics of
//! `core::offload::atomic` (device scope, and block scope on one slot per block), and with the
//! other operations of `ScopedAtomic` (`fetch_sub`, `fetch_and`, `fetch_or`, `fetch_xor`,
//! `swap`, signed `fetch_min`).

#![feature(gpu_offload)]
#![no_std]

use core::cell::Cell;
use core::offload::atomic::{Scope, ScopedAtomic};
use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};
use core::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64};

/// The work item's index in a 1-D grid.
fn global_x() -> usize {
    (block_idx_x() * block_dim_x() + thread_idx_x()) as usize
}

/// Adds every element of `x` to `total` (32 bits) and to `total64` (64 bits), one
/// `fetch_add` of each per work item.
#[offload_kernel]
pub fn sum(x: &[u32], total: &AtomicU32, total64: &AtomicU64) {
    let i = global_x();
    if i < x.len() {
        total.fetch_add(x[i], Relaxed);
        total64.fetch_add(u64::from(x[i]), Relaxed);
    }
}

/// Counts each element of `x` in the bin `x[i] % bins.len()`.
#[offload_kernel]
pub fn histogram(x: &[u32], bins: &[AtomicU32]) {
    let i = global_x();
    if i < x.len() {
        bins[x[i] as usize % bins.len()].fetch_add(1, Relaxed);
    }
}

/// As [`histogram`], through a mutable slice of atomics.
#[offload_kernel]
pub fn histogram_mut(x: &[u32], bins: &mut [AtomicU32]) {
    let i = global_x();
    if i < x.len() {
        bins[x[i] as usize % bins.len()].fetch_add(1, Relaxed);
    }
}

/// The largest element of `x`, with `fetch_max` on 32 and on 64 bits (`x[i] * 2^20` there).
#[offload_kernel]
pub fn max(x: &[u32], max32: &AtomicU32, max64: &AtomicU64) {
    let i = global_x();
    if i < x.len() {
        max32.fetch_max(x[i], Relaxed);
        max64.fetch_max(u64::from(x[i]) << 20, Relaxed);
    }
}

/// Each of the first `n` work items adds 1 to both counters with a `compare_exchange` loop.
#[offload_kernel]
pub fn cas_count(n: usize, counter: &AtomicU32, counter64: &AtomicU64) {
    if global_x() >= n {
        return;
    }
    let mut seen = counter.load(Relaxed);
    while let Err(now) = counter.compare_exchange(seen, seen + 1, Relaxed, Relaxed) {
        seen = now;
    }
    let mut seen = counter64.load(Relaxed);
    while let Err(now) = counter64.compare_exchange(seen, seen + 1, Relaxed, Relaxed) {
        seen = now;
    }
}

/// Adds every element of `x` to the `f32` whose bits `total` holds, with a `compare_exchange`
/// loop on the bits (what CUDA's `atomicAdd(float *, float)` does in hardware).
#[offload_kernel]
pub fn float_sum(x: &[f32], total: &AtomicU32) {
    let i = global_x();
    if i >= x.len() {
        return;
    }
    let mut seen = total.load(Relaxed);
    loop {
        let sum = (f32::from_bits(seen) + x[i]).to_bits();
        match total.compare_exchange(seen, sum, Relaxed, Relaxed) {
            Ok(_) => break,
            Err(now) => seen = now,
        }
    }
}

/// Counters of a launch, written by every work item.
pub struct Stats {
    /// Elements counted.
    pub count: AtomicU32,
    /// Their sum.
    pub sum: AtomicU64,
}

/// Counts and sums the elements of `x` into `stats`, a shared reference to a struct of atomics.
#[offload_kernel]
pub fn stats(x: &[u32], stats: &Stats) {
    let i = global_x();
    if i < x.len() {
        stats.count.fetch_add(1, Relaxed);
        stats.sum.fetch_add(u64::from(x[i]), Relaxed);
    }
}

/// Work item 0 alone adds `x` to the `Cell` (a `Cell` is not shared between work items).
#[offload_kernel]
pub fn bump(x: u32, cell: &Cell<u32>) {
    if global_x() == 0 {
        cell.set(cell.get() + x);
    }
}

/// Reads plain data behind `&` (copied to the device only) and writes `from[0] * 2` to `out`.
#[offload_kernel]
pub fn double(from: &[u32; 3], out: &mut u64) {
    if global_x() == 0 {
        *out = u64::from(from[0]) * 2;
    }
}

/// Spins of [`meet`]'s wait: seconds on a CPU, far longer than a worker thread takes to start.
const MEET_SPINS: u32 = 1 << 28;

/// Block `b` of a launch of two blocks raises `flags[b]`, then waits a bounded time for the
/// other block's flag and adds 1 to `met` if it saw it: `met` ends at 2 when the two blocks ran
/// at the same time, at 1 when one ran after the other.
#[offload_kernel]
pub fn meet(flags: &[AtomicU32], met: &AtomicU32) {
    if thread_idx_x() != 0 {
        return;
    }
    let b = block_idx_x() as usize;
    flags[b].store(1, Relaxed);
    for _ in 0..MEET_SPINS {
        if flags[1 - b].load(Relaxed) == 1 {
            met.fetch_add(1, Relaxed);
            return;
        }
        core::hint::spin_loop();
    }
}

/// [`sum`] with device-scope `fetch_add`s.
#[offload_kernel]
pub fn scoped_sum(x: &[u32], total: &AtomicU32, total64: &AtomicU64) {
    let i = global_x();
    if i < x.len() {
        total.fetch_add_scoped(x[i], Relaxed, Scope::Device);
        total64.fetch_add_scoped(u64::from(x[i]), Relaxed, Scope::Device);
    }
}

/// The largest element of `x` (device-scope unsigned `fetch_max` on 32 bits), and the smallest
/// of `-x[i] * 2^20` (signed `fetch_min` on 64 bits).
#[offload_kernel]
pub fn scoped_max(x: &[u32], max32: &AtomicU32, min64: &AtomicI64) {
    let i = global_x();
    if i < x.len() {
        max32.fetch_max_scoped(x[i], Relaxed, Scope::Device);
        min64.fetch_min_scoped(-(i64::from(x[i]) << 20), Relaxed, Scope::Device);
    }
}

/// [`cas_count`] with device-scope `compare_exchange`s.
#[offload_kernel]
pub fn scoped_cas(n: usize, counter: &AtomicU32, counter64: &AtomicU64) {
    if global_x() >= n {
        return;
    }
    let mut seen = counter.load(Relaxed);
    while let Err(now) =
        counter.compare_exchange_scoped(seen, seen + 1, Relaxed, Relaxed, Scope::Device)
    {
        seen = now;
    }
    let mut seen = counter64.load(Relaxed);
    while let Err(now) =
        counter64.compare_exchange_scoped(seen, seen + 1, Relaxed, Relaxed, Scope::Device)
    {
        seen = now;
    }
}

/// [`float_sum`] with a device-scope `compare_exchange` loop of acquire-release ordering.
#[offload_kernel]
pub fn scoped_float_sum(x: &[f32], total: &AtomicU32) {
    let i = global_x();
    if i >= x.len() {
        return;
    }
    let mut seen = total.load(Relaxed);
    loop {
        let sum = (f32::from_bits(seen) + x[i]).to_bits();
        match total.compare_exchange_scoped(seen, sum, AcqRel, Acquire, Scope::Device) {
            Ok(_) => break,
            Err(now) => seen = now,
        }
    }
}

/// Each work item counts itself in its block's slot, with block scope (only the block touches
/// the slot): `counts[b]` with `fetch_add`, `cas_counts[b]` with a `compare_exchange` loop.
#[offload_kernel]
pub fn per_block(counts: &[AtomicU32], cas_counts: &[AtomicU64]) {
    let b = block_idx_x() as usize;
    counts[b].fetch_add_scoped(1, Relaxed, Scope::Block);
    let mut seen = cas_counts[b].load(Relaxed);
    while let Err(now) =
        cas_counts[b].compare_exchange_scoped(seen, seen + 1, Relaxed, Relaxed, Scope::Block)
    {
        seen = now;
    }
}

/// The other operations, device scope: `ones` ends as the OR of every `x[i]`, `all` (all bits
/// set before) as their AND, `parity` as their XOR, `rest` (their sum before) at 0, and
/// `last` holds the `i + 1` of the last work item that swapped it.
#[offload_kernel]
pub fn scoped_bits(
    x: &[u32],
    ones: &AtomicU32,
    all: &AtomicU32,
    parity: &AtomicU32,
    rest: &AtomicU64,
    last: &AtomicU32,
) {
    let i = global_x();
    if i < x.len() {
        ones.fetch_or_scoped(x[i], Relaxed, Scope::Device);
        all.fetch_and_scoped(x[i], Relaxed, Scope::Device);
        parity.fetch_xor_scoped(x[i], Relaxed, Scope::Device);
        rest.fetch_sub_scoped(u64::from(x[i]), Relaxed, Scope::Device);
        last.swap_scoped(i as u32 + 1, Relaxed, Scope::Device);
    }
}

/// Every work item adds 1 with acquire-release ordering and device scope.
#[offload_kernel]
pub fn release_device(counter: &AtomicU32) {
    counter.fetch_add_scoped(1, AcqRel, Scope::Device);
}

/// Every work item adds 1 with acquire-release ordering and system scope (Rust's `fetch_add`).
#[offload_kernel]
pub fn release_system(counter: &AtomicU32) {
    counter.fetch_add(1, AcqRel);
}
