//! Borrow checking of `core::offload`'s launches: the argument tuple's borrows last as long as
//! the launched kernel's parameters require, as a call's arguments do.
//!
//! `core::offload::launch` and `launch_on_device` (what `offload!` expands to) take the kernel
//! `F` and the argument tuple `T` as two unrelated type parameters, so the MIR call relates the
//! tuple to nothing but `T`: a kernel `fn k(x: &'static [f32])` launched with a borrow of a
//! local compiled, and the local could be dropped while the kernel's caller kept the
//! reference, where a direct call `k(&local)` is E0597. The type checker gives the tuple the
//! kernel's parameter types (`rustc_hir_typeck::offload_launch`) but borrow checking ignores
//! its lifetimes; here each element of the tuple is related to the kernel's parameter at its
//! position as a call's argument is (a subtype of it, the kernel's late-bound lifetimes fresh
//! for the launch), so that the kernel's lifetimes bind the launch's borrows. The kernel's
//! `where` clauses are proven already, for the function item that the launch names. An
//! element whose type differs from its parameter in more than lifetimes (a pair that the host
//! metadata pass's launch check accepts or refuses by parameter) is not related.
//!
//! Rustc 1.95's `core::intrinsics::offload` is left as 1.95 has it: its lifetimes stay
//! unrelated to the kernel's, so that code which 1.95 accepts keeps compiling.

use std::iter;

use rustc_infer::infer::{BoundRegionConversionTime, RegionVariableOrigin};
use rustc_middle::mir::{CallSource, ConstraintCategory, Location, Operand, Terminator};
use rustc_middle::ty::{self, Ty};
use rustc_span::source_map::Spanned;
use rustc_span::sym;

use super::{NormalizeLocation, TypeChecker};
use crate::renumber::RegionCtxt;

/// The diagnostic items of the launch functions whose argument tuple goes to their kernel
/// (`library/core/src/offload/mod.rs`): the kernel is their first parameter, the tuple their
/// last.
const LAUNCHES: [&str; 2] = ["offload_launch", "offload_launch_on_device"];

impl<'a, 'tcx> TypeChecker<'a, 'tcx> {
    /// For the call `term` at `location` of a function of type `func_ty` with `args`, whose
    /// arguments are related to its own parameters already: when the function is one of
    /// `core::offload`'s launch functions and its kernel is a function item, relates each
    /// element of the argument tuple to the kernel's parameter at its position (see the
    /// module's documentation), as `check_call_inputs` relates a call's arguments. A launch
    /// whose tuple does not have the kernel's arity is left to the host metadata pass's launch
    /// check, which reports it.
    pub(super) fn relate_offload_launch_args(
        &mut self,
        term: &Terminator<'tcx>,
        func_ty: Ty<'tcx>,
        args: &[Spanned<Operand<'tcx>>],
        location: Location,
        call_source: CallSource,
    ) {
        let tcx = self.tcx();
        let ty::FnDef(callee, _) = *func_ty.kind() else { return };
        if !tcx.get_diagnostic_name(callee).is_some_and(|name| LAUNCHES.contains(&name.as_str())) {
            return;
        }
        let (Some(kernel), Some(tuple)) = (args.first(), args.last()) else { return };
        let kernel_ty = kernel.node.ty(self.body, tcx);
        let ty::FnDef(kernel, kernel_args) = *kernel_ty.kind() else { return };
        let tuple = self.normalize(tuple.node.ty(self.body, tcx), location);
        let ty::Tuple(passed) = *tuple.kind() else { return };
        let sig = tcx.fn_sig(kernel).instantiate(tcx, kernel_args);
        let (sig, _) = tcx.instantiate_bound_regions(sig, |bound| {
            let origin = RegionVariableOrigin::BoundRegion(
                term.source_info.span,
                bound.kind,
                BoundRegionConversionTime::FnCall,
            );
            let name = match bound.kind {
                ty::BoundRegionKind::Named(def_id) => tcx.item_name(def_id),
                _ => sym::anon,
            };
            self.infcx.next_region_var(origin, || RegionCtxt::LateBound(name))
        });
        // As for a call: the signature is proven well-formed before it is normalized, so that
        // bounds that normalization would remove still hold (see `check_call_inputs`' caller).
        self.prove_predicates(
            sig.inputs().iter().map(|ty| {
                ty::Binder::dummy(ty::PredicateKind::Clause(ty::ClauseKind::WellFormed(
                    (*ty).into(),
                )))
            }),
            location.to_locations(),
            ConstraintCategory::Boring,
        );
        let sig = self.deeply_normalize(sig, location);
        if sig.inputs().len() != passed.len() {
            return;
        }
        let category = if call_source.from_hir_call() {
            ConstraintCategory::CallArgument(Some(tcx.erase_and_anonymize_regions(kernel_ty)))
        } else {
            ConstraintCategory::Boring
        };
        for (n, (&param, passed)) in iter::zip(sig.inputs(), passed).enumerate() {
            if tcx.erase_and_anonymize_regions(param) != tcx.erase_and_anonymize_regions(passed) {
                continue;
            }
            if let Err(terr) = self.sub_types(passed, param, location.to_locations(), category) {
                span_mirbug!(
                    self,
                    term,
                    "bad offload launch arg #{:?} ({:?} <- {:?}): {:?}",
                    n,
                    param,
                    passed,
                    terr
                );
            }
        }
    }
}
