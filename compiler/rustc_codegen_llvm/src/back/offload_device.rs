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
//!   `llvm.amdgcn.implicitarg.ptr`; and its barrier through a third, since Rust's fences have
//!   no workgroup scope.
//! - **Block-shared memory.** `core::offload::BlockShared` statics (in the link section
//!   [`BLOCK_SHARED_SECTION`]) move into each device's memory of a block: address space 3 on
//!   the GPUs, a thread-local of the worker that runs the block on the CPU device; on the GPUs
//!   `core::offload::dynamic_shared_memory` reads the kernel's dynamic block-shared array.

use std::ffi::{CStr, CString};

use rustc_abi::{AddressSpace, Align};
use rustc_codegen_ssa::back::link::OFFLOAD_CPU_LAUNCH_RECORD;
use rustc_codegen_ssa::traits::BaseTypeCodegenMethods;
use rustc_data_structures::fx::FxHashSet;
use rustc_data_structures::small_c_str::SmallCStr;
pub(crate) use rustc_middle::ty::offload_kernel::CPU_DEVICE_GRID_RUNNER;
use rustc_middle::ty::offload_kernel::CPU_DEVICE_PANIC;

use crate::attributes;
use crate::builder::SBuilder;
use crate::builder::gpu_offload::add_unnamed_global;
use crate::context::SimpleCx;
use crate::llvm::{self, Attribute, BasicBlock, Builder, Context, Module, Type, Value};

// Functions of LLVM's C API that this module alone uses.
unsafe extern "C" {
    /// LLVM's `Use`: an operand slot of a user of a value.
    type Use;
    fn LLVMGetNextBasicBlock(block: &BasicBlock) -> Option<&BasicBlock>;
    fn LLVMGetFirstInstruction(block: &BasicBlock) -> Option<&Value>;
    fn LLVMGetNextInstruction(instruction: &Value) -> Option<&Value>;
    fn LLVMIsACallInst(value: &Value) -> Option<&Value>;
    fn LLVMIsAInvokeInst(value: &Value) -> Option<&Value>;
    fn LLVMGetEnumAttributeKindForName(
        name: *const std::ffi::c_char,
        len: usize,
    ) -> std::ffi::c_uint;
    fn LLVMCreateEnumAttribute(cx: &Context, kind: std::ffi::c_uint, value: u64) -> &Attribute;
    fn LLVMGetCalledValue(call: &Value) -> Option<&Value>;
    fn LLVMIsAFunction(value: &Value) -> Option<&Value>;
    fn LLVMGetSection(global: &Value) -> *const std::ffi::c_char;
    fn LLVMAddGlobalInAddressSpace<'a>(
        module: &'a Module,
        ty: &'a Type,
        name: *const std::ffi::c_char,
        address_space: std::ffi::c_uint,
    ) -> &'a Value;
    fn LLVMConstAddrSpaceCast<'a>(constant: &'a Value, ty: &'a Type) -> &'a Value;
    fn LLVMGetFirstUse(value: &Value) -> Option<&Use>;
    fn LLVMGetNextUse(a_use: &Use) -> Option<&Use>;
    fn LLVMGetUser(a_use: &Use) -> &Value;
    fn LLVMGetSyncScopeID(
        cx: &Context,
        name: *const std::ffi::c_char,
        len: usize,
    ) -> std::ffi::c_uint;
    fn LLVMBuildFenceSyncScope<'a>(
        builder: &Builder<'a>,
        ordering: llvm::AtomicOrdering,
        scope: std::ffi::c_uint,
        name: *const std::ffi::c_char,
    ) -> &'a Value;
}

/// The link section of `core::offload::BlockShared` statics (`core::offload`'s
/// `BLOCK_SHARED_SECTION`).
pub(crate) const BLOCK_SHARED_SECTION: &CStr = c".offload.block_shared";

/// The symbol of `core::offload::sync_threads` on the CPU device (`core`'s `cpu_device`).
const CPU_DEVICE_SYNC_THREADS: &str = "__rust_offload_cpu_sync_threads";

