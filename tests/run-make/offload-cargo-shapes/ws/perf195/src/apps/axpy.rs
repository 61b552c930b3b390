//! `y[i] += a * x[i]`, one work item per element, 64 per block.

use crate::N;

#[cfg(not(offload_device))]
unsafe extern "C" {
    fn perf195_axpy(n: usize, a: f64, x: *const [f64; N], y: *mut [f64; N]);
}

#[cfg(offload_device)]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub unsafe extern "gpu-kernel" fn perf195_axpy(
    n: usize,
    a: f64,
    x: *const [f64; N],
    y: *mut [f64; N],
) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < n {
        unsafe { (*y)[i] += a * (*x)[i] };
    }
}

/// Launches the kernel over `x` and `y`.
#[cfg(not(offload_device))]
pub(crate) fn run(a: f64, x: &[f64; N], y: &mut [f64; N]) {
    let blocks = N.div_ceil(64) as u32;
    core::intrinsics::offload::<_, _, ()>(
        perf195_axpy,
        [blocks, 1, 1],
        [64, 1, 1],
        (N, a, x as *const [f64; N], y as *mut [f64; N]),
    );
}
