//! Panics that only reach a silent handler, in the manifest-driven offload device pass.
//!
//! Every panic of `core` formats its message (`fmt::Arguments` with a formatting function per
//! argument: `<usize as Display>::fmt` for a bounds check, the `Debug` of `f32` for an
//! `assert_eq!` of floats) and hands it to the panic handler. A device image usually has a
//! handler that never reads its `&PanicInfo`: the trap that the codegen backend defines for a
//! crate graph without a handler (`rustc_codegen_llvm::back::offload_device`), or a user's
//! `loop {}`. Its kernels still reach all of `core::fmt` that the messages name, float
//! formatting included, which the device pass instantiates, codegens and optimizes before
//! LLVM finds it dead: about three quarters of the unoptimized LLVM IR of the benchmark's suite
//! (`src/doc/measurements.md`).
//!
//! Under `-Zoffload=Device=<manifest>` with `panic=abort`, when the crate graph's handler does
//! not use its argument (its optimized MIR never reads it, or the graph has none and the image
//! is a GPU's: the CPU device's handler for such a graph prints the panic), the MIR of
//! each `#[inline(never)]` function of `core` that can only end in the handler (the cold entries
//! to `core`'s panics are) becomes one call of the handler with zeroed bytes for its
//! `PanicInfo`: the functions of `core::panicking`, and the diverging functions
//! of `core` that are not generic and whose every diverging call is to such a function
//! (`slice_index_fail`, `option::unwrap_failed`, ...). What the handler does is unchanged,
//! since it reads nothing of what it is given (a naked handler, whose assembly may read it,
//! does not count as silent); the messages and what formats them are no longer collected. A handler
//! that reads its argument (one that prints the message or the location) keeps every panic as
//! it is.
//!
//! The replacement is made where `core`'s MIR enters the crate graph, by wrapping the extern
//! provider of `optimized_mir` (see [`provide_extern`]), so that the collector and codegen see
//! the same body; the MIR inliner never inlines these `#[inline(never)]` functions.

use std::cell::RefCell;
use std::sync::OnceLock;

use rustc_abi::Size;
use rustc_data_structures::fx::FxHashMap;
use rustc_hir::attrs::InlineAttr;
use rustc_hir::def::DefKind;
use rustc_hir::def_id::DefId;
use rustc_hir::definitions::DefPathData;
use rustc_index::IndexVec;
use rustc_middle::middle::codegen_fn_attrs::CodegenFnAttrFlags;
use rustc_middle::mir::interpret::{Allocation, ConstAllocation, CtfeProvenance, Pointer, Scalar};
use rustc_middle::mir::visit::{PlaceContext, Visitor};
use rustc_middle::mir::{
    BasicBlockData, Body, CallSource, ClearCrossCrate, Const, ConstOperand, ConstValue, Local,
    LocalDecl, Location, MirPhase, MirSource, Mutability, Operand, Place, RuntimePhase, SourceInfo,
    SourceScopeData, Terminator, TerminatorKind, UnwindAction,
};
use rustc_middle::queries::ExternProviders;
use rustc_middle::ty::{self, TyCtxt};
use rustc_span::source_map::Spanned;
use rustc_span::{Span, sym};
use rustc_target::spec::PanicStrategy;

use crate::offload_image::{foreign_definition, panic_handler_declaration};

/// The signature of the `optimized_mir` provider for another crate's items.
type OptimizedMir = for<'tcx> fn(TyCtxt<'tcx>, DefId) -> &'tcx Body<'tcx>;

/// `rustc_metadata`'s provider of other crates' optimized MIR, which [`optimized_mir`] wraps.
static METADATA_OPTIMIZED_MIR: OnceLock<OptimizedMir> = OnceLock::new();

/// Wraps the extern `optimized_mir` provider, which `rustc_metadata` must have set already
/// (`rustc_interface` calls this after `rustc_metadata::provide`).
pub fn provide_extern(providers: &mut ExternProviders) {
    let metadata = providers.optimized_mir;
    // A driver that builds its providers again sets the same function.
    let _ = METADATA_OPTIMIZED_MIR.set(metadata);
    providers.optimized_mir = optimized_mir;
}

