//! The host metadata pass: the manifest of a crate's graph, written to the path of
//! `-Zoffload=HostMetadata`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rustc_hir::def_id::LOCAL_CRATE;
use rustc_middle::ty::TyCtxt;
use rustc_middle::ty::offload_kernel::kernel_definition;
use rustc_session::config::{CrateType, Offload};
use serde_json::Value;

use super::codec::manifest_json;
use super::launch_args::{check_kernel_signature, param_layouts};
use super::{LaunchKey, LaunchRecord, MAGIC, is_kernel};
use crate::errors;

/// The start of the host metadata pass, before the crate metadata is encoded: refuses the pass
/// on a GPU target or with another `-Zoffload` value than `Host=<image>` (a fatal error; beside
/// `Host=<image>` the pass is part of the host build), then collects this crate's launches, so
/// that a launch that cannot be recorded stops the compilation before an rmeta without it is
/// written.
pub fn start_host_metadata_pass(tcx: TyCtxt<'_>, path: &str) {
    if tcx.sess.target.is_like_gpu
        || tcx
            .sess
            .opts
            .unstable_opts
            .offload
            .iter()
            .any(|o| !matches!(o, Offload::HostMetadata(_) | Offload::Host(_)))
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
    let kernels = graph_launches(tcx);
    report_indistinct_kernels(tcx, &kernels);
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
    let mut graph: Vec<String> = std::iter::once(LOCAL_CRATE)
        .chain(tcx.crates(()).iter().copied())
        .map(|c| tcx.crate_name(c).to_string())
        .collect();
    graph.sort();
    graph.dedup();
    let manifest = manifest_json(&tcx.crate_name(LOCAL_CRATE).to_string(), &graph, kernels);
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

/// The kernels that the local crate and every crate of its graph launch (`offload_launches`),
/// each once, with what the manifest records of it.
fn graph_launches(tcx: TyCtxt<'_>) -> BTreeMap<LaunchKey, LaunchRecord> {
    let mut kernels: BTreeMap<LaunchKey, LaunchRecord> = BTreeMap::new();
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
            let record = kernels.entry(key).or_insert_with(|| LaunchRecord {
                // The symbol the device pass will give the kernel: its own name for
                // `#[no_mangle]`, `#[export_name]` and declared kernels, otherwise the
                // identity's (the host's copy of the kernel keeps the usual mangling).
                symbol: tcx.offload_kernel_symbol(kernel).name.to_string(),
                launched_by: BTreeSet::new(),
                params: param_layouts(tcx, kernel)
                    .map(|params| {
                        params.into_iter().map(|(_, size, align)| (size, align)).collect()
                    })
                    .unwrap_or_default(),
                definition: kernel_definition(tcx, kernel.def_id()),
                defined_in: BTreeSet::new(),
            });
            record.launched_by.insert(launcher.clone());
        }
    }
    for (key, record) in &mut kernels {
        if let LaunchKey::LinkName(name) = key {
            record.defined_in = crates_stripping(tcx, name);
        }
    }
    kernels
}

/// The crates of this graph whose host build removed, by `cfg`, an item named `name`
/// (`stripped_cfg_items`, which crate metadata carries): for a kernel in the 1.95 style, the
/// crates whose device build defines it. Items inside a module that `cfg` removed whole are not
/// recorded, and a name can also be a `#[no_mangle]` function's that is not the kernel's.
fn crates_stripping(tcx: TyCtxt<'_>, name: &str) -> BTreeSet<String> {
    std::iter::once(LOCAL_CRATE)
        .chain(tcx.crates(()).iter().copied())
        .filter(|&cnum| {
            tcx.stripped_cfg_items(cnum).iter().any(|item| item.ident.name.as_str() == name)
        })
        .map(|cnum| tcx.crate_name(cnum).to_string())
        .collect()
}

/// Reports kernels that the device image could not tell apart: two crates of one name with
/// byte-identical root files have one identity, so their kernels (and the ADTs in kernel
/// arguments) are one; and two instances whose identity text coincides (`mod m { fn k }` and
/// `fn m() { fn k }`) would share one symbol, and the image would hold only one of them.
fn report_indistinct_kernels(tcx: TyCtxt<'_>, kernels: &BTreeMap<LaunchKey, LaunchRecord>) {
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
    let mut by_symbol: BTreeMap<&str, &LaunchKey> = BTreeMap::new();
    for (key, record) in kernels {
        if let Some(other) = by_symbol.insert(&record.symbol, key) {
            tcx.dcx().emit_err(errors::OffloadKernelSymbolClash {
                first: other.text(),
                second: key.text(),
                symbol: record.symbol.clone(),
            });
        }
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