/// The runner's flag for a kernel that reaches [`CPU_DEVICE_SYNC_THREADS`] (`core`'s
/// `KERNEL_SYNCS`).
const KERNEL_SYNCS: u64 = 1;

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
/// first, i32 count)` calls it for x = first..first + count, with the arguments packed at
/// `args`, storing x to `thread_idx` (the thread-local [`CPU_DEVICE_THREAD_IDX`]) first; and a
/// new entry under the kernel's symbol, linkage and signature packs its arguments and calls
/// `runner(grid_row, args, path, flags)`, where `path` is the kernel's Rust path as a C string
/// ([`kernel_path_constant`]) and `flags` has [`KERNEL_SYNCS`] when the body reaches
/// `core::offload::sync_threads` ([`reaches`]). The entry keeps the kernel's `offload-kernel`
/// attribute. A kernel that is already such an entry is left as it is.
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
    let args_ty = cx.type_struct(&param_types, false);
    let row = define_grid_row(cx, kernel, &name, args_ty, &fn_attrs, thread_idx);

    let entry = cx.add_func(str::from_utf8(&name).unwrap(), kernel_ty);
    attributes::apply_to_llfn(entry, llvm::AttributePlace::Function, &fn_attrs);
    let marks = [
        llvm::CreateAttrString(cx.llcx, "offload-kernel"),
        llvm::CreateAttrString(cx.llcx, GRID_ENTRY),
    ];
    attributes::apply_to_llfn(entry, llvm::AttributePlace::Function, &marks);
    let mut builder = SBuilder::build(cx, SBuilder::append_block(cx, entry, "entry"));
    let packed = builder.direct_alloca(args_ty, Align::from_bytes(16).unwrap(), "grid_args");
    let i32_0 = cx.get_const_i32(0);
    for i in 0..param_types.len() {
        let param = llvm::get_param(entry, i as u32);
        if i == 0 {
            // `handle_offload` recognizes a rewritten kernel by this name.
            llvm::set_value_name(param, b"dyn_ptr");
        }
        let field = builder.inbounds_gep(args_ty, packed, &[i32_0, cx.get_const_i32(i as u64)]);
        builder.store(param, field, Align::ONE);
    }
    let path = kernel_path_constant(cx, &name);
    let syncs = cx.get_function(CPU_DEVICE_SYNC_THREADS).is_some_and(|sync| reaches(kernel, sync));
    let flags = cx.get_const_i32(if syncs { KERNEL_SYNCS } else { 0 });
    let runner_ty = cx.get_type_of_global(runner);
    builder.call(runner_ty, runner, &[row, packed, path, flags], None);
    builder.ret_void();
    llvm::set_linkage(entry, linkage);
    llvm::set_visibility(entry, visibility);
    unsafe { llvm::LLVMSetFunctionCallConv(entry, call_conv) };
}

/// Defines `<name>.grid_row(ptr args, i32 first, i32 count)` for the CPU device's kernel body
/// `kernel` (renamed `<name>.work_item`): the work items x = first..first + count of one row of
/// a block, with the arguments loaded once from the struct `args_ty` of the kernel's
/// parameters; x goes to `core`'s thread-local thread index `thread_idx` (the runner set its y
/// and z) before each work item. The body inlines into this loop, where its reads of the index
/// are the store's value, so a row can be vectorized. Internal, with the body's function
/// attributes `fn_attrs`; returns the function.
fn define_grid_row<'ll>(
    cx: &'ll SimpleCx<'_>,
    kernel: &'ll Value,
    name: &[u8],
    args_ty: &'ll Type,
    fn_attrs: &[&'ll Attribute],
    thread_idx: &'ll Value,
) -> &'ll Value {
    let kernel_ty = cx.get_type_of_global(kernel);
    let param_types = cx.func_params_types(kernel_ty);
    let call_conv = unsafe { llvm::LLVMGetFunctionCallConv(kernel) };
    // Accesses are unaligned (align 1): the struct's fields need no more.
    let one = Align::ONE;
    let i32_0 = cx.get_const_i32(0);
    let i32_ty = cx.type_i32();
    let row_ty = cx.type_func(&[cx.type_ptr(), i32_ty, i32_ty], cx.type_void());
    let row_name = [name, b".grid_row"].concat();
    let row = cx.add_func(str::from_utf8(&row_name).unwrap(), row_ty);
    llvm::set_linkage(row, llvm::Linkage::InternalLinkage);
    attributes::apply_to_llfn(row, llvm::AttributePlace::Function, fn_attrs);
    let entry_bb = SBuilder::append_block(cx, row, "entry");
    let loop_bb = SBuilder::append_block(cx, row, "work_item");
    let exit_bb = SBuilder::append_block(cx, row, "exit");
    let mut builder = SBuilder::build(cx, entry_bb);
    let (args, first) = (llvm::get_param(row, 0), llvm::get_param(row, 1));
    let count = llvm::get_param(row, 2);
    let end = unsafe { llvm::LLVMBuildNUWAdd(builder.llbuilder, first, count, c"end".as_ptr()) };
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
        llvm::LLVMBuildICmp(builder.llbuilder, ult, next, end, c"more".as_ptr())
    };
    unsafe {
        llvm::LLVMBuildCondBr(builder.llbuilder, more, loop_bb, exit_bb);
        llvm::LLVMAddIncoming(x, [first, next].as_ptr(), [entry_bb, loop_bb].as_ptr(), 2);
        llvm::LLVMPositionBuilderAtEnd(builder.llbuilder, exit_bb);
    }
    builder.ret_void();
    row
}

