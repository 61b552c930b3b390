//! The offload manifest: which kernel instances a crate graph launches.
//!
//! GPU offload compiles one crate graph twice, for the host and for a GPU target. The base
//! device pass codegens every mono root of the crate, `core` included, although the GPU only
//! ever runs the kernels that the host launches. The manifest tells the device pass what
//! those are.
//!
//! # Who writes it
//!
//! The *host metadata pass* (`-Zoffload=HostMetadata=<path>`, host target) runs eager mono
//! item collection (every non-generic function of the crate is a root), then scans the MIR of
//! every collected function for calls of `core::intrinsics::offload`. The first generic
//! argument of each call is the launched function's type; it must be the `FnDef` of a
//! `#[rustc_offload_kernel]` function, and the instance it resolves to (generic arguments
//! included) is recorded. Because collection starts from the crate's mono roots, launches
//! inside generic helpers (`fn launch<T>()`) are found once per instantiation.
//!
//! These are the crate's launches, the `offload_launches` query: the launches that its mono
//! collection instantiates, its own code's and those of the generic (or cross-crate
//! inlinable) functions of other crates that it instantiates. They also go into the crate's
//! metadata. A dependency's non-generic function is collected by the dependency, not by the
//! crates that call it, so the manifest of a crate is the union of `offload_launches` over the
//! crate and every crate of its graph, each kernel with the names of the crates that recorded
//! it (`launched_by`). Every crate of the graph goes through the pass (one flag in `RUSTFLAGS`
//! does that under cargo); a dependency compiled without it contributes nothing. Each crate
//! writes the manifest of its own graph, the root last; a file at that path that is not an
//! offload manifest is never replaced.
//!
//! The pass then stops: nothing is codegened or linked (`rustc_interface` skips both), only
//! the manifest (and, with `--emit=metadata`, the rmeta that dependents read) is written.
//!
//! # Who reads it
//!
//! The *device pass* (`-Zoffload=Device=<path>`, GPU target) replaces mono root collection
//! ([`device_roots`]): the roots are exactly the manifest's kernel instances, so no `pub`
//! function, no `main`, no unlaunched kernel and nothing of `core` becomes a root; the
//! collector then adds what the kernels reach. `-Zoffload=Device=<path>` implies
//! `-Zcross-crate-inline-threshold=always` (see `rustc_session::config`), so every function
//! of a dependency is available for instantiation in the crate that builds the device image.
//! The crate named by the manifest builds the image; any other crate of its graph compiled with
//! the same flag (a dependency, `core` under `-Zbuild-std`) has no roots and codegens nothing.
//!
//! # Identity
//!
//! A kernel instance is named by its crate's name, its disambiguated def path and its generic
//! arguments as type trees (`rustc_middle::ty::offload_kernel`), never by `CrateNum`, `DefId`,
//! `StableCrateId` or `DefPathHash`: the first two are session indices, the last two depend on
//! `-C metadata`, which cargo sets per target. A crate is also named by its source fingerprint
//! (the content hash of its root file), which tells two crates of one name apart. The device
//! pass recomputes the `DefPathHash` of the recorded path under its own session's
//! `StableCrateId`. Each kernel also carries its symbol, which the host metadata pass computed;
//! the device pass recomputes it and refuses a manifest whose symbols it does not reproduce (a
//! stale manifest, or another compiler). And each kernel carries the fingerprint of its
//! definition (`offload_kernel::kernel_definition`: where the item is in which file content),
//! so that a path that now names another item (a `cfg` that shifts a disambiguator) or an edited
//! kernel is reported as stale, never resolved to another item.
//!
//! # Format
//!
//! A JSON document (written by `serde_json`, keys sorted, kernels sorted by their text, so the
//! same input gives byte-identical manifests):
//!
//! ```json
//! {
//!   "magic": "rustc-offload-manifest",
//!   "format_version": 4,
//!   "rustc_commit": "<commit hash of the compiler that wrote it>",
//!   "crate": "<name of the crate of the host metadata pass>",
//!   "crate_graph": ["<names of every crate of its graph, sorted>"],
//!   "kernels": [{
//!     "kernel": "demo::scale::<f32>",
//!     "item": {"crate": "demo", "crate_source": "0123456789abcdef",
//!              "path": [["ValueNs", "scale", 0]]},
//!     "args": [["num", "f32"]],
//!     "symbol": "_offload_kernel_scale_0123456789abcdef",
//!     "definition": "fedcba9876543210",
//!     "params": [{"size": 8, "align": 8}, {"size": 4, "align": 4}],
//!     "launched_by": ["demo"]
//!   }]
//! }
//! ```
//!
//! A type argument is an array whose first element names its kind: `["bool"]`, `["char"]`,
//! `["str"]`, `["never"]`, `["num", "u32"]`, `["adt", <item>, [<args>]]`,
//! `["ref", <mutable>, <type>]`, `["ptr", <mutable>, <type>]`, `["array", <type>, <len>]`,
//! `["slice", <type>]`, `["tuple", [<types>]]`; a lifetime argument is `["lifetime"]`. The
//! `kernel` field is the instance as text (what `--print`-style dumps show); the device pass
//! reads `item`, `args` and `symbol`. A kernel in the 1.95 style, which the host declares in an
//! `extern` block and the GPU build defines `#[no_mangle]`, has `link_name` (its symbol) in
//! place of `item` and `args`, and `kernel` is `extern <link name>`; the device pass roots the
//! `#[rustc_offload_kernel]` definition of that symbol in its crate graph. Format 1 had no
//! such entries. `params` holds the size and ABI alignment in bytes of each of the kernel's
//! parameters as the host laid it out; the device pass refuses a kernel whose parameters it
//! lays out otherwise (format 2 had no `params`). An item (the kernel's, or an ADT's in `args`)
//! names its crate by name and source fingerprint (`crate_source`, see
//! `rustc_middle::ty::offload_kernel::crate_source`), and `definition` is the kernel's
//! definition fingerprint (format 3 had neither). A reader refuses another `magic`,
//! `format_version` or `rustc_commit`.
//!
//! What the kernels reach is made part of the image by `crate::offload_image`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rustc_data_structures::fx::FxHashSet;
use rustc_errors::DiagCtxtHandle;
use rustc_hir::def::DefKind;
use rustc_hir::def_id::{DefId, LOCAL_CRATE};
use rustc_hir::{CRATE_HIR_ID, HirId};
use rustc_macros::Diagnostic;
use rustc_middle::middle::codegen_fn_attrs::CodegenFnAttrFlags;
use rustc_middle::mir::mono::MonoItem;
use rustc_middle::mir::{self, TerminatorKind};
use rustc_middle::query::LocalCrate;
use rustc_middle::ty::offload_kernel::{
    ItemPath, KernelArg, KernelIdentity, KernelTy, OffloadLaunchNotAKernel, PathComponent,
    Unsupported, args_to_ty, kernel_definition,
};
use rustc_middle::ty::{self, Instance, InstanceKind, Ty, TyCtxt};
use rustc_middle::util::Providers;
use rustc_session::config::{CrateType, Offload};
use rustc_session::declare_lint;
use rustc_span::{Span, sym};
use rustc_target::spec::{Arch, BinaryFormat, Os};
use serde_json::{Value, json};

