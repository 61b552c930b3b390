//! What a launch may pass: the kernel's signature, each argument against the kernel's parameter
//! type (with the lint `offload_shared_for_mutable`), and the parameters' layouts, which the
//! manifest records and the device pass compares.

use rustc_hir::HirId;
use rustc_hir::def_id::DefId;
use rustc_middle::middle::codegen_fn_attrs::CodegenFnAttrFlags;
use rustc_middle::ty::{self, Instance, Ty, TyCtxt};
use rustc_span::Span;

use super::OFFLOAD_SHARED_FOR_MUTABLE;
use super::codec::ReadKernel;
use crate::errors;

/// Whether the argument tuple `passed` of an `offload` launch fits the parameters of the launched
/// kernel (`kernel` with `kernel_args`); reports a mismatch at `span`, or else the lint
/// [`OFFLOAD_SHARED_FOR_MUTABLE`] (at the level of `lint_root`) for each shared pointer passed for
/// a mutable one. The host maps each argument by the kernel's parameter type, so a tuple of other
/// types would hand the device other bytes than the kernel reads. What rustc 1.95 accepts where the
/// ABI agrees is accepted too (see [`ArgFit`]).
pub(super) fn launch_args_match<'tcx>(
    tcx: TyCtxt<'tcx>,
    span: Span,
    lint_root: HirId,
    kernel: DefId,
    kernel_args: ty::GenericArgsRef<'tcx>,
    passed: Ty<'tcx>,
) -> bool {
    let typing_env = ty::TypingEnv::fully_monomorphized();
    let sig = tcx.fn_sig(kernel).instantiate(tcx, kernel_args);
    let sig = tcx.normalize_erasing_late_bound_regions(typing_env, sig);
    let passed = tcx.normalize_erasing_regions(typing_env, passed);
    let ty::Tuple(passed_tys) = *passed.kind() else { return true };
    let fits: Vec<ArgFit> = if passed_tys.len() == sig.inputs().len() {
        passed_tys.iter().zip(sig.inputs()).map(|(p, q)| ArgFit::of(tcx, p, *q)).collect()
    } else {
        vec![ArgFit::Mismatch]
    };
    if let Some(index) = fits.iter().position(|fit| *fit == ArgFit::Mismatch) {
        // Named only where the tuple has the kernel's arity: otherwise no element is the first.
        let first =
            (passed_tys.len() == sig.inputs().len()).then(|| errors::OffloadLaunchFirstMismatch {
                index: index + 1,
                param: param_text(tcx, kernel, index, sig.inputs()[index]),
                passed: passed_tys[index].to_string(),
            });
        tcx.dcx().emit_err(errors::OffloadLaunchArgsMismatch {
            span,
            kernel: tcx.def_path_str_with_args(kernel, kernel_args),
            passed: passed.to_string(),
            params: Ty::new_tup(tcx, sig.inputs()).to_string(),
            first,
        });
        return false;
    }
    let kernel_text = || tcx.def_path_str_with_args(kernel, kernel_args);
    // The lint's message is built with trimmed paths, which must end in a diagnostic: so none
    // is built where the lint is allowed.
    let lint_level = tcx.lint_level_at_node(OFFLOAD_SHARED_FOR_MUTABLE, lint_root).level;
    for ((fit, passed), param) in fits.iter().zip(passed_tys).zip(sig.inputs()) {
        if *fit == ArgFit::SharedForMut && lint_level != rustc_session::lint::Level::Allow {
            tcx.emit_node_span_lint(
                OFFLOAD_SHARED_FOR_MUTABLE,
                lint_root,
                span,
                errors::OffloadLaunchSharedToMut {
                    kernel: kernel_text(),
                    passed: passed.to_string(),
                    param: param.to_string(),
                },
            );
        }
    }
    true
}

/// The kernel's parameter at `index` (0 for the first), of type `ty`, as a diagnostic names it:
/// `` `name: type` ``, or `` `type` `` where the parameter has no name (a pattern, `_`).
fn param_text<'tcx>(tcx: TyCtxt<'tcx>, kernel: DefId, index: usize, ty: Ty<'tcx>) -> String {
    match tcx.fn_arg_idents(kernel).get(index).copied().flatten() {
        Some(ident) => format!("`{ident}: {ty}`"),
        None => format!("`{ty}`"),
    }
}

/// How the type of a launch argument stands for the kernel's parameter type.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ArgFit {
    /// The same type.
    Exact,
    /// As rustc 1.95 took it: both are raw pointers or references (one ABI: a thin pointer) to
    /// the same sized pointee, so the runtime maps the same bytes; a `*mut T` or `&mut T` may
    /// stand for a `*const T` or `&T`.
    Pointer,
    /// As rustc 1.95 took it: integers of one size for each other (`i32` for `u32`, an
    /// integer literal that fell back to `i32`), also as the elements of arrays of one length.
    /// The runtime copies the argument's bytes, which read as the parameter's value that an
    /// `as` conversion gives. `offload!` and `core::offload::launch*` give a literal its
    /// parameter's type, so this arises from 1.95's `core::intrinsics::offload` or from a
    /// value of the other signedness.
    SameSizeInteger,
    /// A `*const T` or `&T` for a `*mut T` or `&mut T`: accepted as rustc 1.95 did, with a
    /// warning, since the kernel's writes are copied back into memory the launch handed over
    /// as read-only.
    SharedForMut,
    /// Anything else. Pointers to unsized data are wide, so they must match exactly.
    Mismatch,
}

