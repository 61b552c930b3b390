//! The device pass with a manifest: its kernels as the only mono roots, and the checks that
//! kernels stay entry points.

use rustc_hir::def::DefKind;
use rustc_hir::def_id::{DefId, LOCAL_CRATE};
use rustc_middle::middle::codegen_fn_attrs::CodegenFnAttrFlags;
use rustc_middle::mir::mono::MonoItem;
use rustc_middle::ty::offload_kernel::{KernelIdentity, args_to_ty, kernel_definition};
use rustc_middle::ty::{self, Instance, TyCtxt};
use rustc_session::config::CrateType;
use rustc_target::spec::{Arch, BinaryFormat, Os};

use super::codec::{ReadKernel, ReadManifest, read_manifest};
use super::launch_args::{check_kernel_signature, layouts_agree};
use super::{LaunchKey, is_kernel};
use crate::errors;

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

/// Whether this compilation is a manifest-driven device pass (`-Zoffload=Device=<manifest>`) of
/// the crate that the manifest names, which builds the image from the manifest's kernels. The
/// other crates of the manifest's graph root nothing in that pass and build the same whatever
/// kernels the manifest lists, so only this crate's dep-info lists the manifest: a kernel edit
/// then rebuilds the image, not the graph's unchanged dependencies. Reads the manifest (a fatal
/// error names one it cannot read) unless the target is no device target, which the device
/// pass reports later.
pub fn offload_device_manifest_names_this_crate(tcx: TyCtxt<'_>) -> bool {
    let Some(path) = tcx.sess.opts.offload_device_manifest() else { return false };
    is_device_target(tcx) && read_manifest(tcx, path).krate == tcx.crate_name(LOCAL_CRATE).as_str()
}

/// Whether the device pass can build an image for this session's target: a GPU target, or a
/// CPU that LLVM's offload runtime runs as its host device (the "host" plugin loads an ELF
/// shared object of the host's own architecture and calls its kernels through libffi, so
/// that offload programs can be tested on machines without a GPU).
fn is_device_target(tcx: TyCtxt<'_>) -> bool {
    let target = &tcx.sess.target;
    target.is_like_gpu
        || (matches!(target.arch, Arch::X86_64 | Arch::AArch64)
            && target.os == Os::Linux
            && target.binary_format == BinaryFormat::Elf)
}

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
    if !builds_the_image(tcx, path, &manifest) {
        // A dependency of the crate that builds the device image: the image instantiates
        // what it needs of this crate itself.
        return Vec::new();
    }
    if manifest.kernels.is_empty() {
        tcx.dcx().emit_fatal(errors::OffloadManifestEmpty { path: path.to_string() });
    }
    let mut roots = Vec::new();
    for kernel in &manifest.kernels {
        let root = match &kernel.key {
            LaunchKey::Identity(identity) => kernel_root(tcx, path, kernel, identity),
            LaunchKey::LinkName(name) => declared_kernel_root(tcx, path, kernel, name),
        };
        roots.extend(root.map(MonoItem::Fn));
    }
    tcx.dcx().abort_if_errors();
    // `global_asm!` of the image crate belongs to the image whatever the kernels reach, as in
    // any other crate's object code.
    for id in tcx.hir_crate_items(()).free_items() {
        if tcx.def_kind(id.owner_id) == DefKind::GlobalAsm {
            roots.push(MonoItem::GlobalAsm(id));
        }
    }
    roots
}

/// Whether this crate is the one that the manifest at `path` names, which builds the image:
/// `false` for another crate of its graph, a fatal error for a crate outside the graph, or for
/// one of the graph that builds only final artifacts (no crate depends on it, so the crate
/// that builds the image is not part of this build: it would end with no image, and leave an
/// older `host.out` in place). A library that also builds an rlib or a dylib
/// (`crate-type = ["rlib", "cdylib"]`) can be a dependency.
fn builds_the_image(tcx: TyCtxt<'_>, path: &str, manifest: &ReadManifest) -> bool {
    let this_crate = tcx.crate_name(LOCAL_CRATE).to_string();
    if this_crate == manifest.krate {
        return true;
    }
    if !manifest.graph.contains(&this_crate) {
        tcx.dcx().emit_fatal(errors::OffloadManifestOtherCrate {
            path: path.to_string(),
            manifest_crate: manifest.krate.clone(),
            this_crate,
        });
    }
    let types = tcx.crate_types();
    if !types.is_empty() && !types.iter().any(|t| matches!(t, CrateType::Rlib | CrateType::Dylib)) {
        tcx.dcx().emit_fatal(errors::OffloadManifestRootNotBuilt {
            path: path.to_string(),
            manifest_crate: manifest.krate.clone(),
            this_crate,
            crate_type: types.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(" and "),
        });
    }
    false
}