fn metadata_optimized_mir<'tcx>(tcx: TyCtxt<'tcx>, def_id: DefId) -> &'tcx Body<'tcx> {
    let metadata = METADATA_OPTIMIZED_MIR.get().expect("`provide_extern` sets the provider");
    metadata(tcx, def_id)
}

/// Another crate's optimized MIR; for a function of `core` that can only end in a silent
/// panic handler (see the module's documentation), a call of the handler.
fn optimized_mir<'tcx>(tcx: TyCtxt<'tcx>, def_id: DefId) -> &'tcx Body<'tcx> {
    // Only functions that the MIR inliner leaves alone: a replaced body is then in no crate's
    // MIR, and only in the code of the crates that instantiate it, each deciding with its own
    // view of the graph. A dependency that the device pass compiles may not see the handler of
    // the crate that builds the image, but its code is not part of the image.
    if diverging_core_fn(tcx, def_id)
        && tcx.codegen_fn_attrs(def_id).inline == InlineAttr::Never
        && let Some(handler) = silent_panic_handler(tcx)
        && ends_in_panic_handler(tcx, def_id)
        && let Some(body) = handler_call_body(tcx, def_id, handler)
    {
        return tcx.arena.alloc(body);
    }
    metadata_optimized_mir(tcx, def_id)
}

/// Whether `def_id` is a function of `core` that never returns, under the manifest-driven
/// device pass with `panic=abort`: the functions this module may replace. `core::offload` is
/// left out: its CPU device functions that never return end the program themselves.
pub(crate) fn diverging_core_fn(tcx: TyCtxt<'_>, def_id: DefId) -> bool {
    device_pass_with_abort(tcx)
        && tcx.crate_name(def_id.krate) == sym::core
        && matches!(tcx.def_kind(def_id), DefKind::Fn | DefKind::AssocFn)
        && !tcx.is_foreign_item(def_id)
        && tcx.intrinsic(def_id).is_none()
        && first_module(tcx, def_id) != Some(sym::offload)
        && tcx.fn_sig(def_id).skip_binder().output().skip_binder().is_never()
}

/// Whether this is a manifest-driven device pass with `panic=abort`, where a panic ends in the
/// handler and nothing unwinds, and without incremental compilation: the decisions of this
/// module and of `offload_panic_paths` are memoized outside the query system, so the
/// dependency graph sees what they read only through the first query that asked, and a result
/// cached on disk could disagree with one computed anew (`cargo offload` builds device passes
/// without incremental compilation).
pub(crate) fn device_pass_with_abort(tcx: TyCtxt<'_>) -> bool {
    tcx.sess.opts.offload_device_manifest().is_some()
        && tcx.sess.panic_strategy() == PanicStrategy::Abort
        && tcx.sess.opts.incremental.is_none()
}

/// The module of the crate root that `def_id` is in, if any.
fn first_module(tcx: TyCtxt<'_>, def_id: DefId) -> Option<rustc_span::Symbol> {
    match tcx.def_path(def_id).data.first()?.data {
        DefPathData::TypeNs(name) => Some(name),
        _ => None,
    }
}

/// What this module computes once per compilation session (keyed by the session's address,
/// since providers are plain functions): the panic handler's declaration in `core`, if the
/// handler is silent, and which functions of `core` end in it. The dependency graph sees the
/// handler's MIR read only by the first replaced body that needed it; that suffices because a
/// device pass builds one codegen unit, which depends on that body as on the others. Queries
/// of their own (a change to `rustc_middle`) would record it for each.
#[derive(Default)]
struct Memo {
    session: usize,
    handler: Option<Option<DefId>>,
    ends_in_panic: FxHashMap<DefId, bool>,
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

/// Runs `f` on this session's memo. `f` only reads or writes the memo: the queries and the
/// recursion of the callers run between two calls, never inside one.
fn with_memo<R>(tcx: TyCtxt<'_>, f: impl FnOnce(&mut Memo) -> R) -> R {
    let session = tcx.sess as *const _ as usize;
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        if memo.session != session {
            *memo = Memo { session, ..Memo::default() };
        }
        f(&mut memo)
    })
}

