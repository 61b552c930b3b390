//! `x . y` by one work item, and a kernel that nothing launches (in no image).

use crate::N;

#[cfg(not(offload_device))]
unsafe extern "C" {
    fn perf195_dot(x: *const [f64; N], y: *const [f64; N], out: *mut f64);
}

#[cfg(offload_device)]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub unsafe extern "gpu-kernel" fn perf195_dot(
    x: *const [f64; N],
    y: *const [f64; N],
    out: *mut f64,
) {
    let (x, y) = unsafe { (&*x, &*y) };
    unsafe { *out = x.iter().zip(y).map(|(a, b)| a * b).sum() };
}

/// Defined, never launched.
#[cfg(offload_device)]
#[unsafe(no_mangle)]
#[rustc_offload_kernel]
pub unsafe extern "gpu-kernel" fn perf195_unlaunched(out: *mut f64) {
    unsafe { *out = 1.0 };
}

/// Launches the kernel on one work item.
#[cfg(not(offload_device))]
pub(crate) fn run(x: &[f64; N], y: &[f64; N], out: &mut f64) {
    core::intrinsics::offload::<_, _, ()>(
        perf195_dot,
        [1, 1, 1],
        [1, 1, 1],
        (x as *const [f64; N], y as *const [f64; N], out as *mut f64),
    );
}
