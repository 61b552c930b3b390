//! A kernel crate that needs `std` on every target: its device passes take `std` from the
//! toolchain.

#![feature(gpu_offload)]

use core::offload::offload_kernel;

/// `x[i] = -x[i]` over the grid.
#[offload_kernel]
pub fn negate(x: &mut [i32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        x[i] = -x[i];
    }
}

/// What only `std` gives.
pub fn label(values: &[i32]) -> String {
    format!("{} values", values.len())
}
