//! `app [N [STATUS]]`: prints the OS it runs on (`PRETTY_NAME` of `/etc/os-release`) and the
//! device and inode of its root folder `/` (which tell the machine's own OS from the
//! toolchain's sysroot, even where both are the same release), runs the saxpy kernel over `N`
//! elements (default 1000) in blocks of 128 work items, checks every element against the
//! host's value, and exits with `STATUS` (default 0) when all match, 1 otherwise.
#![feature(gpu_offload)]

use core::offload::offload;
use std::os::unix::fs::MetadataExt;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(1000, |n| n.parse().expect("N: a number of elements"));
    let status: i32 = args.next().map_or(0, |s| s.parse().expect("STATUS: an exit status"));
    let os = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let name = os.lines().find_map(|line| line.strip_prefix("PRETTY_NAME=")).unwrap_or("?");
    println!("os: {}", name.trim_matches('"'));
    let root = std::fs::metadata("/").expect("the root folder");
    println!("root: {}:{}", root.dev(), root.ino());
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; n];
    offload! {
        kernel = kernels::saxpy,
        workgroup_dim = [n.div_ceil(128) as u32, 1, 1],
        thread_dim = [128, 1, 1],
        args = (2.0f32, &x[..], &mut y[..]),
    }
    let wrong = y.iter().enumerate().filter(|&(i, v)| *v != 2.0 * i as f32 + 1.0).count();
    if wrong == 0 {
        println!("saxpy over {n} elements: ok");
        std::process::exit(status);
    }
    println!("saxpy over {n} elements: {wrong} wrong");
    std::process::exit(1);
}
