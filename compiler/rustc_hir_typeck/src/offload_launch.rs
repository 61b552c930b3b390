//! Type inference for `core::offload`'s launches: the argument tuple of
//! `core::offload::launch` and `launch_on_device` (what `offload!` expands to) takes its types
//! from the launched kernel's parameters.
//!
//! The launch functions are generic over the kernel `F` and the argument tuple `T`, with no
//! bound that links the two: a kernel is any function item, and its arity is the tuple's.
//! Without help, a generic kernel named without its generic arguments (`kernel = scale` for
//! `fn scale<T>(x: &mut [T], factor: T)`) leaves `T` unknown (E0282/E0283), and an integer
//! literal passed for a `u32` parameter falls back to `i32`, which the launch check then
//! refuses. After the call's arguments are checked, each element of the tuple is equated with
//! the kernel's parameter at its position, where the two can be equal: that fixes the kernel's
//! generic arguments from the arguments' types and gives a literal its parameter's type, as a
//! direct call of the kernel would. Where an element cannot equal its parameter (a `&mut T`
//! passed for a `*mut T`, or a real mismatch), nothing is equated for it, and the host
//! metadata pass's launch check accepts the pair or reports it by parameter, as before.
//!
//! Before that, while the argument tuple is checked (when it is a tuple literal), each element
//! is coerced to its parameter's type where a direct call of the kernel would coerce it: deref
//! (`&Vec<f32>` to `&[f32]`, `&mut Vec<f32>` to `&mut [f32]`, `&String` to `&str`), unsize
//! (`&[f32; 64]` to `&[f32]`), a reborrow of a `&mut` (so the launch does not move it), `&mut T`
//! to `*mut T`. The tuple then has the kernel's parameter types, so the launch maps what the
//! kernel reads (the elements of a `&Vec<f32>`, never the `Vec`'s header). An element that
//! does not coerce keeps its type, and the launch check judges it as before. An element whose
//! own type a call would infer from its parameter (an `if`, `match`, block, tuple or array
//! expression, such as `if c { &v } else { &a }` with a `Vec` and an array for a `&[f32]`
//! parameter, or `(1.5, 2)` for an `(f32, u32)` one) is checked with the parameter as its
//! expected type instead, so that each branch or element coerces to it; a mismatch inside it
//! is then a type error (E0308), as in a call.
//!
//! `core::intrinsics::offload`, rustc 1.95's form of the launch, gets the coercions, but not
//! the equating, the expected types or a literal's parameter type: code that 1.95 accepts keeps
//! the types 1.95 gives it (an `i32` literal for a `u32` parameter, which the launch check
//! accepts, stays `i32`; a negative one still compiles). What the launch check accepted before
//! keeps its meaning: a `&mut T` coerced to a `*mut T` parameter is the same pointer, mapped by
//! the parameter's type as before.

use std::iter;

use rustc_hir as hir;
use rustc_hir::def_id::DefId;
use rustc_infer::infer::{BoundRegionConversionTime, DefineOpaqueTypes, RegionVariableOrigin};
use rustc_middle::ty::adjustment::AllowTwoPhase;
use rustc_middle::ty::{self, Ty, TypeVisitableExt, fold_regions};
use rustc_span::{Span, sym};

use crate::FnCtxt;

/// The diagnostic items of the launch functions whose argument tuple follows the kernel
/// (`library/core/src/offload/mod.rs`): the kernel is their first parameter, the tuple their
/// last.
const LAUNCHES: [&str; 2] = ["offload_launch", "offload_launch_on_device"];

impl<'a, 'tcx> FnCtxt<'a, 'tcx> {
    /// For a call at `call_span` of the function `callee` with the (instantiated) parameter
    /// types `inputs`, after its arguments were checked: when `callee` is one of
    /// `core::offload`'s launch functions and its kernel argument is a function item, equates
    /// each element of the argument tuple with the kernel's parameter at its position, where
    /// they can be equal (see the module's documentation). Reports nothing.
    pub(crate) fn infer_offload_launch_from_kernel(
        &self,
        call_span: Span,
        callee: DefId,
        inputs: &[Ty<'tcx>],
    ) {
        let tcx = self.tcx;
        let Some(name) = tcx.get_diagnostic_name(callee) else { return };
        if !LAUNCHES.contains(&name.as_str()) {
            return;
        }
        let (Some(&kernel), Some(&passed)) = (inputs.first(), inputs.last()) else { return };
        let ty::FnDef(kernel, kernel_args) = *self.resolve_vars_with_obligations(kernel).kind()
        else {
            return;
        };
        let ty::Tuple(passed) = *self.resolve_vars_with_obligations(passed).kind() else {
            return;
        };
        let params = self.kernel_params(call_span, kernel, kernel_args);
        if params.len() != passed.len() {
            return;
        }
        let cause = self.misc(call_span);
        for (&param, passed) in iter::zip(&params, passed) {
            // Each pair on its own: one pair that cannot be equal must not undo the others.
            let equal = self.commit_if_ok(|_| {
                self.at(&cause, self.param_env).eq(DefineOpaqueTypes::Yes, param, passed)
            });
            if let Ok(ok) = equal {
                self.register_infer_ok_obligations(ok);
            }
        }
    }

    /// The parameter types of the kernel `kernel` with the generic arguments `kernel_args`, as
    /// a call at `span` instantiates them (fresh variables for its late-bound lifetimes).
    fn kernel_params(
        &self,
        span: Span,
        kernel: DefId,
        kernel_args: ty::GenericArgsRef<'tcx>,
    ) -> Vec<Ty<'tcx>> {
        let sig = self.tcx.fn_sig(kernel).instantiate(self.tcx, kernel_args);
        let sig =
            self.instantiate_binder_with_fresh_vars(span, BoundRegionConversionTime::FnCall, sig);
        self.normalize(span, sig).inputs().to_vec()
    }

