//! Kernels that read their place in the launch grid through `core::offload`, one work item
//! per element, as GPU kernels are written.

#![feature(rustc_attrs, core_intrinsics, gpu_offload)]
#![cfg_attr(target_arch = "nvptx64", feature(stdarch_nvptx))]
#![cfg_attr(target_arch = "amdgpu", feature(stdarch_amdgpu))]
#![allow(internal_features)]
#![no_std]

use core::offload::{
    block_dim_x, block_dim_y, block_dim_z, block_idx_x, block_idx_y, block_idx_z, block_shared,
    dynamic_shared_memory, grid_dim_x, grid_dim_y, grid_dim_z, sync_threads, thread_idx_x,
    thread_idx_y, thread_idx_z,
};

// No `#[panic_handler]`: the device pass gives each image one that reports the panic (its
// location and message) and traps.

/// Elements of the 1-D kernels.
pub const N: usize = 1_000_000;

/// `y = a * x + y`, one element per work item; the grid may have more work items than
/// elements.
#[rustc_offload_kernel]
pub fn saxpy(a: f32, x: &[f32; N], y: &mut [f32; N]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < N {
        y[i] = a * x[i] + y[i];
    }
}

/// Mixes the twelve values that tell a work item where it is, in the order thread index,
/// block index, block dimensions, grid dimensions (x, y, z each).
pub fn mix(place: [u32; 12]) -> u32 {
    place.iter().fold(17u32, |h, &v| h.wrapping_mul(31).wrapping_add(v))
}

/// The twelve values of the calling work item.
fn place() -> [u32; 12] {
    [
        thread_idx_x(),
        thread_idx_y(),
        thread_idx_z(),
        block_idx_x(),
        block_idx_y(),
        block_idx_z(),
        block_dim_x(),
        block_dim_y(),
        block_dim_z(),
        grid_dim_x(),
        grid_dim_y(),
        grid_dim_z(),
    ]
}

/// Width and height of the 2-D kernel's array.
pub const W: usize = 300;
pub const H: usize = 200;

/// Writes `mix(place())` at its (x, y), row-major; work items outside the array write nothing.
#[rustc_offload_kernel]
pub fn grid_2d(out: &mut [u32; W * H]) {
    let x = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    let y = (block_idx_y() * block_dim_y() + thread_idx_y()) as usize;
    if x < W && y < H {
        out[y * W + x] = mix(place());
    }
}

/// Sizes of the 3-D kernel's array along x, y, z.
pub const D3: [usize; 3] = [20, 12, 10];

/// Writes `mix(place())` at its (x, y, z), x fastest; work items outside write nothing.
#[rustc_offload_kernel]
pub fn grid_3d(out: &mut [u32; D3[0] * D3[1] * D3[2]]) {
    let x = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    let y = (block_idx_y() * block_dim_y() + thread_idx_y()) as usize;
    let z = (block_idx_z() * block_dim_z() + thread_idx_z()) as usize;
    if x < D3[0] && y < D3[1] && z < D3[2] {
        out[(z * D3[1] + y) * D3[0] + x] = mix(place());
    }
}

/// Elements of the racy kernel.
pub const M: usize = 1024;

/// The bundled example's first saxpy: every work item loops over the whole array, so a launch
/// of more than one work item applies it once per work item, and work items that run at the
/// same time race on `y`.
#[rustc_offload_kernel]
pub fn racy_saxpy(a: f32, x: &[f32; M], y: &mut [f32; M]) {
    for i in 0..M {
        y[i] = a * x[i] + y[i];
    }
}

/// Threads per block of the two index kernels, which are launched over `[64, 2, 1]` blocks.
pub const INDEX_BLOCK: u32 = 64;

/// Elements of the index kernels' array: one per work item.
pub const INDEX_N: usize = 64 * 64 * 2;

/// Where each work item is, from `core::offload`: at `i = (by * 64 + bx) * 64 + tx`, the value
/// `tx + 1000 * bx + 100_000 * by + ty`.
#[rustc_offload_kernel]
pub fn index_portable(out: &mut [u32; INDEX_N]) {
    let (tx, ty, bx, by) = (thread_idx_x(), thread_idx_y(), block_idx_x(), block_idx_y());
    let i = ((by * INDEX_BLOCK + bx) * INDEX_BLOCK + tx) as usize;
    if i < INDEX_N {
        out[i] = tx + 1000 * bx + 100_000 * by + ty;
    }
}

