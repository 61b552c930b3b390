// The grid's functions in the prelude are unstable: code without `gpu_offload` that names one
// gets the feature error.

//@ edition: 2024

#![crate_type = "lib"]

pub fn index() -> u32 {
    thread_idx_x() //~ ERROR use of unstable library feature `gpu_offload`
}