use crate::collector::MonoItemCollectionStrategy;
use crate::errors;

/// How a manifest names a launched kernel instance.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum LaunchKey {
    /// A kernel defined once for both targets, by its target-independent identity.
    Identity(KernelIdentity),
    /// A kernel in the 1.95 style, declared in an `extern` block on the host and defined
    /// `#[no_mangle]` for the GPU: by its link name, the one thing both sides share.
    LinkName(String),
}

impl LaunchKey {
    fn of<'tcx>(tcx: TyCtxt<'tcx>, kernel: Instance<'tcx>) -> Result<LaunchKey, Unsupported> {
        if tcx.is_foreign_item(kernel.def_id()) {
            Ok(LaunchKey::LinkName(tcx.symbol_name(kernel).name.to_string()))
        } else {
            KernelIdentity::of(tcx, kernel).map(LaunchKey::Identity)
        }
    }

    /// The `kernel` field of the manifest entry.
    fn text(&self) -> String {
        match self {
            LaunchKey::Identity(identity) => identity.to_string(),
            LaunchKey::LinkName(name) => format!("extern {name}"),
        }
    }
}

/// First field of every manifest.
pub(crate) const MAGIC: &str = "rustc-offload-manifest";
/// Version of the format described in the module documentation.
pub(crate) const FORMAT_VERSION: u64 = 4;

/// The identity of this compiler build, as manifests record it (`rustc_commit`):
/// `<upstream commit>+fork.<fingerprint>`. The commit is bootstrap's (`CFG_VER_HASH`); the
/// fingerprint, of the fork's patches and new compiler files, is what the fork's build harness
/// passes (`OFFLOAD_FORK_SOURCE_HASH`, see `src/tools/offload-x`). Builds of the fork from
/// different sources thus refuse each other's manifests, not only builds of another upstream.
pub(crate) fn compiler_commit() -> String {
    let commit = option_env!("CFG_VER_HASH").unwrap_or("unknown");
    let fork = option_env!("OFFLOAD_FORK_SOURCE_HASH").unwrap_or("unknown");
    format!("{commit}+fork.{fork}")
}

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

/// Whether the argument tuple `passed` of an `offload` launch fits the parameters of the launched
/// kernel (`kernel` with `kernel_args`); reports a mismatch at `span`, a slice parameter whose
/// elements hold addresses ([`address_holder`]: the device would read host addresses), a pointer
/// or reference parameter to interior-mutable data that holds addresses (the device's writes come
/// back), or else
/// the lint [`OFFLOAD_SHARED_FOR_MUTABLE`] (at the level of `lint_root`) for each shared pointer
/// passed for a mutable one. The host maps each argument by the kernel's parameter type, so a
/// tuple of other types would hand the device other bytes than the kernel reads. What rustc 1.95
/// accepts where the ABI agrees is accepted too (see [`ArgFit`]).
fn launch_args_match<'tcx>(
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
    if fits.contains(&ArgFit::Mismatch) {
        tcx.dcx().emit_err(errors::OffloadLaunchArgsMismatch {
            span,
            kernel: tcx.def_path_str_with_args(kernel, kernel_args),
            passed: passed.to_string(),
            params: Ty::new_tup(tcx, sig.inputs()).to_string(),
        });
        return false;
    }
    let mut fine = true;
    for (index, param) in sig.inputs().iter().enumerate() {
        let element = match *param.kind() {
            ty::RawPtr(pointee, _) | ty::Ref(_, pointee, _) => match *pointee.kind() {
                ty::Slice(element) => element,
                _ => {
                    // Interior-mutable data behind a pointer comes back from the device as
                    // bytes (`MappingFlags::from_ty`): addresses in it would be the device's.
                    if !pointee.is_freeze(tcx, typing_env)
                        && let Some(holder) = address_holder(tcx, typing_env, pointee, 0)
                    {
                        tcx.dcx().emit_err(OffloadLaunchSharedAddresses {
                            span,
                            kernel: tcx.def_path_str_with_args(kernel, kernel_args),
                            index: index + 1,
                            param: param.to_string(),
                            holder: holder.to_string(),
                        });
                        fine = false;
                    }
                    continue;
                }
            },
            _ => continue,
        };
        if let Some(holder) = address_holder(tcx, typing_env, element, 0) {
            tcx.dcx().emit_err(OffloadLaunchSliceOfAddresses {
                span,
                kernel: tcx.def_path_str_with_args(kernel, kernel_args),
                index: index + 1,
                param: param.to_string(),
                element: element.to_string(),
                holder: holder.to_string(),
            });
            fine = false;
        }
    }
    if !fine {
        return false;
    }
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
                    kernel: tcx.def_path_str_with_args(kernel, kernel_args),
                    passed: passed.to_string(),
                    param: param.to_string(),
                },
            );
        }
    }
    true
}

