// ignore-tidy-linelength
//@ add-minicore
//@ revisions: amdgpu nvptx
//@[nvptx] compile-flags: -Copt-level=3 -Zunstable-options -Zoffload=Device --target nvptx64-nvidia-cuda --crate-type=rlib
//@[nvptx] needs-llvm-components: nvptx
//@[amdgpu] compile-flags: -Copt-level=3 -Zunstable-options -Zoffload=Device --target amdgcn-amd-amdhsa -Ctarget-cpu=gfx900 --crate-type=rlib
//@[amdgpu] needs-llvm-components: amdgpu
//@ no-prefer-dynamic
//@ needs-offload

// Bare `-Zoffload=Device` (every mono root, no manifest) keeps every non-generic kernel of the
// crate in the image, exported under the symbol the host launches: also a kernel small enough
// to be cross-crate inlinable at opt-level 3, which is neither reachable-non-generic nor
// otherwise a root (it used to be left out, and the host launched a symbol the image lacked).

#![feature(rustc_attrs, no_core)]
#![no_core]
#![crate_name = "offload_bare"]

extern crate minicore;

// nvptx: define ptx_kernel void @_offload_kernel_store_{{[0-9a-f]+}}(ptr {{.*}}%dyn_ptr, ptr {{.*}}%0)
// amdgpu: define amdgpu_kernel void @_offload_kernel_store_{{[0-9a-f]+}}(ptr {{.*}}%dyn_ptr, ptr {{.*}}%0)
#[rustc_offload_kernel]
pub fn store(x: *mut u32) {
    unsafe { *x = 7 };
}
