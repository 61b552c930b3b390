// Defines a function under a fixed symbol that the root crate defines too.

#![no_std]

#[unsafe(no_mangle)]
pub extern "C" fn offload_test_twice(x: f32) -> f32 {
    x + 1.0
}