/// The part of `ty` (`ty` itself, a field, an element) that holds an address: a reference, a raw
/// or function pointer, a trait object, or anything else that is not plain data (a closure, a
/// foreign type). None for data made of numbers, `bool`, `char` and function items alone. `depth` counts the
/// types entered: past 64 (types nested that deep) the type itself is named.
fn address_holder<'tcx>(
    tcx: TyCtxt<'tcx>,
    typing_env: ty::TypingEnv<'tcx>,
    ty: Ty<'tcx>,
    depth: usize,
) -> Option<Ty<'tcx>> {
    if depth > 64 {
        return Some(ty);
    }
    let inner = |ty| address_holder(tcx, typing_env, ty, depth + 1);
    match *ty.kind() {
        ty::Bool
        | ty::Char
        | ty::Int(_)
        | ty::Uint(_)
        | ty::Float(_)
        | ty::Str
        | ty::Never
        | ty::FnDef(..) => None,
        ty::Array(element, _) | ty::Slice(element) | ty::Pat(element, _) => inner(element),
        ty::Tuple(fields) => fields.iter().find_map(inner),
        ty::Adt(def, args) => def.all_fields().find_map(|field| {
            inner(tcx.normalize_erasing_regions(typing_env, field.ty(tcx, args)))
        }),
        _ => Some(ty),
    }
}

/// A launch of a kernel with a slice parameter whose elements hold addresses
/// ([`address_holder`]). Declared here rather than in `errors` so that the patch that brings this
/// file builds on its own.
#[derive(Diagnostic)]
#[diag(
    "the kernel `{$kernel}` takes a slice of `{$element}` as parameter {$index} (`{$param}`), \
     which holds host addresses (`{$holder}`)"
)]
#[note(
    "an offload launch copies the slice's elements to the device as bytes; the addresses in \
     them would point into the host's memory, which a GPU cannot read"
)]
#[help("pass the data that the addresses point to as slices or arrays of its own")]
struct OffloadLaunchSliceOfAddresses {
    #[primary_span]
    span: Span,
    kernel: String,
    index: usize,
    param: String,
    element: String,
    holder: String,
}

/// A launch of a kernel with a pointer or reference parameter to interior-mutable data that
/// holds addresses ([`address_holder`]), such as `&AtomicPtr<T>` or `&Cell<&T>`.
#[derive(Diagnostic)]
#[diag(
    "the kernel `{$kernel}` takes interior-mutable data that holds host addresses (`{$holder}`) \
     as parameter {$index} (`{$param}`)"
)]
#[note(
    "an offload launch copies interior-mutable data to the device and back as bytes: the \
     device would read host addresses, and the host would get the device's addresses back"
)]
#[help(
    "pass the data that the addresses point to as slices or arrays of its own, and indices \
     into them instead of addresses"
)]
struct OffloadLaunchSharedAddresses {
    #[primary_span]
    span: Span,
    kernel: String,
    index: usize,
    param: String,
    holder: String,
}

declare_lint! {
    /// The `offload_shared_for_mutable` lint detects an offload launch that passes a shared
    /// pointer or reference (`*const T`, `&T`) where the kernel takes a mutable one (`*mut T`,
    /// `&mut T`). It is reported by the offload host metadata pass
    /// (`-Zoffload=HostMetadata=<manifest>`).
    ///
    /// ### Example
    ///
    /// ```rust,ignore (needs the offload host metadata pass)
    /// #[rustc_offload_kernel]
    /// fn fill(x: *mut [f32; 64]) { /* ... */ }
    ///
    /// let x = [0.0f32; 64];
    /// core::intrinsics::offload::<_, _, ()>(fill, [1, 1, 1], [64, 1, 1], (&raw const x,));
    /// ```
    ///
    /// ### Explanation
    ///
    /// The runtime maps an argument by the kernel's parameter type: for a mutable one it copies
    /// what the kernel wrote back into the memory that the launch handed over as read-only.
    /// Rustc 1.95 accepted such launches (the two have one ABI), so this is a lint, not an
    /// error. It is reported inside `core::offload::offload!` too (an external macro): the
    /// arguments it names are the user's.
    pub OFFLOAD_SHARED_FOR_MUTABLE,
    Warn,
    "an offload launch passes a shared pointer where the kernel takes a mutable one",
    report_in_external_macro
}

/// How the type of a launch argument stands for the kernel's parameter type.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ArgFit {
    /// The same type.
    Exact,
    /// As rustc 1.95 took it: both are raw pointers or references (one ABI: a thin pointer) to
    /// the same sized pointee, so the runtime maps the same bytes; a `*mut T` or `&mut T` may
    /// stand for a `*const T` or `&T`. The same for pointers to one slice type (one ABI: data
    /// and length).
    Pointer,
    /// A `*const T` or `&T` for a `*mut T` or `&mut T`: accepted as rustc 1.95 did, with a
    /// warning, since the kernel's writes are copied back into memory the launch handed over
    /// as read-only.
    SharedForMut,
    /// Anything else. Pointers to unsized data other than slices are wide in other ways, so
    /// they must match exactly.
    Mismatch,
}

impl ArgFit {
    fn of<'tcx>(tcx: TyCtxt<'tcx>, passed: Ty<'tcx>, param: Ty<'tcx>) -> ArgFit {
        if passed == param {
            return ArgFit::Exact;
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
        // A slice's wide pointer: the same two values (data and length) whatever its
        // mutability.
        let sized_or_slice = passed_pointee.is_sized(tcx, typing_env)
            || passed_pointee.is_slice()
            || passed_pointee.is_str();
        if passed_pointee != param_pointee || !sized_or_slice {
            ArgFit::Mismatch
        } else if param_mut.is_mut() && !passed_mut.is_mut() {
            ArgFit::SharedForMut
        } else {
            ArgFit::Pointer
        }
    }
}

