//! A second program of the workspace: `cargo offload run --example second`.

#![feature(core_intrinsics)]
#![allow(internal_features)]

fn main() {
    let mut v = [2u64; 8];
    core::intrinsics::offload::<_, _, ()>(
        kern::scale::<u64>,
        [1, 1, 1],
        [1, 1, 1],
        (&mut v as *mut _, 21u64),
    );
    let v: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    println!("second: {}", v.join(" "));
}