    /// The launch whose argument tuple is the tuple literal `tuple` of `arity` elements: `Some`
    /// when `tuple` is the last argument of a call of `core::offload`'s launch functions or of
    /// `core::intrinsics::offload`, whose kernel argument (the first, already checked) is a
    /// function item with `arity` parameters. Used by `check_expr_tuple` while it checks the
    /// elements, to coerce each with [`OffloadLaunchParams::coerce`].
    pub(crate) fn offload_launch_params(
        &self,
        tuple: &'tcx hir::Expr<'tcx>,
        arity: usize,
    ) -> Option<OffloadLaunchParams<'tcx>> {
        let tcx = self.tcx;
        let hir::Node::Expr(call) = tcx.parent_hir_node(tuple.hir_id) else { return None };
        let hir::ExprKind::Call(callee, [kernel, .., last]) = call.kind else { return None };
        if last.hir_id != tuple.hir_id {
            return None;
        }
        let node_type = |id| self.typeck_results.borrow().node_type_opt(id);
        let ty::FnDef(callee, _) = *self.resolve_vars_if_possible(node_type(callee.hir_id)?).kind()
        else {
            return None;
        };
        let is_intrinsic = tcx.intrinsic(callee).is_some_and(|i| i.name == sym::offload);
        let is_launch =
            tcx.get_diagnostic_name(callee).is_some_and(|name| LAUNCHES.contains(&name.as_str()));
        if !is_intrinsic && !is_launch {
            return None;
        }
        let kernel_ty = self.resolve_vars_with_obligations(node_type(kernel.hir_id)?);
        let ty::FnDef(kernel, kernel_args) = *kernel_ty.kind() else { return None };
        let params = self.kernel_params(call.span, kernel, kernel_args);
        (params.len() == arity).then_some(OffloadLaunchParams { params, is_intrinsic })
    }
}

/// The parameter types of a launched kernel, to which the elements of the launch's argument
/// tuple are coerced ([`FnCtxt::offload_launch_params`]).
pub(crate) struct OffloadLaunchParams<'tcx> {
    params: Vec<Ty<'tcx>>,
    /// Whether the launch is the `offload` intrinsic (rustc 1.95's form), whose elements keep
    /// 1.95's types where those are not known yet (a literal's), and whose lifetimes the
    /// parameters do not constrain (1.95 compared the types with lifetimes erased).
    is_intrinsic: bool,
}

impl<'tcx> OffloadLaunchParams<'tcx> {
    /// The kernel's parameter at `index` as the expected type of `arg`, the argument tuple's
    /// element there, when `arg` is an expression whose type a call infers from its parameter
    /// ([`infers_from_parameter`]): checked against it, each of its branches or elements coerces
    /// to it. `None` for other expressions, which [`Self::coerce`] coerces once they are
    /// checked, and in a 1.95 launch, whose elements keep the types that 1.95 gives them (see
    /// the module's documentation).
    pub(crate) fn expected_type(&self, index: usize, arg: &hir::Expr<'_>) -> Option<Ty<'tcx>> {
        (!self.is_intrinsic && infers_from_parameter(arg)).then(|| self.params[index])
    }

    /// Coerces `arg`, the argument tuple's element at `index`, of the checked type `arg_ty`,
    /// to the kernel's parameter at `index` where it coerces, as a call's argument is, and
    /// returns the parameter's type; returns `arg_ty` where it does not coerce, or where it is
    /// not known yet in a 1.95 launch (see the module's documentation).
    pub(crate) fn coerce(
        &self,
        fcx: &FnCtxt<'_, 'tcx>,
        index: usize,
        arg: &'tcx hir::Expr<'tcx>,
        arg_ty: Ty<'tcx>,
    ) -> Ty<'tcx> {
        let mut param = self.params[index];
        if self.is_intrinsic {
            if fcx.resolve_vars_if_possible(arg_ty).has_non_region_infer() {
                return arg_ty;
            }
            // A `&mut Foo<'static>` parameter must not make the argument's lifetime `'static`.
            param = fold_regions(fcx.tcx, param, |_, _| {
                fcx.next_region_var(RegionVariableOrigin::Misc(arg.span))
            });
        }
        fcx.coerce(arg, arg_ty, param, AllowTwoPhase::No, None).unwrap_or(arg_ty)
    }
}

/// Whether `expr`'s type is inferred from its expected type in ways that checking it alone and
/// coercing the result afterwards cannot give: branches or elements that each coerce (`if`,
/// `match`, a loop's `break` values, a tuple, an array). A block counts as its tail expression,
/// so that wrapping an argument in `{ }` or `unsafe { }` does not change how it is checked.
fn infers_from_parameter(expr: &hir::Expr<'_>) -> bool {
    match expr.kind {
        hir::ExprKind::If(..)
        | hir::ExprKind::Match(..)
        | hir::ExprKind::Loop(..)
        | hir::ExprKind::Tup(..)
        | hir::ExprKind::Array(..) => true,
        hir::ExprKind::Block(block, _) => block.expr.is_some_and(infers_from_parameter),
        _ => false,
    }
}
