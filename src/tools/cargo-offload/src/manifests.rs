//! The manifests of the host metadata pass: finding those of the root crates among the pass's
//! artifacts ([`root_manifests`]) and merging them into the one manifest that every device pass
//! builds its image from ([`merge_manifests`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use offload_manifest_format::Manifest;
use serde_json::Value;

use crate::image_crate::IMAGE_CRATE;
use crate::util::Result;
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

/// The union of the root manifests, as the manifest of [`IMAGE_CRATE`]
/// ([`offload_manifest_format::merge`]): every kernel instance once (by its symbol, which tells
/// apart the same path in two versions of one crate), with the union of its launching crates,
/// and the union of the crate graphs. The manifests must come from one compiler.
pub(crate) fn merge_manifests(paths: &[PathBuf]) -> Result<Manifest> {
    Ok(offload_manifest_format::merge(paths, IMAGE_CRATE)?)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use offload_manifest_format::{FORMAT_VERSION, MAGIC};
    use serde_json::json;

    use super::*;
    use crate::util::Failure;

    #[test]
    fn merged_manifest_is_the_union_under_the_image_crate() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-merge-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, krate: &str, kernels: Value| {
            let m = json!({
                "magic": MAGIC, "format_version": FORMAT_VERSION, "rustc_commit": "c",
                "crate": krate, "crate_graph": [krate, "core", "kern"], "kernels": kernels
            });
            let path = dir.join(name);
            fs::write(&path, m.to_string()).unwrap();
            path
        };
        let kernel = |symbol: &str, by: &str| {
            json!({"kernel": "kern::k", "link_name": "k", "symbol": symbol, "params": [],
                "launched_by": [by]})
        };
        let a = write("a.json", "app", json!([kernel("s_k", "kern")]));
        // `tool` also launches `k` of another version of `kern`: the same text, another symbol.
        let mut j = kernel("s_j", "tool");
        j["kernel"] = json!("kern::j");
        let b = write("b.json", "tool", json!([kernel("s_k", "tool"), j, kernel("s_k2", "tool")]));
        let merged = merge_manifests(&[a.clone(), b]).ok().unwrap();
        assert_eq!(merged.krate, IMAGE_CRATE);
        assert_eq!(merged.crate_graph, ["app", "core", "kern", IMAGE_CRATE, "tool"]);
        let kernels: Vec<(&str, &[String])> =
            merged.kernels.iter().map(|k| (k.kernel.as_str(), &k.launched_by[..])).collect();
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            kernels,
            vec![
                ("kern::j", &names(&["tool"])[..]),
                ("kern::k", &names(&["kern", "tool"])[..]),
                ("kern::k", &names(&["tool"])[..]),
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
