// A dependency that defines a kernel and a helper (scenarios S4, S9, S10).

#![feature(rustc_attrs)]
#![no_std]
#![allow(internal_features)]

/// Same name as the root crate's kernel (S9).
#[rustc_offload_kernel]
pub fn fill(x: *mut [f32; 32]) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v = smooth(*v);
    }
}

/// A non-generic helper that the root crate's kernel calls: the device pass instantiates it in
/// the root crate's image (`-Zcross-crate-inline-threshold=always` made it available there).
pub fn smooth(v: f32) -> f32 {
    v.clamp(-1.0, 1.0) * 0.5
}

/// Reached by nothing.
pub fn unreached_dep_function(v: f32) -> f32 {
    v.abs() * 3.0
}
