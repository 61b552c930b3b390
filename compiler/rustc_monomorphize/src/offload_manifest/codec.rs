//! The manifest's JSON codec: a manifest as the host metadata pass writes it, and as the device
//! pass reads it back (see the format in the parent module's documentation).

use std::collections::BTreeMap;
use std::path::Path;

use rustc_errors::DiagCtxtHandle;
use rustc_middle::ty::TyCtxt;
use rustc_middle::ty::offload_kernel::{
    ItemPath, KernelArg, KernelIdentity, KernelTy, PathComponent,
};
use serde_json::{Value, json};

use super::{FORMAT_VERSION, LaunchKey, LaunchRecord, MAGIC, compiler_commit};
use crate::errors;

/// An item path as the manifest writes it: `{"crate", "crate_source", "path": [[kind, name,
/// disambiguator], ...]}`.
fn path_json(path: &ItemPath) -> Value {
    let components: Vec<Value> =
        path.components.iter().map(|c| json!([c.kind, c.name, c.disambiguator])).collect();
    json!({ "crate": path.krate, "crate_source": path.crate_source, "path": components })
}

/// A type of a generic argument as the manifest writes it: an array whose first element names its
/// kind.
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

/// Generic arguments as the manifest writes them: types ([`ty_json`]) and `["lifetime"]`.
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

/// The item path that [`path_json`] wrote; `None` for any other shape.
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

/// The type that [`ty_json`] wrote; `None` for any other shape.
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

/// The generic arguments that [`args_json`] wrote; `None` for any other shape.
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

/// Parameter layouts as the manifest writes them: `[{"size": bytes, "align": bytes}, ...]`.
fn layouts_json(layouts: &[(u64, u64)]) -> Value {
    Value::Array(
        layouts.iter().map(|(size, align)| json!({ "size": size, "align": align })).collect(),
    )
}

/// The parameter layouts that [`layouts_json`] wrote; `None` for any other shape.
fn layouts_from(v: &Value) -> Option<Vec<(u64, u64)>> {
    v.as_array()?
        .iter()
        .map(|p| Some((p.get("size")?.as_u64()?, p.get("align")?.as_u64()?)))
        .collect()
}

/// The manifest of the crate `krate`, whose graph holds the crates `graph` (sorted) and
/// launches `kernels`, as the JSON value that the host metadata pass writes: the format of the
/// parent module's documentation, kernels sorted by their text.
pub(super) fn manifest_json(
    krate: &str,
    graph: &[String],
    kernels: BTreeMap<LaunchKey, LaunchRecord>,
) -> Value {
    let mut kernels: Vec<(String, LaunchKey, LaunchRecord)> =
        kernels.into_iter().map(|(key, record)| (key.text(), key, record)).collect();
    kernels.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let kernels: Vec<Value> = kernels
        .into_iter()
        .map(|(text, key, record)| match key {
            LaunchKey::Identity(identity) => json!({
                "kernel": text,
                "item": path_json(&identity.item),
                "args": args_json(&identity.args),
                "symbol": record.symbol,
                "definition": record.definition,
                "params": layouts_json(&record.params),
                "launched_by": record.launched_by,
            }),
            LaunchKey::LinkName(name) => json!({
                "kernel": text,
                "link_name": name,
                "defined_in": record.defined_in,
                "symbol": record.symbol,
                "params": layouts_json(&record.params),
                "launched_by": record.launched_by,
            }),
        })
        .collect();
    json!({
        "magic": MAGIC,
        "format_version": FORMAT_VERSION,
        "rustc_commit": compiler_commit(),
        "crate": krate,
        "crate_graph": graph,
        "kernels": kernels,
    })
}

/// One kernel instance read from a manifest.
pub(super) struct ReadKernel {
    pub(super) text: String,
    pub(super) key: LaunchKey,
    pub(super) symbol: String,
    /// Size and ABI alignment in bytes of each parameter, as the host laid it out.
    pub(super) params: Vec<(u64, u64)>,
    /// The definition fingerprint of a kernel named by identity (None for a declared kernel).
    pub(super) definition: Option<String>,
}

/// A manifest as the device pass reads it.
pub(super) struct ReadManifest {
    pub(super) krate: String,
    pub(super) graph: Vec<String>,
    pub(super) kernels: Vec<ReadKernel>,
}

/// Stops the device pass: the manifest at `path` is not one this compiler reads (`what` says why).
fn corrupt(dcx: DiagCtxtHandle<'_>, path: &str, what: &str) -> ! {
    dcx.emit_fatal(errors::OffloadManifestCorrupt {
        path: path.to_string(),
        what: what.to_string(),
    })
}

/// The manifest at `path`, as the device pass reads it: a fatal error ([`corrupt`]) names the
/// file when it cannot be read, is not a manifest of this format, or comes from another
/// compiler build.
pub(super) fn read_manifest(tcx: TyCtxt<'_>, path: &str) -> ReadManifest {
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
