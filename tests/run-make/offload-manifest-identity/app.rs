// Launches `fill` of both versions of `kern` (`--extern kern1=...` and `--extern kern2=...`).

#![feature(core_intrinsics)]
#![no_std]

#[cfg(not(target_arch = "x86_64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

// Not inlinable across crates, so that this crate's own object holds the launches.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn launch(a: &mut [u32; 4], b: &mut [u32; 4]) {
    core::intrinsics::offload::<_, _, ()>(kern1::fill, [1, 1, 1], [1, 1, 1], (a as *mut _,));
    core::intrinsics::offload::<_, _, ()>(kern2::fill, [1, 1, 1], [1, 1, 1], (b as *mut _,));
}