/// The kernel's Rust path as a NUL-terminated constant, which the runner names when a work item
/// of the kernel whose symbol is `name` stops the program: the constant that the kernel's
/// codegen left beside it (`attributes::offload_kernel_path`), or else a new private constant
/// holding its symbol.
fn kernel_path_constant<'ll>(cx: &'ll SimpleCx<'_>, name: &[u8]) -> &'ll Value {
    let path_name = CString::new([name, OFFLOAD_KERNEL_PATH_SUFFIX].concat()).unwrap();
    match unsafe { llvm::LLVMGetNamedGlobal(cx.llmod, path_name.as_ptr()) } {
        Some(path) => path,
        None => {
            let symbol = CString::new(name).unwrap();
            let init = crate::common::bytes_in_context(cx.llcx, symbol.as_bytes_with_nul());
            let symbol_name = [name, b".symbol"].concat();
            let name = str::from_utf8(&symbol_name).unwrap();
            add_unnamed_global(cx, name, init, llvm::Linkage::PrivateLinkage)
        }
    }
}

/// Whether `from`, a function of the module, reaches `to` through direct calls and invokes
/// (calls of a function pointer are not followed: `core`'s barrier reports a kernel that
/// reaches it so).
fn reaches(from: &Value, to: &Value) -> bool {
    let mut seen = FxHashSet::from_iter([from as *const Value]);
    let mut pending = vec![from];
    while let Some(func) = pending.pop() {
        if llvm::is_declaration(func) {
            continue;
        }
        let mut block = Some(unsafe { llvm::LLVMGetFirstBasicBlock(func) });
        while let Some(bb) = block {
            let mut instruction = unsafe { LLVMGetFirstInstruction(bb) };
            while let Some(inst) = instruction {
                let call = unsafe { LLVMIsACallInst(inst).or_else(|| LLVMIsAInvokeInst(inst)) };
                let callee = call.and_then(|c| unsafe { LLVMGetCalledValue(c) });
                if let Some(callee) = callee.and_then(|c| unsafe { LLVMIsAFunction(c) }) {
                    if std::ptr::eq(callee, to) {
                        return true;
                    }
                    if seen.insert(callee as *const Value) {
                        pending.push(callee);
                    }
                }
                instruction = unsafe { LLVMGetNextInstruction(inst) };
            }
            block = unsafe { LLVMGetNextBasicBlock(bb) };
        }
    }
    false
}

