// A final artifact (a `staticlib`) of a crate of `app`'s graph: its device pass makes no image.
// It is compiled only for device passes (the GPU, and the host CPU as offload's CPU device).

#![no_std]

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

pub fn helper() -> u32 {
    1
}
