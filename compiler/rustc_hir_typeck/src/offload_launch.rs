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
//! `core::intrinsics::offload`, rustc 1.95's form of the launch, is left alone: code that
//! 1.95 accepts keeps the types 1.95 gives it.

use std::iter;

use rustc_hir::def_id::DefId;
use rustc_infer::infer::{BoundRegionConversionTime, DefineOpaqueTypes};
use rustc_middle::ty::{self, Ty};
use rustc_span::Span;

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
        let sig = tcx.fn_sig(kernel).instantiate(tcx, kernel_args);
        let sig = self.instantiate_binder_with_fresh_vars(
            call_span,
            BoundRegionConversionTime::FnCall,
            sig,
        );
        let sig = self.normalize(call_span, sig);
        if sig.inputs().len() != passed.len() {
            return;
        }
        let cause = self.misc(call_span);
        for (&param, passed) in iter::zip(sig.inputs(), passed) {
            // Each pair on its own: one pair that cannot be equal must not undo the others.
            let equal = self.commit_if_ok(|_| {
                self.at(&cause, self.param_env).eq(DefineOpaqueTypes::Yes, param, passed)
            });
            if let Ok(ok) = equal {
                self.register_infer_ok_obligations(ok);
            }
        }
    }
}