/// Moves every `core::offload::BlockShared` static of the module (a global in
/// [`BLOCK_SHARED_SECTION`]) into the device's memory of a block. On a GPU (`gpu`), each
/// becomes an internal global of the same type and alignment in address space 3 (`.shared` on
/// nvptx, the local data share on amdgcn), without an initializer (the GPUs have none for it),
/// its uses taking its address cast to the generic address space. On the CPU device, each
/// becomes a thread-local (a block's threads run on one worker thread), and every thread-local
/// of the image local-dynamic: an image loaded with `dlopen` has little room for initial-exec
/// ones.
///
/// Returns the names of the statics it could not move: on a GPU, a static that the module uses
/// otherwise than through casts to the generic address space (`#[used]`, another static's
/// initializer), which the caller reports.
pub(crate) fn place_block_shared_statics(cx: &SimpleCx<'_>, gpu: bool) -> Vec<String> {
    let mut shared = Vec::new();
    let mut global = unsafe { llvm::LLVMGetFirstGlobal(cx.llmod) };
    while let Some(g) = global {
        let section = unsafe { LLVMGetSection(g) };
        if !section.is_null() && unsafe { CStr::from_ptr(section) } == BLOCK_SHARED_SECTION {
            shared.push(g);
        }
        global = unsafe { llvm::LLVMGetNextGlobal(g) };
    }
    if !gpu && !shared.is_empty() {
        make_block_shared_thread_local(cx, shared);
        return Vec::new();
    }
    let mut unmoved = Vec::new();
    for old in shared {
        if !move_to_block_shared_memory(cx, old) {
            unmoved.push(String::from_utf8_lossy(&llvm::get_value_name(old)).into_owned());
        }
    }
    unmoved
}

/// The CPU device's part of [`place_block_shared_statics`]: the block-shared statics `shared`
/// become thread-locals, and every thread-local of the module local-dynamic (a declared one
/// general-dynamic).
fn make_block_shared_thread_local<'ll>(cx: &SimpleCx<'ll>, shared: Vec<&'ll Value>) {
    // The C library keeps a module's whole thread-local block in its static TLS space as
    // soon as one of its thread-locals is initial-exec, and a library loaded with `dlopen`
    // gets only a little of that space (`cargo offload` builds the image's thread-locals
    // initial-exec): block-shared memory does not fit, so every thread-local of such an
    // image becomes local-dynamic (a declared one general-dynamic). The first access of a
    // function computes the block's address, the others add to it.
    let mut global = unsafe { llvm::LLVMGetFirstGlobal(cx.llmod) };
    while let Some(g) = global {
        if llvm::LLVMIsThreadLocal(g).is_true() || shared.iter().any(|s| std::ptr::eq(*s, g)) {
            let mode = if llvm::is_declaration(g) {
                llvm::ThreadLocalMode::GeneralDynamic
            } else {
                llvm::ThreadLocalMode::LocalDynamic
            };
            llvm::set_thread_local_mode(g, mode);
        }
        global = unsafe { llvm::LLVMGetNextGlobal(g) };
    }
    // Without the section, LLVM puts the uninitialized statics in `.tbss`, where the C
    // library zeroes each thread's copy instead of copying an image of it.
    for g in shared {
        llvm::set_section(g, c"");
    }
}

/// A GPU's part of [`place_block_shared_statics`]: moves the block-shared static `old` into
/// address space 3, as a new internal global that takes its name, type and alignment and every
/// use. Returns false, leaving `old` as it is, where the module uses it otherwise than through
/// casts to the generic address space.
fn move_to_block_shared_memory(cx: &SimpleCx<'_>, old: &Value) -> bool {
    // Rust reaches a static through a pointer in the generic address space: on nvptx the
    // global itself, on amdgcn (whose globals are in address space 1) a cast of it. A
    // static with another use (none that Rust emits) stays in global memory.
    let old_ty = unsafe { llvm::LLVMTypeOf(old) };
    let mut casts = Vec::new();
    if old_ty != cx.type_ptr() {
        let mut next = unsafe { LLVMGetFirstUse(old) };
        while let Some(a_use) = next {
            let user = unsafe { LLVMGetUser(a_use) };
            if unsafe { llvm::LLVMIsAConstantExpr(user) }.is_none()
                || unsafe { llvm::LLVMGetConstOpcode(user) } != llvm::Opcode::AddrSpaceCast
            {
                break;
            }
            casts.push(user);
            next = unsafe { LLVMGetNextUse(a_use) };
        }
        if next.is_some() {
            return false;
        }
    }
    let name = CString::new(llvm::get_value_name(old)).unwrap();
    llvm::set_value_name(old, b"");
    let ty = unsafe { llvm::LLVMGlobalGetValueType(old) };
    let new = unsafe { LLVMAddGlobalInAddressSpace(cx.llmod, ty, name.as_ptr(), 3) };
    unsafe {
        llvm::LLVMSetInitializer(new, llvm::LLVMGetUndef(ty));
        llvm::LLVMSetAlignment(new, llvm::LLVMGetAlignment(old));
    }
    llvm::set_linkage(new, llvm::Linkage::InternalLinkage);
    if casts.is_empty() {
        unsafe { llvm::LLVMReplaceAllUsesWith(old, LLVMConstAddrSpaceCast(new, old_ty)) };
    }
    for cast in casts {
        let ty = unsafe { llvm::LLVMTypeOf(cast) };
        unsafe { llvm::LLVMReplaceAllUsesWith(cast, LLVMConstAddrSpaceCast(new, ty)) };
    }
    // The replaced casts stay behind as dead constant users of `old`, which the C API
    // cannot remove, so `old` is not deleted: internal and unused, it goes with the first
    // global dead code elimination.
    llvm::set_linkage(old, llvm::Linkage::InternalLinkage);
    llvm::set_section(old, c"");
    true
}