/// `index_portable` written with each GPU's `core::arch` (the host's build uses
/// `core::offload`, which is all it has).
#[rustc_offload_kernel]
pub fn index_arch(out: &mut [u32; INDEX_N]) {
    #[cfg(target_arch = "nvptx64")]
    let (tx, ty, bx, by) = unsafe {
        use core::arch::nvptx::*;
        (_thread_idx_x(), _thread_idx_y(), _block_idx_x(), _block_idx_y())
    };
    #[cfg(target_arch = "amdgpu")]
    let (tx, ty, bx, by) = {
        use core::arch::amdgpu::*;
        (workitem_id_x(), workitem_id_y(), workgroup_id_x(), workgroup_id_y())
    };
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    let (tx, ty, bx, by) = (thread_idx_x(), thread_idx_y(), block_idx_x(), block_idx_y());
    let i = ((by * INDEX_BLOCK + bx) * INDEX_BLOCK + tx) as usize;
    if i < INDEX_N {
        out[i] = tx + 1000 * bx + 100_000 * by + ty;
    }
}

/// Writes its global index `i` to `out[i]`, except the work item whose index is `bad`, which
/// indexes past the end and panics.
#[rustc_offload_kernel]
pub fn out_of_bounds(out: &mut [u32; 64], bad: u32) {
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    let at = if i == bad { 64 + i as usize } else { i as usize };
    out[at] = i;
}

/// Threads per block of the block sum, and the elements that each block sums.
pub const SUM_BLOCK: usize = 256;
/// Elements of the block sum's input: one per work item of 1000 blocks.
pub const SUM_N: usize = SUM_BLOCK * 1000;

block_shared! {
    /// The block sum's partial sums, one per thread of the block.
    static PARTIAL: [u32; SUM_BLOCK];
}

/// `out[b]` = the wrapping sum of block `b`'s `SUM_BLOCK` elements: each thread stores its
/// element in block-shared memory, then the block halves the partial sums step by step, with a
/// barrier after each step; thread 0 writes the block's sum.
#[rustc_offload_kernel]
pub fn block_sum(input: &[u32; SUM_N], out: &mut [u32; SUM_N / SUM_BLOCK]) {
    let (t, b) = (thread_idx_x() as usize, block_idx_x() as usize);
    let partial = PARTIAL.get();
    // SAFETY: every thread of the block reaches each barrier; between two barriers each
    // element of `PARTIAL` is written by at most one thread and read by no other.
    unsafe {
        (*partial)[t] = input[b * SUM_BLOCK + t];
        sync_threads();
        let mut stride = SUM_BLOCK / 2;
        while stride > 0 {
            if t < stride {
                (*partial)[t] = (*partial)[t].wrapping_add((*partial)[t + stride]);
            }
            sync_threads();
            stride /= 2;
        }
        if t == 0 {
            out[b] = (*partial)[0];
        }
    }
}

/// `block_sum` with its partial sums in the launch's dynamic block-shared memory, of which it
/// needs `block_dim_x() * 4` bytes.
#[rustc_offload_kernel]
pub fn block_sum_dynamic(input: &[u32; SUM_N], out: &mut [u32; SUM_N / SUM_BLOCK]) {
    let (t, b, n) = (thread_idx_x() as usize, block_idx_x() as usize, block_dim_x() as usize);
    let partial = dynamic_shared_memory().cast::<u32>();
    // SAFETY: the launch gives `n` `u32`s of dynamic block-shared memory; every thread of the
    // block reaches each barrier, and between two barriers each element is written by at most
    // one thread and read by no other.
    unsafe {
        *partial.add(t) = input[b * n + t];
        sync_threads();
        let mut stride = n / 2;
        while stride > 0 {
            if t < stride {
                *partial.add(t) = (*partial.add(t)).wrapping_add(*partial.add(t + stride));
            }
            sync_threads();
            stride /= 2;
        }
        if t == 0 {
            out[b] = *partial;
        }
    }
}

/// Side of the tiled matrix multiply's square matrices (row-major) and of its tiles.
pub const MM: usize = 128;
pub const TILE: usize = 16;

block_shared! {
    /// The tiles of `a` and `b` that a block multiplies.
    static TILE_A: [[f32; TILE]; TILE];
    static TILE_B: [[f32; TILE]; TILE];
}

