//! Finding launches: the calls of `core::intrinsics::offload` (and of `core::offload`'s launch
//! functions) in the MIR of the functions that a crate's mono item collection reaches, and the
//! query `offload_launches`.

use std::collections::BTreeMap;

use rustc_data_structures::fx::FxHashSet;
use rustc_hir::CRATE_HIR_ID;
use rustc_hir::def::DefKind;
use rustc_hir::def_id::DefId;
use rustc_middle::middle::codegen_fn_attrs::CodegenFnAttrFlags;
use rustc_middle::mir::mono::MonoItem;
use rustc_middle::mir::{self, TerminatorKind};
use rustc_middle::query::LocalCrate;
use rustc_middle::ty::offload_kernel::OffloadLaunchNotAKernel;
use rustc_middle::ty::{self, Instance, InstanceKind, Ty, TyCtxt};
use rustc_span::{Span, sym};

use super::LaunchKey;
use super::launch_args::launch_args_match;
use crate::collector::MonoItemCollectionStrategy;
use crate::errors;

/// Whether `def_id` is one of `core::offload`'s launch functions (`launch`,
/// `launch_on_device`, which `offload!` calls), known by their diagnostic items. Each takes the
/// kernel's type and the argument tuple's as its first two generic parameters, as the
/// `offload` intrinsic does, and launches through the intrinsic.
fn is_launch_function(tcx: TyCtxt<'_>, def_id: DefId) -> bool {
    // Almost every function has no diagnostic name: one lookup, then `core`'s own item only.
    tcx.get_diagnostic_name(def_id).is_some_and(|name| {
        matches!(name.as_str(), "offload_launch" | "offload_launch_on_device")
            && tcx.get_diagnostic_item(name) == Some(def_id)
    })
}

/// Where a launch at `source_info` is reported, and the scope whose lint level applies: at the
/// outermost call of a `core::offload` launch function that the MIR inliner inlined into
/// `body` (the user's `offload!` or `launch`, not the intrinsic call inside `core`, whose
/// scopes carry no lint levels in another crate), else at the call itself.
fn launch_site(
    tcx: TyCtxt<'_>,
    body: &mir::Body<'_>,
    source_info: mir::SourceInfo,
) -> (Span, mir::SourceScope) {
    let (mut span, mut lint_scope) = (source_info.span, source_info.scope);
    let mut scope = Some(source_info.scope);
    while let Some(current) = scope {
        let data = &body.source_scopes[current];
        let inlined =
            if data.inlined.is_some() { Some(current) } else { data.inlined_parent_scope };
        let Some(inlined) = inlined else { break };
        let data = &body.source_scopes[inlined];
        if let Some((callee, callsite)) = data.inlined
            && is_launch_function(tcx, callee.def_id())
            && let Some(caller_scope) = data.parent_scope
        {
            (span, lint_scope) = (callsite, caller_scope);
        }
        scope = data.parent_scope;
    }
    (span, lint_scope)
}

/// What [`launches_in`] learns about launches through `core::offload`'s launch functions.
#[derive(Default)]
struct LaunchFunctions<'tcx> {
    /// The (kernel type, argument tuple type) of every call of one that was checked where the
    /// user's code calls it.
    checked: FxHashSet<(Ty<'tcx>, Ty<'tcx>)>,
    /// The instances of the launch functions themselves, whose launches are checked at their
    /// callers; one whose pair was never called directly (a launch through a function pointer
    /// or a generic callback) is checked in its own body afterwards.
    instances: Vec<Instance<'tcx>>,
}

/// The kernel instances that `body` (the MIR of `instance`) launches, with the launch's span.
/// A launch of anything but a `#[rustc_offload_kernel]` function is reported. A launch through
/// `core::offload`'s launch functions ([`is_launch_function`]) is checked and reported where
/// the user's code calls them, not at the intrinsic call inside `core`.
fn launches_in<'tcx>(
    tcx: TyCtxt<'tcx>,
    instance: Instance<'tcx>,
    body: &mir::Body<'tcx>,
    out: &mut Vec<(Instance<'tcx>, Span)>,
    launch_functions: &mut LaunchFunctions<'tcx>,
) {
    // Their launches are checked at their callers (or, without a direct call, by
    // `local_offload_launches`).
    if is_launch_function(tcx, instance.def_id()) {
        launch_functions.instances.push(instance);
        return;
    }
    launch_calls(tcx, instance, body, out, Some(&mut launch_functions.checked));
}

