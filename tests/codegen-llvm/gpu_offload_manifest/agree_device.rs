//@ add-minicore
//@ revisions: amdgpu nvptx
//@[nvptx] compile-flags: -Copt-level=0 -Zunstable-options -Zoffload=Device --target nvptx64-nvidia-cuda --crate-type=rlib
//@[nvptx] needs-llvm-components: nvptx
//@[amdgpu] compile-flags: -Copt-level=0 -Zunstable-options -Zoffload=Device --target amdgcn-amd-amdhsa -Ctarget-cpu=gfx900 --crate-type=rlib
//@[amdgpu] needs-llvm-components: amdgpu
//@ no-prefer-dynamic
//@ needs-offload

// The device side of symbol agreement (see `agree_host.rs`): a kernel written as a plain Rust
// function, without `#[no_mangle]` or `extern "gpu-kernel"`, is defined with the GPU kernel
// calling convention under the symbol the host launches, whatever `-C metadata` the two passes
// see. The scalar argument is widened to i64 like any offload kernel's.

#![feature(rustc_attrs, no_core)]
#![no_core]
#![crate_name = "offload_agree"]

extern crate minicore;

// nvptx: define ptx_kernel void @_offload_kernel_fill_c1205ef5d1bc5b24(ptr %dyn_ptr, ptr %0, i64 %1)
// amdgpu: define amdgpu_kernel void @_offload_kernel_fill_c1205ef5d1bc5b24(ptr %dyn_ptr, ptr %0, i64 %1)
#[rustc_offload_kernel]
pub fn fill(x: *mut f32, v: f32) {
    unsafe { *x = v };
}
