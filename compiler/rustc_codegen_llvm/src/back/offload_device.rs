//! What the device pass adds to a module of a device image, before LLVM optimizes it, so that
//! `core::offload`'s view of the launch grid holds on every device.
//!
//! - **The CPU device.** LLVM's offload runtime runs an image for the host's own target through
//!   its host plugin, which calls a kernel once, through libffi, and passes on neither grid nor
//!   block. Each kernel of such an image therefore gets an entry, under the kernel's symbol and
//!   with its signature, that packs its arguments and hands them to `core`'s grid runner
//!   ([`CPU_DEVICE_GRID_RUNNER`]) with a function that runs one work item on them; the runner
//!   reads the launch's grid from the launching program and runs every work item.
//! - **amdgcn.** `core::offload` reads the block and grid dimensions from the implicit kernel
//!   arguments of code object v5 through two functions that it declares and this module
//!   defines, since Rust has no pointer into the constant address space of
//!   `llvm.amdgcn.implicitarg.ptr`.

use std::ffi::{CStr, CString};

use rustc_abi::{AddressSpace, Align};
use rustc_codegen_ssa::traits::BaseTypeCodegenMethods;

use crate::attributes;
use crate::builder::SBuilder;
use crate::builder::gpu_offload::add_unnamed_global;
use crate::context::SimpleCx;
use crate::llvm::{self, Value};

/// The symbol of `core::offload`'s grid runner for the CPU device, an `extern "C" fn(row: unsafe
/// extern "C" fn(*const c_void, u32), args: *const c_void, kernel: *const c_char)`. The
/// monomorphizer roots it in every CPU device image (`rustc_monomorphize`'s
/// `CPU_DEVICE_GRID_RUNNER`, the same name).
pub(crate) const CPU_DEVICE_GRID_RUNNER: &str = "__rust_offload_cpu_launch";

/// The symbol of the thread index (`[u32; 3]`, thread-local) of the work item that the calling
/// thread runs, in the CPU device's `core`, which the runner roots with itself.
pub(crate) const CPU_DEVICE_THREAD_IDX: &CStr = c"__rust_offload_thread_idx";

/// The module's [`CPU_DEVICE_THREAD_IDX`], if it has it.
pub(crate) fn cpu_device_thread_idx<'ll>(cx: &SimpleCx<'ll>) -> Option<&'ll Value> {
    unsafe { llvm::LLVMGetNamedGlobal(cx.llmod, CPU_DEVICE_THREAD_IDX.as_ptr()) }
}

/// Marks an entry made by [`run_cpu_kernel_over_grid`], so that a later run over the same
/// module (fat LTO) leaves it as it is.
const GRID_ENTRY: &str = "offload-grid-entry";

