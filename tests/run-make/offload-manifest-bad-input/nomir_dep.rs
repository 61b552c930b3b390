// A dependency compiled for the GPU without the device pass's flag: its non-inlinable function
// has no MIR in its metadata, only object code that nothing links into a device image.

#![no_std]

#[inline(never)]
pub fn helper(x: f32) -> f32 {
    x * 2.0 + 1.0
}