/// Defines `__rust_offload_amdgpu_sync_threads()`, which `core::offload::sync_threads`
/// declares for amdgcn, if the module uses it: a release fence of workgroup scope,
/// `llvm.amdgcn.s.barrier` and an acquire fence of workgroup scope, as clang's HIP headers
/// write `__syncthreads`. Internal; it inlines into its callers.
pub(crate) fn define_amdgpu_sync_threads(cx: &SimpleCx<'_>) {
    let Some(func) = cx.get_function("__rust_offload_amdgpu_sync_threads") else { return };
    if !llvm::is_declaration(func) {
        return;
    }
    let barrier_name = "llvm.amdgcn.s.barrier";
    let barrier_ty = cx.type_func(&[], cx.type_void());
    let barrier =
        cx.get_function(barrier_name).unwrap_or_else(|| cx.add_func(barrier_name, barrier_ty));
    llvm::set_linkage(func, llvm::Linkage::InternalLinkage);
    // A barrier: no pass may make its calls depend on more control flow than they do (rustc
    // marks no call convergent), and it inlines where `core` calls it.
    let attrs = [c"convergent", c"alwaysinline"].map(|name| enum_attribute(cx, name));
    attributes::apply_to_llfn(func, llvm::AttributePlace::Function, &attrs);
    let mut builder = SBuilder::build(cx, SBuilder::append_block(cx, func, "entry"));
    let workgroup = c"workgroup";
    let scope = unsafe { LLVMGetSyncScopeID(cx.llcx, workgroup.as_ptr(), workgroup.count_bytes()) };
    let fence = |builder: &SBuilder<'_, '_>, ordering| unsafe {
        LLVMBuildFenceSyncScope(builder.llbuilder, ordering, scope, c"".as_ptr());
    };
    fence(&builder, llvm::AtomicOrdering::Release);
    builder.call(barrier_ty, barrier, &[], None);
    fence(&builder, llvm::AtomicOrdering::Acquire);
    builder.ret_void();
}

/// The enum attribute `name` (one without a value: `convergent`, `alwaysinline`).
fn enum_attribute<'ll>(cx: &SimpleCx<'ll>, name: &CStr) -> &'ll Attribute {
    unsafe {
        let kind = LLVMGetEnumAttributeKindForName(name.as_ptr(), name.count_bytes());
        LLVMCreateEnumAttribute(cx.llcx, kind, 0)
    }
}

