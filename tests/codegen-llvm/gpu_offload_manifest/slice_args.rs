// ignore-tidy-linelength
//@ add-minicore
//@ revisions: host amdgpu nvptx
//@[host] compile-flags: -Zoffload=Test -Zunstable-options -Copt-level=0 -Clto=fat --crate-type=rlib
//@[nvptx] compile-flags: -Copt-level=0 -Zunstable-options -Zoffload=Device --target nvptx64-nvidia-cuda --crate-type=rlib
//@[nvptx] needs-llvm-components: nvptx
//@[amdgpu] compile-flags: -Copt-level=0 -Zunstable-options -Zoffload=Device --target amdgcn-amd-amdhsa -Ctarget-cpu=gfx900 --crate-type=rlib
//@[amdgpu] needs-llvm-components: amdgpu
//@ no-prefer-dynamic
//@ needs-offload

// A slice parameter is two values of the kernel's ABI, its data pointer and its length, and
// the launch maps each: the data as `len * size_of::<T>()` bytes computed at the launch (here
// `f32`, 4 bytes each), to the device and back for `&mut`, the length by value (`LITERAL`,
// 0x100, with `IMPLICIT`, 0x200), as a scalar is. The map types of the data depend on its size:
// an empty slice's data pointer passes as a `LITERAL` and nothing is mapped, so a launch with
// slices writes its map types per launch. The device pass's kernel takes the same values after
// its `dyn_ptr`: pointer, length, pointer, length.

#![feature(rustc_attrs, no_core, intrinsics)]
#![no_core]
#![crate_name = "offload_slices"]

extern crate minicore;
use minicore::*;

// `core::intrinsics::offload`, declared here as `core` declares it (this test has no `core`).
#[rustc_nounwind]
#[rustc_intrinsic]
pub const fn offload<F, T: Tuple, R>(
    f: F,
    workgroup_dim: [u32; 3],
    thread_dim: [u32; 3],
    args: T,
) -> R;

// host-LABEL: define {{.*}}void @launch(
// host: [[BEGIN:%.offload_maptypes.begin]] = alloca [4 x i64]
// host: [[KERNEL:%.offload_maptypes.kernel]] = alloca [4 x i64]
// host: [[END:%.offload_maptypes.end]] = alloca [4 x i64]
// The sizes: `x`'s data, its length (8 bytes), `y`'s data, its length.
// host: [[XSIZE:%.*]] = mul i64 [[XLEN:%.*]], 4
// host: store i64 [[XSIZE]], ptr
// host: store i64 8, ptr
// host: [[YSIZE:%.*]] = mul i64 [[YLEN:%.*]], 4
// host: store i64 [[YSIZE]], ptr
// host: store i64 8, ptr
// Two slices may overlap: each is mapped as the union of its overlapping group, whose start
// replaces its entry of `.offload_ptrs` (an offset from its own pointer).
// host: icmp ult i64
// host: [[XUNION:%.*]] = getelementptr i8, ptr {{%.*}}, i64
// host: store ptr [[XUNION]], ptr
// `x` (shared): `TO` before the kernel, `TARGET_PARAM` for it, nothing after unless it overlaps
// `y` (then `FROM`: the union's count may reach zero at `x`); when empty, `LITERAL` before and
// after (the runtime skips it) and `TARGET_PARAM | LITERAL` for the kernel.
// host: [[XEMPTY:%.*]] = icmp eq i64 [[XSIZE]], 0
// host: select i1 [[XEMPTY]], i64 256, i64 1
// host: select i1 [[XEMPTY]], i64 288, i64 32
// host: [[XEND:%.*]] = select i1 {{%.*}}, i64 2, i64 0
// host: select i1 [[XEMPTY]], i64 256, i64 [[XEND]]
// The length: `LITERAL | IMPLICIT` before, `TARGET_PARAM | LITERAL` for the kernel.
// host: store i64 768, ptr
// host: store i64 288, ptr
// host: store i64 0, ptr
// `y` (mutable): `TO` before, `FROM` after, unless empty.
// host: [[YEMPTY:%.*]] = icmp eq i64 [[YSIZE]], 0
// host: select i1 [[YEMPTY]], i64 256, i64 1
// host: select i1 [[YEMPTY]], i64 288, i64 32
// host: [[YEND:%.*]] = select i1 {{%.*}}, i64 2, i64 2
// host: select i1 [[YEMPTY]], i64 256, i64 [[YEND]]
// host: call void @__tgt_target_data_begin_mapper(ptr {{.*}}, i64 -1, i32 4, ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, ptr [[BEGIN]], ptr null, ptr null)
// The kernel's arguments take the kernel's table.
// host: store ptr [[KERNEL]], ptr
// host: call i32 @__tgt_target_kernel(
// host: call void @__tgt_target_data_end_mapper(ptr {{.*}}, i64 -1, i32 4, ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, ptr [[END]], ptr null, ptr null)
#[cfg(host)]
#[unsafe(no_mangle)]
pub fn launch(x: &[f32], y: &mut [f32]) {
    offload::<_, _, ()>(saxpy, [1, 1, 1], [32, 1, 1], (x, y));
}

// nvptx: define ptx_kernel void @_offload_kernel_saxpy_{{[0-9a-f]+}}(ptr {{.*}}%dyn_ptr, ptr {{.*}}, i64 {{.*}}, ptr {{.*}}, i64 {{.*}})
// amdgpu: define amdgpu_kernel void @_offload_kernel_saxpy_{{[0-9a-f]+}}(ptr {{.*}}%dyn_ptr, ptr {{.*}}, i64 {{.*}}, ptr {{.*}}, i64 {{.*}})
#[rustc_offload_kernel]
pub fn saxpy(x: &[f32], y: &mut [f32]) {
    let _ = (x, y);
}
