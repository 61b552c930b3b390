//! Float math that no GPU provides, in the manifest-driven offload device pass.
//!
//! The device pass gives the `f32` and `f64` math of a GPU image an accurate implementation:
//! compiler-builtins' port of musl's libm, called in the place of each float intrinsic
//! (`offload_image::offload_device_math`). The `f16` forms of those intrinsics (`sinf16`,
//! `powif16`, ...) and the SIMD float math intrinsics (`simd_fsin`, ...) have none: LLVM's
//! nvptx back end stops on them ("Cannot select: fsin"), and its amdgcn back end picks an
//! approximate instruction (`v_sin_f16`, `v_sin_f32`). Nor can LLVM compute with `f128` on a
//! GPU at all: its arithmetic, comparisons, conversions and functions are library calls on
//! every target, which the GPU back ends stop on ("unsupported library call operation"); only
//! its bits can be moved (`to_bits`, `from_bits`, `abs`, `copysign`, `black_box`). The same
//! holds for conversions between a float and a 128-bit integer (library calls again), and a
//! float's `%` of `f16` or of SIMD lanes, which the GPU back ends expand into the inexact
//! `x - trunc(x / y) * y` (0056 calls `fmodf` and `fmod` for `f32` and `f64` only). So the
//! device pass refuses a kernel that reaches any of them, with the kernel, the Rust function
//! that holds the operation and the chain of mono items between them, as the platform-layer
//! check does (`offload_platform_layer`), before any code is made.

use rustc_data_structures::fx::FxHashMap;
use rustc_hir::def_id::DefId;
use rustc_middle::mir::mono::MonoItem;
use rustc_middle::mir::{BinOp, Body, CastKind, Rvalue, SourceInfo, StatementKind, TerminatorKind};
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
            help: unprovided.help.clone(),
        });
    }
}

/// The first operation without a GPU implementation in the optimized MIR of `item` (an
/// instance's, its types made monomorphic): a statement of [`unprovided_rvalue`] or a call of
/// [`unprovided_call`]. `None` for an item without MIR or without such an operation. A
/// statically dead branch counts too: the check runs before LLVM removes it.
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
    let (source_info, (what, help)) = body.basic_blocks.iter().find_map(|block| {
        let in_statement = block.statements.iter().find_map(|statement| match &statement.kind {
            StatementKind::Assign(assign) => {
                Some((statement.source_info, unprovided_rvalue(body, tcx, &assign.1, &mono)?))
            }
            _ => None,
        });
        in_statement.or_else(|| {
            let terminator = block.terminator();
            let TerminatorKind::Call { func, .. } = &terminator.kind else { return None };
            Some((terminator.source_info, unprovided_call(tcx, mono(func.ty(body, tcx)))?))
        })
    })?;
    Some(Unprovided { what, help, inlined: inlined(body, source_info) })
}

/// What the error calls a computation with `f128`: an operator or a conversion (but a
/// transmute, which moves bits: `to_bits`, `from_bits`), or an intrinsic that computes with
/// one ([`unprovided_call`]).
const QUAD: &str = "an `f128` computation";

/// Whether `ty` is `f128`.
fn is_quad(ty: Ty<'_>) -> bool {
    matches!(ty.kind(), ty::Float(FloatTy::F128))
}

/// The operation without a GPU implementation that `rvalue` of `body` is, if any (`mono` makes
/// a type of the body monomorphic): an operator or a conversion of an `f128` (see [`QUAD`]), an
/// `f16` remainder, or a conversion between a float and a 128-bit integer.
fn unprovided_rvalue<'tcx>(
    body: &Body<'tcx>,
    tcx: TyCtxt<'tcx>,
    rvalue: &Rvalue<'tcx>,
    mono: &impl Fn(Ty<'tcx>) -> Ty<'tcx>,
) -> Option<(String, OffloadFloatMathHelp)> {
    let quad = || Some((QUAD.to_string(), OffloadFloatMathHelp::Quad));
    match rvalue {
        Rvalue::BinaryOp(op, operands) => {
            let ty = mono(operands.0.ty(body, tcx));
            if is_quad(ty) {
                return quad();
            }
            let half_rem = *op == BinOp::Rem && matches!(ty.kind(), ty::Float(FloatTy::F16));
            half_rem.then(|| {
                let example = "((x as f32) % (y as f32)) as f16".to_string();
                ("an `f16` remainder (`%`)".to_string(), OffloadFloatMathHelp::Half { example })
            })
        }
        Rvalue::UnaryOp(_, operand) if is_quad(mono(operand.ty(body, tcx))) => quad(),
        Rvalue::Cast(CastKind::Transmute, ..) => None,
        Rvalue::Cast(_, operand, to) => {
            let (from, to) = (mono(operand.ty(body, tcx)), mono(*to));
            if is_quad(from) || is_quad(to) {
                return quad();
            }
            let wide = |ty: Ty<'_>| {
                matches!(ty.kind(), ty::Int(ty::IntTy::I128) | ty::Uint(ty::UintTy::U128))
            };
            let crosses =
                (from.is_floating_point() && wide(to)) || (wide(from) && to.is_floating_point());
            crosses.then(|| {
                let what = format!("a conversion from `{from}` to `{to}`");
                (what, OffloadFloatMathHelp::Wide)
            })
        }
        _ => None,
    }
}

