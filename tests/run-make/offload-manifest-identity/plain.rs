// A crate without offload, compiled by stock rustc or by the fork.

#![no_std]

pub fn one() -> u32 {
    1
}
