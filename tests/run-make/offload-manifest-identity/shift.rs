// Two kernels named `fill`, each in an anonymous `const` block, and a host-only block before
// them: on the host the kernels' blocks are `_#1` and `_#2`, on the GPU `_#0` and `_#1`. The
// launched kernel's recorded path `shift::_#1::fill` names the other kernel on the GPU, whose
// symbol (computed from the same path text) matches too.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[cfg(not(target_arch = "x86_64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

#[cfg(target_arch = "x86_64")]
const _: () = {
    pub fn host_only() {}
};

#[allow(dead_code)]
const _: () = {
    #[rustc_offload_kernel]
    pub fn fill(x: *mut u32) {
        unsafe { *x = 1 };
    }

    #[cfg(target_arch = "x86_64")]
    pub fn launch(x: &mut u32) {
        core::intrinsics::offload::<_, _, ()>(fill, [1, 1, 1], [1, 1, 1], (x as *mut u32,))
    }
};

#[allow(dead_code)]
const _: () = {
    #[rustc_offload_kernel]
    pub fn fill(x: *mut u32) {
        unsafe { *x = 2 };
    }
};
