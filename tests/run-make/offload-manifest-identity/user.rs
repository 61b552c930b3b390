// Uses `plain`, compiled by the other compiler.

#![no_std]

pub fn two() -> u32 {
    plain::one() + 1
}
