//! The manifests of the host metadata pass: finding those of the root crates among the pass's
//! artifacts ([`root_manifests`]) and merging them into the one manifest that every device pass
//! builds its image from ([`merge_manifests`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::image_crate::IMAGE_CRATE;
use crate::util::{Failure, Result, fail};
use crate::workspace::Workspace;

/// The manifests of this build's root crates: the crates of workspace packages among the
/// host metadata pass's artifacts, found as `<crate><extra filename>.json` (named after the
/// artifact's `.rmeta`).
pub(crate) fn root_manifests(artifacts: &[Value], ws: &Workspace, dir: &Path) -> Vec<PathBuf> {
    let mut roots = BTreeSet::new();
    for artifact in artifacts {
        if !artifact["package_id"].as_str().is_some_and(|id| ws.member_ids.contains(id)) {
            continue;
        }
        for file in artifact["filenames"].as_array().into_iter().flatten().filter_map(Value::as_str)
        {
            let stem = Path::new(file)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if file.ends_with(".rmeta") {
                let stem = stem.strip_prefix("lib").unwrap_or(&stem);
                let path = dir.join(format!("{stem}.json"));
                if path.is_file() {
                    roots.insert(path);
                }
            }
        }
    }
    roots.into_iter().collect()
}

/// The manifest (JSON) at `path`; a file that cannot be read or parsed is a failure that names
/// it.
pub(crate) fn read_manifest(path: &Path) -> Result<Value> {
    let text = fs::read_to_string(path)
        .map_err(|e| Failure(format!("cannot read {}: {e}", path.display()), 1))?;
    serde_json::from_str(&text)
        .map_err(|e| Failure(format!("{} is not an offload manifest: {e}", path.display()), 1))
}

/// The union of the root manifests, as the manifest of [`IMAGE_CRATE`]: every kernel instance
/// once (by its symbol, which tells apart the same path in two versions of one crate; by its
/// instance text where it has none), with the union of its launching crates, and the union of
/// the crate graphs. Identity fields must agree: they come from one compiler.
pub(crate) fn merge_manifests(paths: &[PathBuf]) -> Result<Value> {
    let mut kernels: BTreeMap<String, Value> = BTreeMap::new();
    let mut graph: BTreeSet<String> = BTreeSet::from([IMAGE_CRATE.to_string()]);
    let mut header: Option<(Value, Value, Value)> = None;
    for path in paths {
        let m = read_manifest(path)?;
        let this = (m["magic"].clone(), m["format_version"].clone(), m["rustc_commit"].clone());
        match &header {
            Some(h) if *h != this => {
                return fail(format!(
                    "{} was written by another compiler than the other manifests",
                    path.display()
                ));
            }
            _ => header = Some(this),
        }
        graph.extend(
            m["crate_graph"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string),
        );
        for kernel in m["kernels"].as_array().into_iter().flatten() {
            let key = kernel["symbol"]
                .as_str()
                .or(kernel["kernel"].as_str())
                .unwrap_or_default()
                .to_string();
            let entry = kernels.entry(key).or_insert_with(|| kernel.clone());
            let mut by: BTreeSet<String> = entry["launched_by"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            by.extend(
                kernel["launched_by"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string),
            );
            entry["launched_by"] = json!(by);
        }
    }
    let (magic, format, commit) =
        header.unwrap_or((json!("rustc-offload-manifest"), json!(2), json!("")));
    Ok(json!({
        "magic": magic,
        "format_version": format,
        "rustc_commit": commit,
        "crate": IMAGE_CRATE,
        "crate_graph": graph,
        "kernels": kernels.into_values().collect::<Vec<_>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_manifest_is_the_union_under_the_image_crate() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-merge-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, krate: &str, kernels: Value| {
            let m = json!({
                "magic": "rustc-offload-manifest", "format_version": 2, "rustc_commit": "c",
                "crate": krate, "crate_graph": [krate, "core", "kern"], "kernels": kernels
            });
            let path = dir.join(name);
            fs::write(&path, m.to_string()).unwrap();
            path
        };
        let a = write(
            "a.json",
            "app",
            json!([{"kernel": "kern::k", "symbol": "s_k", "launched_by": ["kern"]}]),
        );
        // `tool` also launches `k` of another version of `kern`: the same text, another symbol.
        let b = write(
            "b.json",
            "tool",
            json!([
                {"kernel": "kern::k", "symbol": "s_k", "launched_by": ["tool"]},
                {"kernel": "kern::j", "symbol": "s_j", "launched_by": ["tool"]},
                {"kernel": "kern::k", "symbol": "s_k2", "launched_by": ["tool"]},
            ]),
        );
        let merged = merge_manifests(&[a.clone(), b]).ok().unwrap();
        assert_eq!(merged["crate"], IMAGE_CRATE);
        assert_eq!(merged["crate_graph"], json!(["app", "core", "kern", IMAGE_CRATE, "tool"]));
        let kernels: Vec<(&str, Value)> = merged["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| (k["kernel"].as_str().unwrap(), k["launched_by"].clone()))
            .collect();
        assert_eq!(
            kernels,
            vec![
                ("kern::j", json!(["tool"])),
                ("kern::k", json!(["kern", "tool"])),
                ("kern::k", json!(["tool"])),
            ]
        );
        let other = dir.join("other.json");
        fs::write(&other, fs::read_to_string(&a).unwrap().replace("\"c\"", "\"d\"")).unwrap();
        assert!(matches!(
            merge_manifests(&[a, other]),
            Err(Failure(m, 1)) if m.contains("another compiler")
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