/// Checks that the kernel `def_id` can be launched by the offload runtime, reporting each way it
/// cannot at its definition: a kernel returns `()` (results go through its pointer arguments),
/// and is neither `async` (it would only build a future), nor `#[track_caller]` (the caller
/// location is a hidden argument that the host never passes), nor C-variadic. Returns whether
/// the signature is fine.
pub(crate) fn check_kernel_signature(tcx: TyCtxt<'_>, def_id: DefId) -> bool {
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

fn path_json(path: &ItemPath) -> Value {
    let components: Vec<Value> =
        path.components.iter().map(|c| json!([c.kind, c.name, c.disambiguator])).collect();
    json!({ "crate": path.krate, "crate_source": path.crate_source, "path": components })
}

fn ty_json(ty: &KernelTy) -> Value {
    match ty {
        KernelTy::Bool => json!(["bool"]),
        KernelTy::Char => json!(["char"]),
        KernelTy::Str => json!(["str"]),
        KernelTy::Never => json!(["never"]),
        KernelTy::Number(n) => json!(["num", n]),
        KernelTy::Adt(path, args) => json!(["adt", path_json(path), args_json(args)]),
        KernelTy::Ref { mutable, ty } => json!(["ref", mutable, ty_json(ty)]),
        KernelTy::Ptr { mutable, ty } => json!(["ptr", mutable, ty_json(ty)]),
        KernelTy::Array(ty, len) => json!(["array", ty_json(ty), len]),
        KernelTy::Slice(ty) => json!(["slice", ty_json(ty)]),
        KernelTy::Tuple(tys) => json!(["tuple", tys.iter().map(ty_json).collect::<Vec<_>>()]),
    }
}

fn args_json(args: &[KernelArg]) -> Value {
    Value::Array(
        args.iter()
            .map(|a| match a {
                KernelArg::Type(t) => ty_json(t),
                KernelArg::Lifetime => json!(["lifetime"]),
            })
            .collect(),
    )
}

fn path_from(v: &Value) -> Option<ItemPath> {
    let krate = v.get("crate")?.as_str()?.to_string();
    let crate_source = v.get("crate_source")?.as_str()?.to_string();
    let components = v
        .get("path")?
        .as_array()?
        .iter()
        .map(|c| {
            let c = c.as_array()?;
            Some(PathComponent {
                kind: c.first()?.as_str()?.to_string(),
                name: match c.get(1)? {
                    Value::Null => None,
                    name => Some(name.as_str()?.to_string()),
                },
                disambiguator: u32::try_from(c.get(2)?.as_u64()?).ok()?,
            })
        })
        .collect::<Option<_>>()?;
    Some(ItemPath { krate, crate_source, components })
}

fn ty_from(v: &Value) -> Option<KernelTy> {
    let v = v.as_array()?;
    let boxed = |i: usize| ty_from(v.get(i)?).map(Box::new);
    Some(match v.first()?.as_str()? {
        "bool" => KernelTy::Bool,
        "char" => KernelTy::Char,
        "str" => KernelTy::Str,
        "never" => KernelTy::Never,
        "num" => KernelTy::Number(v.get(1)?.as_str()?.to_string()),
        "adt" => KernelTy::Adt(path_from(v.get(1)?)?, args_from(v.get(2)?)?),
        "ref" => KernelTy::Ref { mutable: v.get(1)?.as_bool()?, ty: boxed(2)? },
        "ptr" => KernelTy::Ptr { mutable: v.get(1)?.as_bool()?, ty: boxed(2)? },
        "array" => KernelTy::Array(boxed(1)?, v.get(2)?.as_u64()?),
        "slice" => KernelTy::Slice(boxed(1)?),
        "tuple" => {
            KernelTy::Tuple(v.get(1)?.as_array()?.iter().map(ty_from).collect::<Option<_>>()?)
        }
        _ => return None,
    })
}

fn args_from(v: &Value) -> Option<Vec<KernelArg>> {
    v.as_array()?
        .iter()
        .map(|a| {
            if a.as_array()?.first()?.as_str()? == "lifetime" {
                Some(KernelArg::Lifetime)
            } else {
                ty_from(a).map(KernelArg::Type)
            }
        })
        .collect()
}

pub(crate) fn provide(providers: &mut Providers) {
    providers.queries.offload_launches = local_offload_launches;
    providers.queries.offload_host_metadata_pass =
        |tcx, LocalCrate| tcx.sess.opts.offload_host_metadata_manifest().is_some();
}

/// The `offload_launches` query for the local crate: empty outside the host metadata pass.
/// In that pass, sorted by kernel identity (by link name for declared kernels) and without
/// duplicates: eager mono item collection (every non-generic function of the crate is a root,
/// including the small ones that are cross-crate inlinable, which are codegened only by the
/// crates that call them and never placed in a codegen unit of this one) and a scan of every
/// collected function's MIR. A launch that cannot be recorded is reported here, at its span,
/// and left out.
fn local_offload_launches(tcx: TyCtxt<'_>, _: LocalCrate) -> &[Instance<'_>] {
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

/// The start of the host metadata pass, before the crate metadata is encoded: refuses the pass
/// on a GPU target or with another `-Zoffload` value (a fatal error), then collects this
/// crate's launches, so that a launch that cannot be recorded stops the compilation before
/// an rmeta without it is written.
pub fn start_host_metadata_pass(tcx: TyCtxt<'_>, path: &str) {
    if tcx.sess.target.is_like_gpu
        || tcx
            .sess
            .opts
            .unstable_opts
            .offload
            .iter()
            .any(|o| !matches!(o, Offload::HostMetadata(_)))
    {
        tcx.dcx().emit_fatal(errors::OffloadHostMetadataMisplaced {
            path: path.to_string(),
            target: tcx.sess.target.llvm_target.to_string(),
        });
    }
    for def_id in tcx.hir_crate_items(()).definitions() {
        if is_kernel(tcx, def_id.to_def_id()) {
            check_kernel_signature(tcx, def_id.to_def_id());
        }
    }
    tcx.ensure_done().offload_launches(LOCAL_CRATE);
}

/// The host metadata pass: writes the manifest of this crate's graph to `path`, the union of
/// `offload_launches` over the local crate and every crate it depends on. Errors are emitted;
/// the caller stops the compilation afterwards. [`start_host_metadata_pass`] runs first.
pub fn write_host_manifest(tcx: TyCtxt<'_>, path: &str) {
    let Some(path) = manifest_output_path(tcx, path) else { return };
    let path = path.as_str();
    let crate_name = tcx.crate_name(LOCAL_CRATE).to_string();
    // Identity -> (symbol, names of the crates whose code launches the kernel, the layout of
    // each of its parameters on the host, the definition fingerprint).
    let mut kernels: BTreeMap<LaunchKey, (String, BTreeSet<String>, Vec<(u64, u64)>, String)> =
        BTreeMap::new();
    for cnum in std::iter::once(LOCAL_CRATE).chain(tcx.crates(()).iter().copied()) {
        let launcher = tcx.crate_name(cnum).to_string();
        for &kernel in tcx.offload_launches(cnum) {
            let key = match LaunchKey::of(tcx, kernel) {
                Ok(key) => key,
                Err(unsupported) => {
                    // The launching crate's own pass accepted it; not reachable for crates
                    // built by this compiler.
                    tcx.dcx().emit_err(errors::OffloadKernelUnsupported {
                        span: tcx.def_span(kernel.def_id()),
                        kernel: kernel.to_string(),
                        what: unsupported.0,
                    });
                    continue;
                }
            };
            let (_, launchers, _, _) = kernels.entry(key).or_insert_with(|| {
                // The symbol the device pass will give the kernel: its own name for
                // `#[no_mangle]`, `#[export_name]` and declared kernels, otherwise the
                // identity's (the host's copy of the kernel keeps the usual mangling).
                let symbol = tcx.offload_kernel_symbol(kernel).name.to_string();
                let layouts = param_layouts(tcx, kernel)
                    .map(|params| {
                        params.into_iter().map(|(_, size, align)| (size, align)).collect()
                    })
                    .unwrap_or_default();
                (symbol, BTreeSet::new(), layouts, kernel_definition(tcx, kernel.def_id()))
            });
            launchers.insert(launcher.clone());
        }
    }
    let mut graph: Vec<String> = std::iter::once(LOCAL_CRATE)
        .chain(tcx.crates(()).iter().copied())
        .map(|c| tcx.crate_name(c).to_string())
        .collect();
    graph.sort();
    graph.dedup();
    // Two crates of one name with byte-identical root files have one identity: their kernels
    // (and the ADTs in kernel arguments) cannot be told apart.
    for key in kernels.keys() {
        if let LaunchKey::Identity(identity) = key
            && let Some(path) =
                identity.item_paths().into_iter().find(|p| p.source_crates(tcx).len() > 1)
        {
            tcx.dcx().emit_err(errors::OffloadCrateSourceAmbiguous {
                kernel: key.text(),
                krate: path.krate.clone(),
            });
        }
    }
    // Two instances whose identity text coincides (`mod m { fn k }` and `fn m() { fn k }`)
    // would share one symbol, and the device image would hold only one of them.
    let mut by_symbol: BTreeMap<&str, &LaunchKey> = BTreeMap::new();
    for (key, (symbol, _, _, _)) in &kernels {
        if let Some(other) = by_symbol.insert(symbol, key) {
            tcx.dcx().emit_err(errors::OffloadKernelSymbolClash {
                first: other.text(),
                second: key.text(),
                symbol: symbol.clone(),
            });
        }
    }
    // Under cargo every crate of the graph runs this pass; an empty manifest is worth a
    // warning only where it is surely a mistake: a crate that defines kernels, or one that
    // builds a final artifact. (The device pass refuses an empty manifest in any case.)
    let defines_kernels =
        tcx.hir_crate_items(()).definitions().any(|def_id| is_kernel(tcx, def_id.to_def_id()));
    let builds_artifact =
        tcx.crate_types().iter().any(|t| !matches!(t, CrateType::Rlib | CrateType::ProcMacro));
    if kernels.is_empty() && (defines_kernels || builds_artifact) {
        tcx.dcx().emit_warn(errors::OffloadNoLaunches { path: path.to_string() });
    }
    report_crates_without_host_metadata(tcx, path);
    let mut kernels: Vec<(String, LaunchKey, (String, BTreeSet<String>, Vec<(u64, u64)>, String))> =
        kernels.into_iter().map(|(key, record)| (key.text(), key, record)).collect();
    kernels.sort();
    let kernels: Vec<Value> = kernels
        .into_iter()
        .map(|(text, key, (symbol, launched_by, layouts, definition))| match key {
            LaunchKey::Identity(identity) => json!({
                "kernel": text,
                "item": path_json(&identity.item),
                "args": args_json(&identity.args),
                "symbol": symbol,
                "definition": definition,
                "params": layouts_json(&layouts),
                "launched_by": launched_by,
            }),
            LaunchKey::LinkName(name) => json!({
                "kernel": text,
                "link_name": name,
                "symbol": symbol,
                "params": layouts_json(&layouts),
                "launched_by": launched_by,
            }),
        })
        .collect();
    let manifest = json!({
        "magic": MAGIC,
        "format_version": FORMAT_VERSION,
        "rustc_commit": compiler_commit(),
        "crate": crate_name,
        "crate_graph": graph,
        "kernels": kernels,
    });
    // A launch that could not be recorded, or code with an error that codegen would report
    // (a delayed bug now), leaves no partial manifest behind.
    if tcx.dcx().has_errors_or_delayed_bugs().is_some() {
        return;
    }
    let mut text = serde_json::to_string_pretty(&manifest).expect("a JSON value always serializes");
    text.push('\n');
    // Written beside the manifest and renamed over it, so that a reader never sees half a file.
    let tmp = format!("{path}.tmp{}", std::process::id());
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&tmp);
        tcx.dcx().emit_err(errors::OffloadManifestWrite {
            path: path.to_string(),
            error: error.to_string(),
        });
    }
}

