//! A C library whose exported function runs a kernel: `cargo offload` links the device images'
//! registration and the offload runtime into the `cdylib` as into a program.

/// `y = a * x + y` for 256 elements, on the offload device.
#[unsafe(no_mangle)]
pub extern "C" fn clib_saxpy(a: f32, x: *const [f32; 256], y: *mut [f32; 256]) {
    let (x, y) = unsafe { (&*x, &mut *y) };
    kern::launch_saxpy(a, x, y);
}