/// The operation without a GPU implementation that a call of `callee` (a monomorphic function
/// type) is, if any: an intrinsic of [`unprovided_intrinsic`], or one that computes with
/// `f128`: an intrinsic for `f128` alone that takes or returns one (but `fabsf128` and
/// `copysignf128`, which move bits), or a generic float operation (`fadd_fast`, ...,
/// `float_to_int_unchecked`) of `f128`. Generic intrinsics that only move a value
/// (`black_box`, `read_volatile`, `transmute`) compute nothing.
fn unprovided_call<'tcx>(
    tcx: TyCtxt<'tcx>,
    callee: Ty<'tcx>,
) -> Option<(String, OffloadFloatMathHelp)> {
    let ty::FnDef(def_id, args) = *callee.kind() else { return None };
    let intrinsic = tcx.intrinsic(def_id)?.name;
    let signature = callee.fn_sig(tcx).skip_binder();
    if let Some(found) = unprovided_intrinsic(tcx, intrinsic, signature.inputs_and_output[0]) {
        return Some(found);
    }
    let computes = if args.is_empty() {
        !matches!(intrinsic, sym::fabsf128 | sym::copysignf128)
    } else {
        matches!(
            intrinsic,
            sym::fadd_fast
                | sym::fsub_fast
                | sym::fmul_fast
                | sym::fdiv_fast
                | sym::frem_fast
                | sym::fadd_algebraic
                | sym::fsub_algebraic
                | sym::fmul_algebraic
                | sym::fdiv_algebraic
                | sym::frem_algebraic
                | sym::float_to_int_unchecked
        )
    };
    (computes && signature.inputs_and_output.iter().any(is_quad))
        .then(|| (format!("the intrinsic `{intrinsic}`"), OffloadFloatMathHelp::Quad))
}

/// The float intrinsics that LLVM's GPU back ends cannot lower accurately, or at all, and for
/// which the device pass has no function to call, with `first` the type of the intrinsic's
/// first parameter (its output for an intrinsic without one): what the error calls the
/// operation, and the help with the Rust to write instead. `None` for every other intrinsic:
/// the `f32` and `f64` functions have compiler-builtins' (`offload_image::offload_device_math`),
/// and `sqrt`, `fma`, `fabs` and the rounding functions of `f16`, `f32` and `f64` are the GPUs'
/// own exact instructions.
fn unprovided_intrinsic<'tcx>(
    tcx: TyCtxt<'tcx>,
    intrinsic: Symbol,
    first: Ty<'tcx>,
) -> Option<(String, OffloadFloatMathHelp)> {
    let what = format!("the intrinsic `{intrinsic}`");
    let half = |call: &str| {
        let example = format!("(x as f32).{call} as f16");
        Some((what.clone(), OffloadFloatMathHelp::Half { example }))
    };
    let lanes = |method: &str| {
        if !first.is_simd() {
            return None;
        }
        let (_, lane) = first.simd_size_and_type(tcx);
        if !lane.is_floating_point() {
            return None;
        }
        let example = match method {
            "%" => "Simd::from_array(std::array::from_fn(|i| a[i] % b[i]))".to_string(),
            _ => format!("Simd::from_array(v.to_array().map({lane}::{method}))"),
        };
        Some((format!("{what} of `{lane}` lanes"), OffloadFloatMathHelp::Simd { example }))
    };
    match intrinsic {
        sym::sinf16 => half("sin()"),
        sym::cosf16 => half("cos()"),
        sym::expf16 => half("exp()"),
        sym::exp2f16 => half("exp2()"),
        sym::logf16 => half("ln()"),
        sym::log2f16 => half("log2()"),
        sym::log10f16 => half("log10()"),
        sym::powf16 => half("powf(y as f32)"),
        sym::powif16 => half("powi(n)"),
        sym::simd_fsin => lanes("sin"),
        sym::simd_fcos => lanes("cos"),
        sym::simd_fexp => lanes("exp"),
        sym::simd_fexp2 => lanes("exp2"),
        sym::simd_flog => lanes("ln"),
        sym::simd_flog2 => lanes("log2"),
        sym::simd_flog10 => lanes("log10"),
        sym::simd_rem => lanes("%"),
        _ => None,
    }
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
