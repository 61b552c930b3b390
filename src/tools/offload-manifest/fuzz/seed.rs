// The crate whose manifest `offload-manifest fuzz` mutates: kernels whose manifest entries use
// every kind of type tree (numbers, references, raw pointers, arrays, slices behind pointers,
// tuples, ADTs with type and lifetime arguments, nested ADTs, an ADT of `core`), a non-generic
// kernel, a kernel in an anonymous `const` block (a disambiguated path) and a 1.95-style
// declared kernel. Compiled for the host with `-Zoffload=HostMetadata` (the seed manifest), then
// for `amdgcn-amd-amdhsa` with `-Zoffload=Device=<mutant>` once per mutant.

#![feature(rustc_attrs, core_intrinsics, abi_gpu_kernel)]
#![no_std]
#![allow(internal_features)]

#[cfg(not(target_arch = "x86_64"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

#[derive(Clone, Copy)]
#[repr(C)]
pub struct Params {
    pub scale: f32,
    pub offset: u32,
}

#[derive(Clone, Copy)]
pub struct Pair<A, B>(pub A, pub B);

#[derive(Clone, Copy)]
pub struct View<'a, T>(pub &'a T);

pub mod inner {
    #[derive(Clone, Copy)]
    pub enum Mode {
        Add,
        Mul,
    }
}

#[rustc_offload_kernel]
pub fn plain(x: *mut [f32; 8], p: Params) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v = *v * p.scale + p.offset as f32;
    }
}

#[rustc_offload_kernel]
pub fn generic<T: Copy>(x: *mut [T; 4], v: *const T) {
    unsafe { (*x)[0] = *v };
}

#[rustc_offload_kernel]
pub fn two<A: Copy, B: Copy>(a: *mut A, b: *const B) {
    let _ = unsafe { *b };
    let _ = unsafe { *a };
}

pub mod kernels {
    #[rustc_offload_kernel]
    pub fn mode(x: *mut u32, m: super::inner::Mode) {
        match m {
            super::inner::Mode::Add => unsafe { *x += 1 },
            super::inner::Mode::Mul => unsafe { *x *= 2 },
        }
    }
}

#[allow(dead_code)]
const _: () = {
    #[rustc_offload_kernel]
    pub fn hidden(x: *mut u8) {
        unsafe { *x = 7 };
    }

    #[cfg(target_arch = "x86_64")]
    pub fn launch_hidden(x: &mut u8) {
        core::intrinsics::offload::<_, _, ()>(hidden, [1, 1, 1], [1, 1, 1], (x as *mut u8,))
    }
};

#[cfg(not(target_arch = "x86_64"))]
#[rustc_offload_kernel]
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn declared(x: *mut u64) {
    unsafe { *x = 3 };
}

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    fn declared(x: *mut u64);
}

#[cfg(target_arch = "x86_64")]
pub fn launch(
    x: &mut [f32; 8],
    u: &mut [u32; 4],
    t: &mut [(u8, i64); 4],
    s: &mut [&'static [u16]; 4],
) {
    use core::intrinsics::offload;
    let p = Params { scale: 2.0, offset: 1 };
    offload::<_, _, ()>(plain, [1, 1, 1], [1, 1, 1], (x as *mut _, p));
    let v = 5u32;
    offload::<_, _, ()>(generic::<u32>, [1, 1, 1], [1, 1, 1], (u as *mut _, &v as *const u32));
    let tv = (1u8, 2i64);
    offload::<_, _, ()>(generic::<(u8, i64)>, [1, 1, 1], [1, 1, 1], (t as *mut _, &tv as *const _));
    // An ADT of `core`: the host's `core` (the sysroot's) and the device's (built for the GPU)
    // must have the same source fingerprint, or the seed manifest itself would be refused.
    let wv = core::num::Wrapping(7u32);
    let mut w = [core::num::Wrapping(0u32); 4];
    offload::<_, _, ()>(
        generic::<core::num::Wrapping<u32>>,
        [1, 1, 1],
        [1, 1, 1],
        (&mut w as *mut _, &wv as *const _),
    );
    let sv: &'static [u16] = &[1, 2];
    offload::<_, _, ()>(
        generic::<&'static [u16]>,
        [1, 1, 1],
        [1, 1, 1],
        (s as *mut _, &sv as *const _),
    );
    let mut pair = Pair(1u16, Pair(2.0f64, [3u8; 3]));
    let view = View(&v);
    offload::<_, _, ()>(
        two::<Pair<u16, Pair<f64, [u8; 3]>>, View<'static, u32>>,
        [1, 1, 1],
        [1, 1, 1],
        (&mut pair as *mut _, &view as *const _),
    );
    let mut flag = 0u32;
    offload::<_, _, ()>(
        kernels::mode,
        [1, 1, 1],
        [1, 1, 1],
        (&mut flag as *mut u32, inner::Mode::Mul),
    );
    let mut wide = 0u64;
    offload::<_, _, ()>(declared, [1, 1, 1], [1, 1, 1], (&mut wide as *mut u64,));
}