/// The launches of `body` (the MIR of `instance`): each call of the `offload` intrinsic and,
/// when `checked` is given, of a `core::offload` launch function, whose (kernel, arguments)
/// types are added to `checked`.
fn launch_calls<'tcx>(
    tcx: TyCtxt<'tcx>,
    instance: Instance<'tcx>,
    body: &mir::Body<'tcx>,
    out: &mut Vec<(Instance<'tcx>, Span)>,
    mut checked: Option<&mut FxHashSet<(Ty<'tcx>, Ty<'tcx>)>>,
) {
    let typing_env = ty::TypingEnv::fully_monomorphized();
    for block in body.basic_blocks.iter() {
        let terminator = block.terminator();
        let TerminatorKind::Call { func, .. } = &terminator.kind else { continue };
        let callee_ty = instance.instantiate_mir_and_normalize_erasing_regions(
            tcx,
            typing_env,
            ty::EarlyBinder::bind(func.ty(body, tcx)),
        );
        let ty::FnDef(callee, callee_args) = *callee_ty.kind() else { continue };
        let intrinsic = tcx.is_intrinsic(callee, sym::offload);
        if !intrinsic && (checked.is_none() || !is_launch_function(tcx, callee)) {
            continue;
        }
        let (span, lint_scope) = launch_site(tcx, body, terminator.source_info);
        if let Some(checked) = checked.as_deref_mut() {
            checked.insert((callee_args.type_at(0), callee_args.type_at(1)));
        }
        let launched = callee_args.type_at(0);
        let ty::FnDef(kernel, kernel_args) = *launched.kind() else {
            tcx.dcx().emit_err(OffloadLaunchNotAKernel { span, launched: launched.to_string() });
            continue;
        };
        // The 1.95 style: the host declares the kernel in an `extern` block and the GPU build
        // defines it `#[no_mangle]`; the launch names it by its link name, and the device pass
        // looks for the definition.
        let declared_kernel = tcx.is_foreign_item(kernel) && tcx.def_kind(kernel) == DefKind::Fn;
        if !declared_kernel
            && !tcx.codegen_fn_attrs(kernel).flags.contains(CodegenFnAttrFlags::OFFLOAD_KERNEL)
        {
            tcx.dcx().emit_err(OffloadLaunchNotAKernel {
                span,
                launched: tcx.def_path_str_with_args(kernel, kernel_args),
            });
            continue;
        }
        // The lint level of the launch's scope; the crate's for a function of another crate
        // that this crate instantiates.
        let lint_root = lint_scope.lint_root(&body.source_scopes).unwrap_or(CRATE_HIR_ID);
        let passed = callee_args.type_at(1);
        if !launch_args_match(tcx, span, lint_root, kernel, kernel_args, passed) {
            continue;
        }
        match Instance::try_resolve(tcx, typing_env, kernel, kernel_args) {
            Ok(Some(kernel)) => out.push((kernel, span)),
            _ => {
                tcx.dcx().emit_err(OffloadLaunchNotAKernel {
                    span,
                    launched: tcx.def_path_str_with_args(kernel, kernel_args),
                });
            }
        }
    }
}

/// The `offload_launches` query for the local crate: empty outside the host metadata pass.
/// In that pass, sorted by kernel identity (by link name for declared kernels) and without
/// duplicates: eager mono item collection (every non-generic function of the crate is a root,
/// including the small ones that are cross-crate inlinable, which are codegened only by the
/// crates that call them and never placed in a codegen unit of this one) and a scan of every
/// collected function's MIR. A launch that cannot be recorded is reported here, at its span,
/// and left out.
pub(super) fn local_offload_launches(tcx: TyCtxt<'_>, _: LocalCrate) -> &[Instance<'_>] {
    if tcx.sess.opts.offload_host_metadata_manifest().is_none() {
        return &[];
    }
    let (items, _) =
        crate::collector::collect_crate_mono_items(tcx, MonoItemCollectionStrategy::Eager);
    let mut seen = FxHashSet::default();
    let mut launches = Vec::new();
    let mut launch_functions = LaunchFunctions::default();
    for item in items {
        let MonoItem::Fn(instance) = item else { continue };
        let InstanceKind::Item(def_id) = instance.def else { continue };
        if !seen.insert(instance) || !tcx.is_mir_available(def_id) {
            continue;
        }
        let body = tcx.instance_mir(instance.def);
        launches_in(tcx, instance, body, &mut launches, &mut launch_functions);
    }
    // A launch function instantiated for a pair that no direct call checked (reached through
    // a function pointer or a generic callback): its own intrinsic call is the launch, checked
    // and reported in `core`, as before there were launch functions.
    for instance in launch_functions.instances {
        let pair = (instance.args.type_at(0), instance.args.type_at(1));
        if !launch_functions.checked.contains(&pair) {
            launch_calls(tcx, instance, tcx.instance_mir(instance.def), &mut launches, None);
        }
    }
    // Keyed by identity: sorted and deduplicated independently of the collection order, so
    // that the crate metadata is the same for the same input.
    let mut recorded: BTreeMap<LaunchKey, Instance<'_>> = BTreeMap::new();
    for (kernel, span) in launches {
        match LaunchKey::of(tcx, kernel) {
            Ok(identity) => {
                recorded.insert(identity, kernel);
            }
            Err(unsupported) => {
                tcx.dcx().emit_err(errors::OffloadKernelUnsupported {
                    span,
                    kernel: kernel.to_string(),
                    what: unsupported.0,
                });
            }
        }
    }
    tcx.arena.alloc_from_iter(recorded.into_values())
}
