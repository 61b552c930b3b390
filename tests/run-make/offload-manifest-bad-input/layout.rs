// A kernel whose parameter type has a field that only the host sees (a `cfg` on the target):
// the device pass refuses the layout the host metadata pass recorded.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[cfg(not(target_arch = "x86_64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Params {
    pub scale: f32,
    #[cfg(target_arch = "x86_64")]
    pub offset: f32,
    pub count: u32,
}

#[rustc_offload_kernel]
pub fn affine(out: *mut [f32; 8], p: Params) {
    let out = unsafe { &mut *out };
    for o in out.iter_mut().take(p.count as usize) {
        *o *= p.scale;
    }
}

#[cfg(target_arch = "x86_64")]
pub fn launch(out: &mut [f32; 8]) {
    let p = Params { scale: 2.0, offset: 0.0, count: 8 };
    core::intrinsics::offload::<_, _, ()>(affine, [1, 1, 1], [1, 1, 1], (out as *mut _, p))
}
