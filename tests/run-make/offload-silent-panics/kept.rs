// A write through a pointer on the way to a panic whose message formats a float. The crate
// has no panic handler (the device pass gives the image a trap, which never reads the
// message), but the block that writes is not one that only ends in the handler: the write
// stays in the image, while the formatting may go.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[rustc_offload_kernel]
pub fn flag_then_panic(x: *const f32, flag: *mut u32) {
    unsafe {
        if *x > 1.0 {
            *flag = 0x5eed;
            panic!("too large: {:?}", *x);
        }
    }
}

/// Launches the kernel.
#[cfg(target_arch = "x86_64")]
pub fn run(x: &f32, flag: &mut u32) {
    let args = (x as *const f32, flag as *mut u32);
    core::intrinsics::offload::<_, _, ()>(flag_then_panic, [1, 1, 1], [1, 1, 1], args);
}