/// Makes `kernel`, a kernel of a CPU device image with the runtime's signature (`void(ptr
/// dyn_ptr, ...)`, see `handle_offload`), run the whole grid of its launch: its body becomes
/// an internal function `<symbol>.work_item`; a new function `<symbol>.grid_row(ptr args, i32
/// count)` calls it for x = 0..count, with the arguments packed at `args`, storing x to
/// `thread_idx` (the thread-local [`CPU_DEVICE_THREAD_IDX`]) first; and a new entry under the
/// kernel's symbol, linkage and signature packs its arguments and calls `runner(grid_row,
/// args, symbol)`, where `symbol` is the kernel's symbol as a C string. The entry keeps the
/// kernel's `offload-kernel` attribute. A kernel that is already such an entry is left as it is.
pub(crate) fn run_cpu_kernel_over_grid<'ll>(
    cx: &'ll SimpleCx<'_>,
    kernel: &'ll Value,
    runner: &'ll Value,
    thread_idx: &'ll Value,
) {
    if attributes::has_string_attr(kernel, GRID_ENTRY) {
        return;
    }
    let kernel_ty = cx.get_type_of_global(kernel);
    let param_types = cx.func_params_types(kernel_ty);
    let name = llvm::get_value_name(kernel);
    let (linkage, visibility) = (llvm::get_linkage(kernel), llvm::get_visibility(kernel));
    let call_conv = unsafe { llvm::LLVMGetFunctionCallConv(kernel) };

    // The body: one work item, called from this module only. It is no kernel, and neither is
    // the function that calls it, which gets its other attributes (`target-cpu`, ...).
    llvm::set_value_name(kernel, &[name.as_slice(), b".work_item"].concat());
    llvm::set_linkage(kernel, llvm::Linkage::InternalLinkage);
    llvm::set_visibility(kernel, llvm::Visibility::Default);
    attributes::remove_string_attr_from_llfn(kernel, "offload-kernel");
    let fn_attrs = llvm::GetAttributes(kernel, llvm::AttributePlace::Function);

    // The arguments travel as one struct of the kernel's parameters, in the entry's frame.
    // Accesses are unaligned (align 1): the struct's fields need no more.
    let args_ty = cx.type_struct(&param_types, false);
    let one = Align::ONE;
    let i32_0 = cx.get_const_i32(0);

    // `<symbol>.grid_row(ptr args, i32 count)`: the work items x = 0..count of one row of a
    // block, the arguments loaded once; x goes to `core`'s thread-local thread index (the
    // runner set its y and z) before each work item. The body inlines into this loop, where
    // its reads of the index are the store's value, so a row can be vectorized.
    let i32_ty = cx.type_i32();
    let row_ty = cx.type_func(&[cx.type_ptr(), i32_ty], cx.type_void());
    let row_name = [name.as_slice(), b".grid_row"].concat();
    let row = cx.add_func(str::from_utf8(&row_name).unwrap(), row_ty);
    llvm::set_linkage(row, llvm::Linkage::InternalLinkage);
    attributes::apply_to_llfn(row, llvm::AttributePlace::Function, &fn_attrs);
    let entry_bb = SBuilder::append_block(cx, row, "entry");
    let loop_bb = SBuilder::append_block(cx, row, "work_item");
    let exit_bb = SBuilder::append_block(cx, row, "exit");
    let mut builder = SBuilder::build(cx, entry_bb);
    let (args, count) = (llvm::get_param(row, 0), llvm::get_param(row, 1));
    let values: Vec<_> = (0..param_types.len())
        .map(|i| {
            let field = builder.inbounds_gep(args_ty, args, &[i32_0, cx.get_const_i32(i as u64)]);
            builder.load(param_types[i], field, one)
        })
        .collect();
    // The runner never passes a `count` of 0.
    unsafe { llvm::LLVMBuildBr(builder.llbuilder, loop_bb) };
    unsafe { llvm::LLVMPositionBuilderAtEnd(builder.llbuilder, loop_bb) };
    let x = unsafe { llvm::LLVMBuildPhi(builder.llbuilder, i32_ty, c"x".as_ptr()) };
    builder.store(x, thread_idx, Align::from_bytes(4).unwrap());
    let call = builder.call(kernel_ty, kernel, &values, None);
    unsafe { llvm::LLVMSetInstructionCallConv(call, call_conv) };
    let next = unsafe {
        llvm::LLVMBuildNUWAdd(builder.llbuilder, x, cx.get_const_i32(1), c"next".as_ptr())
    };
    let more = unsafe {
        let ult = llvm::IntPredicate::IntULT as std::ffi::c_uint;
        llvm::LLVMBuildICmp(builder.llbuilder, ult, next, count, c"more".as_ptr())
    };
    unsafe {
        llvm::LLVMBuildCondBr(builder.llbuilder, more, loop_bb, exit_bb);
        llvm::LLVMAddIncoming(
            x,
            [cx.get_const_i32(0), next].as_ptr(),
            [entry_bb, loop_bb].as_ptr(),
            2,
        );
        llvm::LLVMPositionBuilderAtEnd(builder.llbuilder, exit_bb);
    }
    builder.ret_void();

    let entry = cx.add_func(str::from_utf8(&name).unwrap(), kernel_ty);
    attributes::apply_to_llfn(entry, llvm::AttributePlace::Function, &fn_attrs);
    let marks = [
        llvm::CreateAttrString(cx.llcx, "offload-kernel"),
        llvm::CreateAttrString(cx.llcx, GRID_ENTRY),
    ];
    attributes::apply_to_llfn(entry, llvm::AttributePlace::Function, &marks);
    let mut builder = SBuilder::build(cx, SBuilder::append_block(cx, entry, "entry"));
    let packed = builder.direct_alloca(args_ty, Align::from_bytes(16).unwrap(), "grid_args");
    for i in 0..param_types.len() {
        let param = llvm::get_param(entry, i as u32);
        if i == 0 {
            // `handle_offload` recognizes a rewritten kernel by this name.
            llvm::set_value_name(param, b"dyn_ptr");
        }
        let field = builder.inbounds_gep(args_ty, packed, &[i32_0, cx.get_const_i32(i as u64)]);
        builder.store(param, field, one);
    }
    // The kernel's symbol, which the runner names when a work item stops the program.
    let symbol = CString::new(name.clone()).unwrap();
    let symbol_init = crate::common::bytes_in_context(cx.llcx, symbol.as_bytes_with_nul());
    let symbol_name = [name.as_slice(), b".symbol"].concat();
    let symbol = add_unnamed_global(
        cx,
        str::from_utf8(&symbol_name).unwrap(),
        symbol_init,
        llvm::Linkage::PrivateLinkage,
    );
    let runner_ty = cx.get_type_of_global(runner);
    builder.call(runner_ty, runner, &[row, packed, symbol], None);
    builder.ret_void();
    llvm::set_linkage(entry, linkage);
    llvm::set_visibility(entry, visibility);
    unsafe { llvm::LLVMSetFunctionCallConv(entry, call_conv) };
}

