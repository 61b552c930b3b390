// A kernel may take slices (`&[T]`, `&mut [T]`, `*const [T]`, `*mut [T]`, `&str`): the launch
// maps the slice's elements and passes its length. The elements reach the device as bytes, so
// a slice whose elements hold addresses (references, raw pointers, a `Vec`'s or a `Box`'s
// buffer, a trait object's) is an error at the launch that names the parameter and the part of
// the element that holds the address: on a GPU those addresses point into the host's memory.
// Elements of plain data are accepted, whatever their nesting, zero-sized ones and
// `PhantomData` of a reference included.

//@ needs-offload
//@ edition: 2024
//@ compile-flags: -Zunstable-options
//@ compile-flags: -Zoffload=HostMetadata={{build-base}}/offload-manifest/launch-slice-args.json

#![feature(rustc_attrs, core_intrinsics)]
#![allow(internal_features)]
#![crate_type = "lib"]

use core::intrinsics::offload;
use core::marker::PhantomData;

#[derive(Clone, Copy)]
pub struct Particle<'a> {
    pub position: [f32; 3],
    pub charge: (i8, bool),
    pub tag: PhantomData<&'a u8>,
}

pub struct Node {
    pub value: u32,
    pub next: Option<Box<Node>>,
}

#[rustc_offload_kernel]
pub fn plain(p: &mut [Particle<'static>], grid: *const [[f32; 4]], text: &str, unit: &[()]) {
    let _ = (p.len(), grid, text.len(), unit.len());
}

#[rustc_offload_kernel]
pub fn refs(values: &[&u32], out: &mut [u32]) {
    out[0] = *values[0];
}

#[rustc_offload_kernel]
pub fn vecs(rows: &mut [Vec<f32>], raw: *const [(u32, *const u8)]) {
    let _ = (rows.len(), raw);
}

#[rustc_offload_kernel]
pub fn lists(nodes: &[Node], callbacks: &[Box<dyn Fn()>]) {
    let _ = (nodes.len(), callbacks.len());
}

pub fn accepted(p: &mut [Particle<'static>], grid: &[[f32; 4]]) {
    offload::<_, _, ()>(
        plain,
        [1, 1, 1],
        [1, 1, 1],
        (p, &raw const *grid, "offload", &[(); 3][..]),
    );
}

pub fn refused(
    values: &[&u32],
    out: &mut [u32],
    rows: &mut [Vec<f32>],
    raw: *const [(u32, *const u8)],
    nodes: &[Node],
    callbacks: &[Box<dyn Fn()>],
) {
    offload::<_, _, ()>(refs, [1, 1, 1], [1, 1, 1], (values, out));
    //~^ ERROR the kernel `refs` takes a slice of `&u32` as parameter 1 (`&[&u32]`), which holds host addresses (`&u32`)
    offload::<_, _, ()>(vecs, [1, 1, 1], [1, 1, 1], (rows, raw));
    //~^ ERROR the kernel `vecs` takes a slice of `Vec<f32>` as parameter 1 (`&mut [Vec<f32>]`), which holds host addresses (`*const u8`)
    //~| ERROR the kernel `vecs` takes a slice of `(u32, *const u8)` as parameter 2
    offload::<_, _, ()>(lists, [1, 1, 1], [1, 1, 1], (nodes, callbacks));
    //~^ ERROR the kernel `lists` takes a slice of `Node` as parameter 1
    //~| ERROR the kernel `lists` takes a slice of `Box<dyn Fn()>` as parameter 2 (`&[Box<dyn Fn()>]`), which holds host addresses (`*const dyn Fn()`)
}