/// Defines `__rust_offload_dynamic_shared_memory()`, which `core::offload::dynamic_shared_memory`
/// declares for the GPUs, if the module uses it: the address, in the generic address space, of
/// the kernel's dynamic block-shared memory, an external zero-sized array in address space 3
/// (`__rust_offload_dynamic_shared`, 16-byte aligned), which the GPU's runtime sizes at launch
/// from the launch's `DynCGroupMem` (CUDA's and HIP's `extern __shared__`). Internal; it
/// inlines into its callers.
pub(crate) fn define_dynamic_shared_memory(cx: &SimpleCx<'_>) {
    let Some(func) = cx.get_function("__rust_offload_dynamic_shared_memory") else { return };
    if !llvm::is_declaration(func) {
        return;
    }
    let name = c"__rust_offload_dynamic_shared";
    let memory =
        unsafe { llvm::LLVMGetNamedGlobal(cx.llmod, name.as_ptr()) }.unwrap_or_else(|| {
            let ty = cx.type_array(cx.type_i8(), 0);
            let memory = unsafe { LLVMAddGlobalInAddressSpace(cx.llmod, ty, name.as_ptr(), 3) };
            unsafe { llvm::LLVMSetAlignment(memory, 16) };
            memory
        });
    llvm::set_linkage(func, llvm::Linkage::InternalLinkage);
    let inline = enum_attribute(cx, c"alwaysinline");
    attributes::apply_to_llfn(func, llvm::AttributePlace::Function, &[inline]);
    let mut builder = SBuilder::build(cx, SBuilder::append_block(cx, func, "entry"));
    builder.ret(unsafe { LLVMConstAddrSpaceCast(memory, cx.type_ptr()) });
}

/// The end of the name of the constant that holds a CPU device kernel's Rust path (a
/// NUL-terminated string, named by the kernel's symbol and this suffix), which the kernel's
/// codegen defines and the grid runner's entry passes on.
pub(crate) const OFFLOAD_KERNEL_PATH_SUFFIX: &[u8] = b".offload_path";

/// The end of the symbol of the panic handler that `core` calls: the link name of the
/// `panic_impl` lang item, which rustc mangles (v0) as `rust_begin_unwind` of the crate
/// `__rustc`, a name that no item of another crate has.
const PANIC_HANDLER: &[u8] = b"7___rustc17rust_begin_unwind";

/// Defines the panic handler in an image whose crate graph has none (the monomorphizer lets such
/// a graph through, see `rustc_monomorphize`'s `bind_foreign_fn`): an internal function that,
/// on the CPU device, hands its `&PanicInfo` to `core`'s [`CPU_DEVICE_PANIC`], which prints the
/// panic and traps, and elsewhere traps (`llvm.trap`: `trap` on nvptx, `s_trap 2` on amdgcn;
/// `ud2` on a CPU device whose `core` lacks the report, whose grid runner then names the kernel
/// and the work item). A handler of the graph, defined in the image, stays as it is.
pub(crate) fn define_default_panic_handler(cx: &SimpleCx<'_>) {
    let Some(handler) =
        cx.get_functions().into_iter().find(|f| llvm::get_value_name(f).ends_with(PANIC_HANDLER))
    else {
        return;
    };
    if !llvm::is_declaration(handler) {
        return;
    }
    llvm::set_linkage(handler, llvm::Linkage::InternalLinkage);
    let mut builder = SBuilder::build(cx, SBuilder::append_block(cx, handler, "entry"));
    let report = cx.get_function(CPU_DEVICE_PANIC).filter(|f| !llvm::is_declaration(f));
    if let Some(report) = report
        && llvm::count_params(handler) == 1
    {
        let report_ty = cx.get_type_of_global(report);
        builder.call(report_ty, report, &[llvm::get_param(handler, 0)], None);
    } else {
        let trap_ty = cx.type_func(&[], cx.type_void());
        let trap =
            cx.get_function("llvm.trap").unwrap_or_else(|| cx.add_func("llvm.trap", trap_ty));
        builder.call(trap_ty, trap, &[], None);
    }
    unsafe { llvm::LLVMBuildUnreachable(builder.llbuilder) };
}

/// Gives the launch record that `core`'s grid runner reads (`__rust_offload_launch`, declared
/// in the module if a kernel is) the general-dynamic thread-local model, whatever the session's
/// (`cargo offload` builds CPU device images with initial-exec, for `core`'s own
/// thread-locals): the record is the program's, which may keep it in dynamic thread-local
/// storage (a `cdylib` loaded with `dlopen`), where an initial-exec reference cannot reach.
/// The runner reads it once per launch.
pub(crate) fn keep_launch_record_dynamic(cx: &SimpleCx<'_>) {
    let name = SmallCStr::new(OFFLOAD_CPU_LAUNCH_RECORD);
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
