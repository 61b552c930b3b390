//@ compile-flags: -Zoffload=Test -Zunstable-options -Copt-level=3 -Clto=fat --crate-type=rlib
//@ no-prefer-dynamic
//@ needs-offload

// The host side of symbol agreement: launches of a plain-Rust kernel and of two instances of a
// generic kernel (no `#[no_mangle]`) name each kernel by its target-independent symbol,
// `_offload_kernel_<name>_<hash of the instance's identity>`. `agree_device.rs` checks that the
// device pass defines `fill` under the same name; the hash depends on the crate name, the
// item's def path and the generic arguments only, so the two tests share their crate name
// (an attribute: `--crate-name` would rename the auxiliary crates too).

#![feature(rustc_attrs, core_intrinsics)]
#![crate_name = "offload_agree"]

#[rustc_offload_kernel]
pub fn fill(x: *mut f32, v: f32) {
    unsafe { *x = v };
}

#[rustc_offload_kernel]
pub fn scale<T: Copy + core::ops::Mul<Output = T>>(x: *mut T, a: T) {
    unsafe { *x = *x * a };
}

#[inline(never)]
pub fn launch(x: &mut f32, y: &mut f64) {
    core::intrinsics::offload::<_, _, ()>(fill, [1, 1, 1], [1, 1, 1], (x as *mut f32, 2.0f32));
    core::intrinsics::offload::<_, _, ()>(scale::<f32>, [1, 1, 1], [1, 1, 1], (x as *mut f32, 2.0f32));
    core::intrinsics::offload::<_, _, ()>(scale::<f64>, [1, 1, 1], [1, 1, 1], (y as *mut f64, 2.0f64));
}

// CHECK-DAG: @.offloading.entry_name._offload_kernel_fill_c1205ef5d1bc5b24 = internal unnamed_addr constant {{.*}} c"_offload_kernel_fill_c1205ef5d1bc5b24\00"
// CHECK-DAG: @.offloading.entry_name._offload_kernel_scale_47c99a6147c0aae4 = internal unnamed_addr constant {{.*}} c"_offload_kernel_scale_47c99a6147c0aae4\00"
// CHECK-DAG: @.offloading.entry_name._offload_kernel_scale_6f86c6957600f676 = internal unnamed_addr constant {{.*}} c"_offload_kernel_scale_6f86c6957600f676\00"
