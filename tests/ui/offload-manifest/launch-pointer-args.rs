// A launch may pass what rustc 1.95 passed where the ABI agrees: a raw pointer where the kernel
// takes a reference to the same pointee and the other way round, and a mutable pointer or
// reference where the kernel takes a shared one. The runtime maps each argument by the kernel's
// parameter, so the same bytes go to the device. A shared pointer or reference where the kernel
// takes a mutable one is accepted with the lint `offload_shared_for_mutable` (the kernel's writes
// come back into memory the launch gave as read-only), once per such argument and never beside
// an error, and `#[allow]` silences it. The same holds for pointers to a slice (wide pointers,
// data and length, which the launch maps as two values). Another pointee (another element type
// of a slice), or a pointer where the kernel takes a value, stays an error. Where a call of the
// kernel would coerce an argument (`&T` to `*const T`), the launch does so first, and an error
// names the coerced type.

//@ needs-offload
//@ edition: 2024
//@ compile-flags: -Zunstable-options
//@ compile-flags: -Zoffload=HostMetadata={{build-base}}/offload-manifest/launch-pointer-args.json

#![feature(rustc_attrs, core_intrinsics)]
#![allow(internal_features)]
#![crate_type = "lib"]

use core::intrinsics::offload;

#[rustc_offload_kernel]
pub fn reads(x: &[f64; 16], y: *const [f64; 16], out: *mut f64) {
    unsafe { *out = x[0] + (*y)[0] };
}

#[rustc_offload_kernel]
pub fn writes(x: &mut [f64; 16], y: *mut [f64; 16]) {
    x[0] = 1.0;
    unsafe { (*y)[0] = 2.0 };
}

#[rustc_offload_kernel]
pub fn wide(x: &[f64], out: *mut f64) {
    unsafe { *out = x[0] };
}

pub fn accepted(a: &mut [f64; 16], b: &mut [f64; 16], out: &mut f64) {
    let out = out as *mut f64;
    // `*const` for `&`, `&` for `*const`.
    offload::<_, _, ()>(reads, [1, 1, 1], [1, 1, 1], (&raw const *a, &*b, out));
    // `*mut` for `&`, `&mut` for `*const`.
    offload::<_, _, ()>(reads, [1, 1, 1], [1, 1, 1], (&raw mut *a, &mut *b, out));
    // `&mut` for `*const`, `*mut` for `*const`, `&mut` for `*mut`.
    offload::<_, _, ()>(reads, [1, 1, 1], [1, 1, 1], (&mut *a, &raw mut *b, unsafe { &mut *out }));
    // `*mut` for `&mut`, `&mut` for `*mut`.
    offload::<_, _, ()>(writes, [1, 1, 1], [1, 1, 1], (&raw mut *a, &mut *b));
    // The kernel's own types.
    offload::<_, _, ()>(writes, [1, 1, 1], [1, 1, 1], (&mut *a, &raw mut *b));
    // Slices: `*const [T]` and `&mut [T]` for `&[T]`.
    offload::<_, _, ()>(wide, [1, 1, 1], [1, 1, 1], (&raw const a[..], out));
    offload::<_, _, ()>(wide, [1, 1, 1], [1, 1, 1], (&mut a[..], out));
}

pub fn warned(a: &mut [f64; 16], b: &mut [f64; 16]) {
    offload::<_, _, ()>(writes, [1, 1, 1], [1, 1, 1], (&raw const *a, &raw mut *b));
    //~^ WARN `offload` passes `*const [f64; 16]` to the kernel `writes`, whose parameter is `&mut [f64; 16]`
    offload::<_, _, ()>(writes, [1, 1, 1], [1, 1, 1], (&mut *a, &*b));
    //~^ WARN `offload` passes `&[f64; 16]` to the kernel `writes`, whose parameter is `*mut [f64; 16]`
    offload::<_, _, ()>(writes, [1, 1, 1], [1, 1, 1], (&*a, &raw const *b));
    //~^ WARN `offload` passes `&[f64; 16]` to the kernel `writes`, whose parameter is `&mut [f64; 16]`
    //~| WARN `offload` passes `*const [f64; 16]` to the kernel `writes`, whose parameter is `*mut [f64; 16]`
}

#[allow(offload_shared_for_mutable)]
pub fn allowed(a: &mut [f64; 16], b: &mut [f64; 16]) {
    offload::<_, _, ()>(writes, [1, 1, 1], [1, 1, 1], (&raw const *a, &*b));
}

#[deny(offload_shared_for_mutable)]
pub fn denied(a: &mut [f64; 16], b: &mut [f64; 16]) {
    offload::<_, _, ()>(writes, [1, 1, 1], [1, 1, 1], (&mut *a, &*b));
    //~^ ERROR `offload` passes `&[f64; 16]` to the kernel `writes`, whose parameter is `*mut [f64; 16]`
}

pub fn refused(a: &mut [f64; 16], b: &mut [f64; 16], out: &mut f64) {
    let out = out as *mut f64;
    let short = a as *mut [f64; 16] as *mut [f64; 8];
    offload::<_, _, ()>(reads, [1, 1, 1], [1, 1, 1], (short, &*b, out));
    //~^ ERROR `offload` passes `(*mut [f64; 8], *const [f64; 16], *mut f64)` to the kernel `reads`
    offload::<_, _, ()>(reads, [1, 1, 1], [1, 1, 1], (&*a, &*b, out as *mut f32));
    //~^ ERROR `offload` passes `(&[f64; 16], *const [f64; 16], *mut f32)` to the kernel `reads`
    offload::<_, _, ()>(reads, [1, 1, 1], [1, 1, 1], (*a, &*b, out));
    //~^ ERROR `offload` passes `([f64; 16], *const [f64; 16], *mut f64)` to the kernel `reads`
    // A shared pointer for a mutable one beside a mismatch: the error alone.
    offload::<_, _, ()>(writes, [1, 1, 1], [1, 1, 1], (&raw const *a, 1u32));
    //~^ ERROR `offload` passes `(*const [f64; 16], u32)` to the kernel `writes`
    let bytes: &[u8] = &[0; 8];
    offload::<_, _, ()>(wide, [1, 1, 1], [1, 1, 1], (bytes, out));
    //~^ ERROR `offload` passes `(&[u8], *mut f64)` to the kernel `wide`
    offload::<_, _, ()>(wide, [1, 1, 1], [1, 1, 1], (&a[..], out));
}