/// `core`'s declaration of the panic handler (`panic_impl`, called by `core::panicking::
/// panic_fmt`), if the crate graph's handler never uses its argument: the graph has none and
/// the target is a GPU (the codegen backend defines a trap; on the CPU device it defines a
/// handler that prints the panic), or the optimized MIR of its `#[panic_handler]` never reads
/// the `&PanicInfo`. `None` also where `panic_fmt` does not call the handler (a `core` built
/// with `panic=immediate-abort`).
pub(crate) fn silent_panic_handler(tcx: TyCtxt<'_>) -> Option<DefId> {
    if let Some(known) = with_memo(tcx, |memo| memo.handler) {
        return known;
    }
    let handler = find_silent_panic_handler(tcx);
    with_memo(tcx, |memo| memo.handler = Some(handler));
    handler
}

fn find_silent_panic_handler(tcx: TyCtxt<'_>) -> Option<DefId> {
    // `panic_fmt` as `core` built it: this runs inside the wrapped provider.
    let declaration = panic_handler_declaration(tcx, |d| metadata_optimized_mir(tcx, d))?;
    match foreign_definition(tcx, declaration) {
        // A GPU image's handler is a trap; a CPU device image's reports the panic's location
        // and message (see `device_roots`).
        None => tcx.sess.target.is_like_gpu.then_some(declaration),
        Some(handler) => {
            let silent = tcx.is_mir_available(handler)
                && matches!(tcx.def_kind(handler), DefKind::Fn)
                && !tcx.codegen_fn_attrs(handler).flags.contains(CodegenFnAttrFlags::NAKED)
                && !reads_first_argument(tcx.optimized_mir(handler));
            silent.then_some(declaration)
        }
    }
}

/// Whether `body` uses its first argument (the handler's `&PanicInfo`); debug info does not
/// count.
fn reads_first_argument(body: &Body<'_>) -> bool {
    struct ArgumentUse {
        used: bool,
    }
    impl<'tcx> Visitor<'tcx> for ArgumentUse {
        fn visit_local(&mut self, local: Local, context: PlaceContext, _: Location) {
            if local == Local::from_u32(1) && context.is_use() {
                self.used = true;
            }
        }
    }
    if body.arg_count == 0 {
        return false;
    }
    let mut visitor = ArgumentUse { used: false };
    visitor.visit_body(body);
    visitor.used
}

/// Whether the diverging function `def_id` of `core` can only end in the panic handler: it is
/// in `core::panicking` (all of whose diverging functions hand a message to the handler), or
/// it is not generic, each call in its body that does not return is to such a function, and it
/// has at least one, no inline assembly, no drop and no call through a function pointer: its
/// other calls (of `core`'s own, non-generic code) and statements only compute the message,
/// which the silent handler never reads. A function found again while it is being decided (a
/// cycle) counts as one that need not end in the handler, which only replaces less.
pub(crate) fn ends_in_panic_handler(tcx: TyCtxt<'_>, def_id: DefId) -> bool {
    if first_module(tcx, def_id) == Some(sym::panicking) {
        return true;
    }
    if let Some(known) = with_memo(tcx, |memo| memo.ends_in_panic.get(&def_id).copied()) {
        return known;
    }
    with_memo(tcx, |memo| memo.ends_in_panic.insert(def_id, false));
    let result = tcx.is_mir_available(def_id)
        && !tcx.generics_of(def_id).requires_monomorphization(tcx)
        && {
            let body = metadata_optimized_mir(tcx, def_id);
            let mut panics = false;
            let mut other_end = false;
            for block in body.basic_blocks.iter() {
                match &block.terminator().kind {
                    TerminatorKind::InlineAsm { .. }
                    | TerminatorKind::TailCall { .. }
                    | TerminatorKind::Drop { .. } => {
                        other_end = true;
                    }
                    TerminatorKind::Call { func, .. } if func.const_fn_def().is_none() => {
                        other_end = true;
                    }
                    TerminatorKind::Call { func, target: None, .. } => match func.const_fn_def() {
                        Some((callee, _))
                            if diverging_core_fn(tcx, callee)
                                && ends_in_panic_handler(tcx, callee) =>
                        {
                            panics = true;
                        }
                        _ => other_end = true,
                    },
                    _ => {}
                }
            }
            panics && !other_end
        };
    with_memo(tcx, |memo| memo.ends_in_panic.insert(def_id, result));
    result
}

