// `std::offload` is `core::offload` (upstream's tests import `std::offload::offload_kernel`),
// and the grid's functions are in the prelude of `core` and `std` under the names kernels
// written for one GPU use: a kernel compiles without importing them, and a name that the
// crate defines or imports itself shadows the prelude's.

//@ check-pass
//@ edition: 2024

#![feature(gpu_offload)]
#![crate_type = "lib"]

use std::offload::offload_kernel;

#[offload_kernel]
pub fn scale(x: &mut [f32], factor: f32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    let _rows = grid_dim_y() * block_dim_y() + block_idx_z() + thread_idx_z();
    if i < x.len() {
        x[i] *= factor;
    }
}

mod own {
    // The crate's own `thread_idx_x` (another type than the prelude's `u32`) wins.
    fn thread_idx_x() -> i64 {
        -1
    }

    pub fn reads_own() -> i64 {
        thread_idx_x()
    }
}

pub fn launch(x: &mut [f32]) {
    std::offload::offload! { kernel = scale, args = (x, 2.0) }
    let _: i64 = own::reads_own();
}
