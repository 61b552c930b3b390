// A final artifact (a `staticlib`) of a crate of `app`'s graph: its device pass makes no image.

#![no_std]

#[cfg(not(target_arch = "x86_64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

pub fn helper() -> u32 {
    1
}
