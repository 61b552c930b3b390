// Kernels that reach the panics of `core` that format the most: a bounds check
// (`panic_bounds_check`, `usize` as `Display`), a range of a slice (`slice_index_fail`), an
// `assert_eq!` of floats (`assert_failed`, `f32` as `Debug`: float formatting), a `str` cut
// off inside a character (`str::slice_error_fail`, `char` as `Debug`: Unicode tables),
// `Option::unwrap`, a division, and `f32::clamp`, a function that returns but builds the
// message of its `assert!` (`f32` as `Debug`) in its own body (patch 0039). The panic handler
// is chosen by `--cfg`: none (the device pass gives the image a trap), `loop {}`, or one that
// reads its `PanicInfo`.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

#[cfg(all(handler_loop, not(target_arch = "x86_64")))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

#[cfg(all(handler_reads, not(target_arch = "x86_64")))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    // What a handler that prints would hand to `vprintf`.
    core::hint::black_box(info);
    loop {}
}

#[rustc_offload_kernel]
pub fn gather(out: *mut f32, x: *const f32, idx: *const u32, n: usize) {
    // Bounds-checked indexing of both slices: `panic_bounds_check`.
    let out = unsafe { core::slice::from_raw_parts_mut(out, n) };
    let (x, idx) =
        unsafe { (core::slice::from_raw_parts(x, n), core::slice::from_raw_parts(idx, n)) };
    let mut i = 0;
    while i < n {
        out[idx[i] as usize % n] += x[idx[(i + 1) % n] as usize];
        i += 1;
    }
}

#[rustc_offload_kernel]
pub fn window(out: *mut f32, x: *const f32, start: usize, n: usize) {
    let (out, x) =
        unsafe { (core::slice::from_raw_parts_mut(out, n), core::slice::from_raw_parts(x, n)) };
    let part = &x[start..start + 4];
    out[0] = part.iter().sum();
}

#[rustc_offload_kernel]
pub fn checked(x: *mut f32, y: *const f32) {
    unsafe {
        assert_eq!(*x, *y, "the inputs differ");
        *x += 1.0;
    }
}

#[rustc_offload_kernel]
pub fn text(out: *mut u32, bytes: *const u8, n: usize, cut: usize) {
    let text = unsafe { core::str::from_utf8_unchecked(core::slice::from_raw_parts(bytes, n)) };
    unsafe { *out = text[..cut].chars().count() as u32 };
}

#[rustc_offload_kernel]
pub fn divide(quotients: *mut u32, divisors: *const u32, n: usize) {
    let mut i = 0;
    while i < n {
        // A division by zero panics, and so does `unwrap` of the `None` of `checked_rem`.
        let (q, d) = unsafe { (&mut *quotients.add(i), *divisors.add(i)) };
        *q = q.checked_rem(d).unwrap() + *q / d;
        i += 1;
    }
}

#[rustc_offload_kernel]
pub fn limit(v: *mut f32, n: usize, low: f32, high: f32) {
    let v = unsafe { core::slice::from_raw_parts_mut(v, n) };
    for x in v {
        *x = x.clamp(low, high);
    }
}

/// Launches every kernel.
#[cfg(target_arch = "x86_64")]
pub fn run_all(f: &mut [f32; 64], u: &mut [u32; 64], b: &[u8; 64]) {
    use core::intrinsics::offload;
    let n = 64usize;
    let (fp, up) = (f.as_mut_ptr(), u.as_mut_ptr());
    let one = [1, 1, 1];
    offload::<_, _, ()>(gather, one, one, (fp, fp as *const f32, up as *const u32, n));
    offload::<_, _, ()>(window, one, one, (fp, fp as *const f32, 3usize, n));
    offload::<_, _, ()>(checked, one, one, (fp, fp as *const f32));
    offload::<_, _, ()>(text, one, one, (up, b.as_ptr(), n, 7usize));
    offload::<_, _, ()>(divide, one, one, (up, up as *const u32, n));
    offload::<_, _, ()>(limit, one, one, (fp, n, -1.0f32, 1.0f32));
}