/// Warns about the crates of this graph that did not go through the host metadata pass
/// (`offload_host_metadata_pass`): the kernels their code launches, if any, are missing from
/// the manifest at `path`, and the host would launch kernels that the image lacks. Left out: the
/// crates of the sysroot (the standard library, which launches nothing and which no user
/// rebuilds for the pass) and proc-macro crates (they run in the compiler, never on a device,
/// and cargo does not give them `RUSTFLAGS` when it builds for a `--target`).
fn report_crates_without_host_metadata(tcx: TyCtxt<'_>, path: &str) {
    // The crate locator canonicalizes the paths of the crates it loads.
    let sysroot_lib = std::fs::canonicalize(&tcx.sess.target_tlib_path.dir)
        .unwrap_or_else(|_| tcx.sess.target_tlib_path.dir.clone());
    let mut missing: Vec<String> = tcx
        .crates(())
        .iter()
        .copied()
        .filter(|&cnum| {
            !tcx.offload_host_metadata_pass(cnum)
                && tcx.crate_dep_kind(cnum) != rustc_session::cstore::CrateDepKind::MacrosOnly
                && !tcx.used_crate_source(cnum).paths().any(|p| p.starts_with(&sysroot_lib))
        })
        .map(|cnum| format!("`{}`", tcx.crate_name(cnum)))
        .collect();
    if missing.is_empty() {
        return;
    }
    missing.sort();
    missing.dedup();
    tcx.dcx().emit_warn(errors::OffloadCratesWithoutHostMetadata {
        path: path.to_string(),
        count: missing.len(),
        crates: missing.join(", "),
    });
}

