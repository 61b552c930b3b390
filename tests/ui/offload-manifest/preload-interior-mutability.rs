// `Preload` keeps a slice on the offload device and copies nothing back, so a kernel's writes
// through `&` to its elements would be lost: it takes `Freeze` elements only, and a `Preload`
// of atomics or `Cell`s does not compile. `PreloadMut`, which copies back, takes them.

//@ edition: 2024

#![feature(gpu_offload)]
#![crate_type = "lib"]

use core::cell::Cell;
use core::offload::{Preload, PreloadMut};
use core::sync::atomic::AtomicU32;

pub fn kept(bins: &[AtomicU32], cells: &[Cell<u32>], plain: &[u32]) {
    let _bins = Preload::new(bins);
    //~^ ERROR the trait bound `UnsafeCell<u32>: Freeze` is not satisfied
    let _cells = Preload::on_device(cells, 0);
    //~^ ERROR the trait bound `UnsafeCell<u32>: Freeze` is not satisfied
    let _plain = Preload::new(plain);
}

pub fn kept_mut(bins: &mut [AtomicU32]) {
    let _bins = PreloadMut::new(bins);
}
