//! A complete device image for the manifest-driven offload device pass.
//!
//! Nothing is linked into the device image, so the crate that builds it instantiates all that
//! the kernels reach: every function with MIR and every static, of any crate (the device pass
//! encodes the MIR of every function, see `rustc_metadata`), and, for a foreign item, the
//! definition under its symbol elsewhere in the crate graph (the panic handler behind core's
//! `panic_impl`, `#[no_mangle]` functions and statics behind `extern` declarations). What
//! cannot be defined is an error: a function whose crate carries no MIR for it, a weak lang
//! item that no crate defines.
//!
//! Under `-Zoffload=Device=<manifest>`, the collector asks [`instantiate_upstream_in_image`]
//! whether an item of another crate is instantiated here, and binds each foreign function
//! and static that device code reaches with [`bind_foreign_fn`] and [`bind_foreign_static`].

use rustc_hir::LangItem;
use rustc_hir::def::DefKind;
use rustc_hir::def_id::DefId;
use rustc_hir::weak_lang_items::WEAK_LANG_ITEMS;
use rustc_middle::middle::codegen_fn_attrs::CodegenFnAttrFlags;
use rustc_middle::middle::exported_symbols::ExportedSymbol;
use rustc_middle::ty::{Instance, InstanceKind, TyCtxt};

use crate::errors;

/// In the manifest-driven device pass, whether `def_id`, an item of another crate that device
/// code reaches (`instance` of it), is instantiated in the crate that builds the image. Nothing
/// is linked into the image, so the answer is yes for every function with MIR (`Device=`
/// implies `-Zcross-crate-inline-threshold=always`, and its crates encode the MIR of every
/// reachable function, `#[no_mangle]` ones included) and for every static (its crate encodes
/// the evaluated initializer). A function without MIR (its crate was not compiled with the
/// same flag, such as a prebuilt `core`) cannot be instantiated: reported as an error instead
/// of leaving the image with an undefined symbol.
pub(crate) fn instantiate_upstream_in_image<'tcx>(
    tcx: TyCtxt<'tcx>,
    instance: Instance<'tcx>,
    def_id: DefId,
) -> bool {
    match tcx.def_kind(def_id) {
        // A GPU has no thread-local storage.
        DefKind::Static { .. } => !tcx.is_thread_local_static(def_id),
        DefKind::Ctor(..) => true,
        _ if tcx.is_mir_available(def_id) => true,
        _ => {
            tcx.dcx().emit_err(errors::OffloadDeviceItemWithoutMir {
                path: tcx.sess.opts.offload_device_manifest().unwrap_or_default().to_string(),
                item: tcx.def_path_str_with_args(def_id, instance.args),
                krate: tcx.crate_name(def_id.krate).to_string(),
            });
            false
        }
    }
}

/// The definition in this crate graph of the foreign item `foreign`, if the manifest-driven
/// device pass is running and some crate defines its symbol: a weak lang item such as the
/// panic handler (`rust_begin_unwind`), or a function or static that a crate declares in an
/// `extern` block and another defines `#[no_mangle]`. Nothing is linked into the device image,
/// so such a definition must be instantiated in it. Symbols that no crate defines (device
/// library functions, LLVM intrinsics named by `link_name`) stay declarations.
pub(crate) fn foreign_definition(tcx: TyCtxt<'_>, foreign: DefId) -> Option<DefId> {
    if tcx.sess.opts.offload_device_manifest().is_none() || !tcx.is_foreign_item(foreign) {
        return None;
    }
    // An `extern_weak` or other `#[linkage]` import keeps its own linkage in codegen, which a
    // definition in the same module cannot take: it stays a declaration.
    if tcx.codegen_fn_attrs(foreign).import_linkage.is_some() {
        return None;
    }
    let symbol = tcx.symbol_name(Instance::mono(tcx, foreign)).name;
    if symbol.starts_with("llvm.") {
        return None;
    }
    symbol_definition(tcx, symbol)
}

