//! Kernels that read their place in the launch grid through `core::offload`, one work item
//! per element, as GPU kernels are written.

#![feature(rustc_attrs, core_intrinsics, gpu_offload)]
#![cfg_attr(target_arch = "nvptx64", feature(stdarch_nvptx))]
#![cfg_attr(target_arch = "amdgpu", feature(stdarch_amdgpu))]
#![allow(internal_features)]
#![no_std]

use core::offload::{
    block_dim_x, block_dim_y, block_dim_z, block_idx_x, block_idx_y, block_idx_z, grid_dim_x,
    grid_dim_y, grid_dim_z, thread_idx_x, thread_idx_y, thread_idx_z,
};

/// The device image's panic handler (`cargo offload` sets `offload_device` in its device
/// passes; the host takes std's).
#[cfg(offload_device)]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}

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