/// `c = a * b`, one element of `c` per work item over `TILE` x `TILE` blocks: for each pair of
/// tiles the block loads one element of each per thread into block-shared memory, waits, adds
/// up its row of `a`'s tile times its column of `b`'s, and waits again (two barriers per tile).
#[rustc_offload_kernel]
pub fn matmul_tiled(a: &[f32; MM * MM], b: &[f32; MM * MM], c: &mut [f32; MM * MM]) {
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    let col = block_idx_x() as usize * TILE + tx;
    let row = block_idx_y() as usize * TILE + ty;
    let (tile_a, tile_b) = (TILE_A.get(), TILE_B.get());
    let mut sum = 0.0f32;
    for t in 0..MM / TILE {
        // SAFETY: every thread of the block reaches both barriers of each tile; each element
        // of the tiles is written by one thread and read only after the first barrier.
        unsafe {
            (*tile_a)[ty][tx] = a[row * MM + t * TILE + tx];
            (*tile_b)[ty][tx] = b[(t * TILE + ty) * MM + col];
            sync_threads();
            for k in 0..TILE {
                sum += (*tile_a)[ty][k] * (*tile_b)[k][tx];
            }
            sync_threads();
        }
    }
    c[row * MM + col] = sum;
}

/// Thread 0 of each block returns before the barrier that the block's other threads wait at.
#[rustc_offload_kernel]
pub fn barrier_misuse(out: &mut [u32; 64]) {
    let t = thread_idx_x();
    if t == 0 {
        return;
    }
    // SAFETY: none: thread 0 never arrives, which the CPU device reports.
    unsafe { sync_threads() };
    out[(block_idx_x() * block_dim_x() + t) as usize] = t;
}

/// A chain of calls with 2 KiB of stack each, `depth` deep (the sum keeps each frame alive
/// across the next call, so that the chain is no loop).
#[inline(never)]
fn deep_sum(depth: u32) -> u64 {
    let frame = core::hint::black_box([depth as u8; 2048]);
    if depth == 0 {
        return u64::from(frame[0]);
    }
    deep_sum(depth - 1) + u64::from(frame[depth as usize % 2048])
}

/// Work item `victim` of block 1 calls 4 MiB deep, more than a work item's stack of a kernel
/// with barriers; every work item reaches the barrier first.
#[rustc_offload_kernel]
pub fn deep_stack(out: &mut [u64; 64], victim: u32) {
    let t = thread_idx_x();
    // SAFETY: every thread of the block reaches the barrier.
    unsafe { sync_threads() };
    let depth = if block_idx_x() == 1 && t == victim { 2048 } else { 1 };
    out[(block_idx_x() * block_dim_x() + t) as usize] = deep_sum(depth);
}

/// Work item `victim` writes through an address that no memory has.
#[rustc_offload_kernel]
pub fn bad_address(out: &mut [u32; 64], victim: u32) {
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    if i == victim {
        // SAFETY: none: the address is unmapped, which the CPU device reports.
        unsafe { core::ptr::write_volatile(8 as *mut u32, i) };
    }
    out[i as usize] = i;
}

/// One kernel per index function of `core::offload`, named after it: every work item raises
/// `out` to the function's value (`fetch_max`), so `out` ends at the largest value that any work
/// item saw, and each kernel reads one special register (nvptx) or one value of the dispatch
/// (amdgcn), which the test names.
macro_rules! index_readers {
    ($($kernel:ident: $function:ident;)*) => {$(
        #[doc = concat!("`out = max(out, ", stringify!($function), "())` in every work item.")]
        #[rustc_offload_kernel]
        pub fn $kernel(out: &core::sync::atomic::AtomicU32) {
            out.fetch_max($function(), core::sync::atomic::Ordering::Relaxed);
        }
    )*};
}

index_readers! {
    reads_thread_idx_x: thread_idx_x;
    reads_thread_idx_y: thread_idx_y;
    reads_thread_idx_z: thread_idx_z;
    reads_block_idx_x: block_idx_x;
    reads_block_idx_y: block_idx_y;
    reads_block_idx_z: block_idx_z;
    reads_block_dim_x: block_dim_x;
    reads_block_dim_y: block_dim_y;
    reads_block_dim_z: block_dim_z;
    reads_grid_dim_x: grid_dim_x;
    reads_grid_dim_y: grid_dim_y;
    reads_grid_dim_z: grid_dim_z;
}

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    fn gettid() -> i32;
}

/// Thread 0 of each block busies itself for a while, then writes the id of the OS thread that
/// ran it (`gettid` of the C library on the CPU device; 0 on the GPUs), so that the launching
/// program sees which worker threads ran its blocks.
#[rustc_offload_kernel]
pub fn worker_tids(out: &mut [i32; 64]) {
    if thread_idx_x() != 0 {
        return;
    }
    for _ in 0..20_000 {
        core::hint::spin_loop();
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `gettid` takes nothing and cannot fail.
    let tid = unsafe { gettid() };
    #[cfg(not(target_arch = "x86_64"))]
    let tid = 0;
    out[block_idx_x() as usize] = tid;
}
