// A cdylib with one kernel, as HPC users build it (B9).

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[rustc_offload_kernel]
pub fn axpy(a: f32, x: *const [f32; 16], y: *mut [f32; 16]) {
    let (x, y) = unsafe { (&*x, &mut *y) };
    for (yi, xi) in y.iter_mut().zip(x.iter()) {
        *yi += a * *xi;
    }
}

#[cfg(target_arch = "x86_64")]
pub fn launch(a: f32, x: &[f32; 16], y: &mut [f32; 16]) {
    core::intrinsics::offload::<_, _, ()>(
        axpy,
        [1, 1, 1],
        [16, 1, 1],
        (a, x as *const _, y as *mut _),
    )
}