/// Gives the launch record that `core`'s grid runner reads (`__rust_offload_launch`, declared
/// in the module if a kernel is) the general-dynamic thread-local model, whatever the session's
/// (`cargo offload` builds CPU device images with initial-exec, for `core`'s own
/// thread-locals): the record is the program's, which may keep it in dynamic thread-local
/// storage (a `cdylib` loaded with `dlopen`), where an initial-exec reference cannot reach.
/// The runner reads it once per launch.
pub(crate) fn keep_launch_record_dynamic(cx: &SimpleCx<'_>) {
    let name = c"__rust_offload_launch";
    if let Some(record) = unsafe { llvm::LLVMGetNamedGlobal(cx.llmod, name.as_ptr()) } {
        llvm::set_thread_local_mode(record, llvm::ThreadLocalMode::GeneralDynamic);
    }
}

/// Defines what `core::offload` declares for amdgcn, if the module uses it:
/// `__rust_offload_amdgpu_group_size(dim: u32) -> u32` loads `hidden_group_size_{x,y,z}` (u16
/// at byte 12 of the implicit kernel arguments, code object v5), and
/// `__rust_offload_amdgpu_block_count(dim: u32) -> u32` loads `hidden_block_count_{x,y,z}` (u32
/// at byte 0). These are where clang's HIP headers read `blockDim` and `gridDim`; the offload
/// runtime's AMDGPU plugin writes both for each launch. Both functions become internal, and
/// inline into their callers, where `dim` is a constant.
pub(crate) fn define_amdgpu_implicit_args(cx: &SimpleCx<'_>) {
    let fields = [
        ("__rust_offload_amdgpu_group_size", 12, cx.type_i16(), 2),
        ("__rust_offload_amdgpu_block_count", 0, cx.type_i32(), 4),
    ];
    for (name, offset, field_ty, align) in fields {
        let Some(func) = cx.get_function(name) else { continue };
        if !llvm::is_declaration(func) {
            continue;
        }
        let constant_ptr = cx.type_ptr_ext(AddressSpace(4));
        let implicit_args_name = "llvm.amdgcn.implicitarg.ptr";
        let implicit_args_ty = cx.type_func(&[], constant_ptr);
        let implicit_args = cx
            .get_function(implicit_args_name)
            .unwrap_or_else(|| cx.add_func(implicit_args_name, implicit_args_ty));
        llvm::set_linkage(func, llvm::Linkage::InternalLinkage);
        let mut builder = SBuilder::build(cx, SBuilder::append_block(cx, func, "entry"));
        let base = builder.call(implicit_args_ty, implicit_args, &[], None);
        let fields_ptr = builder.inbounds_gep(cx.type_i8(), base, &[cx.get_const_i32(offset)]);
        let dim = llvm::get_param(func, 0);
        let field_ptr = builder.inbounds_gep(
            cx.type_array(field_ty, 3),
            fields_ptr,
            &[cx.get_const_i32(0), dim],
        );
        let value = builder.load(field_ty, field_ptr, Align::from_bytes(align).unwrap());
        let value = if field_ty == cx.type_i32() {
            value
        } else {
            unsafe { llvm::LLVMBuildZExt(builder.llbuilder, value, cx.type_i32(), c"".as_ptr()) }
        };
        builder.ret(value);
    }
}
