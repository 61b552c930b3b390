//! A one-file `std` program whose kernels each reach `std`'s platform layer through one item
//! that `std`'s optimized MIR inlines (a `Vec`'s allocation, `Instant::now`, `Mutex::lock`),
//! with no output, thread or file in sight: the device pass for a GPU refuses each of them.
//! `plain` reaches nothing of it.

#![feature(gpu_offload)]

use std::offload::{offload, offload_kernel};
use std::sync::Mutex;
use std::time::Instant;

/// `out[i] = 2i`, summed from a `Vec` of two elements.
#[offload_kernel]
fn only_vec(out: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < out.len() {
        let halves = vec![i as u32; 2];
        out[i] = halves[0] + halves[1];
    }
}

/// `out[i]` = the nanoseconds of a clock read.
#[offload_kernel]
fn only_instant(out: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < out.len() {
        out[i] = Instant::now().elapsed().subsec_nanos();
    }
}

static TOTAL: Mutex<u32> = Mutex::new(0);

/// Counts the work items in a `Mutex`.
#[offload_kernel]
fn only_mutex(out: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < out.len() {
        let mut total = TOTAL.lock().unwrap();
        *total += 1;
        out[i] = *total;
    }
}

/// `out[i] = i`.
#[offload_kernel]
fn plain(out: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < out.len() {
        out[i] = i as u32;
    }
}

fn main() {
    let mut out = vec![0u32; 1000];
    offload! {
        kernel = only_vec,
        workgroup_dim = [4, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&mut out[..],),
    }
    offload! {
        kernel = only_instant,
        workgroup_dim = [4, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&mut out[..],),
    }
    offload! {
        kernel = only_mutex,
        workgroup_dim = [4, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&mut out[..],),
    }
    offload! {
        kernel = plain,
        workgroup_dim = [4, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&mut out[..],),
    }
    println!("{:?}", out.last());
}
