//! Float math that no GPU provides, in the manifest-driven offload device pass.
//!
//! The device pass gives the `f32` and `f64` math of a GPU image an accurate implementation:
//! compiler-builtins' port of musl's libm, called in the place of each float intrinsic
//! (`offload_image::offload_device_math`). The `f16` forms of those intrinsics (`sinf16`,
//! `powif16`, ...) and the SIMD float math intrinsics (`simd_fsin`, ...) have none: LLVM's
//! nvptx back end stops on them ("Cannot select: fsin"), and its amdgcn back end picks an
//! approximate instruction (`v_sin_f16`, `v_sin_f32`). Nor can LLVM compile `f128` for a GPU at
//! all: its arithmetic, comparisons and conversions are library calls on every target, which
//! the GPU back ends stop on ("unsupported library call operation"). So the device pass
//! refuses a kernel that reaches any of them, with the kernel, the Rust function that holds
//! the operation and the chain of mono items between them, as the platform-layer check does
//! (`offload_platform_layer`), before any code is made.

use rustc_data_structures::fx::FxHashMap;
use rustc_hir::def_id::DefId;
use rustc_middle::mir::mono::MonoItem;
use rustc_middle::mir::{Body, CastKind, Rvalue, SourceInfo, StatementKind, TerminatorKind};
use rustc_middle::ty::print::with_no_trimmed_paths;
use rustc_middle::ty::{self, FloatTy, Instance, InstanceKind, Ty, TyCtxt};
use rustc_span::{Symbol, sym};

use crate::collector::UsageMap;
use crate::errors::{self, OffloadFloatMathHelp};
use crate::offload_platform_layer::{item_def_id, kernels_by_symbol, shortest_chain, shown_chain};

/// An operation of a mono item's optimized MIR that no GPU image can compute: what it is, how
/// the kernel can compute it instead, and the calls that the MIR inliner put into the item's
/// body on the way to it (outermost first; empty when the item's own code holds it).
struct Unprovided {
    what: String,
    help: OffloadFloatMathHelp,
    inlined: Vec<DefId>,
}

/// Reports each kernel among `items` (the device pass's mono items) that reaches float math
/// without a GPU implementation through `usage_map` (see the module's documentation), with the
/// shortest chain of uses from the kernel to the function that holds it. Only in the device
/// pass for a GPU target: the CPU device computes all of it as the host does. One error per
/// kernel, in symbol order.
pub(crate) fn check_float_math_provided<'tcx>(
    tcx: TyCtxt<'tcx>,
    items: &[MonoItem<'tcx>],
    usage_map: &UsageMap<'tcx>,
) {
    if !tcx.sess.target.is_like_gpu {
        return;
    }
    // Each item's MIR is read once; most images have no such operation and stop here.
    let found: FxHashMap<MonoItem<'tcx>, Unprovided> =
        items.iter().filter_map(|&item| Some((item, unprovided_in(tcx, item)?))).collect();
    if found.is_empty() {
        return;
    }
    for kernel in kernels_by_symbol(tcx, items) {
        let successors =
            |item: MonoItem<'tcx>| usage_map.used_map.get(&item).into_iter().flatten().copied();
        let Some((chain, unprovided)) =
            shortest_chain(MonoItem::Fn(kernel), successors, &|item| found.get(item))
        else {
            continue;
        };
        let mut path: Vec<(DefId, bool)> =
            chain.iter().filter_map(item_def_id).map(|def_id| (def_id, false)).collect();
        path.extend(unprovided.inlined.iter().map(|&def_id| (def_id, true)));
        let holder = path[path.len() - 1].0;
        tcx.dcx().emit_err(errors::OffloadKernelFloatMathUnprovided {
            span: tcx.def_span(kernel.def_id()),
            kernel: kernel.to_string(),
            function: with_no_trimmed_paths!(tcx.def_path_str(holder)),
            what: unprovided.what.clone(),
            target: tcx.sess.target.llvm_target.to_string(),
            chain: shown_chain(tcx, &path),
            help: unprovided.help,
        });
    }
}

/// The first operation without a GPU implementation in the optimized MIR of `item` (an
/// instance's, its types made monomorphic): a call of an `f16` or SIMD float math intrinsic
/// ([`unprovided_intrinsic`]), or a computation with `f128` ([`QUAD`]). `None` for an item
/// without MIR or without such an operation. A statically dead branch counts too: the check
/// runs before LLVM removes it.
fn unprovided_in<'tcx>(tcx: TyCtxt<'tcx>, item: MonoItem<'tcx>) -> Option<Unprovided> {
    let MonoItem::Fn(instance) = item else { return None };
    if let InstanceKind::Item(def_id) = instance.def
        && !tcx.is_mir_available(def_id)
    {
        return None;
    }
    let body = tcx.instance_mir(instance.def);
    let mono = |ty: Ty<'tcx>| {
        instance.instantiate_mir_and_normalize_erasing_regions(
            tcx,
            ty::TypingEnv::fully_monomorphized(),
            ty::EarlyBinder::bind(ty),
        )
    };
    let is_quad = |ty: Ty<'tcx>| matches!(mono(ty).kind(), ty::Float(FloatTy::F128));
    let (source_info, (what, help)) = body.basic_blocks.iter().find_map(|block| {
        let in_statement = block.statements.iter().find_map(|statement| match &statement.kind {
            StatementKind::Assign(assign) if computes_quad(body, tcx, &assign.1, &is_quad) => {
                Some((statement.source_info, (QUAD.to_string(), OffloadFloatMathHelp::Quad)))
            }
            _ => None,
        });
        in_statement.or_else(|| {
            let terminator = block.terminator();
            let TerminatorKind::Call { func, .. } = &terminator.kind else { return None };
            Some((
                terminator.source_info,
                unprovided_call(tcx, mono(func.ty(body, tcx)), &is_quad)?,
            ))
        })
    })?;
    Some(Unprovided { what, help, inlined: inlined(body, source_info) })
}