/// The root of a kernel in the 1.95 style, launched by its link `name`: the definition of that
/// name in the crate graph, which must be a `#[rustc_offload_kernel]` function whose MIR,
/// signature and parameter layouts the device pass can use. `None` after reporting why not.
fn declared_kernel_root<'tcx>(
    tcx: TyCtxt<'tcx>,
    path: &str,
    kernel: &ReadKernel,
    name: &str,
) -> Option<Instance<'tcx>> {
    let Some(def_id) = crate::offload_image::symbol_definition(tcx, name) else {
        tcx.dcx().emit_err(errors::OffloadDeclaredKernelUndefined {
            path: path.to_string(),
            kernel: name.to_string(),
        });
        return None;
    };
    if !is_kernel(tcx, def_id) {
        tcx.dcx().emit_err(errors::OffloadDeclaredKernelNotAKernel {
            span: tcx.def_span(def_id),
            kernel: name.to_string(),
            definition: tcx.def_path_str(def_id),
        });
        return None;
    }
    let instance = Instance::mono(tcx, def_id);
    (kernel_mir_available(tcx, path, kernel, def_id)
        && check_kernel_signature(tcx, def_id)
        && layouts_agree(tcx, path, kernel, instance))
    .then_some(instance)
}

/// The root of a kernel named by its `identity`: the instance that the identity names in this
/// crate graph, if it is still the kernel that the host metadata pass recorded (the same
/// definition, generic arguments that fit, the same symbol and parameter layouts). `None`
/// after reporting the manifest as stale, or the kernel as unusable.
fn kernel_root<'tcx>(
    tcx: TyCtxt<'tcx>,
    path: &str,
    kernel: &ReadKernel,
    identity: &KernelIdentity,
) -> Option<Instance<'tcx>> {
    let stale = |why: &str| {
        tcx.dcx().emit_err(errors::OffloadManifestStale {
            path: path.to_string(),
            kernel: kernel.text.clone(),
            why: why.to_string(),
        });
        None
    };
    if let Some(path) = identity.item_paths().into_iter().find(|p| p.source_crates(tcx).len() > 1) {
        tcx.dcx().emit_err(errors::OffloadCrateSourceAmbiguous {
            kernel: kernel.text.clone(),
            krate: path.krate.clone(),
        });
        return None;
    }
    let Some(def_id) = identity.item.resolve(tcx) else {
        if identity.item.source_crates(tcx).is_empty()
            && !identity.item.crates_named(tcx).is_empty()
        {
            return stale(&format!(
                "no crate `{}` of this crate graph has the root source that the host metadata \
                 pass saw (it changed, or the graph holds another version of the crate)",
                identity.item.krate
            ));
        }
        return stale("no such item in this crate graph");
    };
    if !is_kernel(tcx, def_id) {
        return stale("the item is no longer a `#[rustc_offload_kernel]` function");
    }
    if kernel.definition.as_deref() != Some(kernel_definition(tcx, def_id).as_str()) {
        return stale(
            "its definition is not the one the host metadata pass recorded (its source file \
             changed, or its path now names another item)",
        );
    }
    if !kernel_mir_available(tcx, path, kernel, def_id) || !check_kernel_signature(tcx, def_id) {
        return None;
    }
    let Some(args) = args_to_ty(tcx, &identity.args) else {
        return stale(
            "a generic argument names a type that no longer exists or no longer has that shape",
        );
    };
    if args.len() != tcx.generics_of(def_id).count() {
        return stale("its number of generic arguments changed");
    }
    let typing_env = ty::TypingEnv::fully_monomorphized();
    if !tcx.check_args_compatible(def_id, args) {
        return stale("its generic arguments no longer fit the item");
    }
    let Ok(Some(instance)) = Instance::try_resolve(tcx, typing_env, def_id, args) else {
        return stale("its generic arguments no longer fit the item");
    };
    if !MonoItem::Fn(instance).is_instantiable(tcx) {
        return stale("its generic arguments no longer satisfy the item's bounds");
    }
    if tcx.symbol_name(instance).name != kernel.symbol {
        return stale("the symbol recorded by the host metadata pass differs from this pass's");
    }
    layouts_agree(tcx, path, kernel, instance).then_some(instance)
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