impl ArgFit {
    fn of<'tcx>(tcx: TyCtxt<'tcx>, passed: Ty<'tcx>, param: Ty<'tcx>) -> ArgFit {
        if passed == param {
            return ArgFit::Exact;
        }
        if same_size_integers(tcx, passed, param) {
            return ArgFit::SameSizeInteger;
        }
        let pointer = |ty: Ty<'tcx>| match *ty.kind() {
            ty::RawPtr(pointee, mutability) | ty::Ref(_, pointee, mutability) => {
                Some((pointee, mutability))
            }
            _ => None,
        };
        let (Some((passed_pointee, passed_mut)), Some((param_pointee, param_mut))) =
            (pointer(passed), pointer(param))
        else {
            return ArgFit::Mismatch;
        };
        let typing_env = ty::TypingEnv::fully_monomorphized();
        if passed_pointee != param_pointee || !passed_pointee.is_sized(tcx, typing_env) {
            ArgFit::Mismatch
        } else if param_mut.is_mut() && !passed_mut.is_mut() {
            ArgFit::SharedForMut
        } else {
            ArgFit::Pointer
        }
    }
}

/// Whether `passed` and `param` are integers of one size, or arrays of one length of such
/// integers (nested arrays too), so that the bytes of one are a value of the other.
fn same_size_integers<'tcx>(tcx: TyCtxt<'tcx>, passed: Ty<'tcx>, param: Ty<'tcx>) -> bool {
    match (*passed.kind(), *param.kind()) {
        (ty::Int(_) | ty::Uint(_), ty::Int(_) | ty::Uint(_)) => {
            passed.primitive_size(tcx) == param.primitive_size(tcx)
        }
        (ty::Array(passed, passed_len), ty::Array(param, param_len)) => {
            passed_len == param_len && same_size_integers(tcx, passed, param)
        }
        _ => false,
    }
}

/// Checks that the kernel `def_id` can be launched by the offload runtime, reporting each way it
/// cannot at its definition: a kernel returns `()` (results go through its pointer arguments),
/// and is neither `async` (it would only build a future), nor `#[track_caller]` (the caller
/// location is a hidden argument that the host never passes), nor C-variadic. Returns whether
/// the signature is fine.
pub(super) fn check_kernel_signature(tcx: TyCtxt<'_>, def_id: DefId) -> bool {
    let span = tcx.def_span(def_id);
    // Printed only for an error: trimmed paths may be computed only when a diagnostic follows.
    let kernel = || tcx.def_path_str(def_id);
    let sig = tcx.fn_sig(def_id).instantiate_identity().skip_binder();
    let dcx = tcx.dcx();
    let mut fine = true;
    if tcx.asyncness(def_id).is_async() {
        dcx.emit_err(errors::OffloadKernelAsync { span, kernel: kernel() });
        fine = false;
    } else if !sig.output().is_unit() {
        let ty = sig.output().to_string();
        dcx.emit_err(errors::OffloadKernelReturnsValue { span, kernel: kernel(), ty });
        fine = false;
    }
    if tcx.codegen_fn_attrs(def_id).flags.contains(CodegenFnAttrFlags::TRACK_CALLER) {
        dcx.emit_err(errors::OffloadKernelTrackCaller { span, kernel: kernel() });
        fine = false;
    }
    if sig.c_variadic {
        dcx.emit_err(errors::OffloadKernelCVariadic { span, kernel: kernel() });
        fine = false;
    }
    fine
}

/// Each parameter of `instance` with its size and ABI alignment in bytes, as this session's
/// target lays it out; `None` where a layout cannot be computed (codegen reports that).
pub(super) fn param_layouts<'tcx>(
    tcx: TyCtxt<'tcx>,
    instance: Instance<'tcx>,
) -> Option<Vec<(Ty<'tcx>, u64, u64)>> {
    let typing_env = ty::TypingEnv::fully_monomorphized();
    let sig = tcx.fn_sig(instance.def_id()).instantiate(tcx, instance.args);
    let sig = tcx.instantiate_bound_regions_with_erased(sig);
    let sig = tcx.normalize_erasing_regions(typing_env, sig);
    sig.inputs()
        .iter()
        .map(|&ty| {
            let layout = tcx.layout_of(typing_env.as_query_input(ty)).ok()?;
            Some((ty, layout.size.bytes(), layout.align.abi.bytes()))
        })
        .collect()
}

/// Whether this device pass lays out the parameters of the manifest's `kernel` (resolved to
/// `instance`) as the host metadata pass recorded them. The runtime copies a parameter's bytes
/// from the host to the kernel, so a type that differs between the targets (a `cfg`'d field)
/// would be read wrongly; reports the first parameter that differs, by position and name.
pub(super) fn layouts_agree<'tcx>(
    tcx: TyCtxt<'tcx>,
    path: &str,
    kernel: &ReadKernel,
    instance: Instance<'tcx>,
) -> bool {
    let mismatch = |what: String| {
        tcx.dcx().emit_err(errors::OffloadKernelLayoutMismatch {
            path: path.to_string(),
            kernel: kernel.text.clone(),
            what,
        });
        false
    };
    let Some(device) = param_layouts(tcx, instance) else {
        return mismatch("a parameter type has no layout on this target".to_string());
    };
    if device.len() != kernel.params.len() {
        return mismatch(format!(
            "it has {} parameters on the host and {} here",
            kernel.params.len(),
            device.len()
        ));
    }
    let names = tcx.fn_arg_idents(instance.def_id());
    for (i, ((ty, size, align), &(host_size, host_align))) in
        device.iter().zip(&kernel.params).enumerate()
    {
        if (*size, *align) != (host_size, host_align) {
            let name = match names.get(i).copied().flatten() {
                Some(ident) => format!("`{ident}`: `{ty}`"),
                None => format!("`{ty}`"),
            };
            return mismatch(format!(
                "parameter {} ({name}) is {host_size} bytes aligned to {host_align} on the host \
                 and {size} bytes aligned to {align} here",
                i + 1
            ));
        }
    }
    true
}
