// A host pass generates the launch code of `core::intrinsics::offload` (here `-Zoffload=Test`,
// the host pass without a device image): a launch of something that is not a function item,
// such as a closure, is an error at the launch, not an internal compiler error.

//@ needs-offload
//@ build-fail
//@ edition: 2024
//@ compile-flags: -Zunstable-options -Zoffload=Test -Clto=fat -Copt-level=0

#![feature(core_intrinsics)]
#![allow(internal_features)]

use core::intrinsics::offload;

fn main() {
    let mut x = 0.0f32;
    let p = &mut x as *mut f32;
    offload::<_, _, ()>(|p: *mut f32| unsafe { *p = 1.0 }, [1, 1, 1], [1, 1, 1], (p,));
    //~^ ERROR `offload` launches `{closure@
}
