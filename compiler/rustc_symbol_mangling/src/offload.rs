//! Symbols of GPU offload kernels.
//!
//! The device pass defines a kernel and the host pass launches it: two compilations that may
//! see different `-C metadata` (cargo sets it per target), so a kernel's device symbol cannot
//! hash the `StableCrateId` that the usual manglings hash in. It is derived from the kernel
//! instance's target-independent identity (`rustc_middle::ty::offload_kernel`) instead. The
//! device pass's `symbol_name` takes it for the kernel ([`kernel_identity_symbol`]); the host
//! pass keeps the usual mangling for its own copy of the kernel and launches the device's
//! symbol, which it gets, like the manifest that records it, from the `offload_kernel_symbol`
//! query.

use rustc_data_structures::stable_hasher::StableHasher;
use rustc_hashes::Hash64;
use rustc_hir::def_id::LOCAL_CRATE;
use rustc_middle::middle::codegen_fn_attrs::{CodegenFnAttrFlags, CodegenFnAttrs};
use rustc_middle::ty::offload_kernel::{KernelIdentity, kernel_definition};
use rustc_middle::ty::{self, Instance, TyCtxt};

use crate::symbol_name_for_instance_in_crate;

/// The symbol of the kernel instance with this identity and this definition fingerprint of its
/// item (`rustc_middle::ty::offload_kernel::kernel_definition`):
/// `_offload_kernel_<item name>_<16 hex digits>`, the 64-bit `StableHasher` hash of the identity
/// text, the source fingerprint of each crate it names (the kernel's, then those of the ADTs in
/// its arguments, in pre-order) and the definition fingerprint. `StableHasher` is
/// platform-independent, so the host and the GPU target compute the same digits. An edit of the
/// kernel's file gives the kernel another symbol, so an offload image built from the older
/// source does not define what the host pass launches (the host pass checks). Only ASCII
/// letters, digits and `_`, which every GPU assembler accepts.
fn identity_symbol(identity: &KernelIdentity, definition: &str) -> String {
    let mut hasher = StableHasher::new();
    std::hash::Hash::hash(identity.to_string().as_str(), &mut hasher);
    for path in identity.item_paths() {
        std::hash::Hash::hash(path.crate_source.as_str(), &mut hasher);
    }
    std::hash::Hash::hash(definition, &mut hasher);
    let hash: Hash64 = hasher.finish();
    let name: String = identity
        .item
        .components
        .last()
        .and_then(|c| c.name.as_deref())
        .unwrap_or("kernel")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("_offload_kernel_{name}_{:016x}", hash.as_u64())
}

/// The identity symbol of `instance` if it is an instance of a `#[rustc_offload_kernel]` item
/// that keeps rustc's mangling (`attrs`, its codegen attributes, name no `#[no_mangle]` and no
/// `#[export_name]`) and has a target-independent identity; `None` otherwise, and the usual
/// symbol applies. The one rule for `symbol_name` in a device pass and for the
/// `offload_kernel_symbol` query. It never calls the `symbol_name` query, which calls it.
pub(crate) fn kernel_identity_symbol<'tcx>(
    tcx: TyCtxt<'tcx>,
    instance: Instance<'tcx>,
    attrs: &CodegenFnAttrs,
) -> Option<String> {
    if !attrs.flags.contains(CodegenFnAttrFlags::OFFLOAD_KERNEL)
        || attrs.flags.contains(CodegenFnAttrFlags::NO_MANGLE)
        || attrs.symbol_name.is_some()
        || !matches!(instance.def, ty::InstanceKind::Item(_))
    {
        return None;
    }
    let identity = KernelIdentity::of(tcx, instance).ok()?;
    Some(identity_symbol(&identity, &kernel_definition(tcx, instance.def_id())))
}

/// The provider of the `offload_kernel_symbol` query: the identity symbol of a
/// `#[rustc_offload_kernel]` item's instance that keeps rustc's mangling, and otherwise the
/// symbol the local crate gives the instance (`#[no_mangle]` and `#[export_name]` kernels,
/// kernels declared in an `extern` block).
pub(crate) fn offload_kernel_symbol_provider<'tcx>(
    tcx: TyCtxt<'tcx>,
    instance: Instance<'tcx>,
) -> ty::SymbolName<'tcx> {
    let attrs = tcx.codegen_instance_attrs(instance.def);
    let symbol = kernel_identity_symbol(tcx, instance, &attrs)
        .unwrap_or_else(|| symbol_name_for_instance_in_crate(tcx, instance, LOCAL_CRATE));
    ty::SymbolName::new(tcx, &symbol)
}
