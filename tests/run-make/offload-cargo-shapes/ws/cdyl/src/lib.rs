//! The `cdylib` shape of the offload authors' ports: one `#![no_std]` library with fat LTO and
//! `panic = "abort"`, whose exported `main` a launcher calls, defining and launching its
//! kernels; the host side prints with the C library's `printf`.

#![feature(rustc_attrs, core_intrinsics, gpu_offload)]
#![allow(internal_features)]
#![no_std]

use core::ffi::{c_char, c_int};
use core::offload::{block_dim_x, block_dim_y, block_idx_x, thread_idx_x, thread_idx_y};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}

const W: usize = 16;
const H: usize = 8;

/// `out[y][x] = in[y][x] * 10 + y`, a 2-D block of `W` x `H` work items per row of blocks.
#[rustc_offload_kernel]
pub fn scale_rows(input: *const [[i32; W]; H], out: *mut [[i32; W]; H]) {
    let x = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    let y = thread_idx_y() as usize;
    if x < W && y < H && (block_dim_y() as usize) == H {
        unsafe { (*out)[y][x] = (*input)[y][x] * 10 + y as i32 };
    }
}

/// The sum of `x` into `out[0]`, by one work item.
#[rustc_offload_kernel]
pub fn total(x: &[i32; W], out: *mut i32) {
    unsafe { *out = x.iter().sum() };
}

#[cfg(not(offload_device))]
unsafe extern "C" {
    fn printf(format: *const c_char, ...) -> c_int;
}

/// What a launcher calls: runs both kernels and prints their results.
#[cfg(not(offload_device))]
#[unsafe(no_mangle)]
#[inline(never)]
fn main() {
    let input: [[i32; W]; H] = core::array::from_fn(|y| core::array::from_fn(|x| (x + y) as i32));
    let mut out = [[0i32; W]; H];
    core::intrinsics::offload::<_, _, ()>(
        scale_rows,
        [2, 1, 1],
        [8, H as u32, 1],
        (&raw const input, &raw mut out),
    );
    let mut sum = 0i32;
    // A raw pointer where the kernel takes a reference to the same array, as rustc 1.95 takes.
    core::intrinsics::offload::<_, _, ()>(
        total,
        [1, 1, 1],
        [1, 1, 1],
        (&raw const out[H - 1], &raw mut sum),
    );
    for row in &out {
        for v in row {
            unsafe { printf(c"%d ".as_ptr(), *v) };
        }
    }
    unsafe { printf(c"\nsum: %d\n".as_ptr(), sum) };
}