/// Where the manifest of `-Zoffload=HostMetadata=<path>` may be written: `path` itself, or the
/// regular file a symlink at `path` points to. Refused, with an error: an existing file that is
/// not a regular file (a directory, a device, a FIFO), the crate's own source file, names of
/// compiler inputs and outputs (`.rs`, `.rlib`, `.rmeta`, `.o`, `.so`, `.a`), and a non-empty
/// file that is not an offload manifest, all of which the user would lose. An offload manifest
/// is compiler output and is replaced, whichever crate wrote it: under cargo, one flag in
/// `RUSTFLAGS` names the same path for every crate of the graph, and each crate (siblings
/// included) writes the manifest of its own graph there, the root last. The root's is the
/// union, because every crate's launches travel in its crate metadata. Two roots sharing a path
/// leave the manifest of the last one, which the other's device pass refuses as another
/// crate's.
fn manifest_output_path(tcx: TyCtxt<'_>, path: &str) -> Option<String> {
    let refuse = |why: &str| {
        tcx.dcx().emit_err(errors::OffloadManifestWrite {
            path: path.to_string(),
            error: why.to_string(),
        });
        None
    };
    let resolved = match std::fs::canonicalize(path) {
        Ok(resolved) => {
            if !std::fs::metadata(&resolved).is_ok_and(|m| m.is_file()) {
                return refuse("it exists and is not a regular file");
            }
            resolved
        }
        Err(_) => Path::new(path).to_path_buf(),
    };
    let is_compiler_file = resolved
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["rs", "rlib", "rmeta", "o", "so", "a"].contains(&e));
    if is_compiler_file {
        return refuse(
            "the name is that of a compiler input or output; name the manifest `*.json`",
        );
    }
    if let rustc_session::config::Input::File(input) = &tcx.sess.io.input
        && std::fs::canonicalize(input).ok().as_deref() == Some(resolved.as_path())
    {
        return refuse("it is the crate's source file");
    }
    if let Ok(existing) = std::fs::read(&resolved)
        && !existing.iter().all(u8::is_ascii_whitespace)
    {
        let existing: Option<Value> = serde_json::from_slice(&existing).ok();
        if existing.as_ref().and_then(|v| v.get("magic")).and_then(Value::as_str) != Some(MAGIC) {
            tcx.dcx().emit_err(errors::OffloadManifestPathTaken { path: path.to_string() });
            return None;
        }
    }
    Some(resolved.to_string_lossy().into_owned())
}

/// One kernel instance read from a manifest.
struct ReadKernel {
    text: String,
    key: LaunchKey,
    symbol: String,
    /// Size and ABI alignment in bytes of each parameter, as the host laid it out.
    params: Vec<(u64, u64)>,
    /// The definition fingerprint of a kernel named by identity (None for a declared kernel).
    definition: Option<String>,
}

/// A manifest as the device pass reads it.
struct ReadManifest {
    krate: String,
    graph: Vec<String>,
    kernels: Vec<ReadKernel>,
}

fn corrupt(dcx: DiagCtxtHandle<'_>, path: &str, what: &str) -> ! {
    dcx.emit_fatal(errors::OffloadManifestCorrupt {
        path: path.to_string(),
        what: what.to_string(),
    })
}

fn read_manifest(tcx: TyCtxt<'_>, path: &str) -> ReadManifest {
    let dcx = tcx.dcx();
    let bytes = match std::fs::read(Path::new(path)) {
        Ok(bytes) => bytes,
        Err(error) => dcx.emit_fatal(errors::OffloadManifestRead {
            path: path.to_string(),
            error: error.to_string(),
        }),
    };
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) if bytes.is_empty() => corrupt(dcx, path, &format!("the file is empty ({e})")),
        Err(e) => corrupt(dcx, path, &format!("it is not a complete manifest ({e})")),
    };
    if value.get("magic").and_then(Value::as_str) != Some(MAGIC) {
        corrupt(dcx, path, "its `magic` field is missing or not `rustc-offload-manifest`");
    }
    let version = value.get("format_version").and_then(Value::as_u64);
    let commit = value.get("rustc_commit").and_then(Value::as_str).unwrap_or("");
    if version != Some(FORMAT_VERSION) || commit != compiler_commit() {
        dcx.emit_fatal(errors::OffloadManifestVersion {
            path: path.to_string(),
            found: format!(
                "format {}, compiler {commit}",
                version.map_or("?".to_string(), |v| v.to_string())
            ),
            expected: format!("format {FORMAT_VERSION}, compiler {}", compiler_commit()),
        });
    }
    let Some(krate) = value.get("crate").and_then(Value::as_str) else {
        corrupt(dcx, path, "it names no crate")
    };
    let Some(graph) = value.get("crate_graph").and_then(Value::as_array) else {
        corrupt(dcx, path, "it has no crate graph")
    };
    let graph: Vec<String> = graph.iter().filter_map(|g| g.as_str().map(str::to_string)).collect();
    let Some(list) = value.get("kernels").and_then(Value::as_array) else {
        corrupt(dcx, path, "it has no kernel list")
    };
    let mut kernels = Vec::new();
    for k in list {
        let text = k.get("kernel").and_then(Value::as_str);
        let symbol = k.get("symbol").and_then(Value::as_str);
        let key = match k.get("link_name") {
            Some(name) => name.as_str().map(|name| LaunchKey::LinkName(name.to_string())),
            None => {
                let item = k.get("item").and_then(path_from);
                let args = k.get("args").and_then(args_from);
                item.zip(args)
                    .map(|(item, args)| LaunchKey::Identity(KernelIdentity { item, args }))
            }
        };
        let params = k.get("params").and_then(layouts_from);
        let definition = k.get("definition").and_then(Value::as_str).map(str::to_string);
        let (Some(text), Some(key), Some(symbol), Some(params)) = (text, key, symbol, params)
        else {
            corrupt(dcx, path, "a kernel entry is incomplete");
        };
        if matches!(key, LaunchKey::Identity(_)) && definition.is_none() {
            corrupt(dcx, path, "a kernel entry is incomplete");
        }
        kernels.push(ReadKernel {
            text: text.to_string(),
            key,
            symbol: symbol.to_string(),
            params,
            definition,
        });
    }
    ReadManifest { krate: krate.to_string(), graph, kernels }
}