/// The body that replaces the diverging function `def_id`: `handler(&ZEROED)`, where
/// `handler` is `core`'s declaration of the panic handler (see [`zeroed_panic_info`]). The
/// arguments of `def_id` (their locals as `core`'s body declares them, and its caller location,
/// for `#[track_caller]`) are left unused. `None` if the handler's signature is not the one
/// expected (`fn(&PanicInfo<'_>) -> !`).
fn handler_call_body<'tcx>(tcx: TyCtxt<'tcx>, def_id: DefId, handler: DefId) -> Option<Body<'tcx>> {
    let span = tcx.def_span(def_id);
    let original = metadata_optimized_mir(tcx, def_id);
    let info_arg = zeroed_panic_info(tcx, handler, span)?;
    let call = Terminator {
        source_info: SourceInfo::outermost(span),
        kind: TerminatorKind::Call {
            func: Operand::function_handle(tcx, handler, [], span),
            args: [Spanned { node: info_arg, span }].into(),
            destination: Place::return_place(),
            target: None,
            unwind: UnwindAction::Unreachable,
            call_source: CallSource::Misc,
            fn_span: span,
        },
    };
    let local_decls: IndexVec<Local, LocalDecl<'tcx>> = original
        .local_decls
        .iter()
        .take(original.arg_count + 1)
        .map(|decl| LocalDecl::new(decl.ty, span))
        .collect();
    let scope = SourceScopeData {
        span,
        parent_scope: None,
        inlined: None,
        inlined_parent_scope: None,
        local_data: ClearCrossCrate::Clear,
    };
    let mut body = Body::new(
        MirSource::item(def_id),
        IndexVec::from_elem_n(BasicBlockData::new(Some(call), false), 1),
        IndexVec::from_elem_n(scope, 1),
        local_decls,
        IndexVec::new(),
        original.arg_count,
        vec![],
        span,
        None,
        None,
    );
    body.spread_arg = original.spread_arg;
    body.phase = MirPhase::Runtime(RuntimePhase::Optimized);
    body.set_required_consts(Vec::new());
    body.set_mentioned_items(Vec::new());
    Some(body)
}

/// The argument of a call of `core`'s panic handler declaration `handler` from a path that can
/// only end in a silent handler: a `&PanicInfo` to as many zero bytes as a `PanicInfo` has (not
/// a valid `PanicInfo`: its references are null), which such a handler never reads. `None` if
/// the handler's signature is not the one expected (`fn(&PanicInfo<'_>) -> !`).
pub(crate) fn zeroed_panic_info<'tcx>(
    tcx: TyCtxt<'tcx>,
    handler: DefId,
    span: Span,
) -> Option<Operand<'tcx>> {
    let handler_sig =
        tcx.instantiate_bound_regions_with_erased(tcx.fn_sig(handler).instantiate_identity());
    let [info_ref] = handler_sig.inputs() else { return None };
    let info = info_ref.builtin_deref(true)?;
    let layout = tcx.layout_of(ty::TypingEnv::fully_monomorphized().as_query_input(info)).ok()?;
    let zeroed = Allocation::from_bytes(
        vec![0u8; usize::try_from(layout.size.bytes()).ok()?],
        layout.align.abi,
        Mutability::Not,
        (),
    );
    let zeroed: ConstAllocation<'tcx> = tcx.mk_const_alloc(zeroed);
    let alloc_id = tcx.reserve_and_set_memory_alloc(zeroed);
    let pointer = Pointer::new(CtfeProvenance::from(alloc_id).as_immutable(), Size::ZERO);
    Some(Operand::Constant(Box::new(ConstOperand {
        span,
        user_ty: None,
        const_: Const::Val(ConstValue::Scalar(Scalar::from_pointer(pointer, &tcx)), *info_ref),
    })))
}
