// ignore-tidy-linelength
//@ add-minicore
//@ revisions: host amdgpu nvptx
//@[host] compile-flags: -Zoffload=Test -Zunstable-options -Copt-level=3 -Clto=fat --crate-type=rlib
//@[nvptx] compile-flags: -Copt-level=0 -Zunstable-options -Zoffload=Device --target nvptx64-nvidia-cuda --crate-type=rlib
//@[nvptx] needs-llvm-components: nvptx
//@[amdgpu] compile-flags: -Copt-level=0 -Zunstable-options -Zoffload=Device --target amdgcn-amd-amdhsa -Ctarget-cpu=gfx900 --crate-type=rlib
//@[amdgpu] needs-llvm-components: amdgpu
//@ no-prefer-dynamic
//@ needs-offload

// The kernel symbols of the host and the device passes of one crate (one file, a revision per
// pass): the host launches a plain-Rust kernel and two instances of a generic kernel (no
// `#[no_mangle]`) by their target-independent symbols,
// `_offload_kernel_<name>_<hash of the instance's identity and its crates' sources>`, one per
// instance, and the device pass defines the kernel under such a name with the GPU kernel
// calling convention. The scalar argument is widened to i64 like any offload kernel's. The hash
// covers this file's content (the crate's source fingerprint), so the digits cannot be written
// here; that the host launches exactly the symbols the image defines, under different
// `-C metadata`, is checked by the run-make tests `offload-manifest`, `offload-manifest-graph`
// and `offload-manifest-identity`. (Bare `-Zoffload=Device` cannot build generic kernels, so
// the device revisions leave `scale` out.)

#![feature(rustc_attrs, no_core, intrinsics)]
#![no_core]
#![crate_name = "offload_agree"]

extern crate minicore;
use minicore::*;

// nvptx: define ptx_kernel void @_offload_kernel_fill_{{[0-9a-f]+}}(ptr %dyn_ptr, ptr %0, i64 %1)
// amdgpu: define amdgpu_kernel void @_offload_kernel_fill_{{[0-9a-f]+}}(ptr %dyn_ptr, ptr %0, i64 %1)
#[rustc_offload_kernel]
pub fn fill(x: *mut f32, v: f32) {
    unsafe { *x = v };
}

#[cfg(host)]
#[rustc_offload_kernel]
pub fn scale<T: Copy>(x: *mut T, a: T) {
    unsafe { *x = a };
}

// `core::intrinsics::offload`, declared here as `core` declares it (this test has no `core`).
#[rustc_nounwind]
#[rustc_intrinsic]
pub const fn offload<F, T: Tuple, R>(
    f: F,
    workgroup_dim: [u32; 3],
    thread_dim: [u32; 3],
    args: T,
) -> R;

#[cfg(host)]
#[inline(never)]
pub fn launch(x: &mut f32, y: &mut f64) {
    offload::<_, _, ()>(fill, [1, 1, 1], [1, 1, 1], (x as *mut f32, 2.0f32));
    offload::<_, _, ()>(scale::<f32>, [1, 1, 1], [1, 1, 1], (x as *mut f32, 2.0f32));
    offload::<_, _, ()>(scale::<f64>, [1, 1, 1], [1, 1, 1], (y as *mut f64, 2.0f64));
}

// host-DAG: @.offloading.entry_name.[[FILL:_offload_kernel_fill_[0-9a-f]{16}]] = internal unnamed_addr constant {{.*}} c"[[FILL]]\00"
// host-DAG: @.offloading.entry_name.[[SCALE_A:_offload_kernel_scale_[0-9a-f]{16}]] = internal unnamed_addr constant {{.*}} c"[[SCALE_A]]\00"
// host-DAG: @.offloading.entry_name.[[SCALE_B:_offload_kernel_scale_[0-9a-f]{16}]] = internal unnamed_addr constant {{.*}} c"[[SCALE_B]]\00"
