//! A second crate of kernels.

#![feature(rustc_attrs)]
#![allow(internal_features)]
#![no_std]

/// `x[i] += i`.
#[rustc_offload_kernel]
pub fn add_index(x: *mut [u32; 32]) {
    for (i, v) in unsafe { &mut *x }.iter_mut().enumerate() {
        *v += i as u32;
    }
}

/// Coefficients of [`poly`], read by kernels of another crate.
pub static COEFFS: [f32; 4] = [0.5, -1.25, 2.0, 0.125];

/// A table under a fixed symbol, which another crate reads through an `extern` declaration.
#[unsafe(no_mangle)]
pub static KERN2_TABLE: [u32; 8] = [3, 1, 4, 1, 5, 9, 2, 6];

/// Horner's rule over [`COEFFS`].
pub fn poly(x: f32) -> f32 {
    COEFFS.iter().rev().fold(0.0, |acc, c| acc * x + c)
}

/// A function under a fixed symbol, which another crate calls through an `extern` declaration.
#[unsafe(no_mangle)]
pub extern "C" fn kern2_saturate(x: f32) -> f32 {
    x.clamp(0.0, 1.0)
}

pub trait Shape {
    fn area(&self) -> f32;
}

pub struct Circle(pub f32);
pub struct Square(pub f32);

impl Shape for Circle {
    fn area(&self) -> f32 {
        3.14159 * self.0 * self.0
    }
}

impl Shape for Square {
    fn area(&self) -> f32 {
        self.0 * self.0
    }
}