/// The function or static of this crate graph that is defined under the fixed symbol `symbol`
/// (`#[no_mangle]`, `#[export_name]`, weak lang items), if any: among the local crate's own
/// items and each dependency's exported symbols. Crates marked `no_builtins`
/// (`compiler_builtins` among them) are left out: their functions (`memcpy`, ...) must not be
/// compiled where LLVM may turn their bodies into calls of themselves. Two definitions are an
/// error, as they would be for the linker.
pub(crate) fn symbol_definition(tcx: TyCtxt<'_>, symbol: &str) -> Option<DefId> {
    let has_symbol = |def_id: DefId| {
        matches!(tcx.def_kind(def_id), DefKind::Fn | DefKind::AssocFn | DefKind::Static { .. })
            && !tcx.is_foreign_item(def_id)
            && !tcx.generics_of(def_id).requires_monomorphization(tcx)
            && tcx.codegen_fn_attrs(def_id).contains_extern_indicator()
            && tcx.symbol_name(Instance::mono(tcx, def_id)).name == symbol
    };
    let local = tcx.hir_crate_items(()).definitions().map(|d| d.to_def_id());
    let upstream = tcx
        .crates(())
        .iter()
        .filter(|&&cnum| !tcx.is_compiler_builtins(cnum) && !tcx.is_no_builtins(cnum))
        .flat_map(|&cnum| tcx.exported_non_generic_symbols(cnum))
        .filter_map(|(exported, _)| match exported {
            ExportedSymbol::NonGeneric(def_id) => Some(*def_id),
            _ => None,
        });
    let mut definitions = local.chain(upstream).filter(|&def_id| has_symbol(def_id));
    let first = definitions.next()?;
    if let Some(second) = definitions.next() {
        tcx.dcx().emit_err(errors::OffloadDeviceSymbolAmbiguous {
            symbol: symbol.to_string(),
            first: tcx.def_path_str(first),
            second: tcx.def_path_str(second),
        });
    }
    Some(first)
}

/// `instance`, or, for a foreign function that this crate graph defines, the definition (see
/// [`foreign_definition`]).
///
/// A weak lang item that no crate defines is an error (the image would call an undefined
/// symbol), except the panic handler: for a graph without one the codegen backend gives the
/// image a handler that traps (`rustc_codegen_llvm::back::offload_device`), so that a kernel
/// crate needs no handler of its own for the device.
pub(crate) fn bind_foreign_fn<'tcx>(tcx: TyCtxt<'tcx>, instance: Instance<'tcx>) -> Instance<'tcx> {
    let InstanceKind::Item(def_id) = instance.def else { return instance };
    match foreign_definition(tcx, def_id) {
        Some(definition) if !matches!(tcx.def_kind(definition), DefKind::Static { .. }) => {
            Instance::mono(tcx, definition)
        }
        None => {
            if let Some(path) = tcx.sess.opts.offload_device_manifest()
                && tcx.is_foreign_item(def_id)
                && let Some(lang_item) = weak_lang_item(tcx, def_id)
                && lang_item != LangItem::PanicImpl
            {
                // Named by the lang item, not by its declaration: core declares `panic_impl`
                // in more than one function, and the error is the same for each.
                tcx.dcx().emit_err(errors::OffloadDeviceLangItemUndefined {
                    path: path.to_string(),
                    item: lang_item.name().to_string(),
                    symbol: tcx.symbol_name(instance).name.to_string(),
                });
            }
            instance
        }
        _ => instance,
    }
}

/// The weak lang item (the panic handler, ...) that the foreign item `def_id` declares, if any:
/// such a declaration carries the lang item's link name as its symbol name.
pub(crate) fn weak_lang_item(tcx: TyCtxt<'_>, def_id: DefId) -> Option<LangItem> {
    let attrs = tcx.codegen_fn_attrs(def_id);
    if !attrs.flags.contains(CodegenFnAttrFlags::RUSTC_STD_INTERNAL_SYMBOL) {
        return None;
    }
    let name = attrs.symbol_name?;
    WEAK_LANG_ITEMS.iter().copied().find(|item| item.link_name() == Some(name))
}

/// `def_id`, or, for a foreign static that this crate graph defines, the definition (see
/// [`foreign_definition`]).
pub(crate) fn bind_foreign_static(tcx: TyCtxt<'_>, def_id: DefId) -> DefId {
    match foreign_definition(tcx, def_id) {
        Some(definition) if matches!(tcx.def_kind(definition), DefKind::Static { .. }) => {
            definition
        }
        _ => def_id,
    }
}
