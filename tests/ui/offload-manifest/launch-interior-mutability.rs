// A kernel may write through a shared reference to interior-mutable data (atomics, `Cell`),
// so the launch maps such an argument back from the device, as it maps `&mut`. Data that is
// copied back as bytes must not hold addresses: a pointer or reference parameter to
// interior-mutable data that holds one (`&AtomicPtr<T>`, `&Cell<&T>`, a struct with such a
// field) is an error at the launch that names the parameter and the part that holds the
// address, as a slice of such elements is. Interior-mutable plain data is accepted, alone, in
// slices and in structs (`preload-interior-mutability.rs`: what `Preload` takes).

//@ needs-offload
//@ edition: 2024
//@ compile-flags: -Zunstable-options
//@ compile-flags: -Zoffload=HostMetadata={{build-base}}/offload-manifest/launch-interior-mutability.json

#![feature(rustc_attrs, core_intrinsics)]
#![allow(internal_features)]
#![crate_type = "lib"]

use core::cell::Cell;
use core::intrinsics::offload;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64};

pub struct Counters {
    pub hits: AtomicU32,
    pub total: AtomicU64,
}

pub struct Links {
    pub hits: AtomicU32,
    pub next: AtomicPtr<u32>,
}

#[rustc_offload_kernel]
pub fn counts(total: &AtomicU32, bins: &[AtomicU32], counters: &Counters, cell: &Cell<u32>) {
    let _ = (total, bins, counters, cell);
}

#[rustc_offload_kernel]
pub fn pointer(next: &AtomicPtr<u32>) {
    let _ = next;
}

#[rustc_offload_kernel]
pub fn links(links: &Links) {
    let _ = links;
}

#[rustc_offload_kernel]
pub fn cells(cell: &Cell<&'static u32>) {
    let _ = cell;
}

pub fn accepted(total: &AtomicU32, bins: &[AtomicU32], counters: &Counters, cell: &Cell<u32>) {
    offload::<_, _, ()>(counts, [1, 1, 1], [1, 1, 1], (total, bins, counters, cell));
}

pub fn refused(next: &AtomicPtr<u32>, links: &Links, cell: &Cell<&'static u32>) {
    offload::<_, _, ()>(pointer, [1, 1, 1], [1, 1, 1], (next,));
    //~^ ERROR the kernel `pointer` takes interior-mutable data that holds host addresses (`*mut u32`) as parameter 1 (`&AtomicPtr<u32>`)
    offload::<_, _, ()>(self::links, [1, 1, 1], [1, 1, 1], (links,));
    //~^ ERROR the kernel `links` takes interior-mutable data that holds host addresses (`*mut u32`) as parameter 1 (`&Links`)
    offload::<_, _, ()>(cells, [1, 1, 1], [1, 1, 1], (cell,));
    //~^ ERROR the kernel `cells` takes interior-mutable data that holds host addresses (`&u32`) as parameter 1 (`&Cell<&u32>`)
}