/// Each parameter of `instance` with its size and ABI alignment in bytes, as this session's
/// target lays it out; `None` where a layout cannot be computed (codegen reports that).
fn param_layouts<'tcx>(
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
fn layouts_agree<'tcx>(
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

fn layouts_json(layouts: &[(u64, u64)]) -> Value {
    Value::Array(
        layouts.iter().map(|(size, align)| json!({ "size": size, "align": align })).collect(),
    )
}

fn layouts_from(v: &Value) -> Option<Vec<(u64, u64)>> {
    v.as_array()?
        .iter()
        .map(|p| Some((p.get("size")?.as_u64()?, p.get("align")?.as_u64()?)))
        .collect()
}

/// Whether `def_id` is a function marked `#[rustc_offload_kernel]`.
fn is_kernel(tcx: TyCtxt<'_>, def_id: DefId) -> bool {
    tcx.def_kind(def_id).is_fn_like()
        && tcx.codegen_fn_attrs(def_id).flags.contains(CodegenFnAttrFlags::OFFLOAD_KERNEL)
}

/// Whether the device pass can instantiate the manifest's kernel `def_id`: a kernel of another
/// crate needs the MIR that crate encodes when it is built with the same flag. Reports the
/// kernel otherwise.
fn kernel_mir_available(tcx: TyCtxt<'_>, path: &str, kernel: &ReadKernel, def_id: DefId) -> bool {
    if def_id.is_local() || tcx.is_mir_available(def_id) {
        return true;
    }
    tcx.dcx().emit_err(errors::OffloadKernelWithoutMir {
        path: path.to_string(),
        kernel: kernel.text.clone(),
        krate: tcx.crate_name(def_id.krate).to_string(),
    });
    false
}

/// Whether this compilation is a manifest-driven device pass (`-Zoffload=Device=<manifest>`)
/// that codegens something: the crate that builds the device image, whose codegen units hold
/// the manifest's kernels and what they reach. Every other crate of the manifest's graph has no
/// roots in that pass, so its codegen units are empty. Runs the mono item collection
/// (`collect_and_partition_mono_items`, which codegen needs anyway) in such a pass, and with it
/// the reading of the manifest (`device_roots`). Used by codegen (the image crate's rlib
/// objects) and by `rustc_interface` (when its metadata is encoded).
pub fn offload_device_builds_image(tcx: TyCtxt<'_>) -> bool {
    tcx.sess.opts.offload_device_manifest().is_some()
        && tcx
            .collect_and_partition_mono_items(())
            .codegen_units
            .iter()
            .any(|cgu| !cgu.items().is_empty())
}

/// Whether the device pass can build an image for this session's target: a GPU target, or a
/// CPU that LLVM's offload runtime runs as its host device (the "host" plugin loads an ELF
/// shared object of the host's own architecture and calls its kernels through libffi, so
/// that offload programs can be tested on machines without a GPU).
pub(crate) fn is_device_target(tcx: TyCtxt<'_>) -> bool {
    let target = &tcx.sess.target;
    target.is_like_gpu
        || (matches!(target.arch, Arch::X86_64 | Arch::AArch64)
            && target.os == Os::Linux
            && target.binary_format == BinaryFormat::Elf)
}

/// The function of the CPU device's `core` (`--cfg offload_device`) that runs every work item of
/// a launch's grid, by its symbol: `core::offload`'s `__rust_offload_cpu_launch`.
pub(crate) const CPU_DEVICE_GRID_RUNNER: &str = "__rust_offload_cpu_launch";