/// What the error calls a computation with `f128`: an operator or a conversion (but a
/// transmute, which moves bits: `to_bits`, `from_bits`), or an intrinsic that takes or returns
/// an `f128` (but `fabs` and `copysign`, which move bits too).
const QUAD: &str = "`f128` computation";

/// Whether `rvalue` of `body` computes with `f128` (see [`QUAD`]); `is_quad` tells an `f128`
/// of the instance's types.
fn computes_quad<'tcx>(
    body: &Body<'tcx>,
    tcx: TyCtxt<'tcx>,
    rvalue: &Rvalue<'tcx>,
    is_quad: &impl Fn(Ty<'tcx>) -> bool,
) -> bool {
    match rvalue {
        Rvalue::BinaryOp(_, operands) => is_quad(operands.0.ty(body, tcx)),
        Rvalue::UnaryOp(_, operand) => is_quad(operand.ty(body, tcx)),
        Rvalue::Cast(CastKind::Transmute, ..) => false,
        Rvalue::Cast(_, operand, to) => is_quad(operand.ty(body, tcx)) || is_quad(*to),
        _ => false,
    }
}

/// The operation without a GPU implementation that a call of `callee` (a monomorphic function
/// type) is, if any: an intrinsic of [`unprovided_intrinsic`], or one that computes with `f128`
/// (see [`QUAD`]).
fn unprovided_call<'tcx>(
    tcx: TyCtxt<'tcx>,
    callee: Ty<'tcx>,
    is_quad: &impl Fn(Ty<'tcx>) -> bool,
) -> Option<(String, OffloadFloatMathHelp)> {
    let ty::FnDef(def_id, _) = *callee.kind() else { return None };
    let intrinsic = tcx.intrinsic(def_id)?.name;
    unprovided_intrinsic(intrinsic).or_else(|| {
        let moves_bits = matches!(
            intrinsic,
            sym::fabsf128 | sym::copysignf128 | sym::transmute | sym::transmute_unchecked
        );
        let signature = callee.fn_sig(tcx).skip_binder();
        let computes = !moves_bits && signature.inputs_and_output.iter().any(|ty| is_quad(ty));
        computes.then(|| (format!("intrinsic `{intrinsic}`"), OffloadFloatMathHelp::Quad))
    })
}

/// The float intrinsics that LLVM's GPU back ends cannot lower accurately, or at all, and for
/// which the device pass has no function to call: what the error calls the operation, and the
/// help. `None` for every other intrinsic: the `f32` and `f64` functions have compiler-builtins'
/// (`offload_image::offload_device_math`), and `sqrt`, `fma`, `fabs` and the rounding functions
/// of `f16`, `f32` and `f64` are the GPUs' own exact instructions. (The `f128` ones are listed
/// for their name in the error; [`unprovided_call`] refuses every other intrinsic that computes
/// with an `f128`.)
fn unprovided_intrinsic(intrinsic: Symbol) -> Option<(String, OffloadFloatMathHelp)> {
    let help = match intrinsic {
        sym::sinf16
        | sym::cosf16
        | sym::expf16
        | sym::exp2f16
        | sym::logf16
        | sym::log2f16
        | sym::log10f16
        | sym::powf16
        | sym::powif16 => OffloadFloatMathHelp::Half,
        sym::sinf128
        | sym::cosf128
        | sym::expf128
        | sym::exp2f128
        | sym::logf128
        | sym::log2f128
        | sym::log10f128
        | sym::powf128
        | sym::powif128 => OffloadFloatMathHelp::Quad,
        sym::simd_fsin
        | sym::simd_fcos
        | sym::simd_fexp
        | sym::simd_fexp2
        | sym::simd_flog
        | sym::simd_flog2
        | sym::simd_flog10 => OffloadFloatMathHelp::Simd,
        _ => return None,
    };
    Some((format!("intrinsic `{intrinsic}`"), help))
}

/// The functions that the MIR inliner put into `body` on the way to the code at `source_info`,
/// outermost first.
fn inlined(body: &Body<'_>, source_info: SourceInfo) -> Vec<DefId> {
    let mut inlined = Vec::new();
    let mut scope = Some(&body.source_scopes[source_info.scope]);
    while let Some(data) = scope {
        inlined.extend(data.inlined.map(|(callee, _): (Instance<'_>, _)| callee.def_id()));
        scope = data.inlined_parent_scope.map(|parent| &body.source_scopes[parent]);
    }
    inlined.reverse();
    inlined
}