/// The mono item roots of the device pass with `-Zoffload=Device=<path>`: the manifest's kernel
/// instances if this crate is the manifest's crate, none if it is another crate of its graph.
pub(crate) fn device_roots<'tcx>(tcx: TyCtxt<'tcx>, path: &str) -> Vec<MonoItem<'tcx>> {
    if !is_device_target(tcx) {
        tcx.dcx().emit_fatal(errors::OffloadDeviceUnsupportedTarget {
            path: path.to_string(),
            target: tcx.sess.target.llvm_target.to_string(),
        });
    }
    let manifest = read_manifest(tcx, path);
    let this_crate = tcx.crate_name(LOCAL_CRATE).to_string();
    if this_crate != manifest.krate {
        if manifest.graph.contains(&this_crate) {
            // A crate that builds only final artifacts is no crate's dependency, so the crate
            // that builds the image is not part of this build: it would end with no image (and
            // leave an older `host.out` in place). A library that also builds an rlib or a
            // dylib (`crate-type = ["rlib", "cdylib"]`) can be a dependency.
            let types = tcx.crate_types();
            if !types.is_empty()
                && !types.iter().any(|t| matches!(t, CrateType::Rlib | CrateType::Dylib))
            {
                tcx.dcx().emit_fatal(errors::OffloadManifestRootNotBuilt {
                    path: path.to_string(),
                    manifest_crate: manifest.krate,
                    this_crate,
                    crate_type: types
                        .iter()
                        .map(|t| format!("`{t}`"))
                        .collect::<Vec<_>>()
                        .join(" and "),
                });
            }
            // A dependency of the crate that builds the device image: the image instantiates
            // what it needs of this crate itself.
            return Vec::new();
        }
        tcx.dcx().emit_fatal(errors::OffloadManifestOtherCrate {
            path: path.to_string(),
            manifest_crate: manifest.krate,
            this_crate,
        });
    }
    if manifest.kernels.is_empty() {
        tcx.dcx().emit_fatal(errors::OffloadManifestEmpty { path: path.to_string() });
    }
    let mut roots = Vec::new();
    for kernel in &manifest.kernels {
        let stale = |why: &str| {
            tcx.dcx().emit_err(errors::OffloadManifestStale {
                path: path.to_string(),
                kernel: kernel.text.clone(),
                why: why.to_string(),
            });
        };
        let identity = match &kernel.key {
            LaunchKey::Identity(identity) => identity,
            LaunchKey::LinkName(name) => {
                // A 1.95-style kernel: the definition of the launched name.
                let Some(def_id) = crate::offload_image::symbol_definition(tcx, name) else {
                    tcx.dcx().emit_err(errors::OffloadDeclaredKernelUndefined {
                        path: path.to_string(),
                        kernel: name.clone(),
                    });
                    continue;
                };
                if !is_kernel(tcx, def_id) {
                    tcx.dcx().emit_err(errors::OffloadDeclaredKernelNotAKernel {
                        span: tcx.def_span(def_id),
                        kernel: name.clone(),
                        definition: tcx.def_path_str(def_id),
                    });
                    continue;
                }
                if kernel_mir_available(tcx, path, kernel, def_id)
                    && check_kernel_signature(tcx, def_id)
                    && layouts_agree(tcx, path, kernel, Instance::mono(tcx, def_id))
                {
                    roots.push(MonoItem::Fn(Instance::mono(tcx, def_id)));
                }
                continue;
            }
        };
        if let Some(path) =
            identity.item_paths().into_iter().find(|p| p.source_crates(tcx).len() > 1)
        {
            tcx.dcx().emit_err(errors::OffloadCrateSourceAmbiguous {
                kernel: kernel.text.clone(),
                krate: path.krate.clone(),
            });
            continue;
        }
        let Some(def_id) = identity.item.resolve(tcx) else {
            if identity.item.source_crates(tcx).is_empty()
                && !identity.item.crates_named(tcx).is_empty()
            {
                stale(&format!(
                    "no crate `{}` of this crate graph has the root source that the host metadata \
                     pass saw (it changed, or the graph holds another version of the crate)",
                    identity.item.krate
                ));
            } else {
                stale("no such item in this crate graph");
            }
            continue;
        };
        if !is_kernel(tcx, def_id) {
            stale("the item is no longer a `#[rustc_offload_kernel]` function");
            continue;
        }
        if kernel.definition.as_deref() != Some(kernel_definition(tcx, def_id).as_str()) {
            stale(
                "its definition is not the one the host metadata pass recorded (its source file \
                 changed, or its path now names another item)",
            );
            continue;
        }
        if !kernel_mir_available(tcx, path, kernel, def_id) || !check_kernel_signature(tcx, def_id)
        {
            continue;
        }
        let Some(args) = args_to_ty(tcx, &identity.args) else {
            stale(
                "a generic argument names a type that no longer exists or no longer has that shape",
            );
            continue;
        };
        if args.len() != tcx.generics_of(def_id).count() {
            stale("its number of generic arguments changed");
            continue;
        }
        let typing_env = ty::TypingEnv::fully_monomorphized();
        if !tcx.check_args_compatible(def_id, args) {
            stale("its generic arguments no longer fit the item");
            continue;
        }
        let Ok(Some(instance)) = Instance::try_resolve(tcx, typing_env, def_id, args) else {
            stale("its generic arguments no longer fit the item");
            continue;
        };
        if !MonoItem::Fn(instance).is_instantiable(tcx) {
            stale("its generic arguments no longer satisfy the item's bounds");
            continue;
        }
        if tcx.symbol_name(instance).name != kernel.symbol {
            stale("the symbol recorded by the host metadata pass differs from this pass's");
            continue;
        }
        if !layouts_agree(tcx, path, kernel, instance) {
            continue;
        }
        roots.push(MonoItem::Fn(instance));
    }
    tcx.dcx().abort_if_errors();
    // The offload runtime's CPU device calls a kernel once; the entry that the codegen gives
    // each kernel of a CPU device image runs the launch's grid through `core`'s runner, which
    // no kernel calls, so it is a root of its own (see `core::offload`).
    if !tcx.sess.target.is_like_gpu {
        let Some(runner) = crate::offload_image::symbol_definition(tcx, CPU_DEVICE_GRID_RUNNER)
        else {
            tcx.dcx().emit_fatal(errors::OffloadCpuDeviceCoreWithoutGridRunner {
                path: path.to_string(),
                runner: CPU_DEVICE_GRID_RUNNER,
                target: tcx.sess.target.llvm_target.to_string(),
            });
        };
        roots.push(MonoItem::Fn(Instance::mono(tcx, runner)));
    }
    // `global_asm!` of the image crate belongs to the image whatever the kernels reach, as in
    // any other crate's object code.
    for id in tcx.hir_crate_items(()).free_items() {
        if tcx.def_kind(id.owner_id) == DefKind::GlobalAsm {
            roots.push(MonoItem::GlobalAsm(id));
        }
    }
    roots
}

/// The device pass with a manifest: a kernel is an entry point of the device image, with the
/// GPU kernel calling convention, and cannot also be called (or taken as a pointer) by device
/// code. Reports every kernel that collected device code uses.
pub(crate) fn check_kernels_unused_by_device_code<'tcx>(
    tcx: TyCtxt<'tcx>,
    items: &[MonoItem<'tcx>],
    usage_map: &crate::collector::UsageMap<'tcx>,
) {
    for item in items {
        let MonoItem::Fn(instance) = *item else { continue };
        if !tcx
            .codegen_instance_attrs(instance.def)
            .flags
            .contains(CodegenFnAttrFlags::OFFLOAD_KERNEL)
        {
            continue;
        }
        if let Some(user) = usage_map.get_user_items(*item).first() {
            tcx.dcx().emit_err(errors::OffloadKernelUsedByDeviceCode {
                span: tcx.def_span(instance.def_id()),
                kernel: instance.to_string(),
                user: user.to_string(),
            });
        }
    }
}
