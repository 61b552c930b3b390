use std::fs;

use serde_json::json;

use super::*;

/// A folder of its own for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("offload-manifest-{test}-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// An item path as `path_json` writes it.
fn item(krate: &str, components: Value) -> Value {
    json!({ "crate": krate, "crate_source": "0123456789abcdef", "path": components })
}

/// A manifest built as `write_host_manifest` builds it (`json!` objects, field by field), with
/// every type kind, a lifetime, a path component without a name and a declared kernel.
fn compiler_written() -> Value {
    let pair = item("demo", json!([["TypeNs", "Pair", 0]]));
    let args = json!([
        ["num", "f32"],
        ["adt", pair, [["lifetime"], ["bool"], ["char"]]],
        ["ref", false, ["str"]],
        ["ptr", true, ["array", ["num", "u8"], 16]],
        ["slice", ["never"]],
        ["tuple", [["num", "u32"], ["tuple", []]]],
    ]);
    let identity = json!({
        "kernel": "demo::<impl demo::Pair>::scale::<f32, ...>",
        "item": item("demo", json!([["Impl", null, 1], ["ValueNs", "scale", 0]])),
        "args": args,
        "symbol": "_offload_kernel_scale_0123456789abcdef",
        "definition": "fedcba9876543210",
        "params": [{ "size": 8, "align": 8 }, { "size": 4, "align": 4 }],
        "launched_by": ["app", "demo"],
    });
    let declared = json!({
        "kernel": "extern k195_scale",
        "link_name": "k195_scale",
        "defined_in": ["app"],
        "symbol": "k195_scale",
        "params": [],
        "launched_by": ["app"],
    });
    json!({
        "magic": MAGIC,
        "format_version": FORMAT_VERSION,
        "rustc_commit": "0123abc+fork.4567def",
        "crate": "app",
        "crate_graph": ["app", "core", "demo"],
        "kernels": [identity, declared],
    })
}

#[test]
fn a_compiler_written_manifest_round_trips() {
    let written = compiler_written();
    // The compiler's file: `to_string_pretty` of its `json!` value and a newline.
    let text = serde_json::to_string_pretty(&written).unwrap() + "\n";
    let manifest = parse(text.as_bytes(), "app.json").unwrap();
    assert_eq!(serde_json::to_value(&manifest).unwrap(), written);
    assert_eq!(to_string_pretty(&manifest) + "\n", text);
    let [identity, declared] = &manifest.kernels[..] else { panic!("two kernels") };
    assert_eq!(identity.defining_crate(), Some("demo"));
    assert_eq!(identity.item.as_ref().unwrap().path[0].name, None);
    assert_eq!(identity.params[1], ParamLayout { size: 4, align: 4 });
    assert_eq!(declared.defining_crate(), None);
    assert_eq!(declared.link_name.as_deref(), Some("k195_scale"));
    assert_eq!(declared.defined_in.as_deref(), Some(&["app".to_string()][..]));
}

#[test]
fn the_compiler_documentations_example_round_trips() {
    // The example of the module documentation of `rustc_monomorphize::offload_manifest`.
    let text = r#"{
      "magic": "rustc-offload-manifest",
      "format_version": 5,
      "rustc_commit": "<commit hash of the compiler that wrote it>",
      "crate": "<name of the crate of the host metadata pass>",
      "crate_graph": ["<names of every crate of its graph, sorted>"],
      "kernels": [{
        "kernel": "demo::scale::<f32>",
        "item": {"crate": "demo", "crate_source": "0123456789abcdef",
                 "path": [["ValueNs", "scale", 0]]},
        "args": [["num", "f32"]],
        "symbol": "_offload_kernel_scale_0123456789abcdef",
        "definition": "fedcba9876543210",
        "params": [{"size": 8, "align": 8}, {"size": 4, "align": 4}],
        "launched_by": ["demo"]
      }]
    }"#;
    let manifest = parse(text.as_bytes(), "doc.json").unwrap();
    let tree: Value = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_value(&manifest).unwrap(), tree);
    assert_eq!(manifest.kernels[0].args, Some(vec![GenericArg::Type(Ty::Num("f32".into()))]));
}

#[test]
fn the_keys_are_those_the_types_write() {
    fn collect(tree: &Value, into: &mut BTreeSet<String>) {
        match tree {
            Value::Object(map) => {
                for (key, value) in map {
                    into.insert(key.clone());
                    collect(value, into);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| collect(v, into)),
            _ => {}
        }
    }
    let manifest = parse(compiler_written().to_string().as_bytes(), "app.json").unwrap();
    let mut written = BTreeSet::new();
    collect(&serde_json::to_value(&manifest).unwrap(), &mut written);
    let known: BTreeSet<String> = [
        keys::MAGIC,
        keys::FORMAT_VERSION,
        keys::RUSTC_COMMIT,
        keys::CRATE,
        keys::CRATE_GRAPH,
        keys::KERNELS,
        keys::KERNEL,
        keys::ITEM,
        keys::ARGS,
        keys::LINK_NAME,
        keys::DEFINED_IN,
        keys::SYMBOL,
        keys::DEFINITION,
        keys::PARAMS,
        keys::LAUNCHED_BY,
        keys::CRATE_SOURCE,
        keys::PATH,
        keys::SIZE,
        keys::ALIGN,
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    assert_eq!(written, known);
}

#[test]
fn every_tag_is_a_generic_argument_and_arities_are_checked() {
    let mut tags = BTreeSet::new();
    collect_tags(&compiler_written()["kernels"][0]["args"], &mut tags);
    let listed: BTreeSet<&str> = GENERIC_ARG_TAGS.into_iter().collect();
    assert_eq!(tags.iter().map(String::as_str).collect::<BTreeSet<_>>(), listed);
    for wrong in [json!(["num"]), json!(["bool", 1]), json!(["lifetime", "a"]), json!(["u32"])] {
        let message = serde_json::from_value::<GenericArg>(wrong.clone()).unwrap_err().to_string();
        assert!(message.contains("is not a"), "{wrong}: {message}");
    }

    fn collect_tags(tree: &Value, into: &mut BTreeSet<String>) {
        if let Some(items) = tree.as_array() {
            if let Some(tag) = items.first().and_then(Value::as_str) {
                into.insert(tag.to_string());
            }
            items.iter().for_each(|v| collect_tags(v, into));
        }
    }
}

#[test]
fn merge_is_the_union_under_the_given_crate() {
    let dir = scratch("merge");
    let kernel = |text: &str, symbol: &str, by: &str| {
        json!({
            "kernel": text, "item": item("kern", json!([["ValueNs", "k", 0]])), "args": [],
            "symbol": symbol, "definition": "fedcba9876543210", "params": [],
            "launched_by": [by],
        })
    };
    let write = |name: &str, krate: &str, commit: &str, kernels: Value| {
        let manifest = json!({
            "magic": MAGIC, "format_version": FORMAT_VERSION, "rustc_commit": commit,
            "crate": krate, "crate_graph": [krate, "core", "kern"], "kernels": kernels,
        });
        let path = dir.join(name);
        fs::write(&path, manifest.to_string()).unwrap();
        path
    };
    let a = write("a.json", "app", "c", json!([kernel("kern::k", "s_k", "kern")]));
    // `tool` also launches `k` of another version of `kern`: the same text, another symbol.
    let b = write(
        "b.json",
        "tool",
        "c",
        json!([
            kernel("kern::k", "s_k", "tool"),
            kernel("kern::j", "s_j", "tool"),
            kernel("kern::k", "s_k2", "tool"),
        ]),
    );
    let merged = merge(&[&a, &b], "image").unwrap();
    assert_eq!((merged.magic.as_str(), merged.format_version), (MAGIC, FORMAT_VERSION));
    assert_eq!((merged.krate.as_str(), merged.rustc_commit.as_str()), ("image", "c"));
    assert_eq!(merged.crate_graph, ["app", "core", "image", "kern", "tool"]);
    let kernels: Vec<(&str, &str, Vec<&str>)> = merged
        .kernels
        .iter()
        .map(|k| {
            let by = k.launched_by.iter().map(String::as_str).collect();
            (k.kernel.as_str(), k.symbol.as_str(), by)
        })
        .collect();
    assert_eq!(
        kernels,
        [
            ("kern::j", "s_j", vec!["tool"]),
            ("kern::k", "s_k", vec!["kern", "tool"]),
            ("kern::k", "s_k2", vec!["tool"]),
        ]
    );
    // Without a symbol, the text names the instance.
    let c = write("c.json", "x", "c", json!([kernel("kern::k", "", "x")]));
    let d = write("d.json", "y", "c", json!([kernel("kern::k", "", "y")]));
    let merged = merge(&[c, d], "image").unwrap();
    assert_eq!(merged.kernels.len(), 1);
    assert_eq!(merged.kernels[0].launched_by, ["x", "y"]);
    // A declared kernel: the crates that define it, joined.
    let declared = |by: &str, defined_in: &[&str]| {
        json!([{
            "kernel": "extern k195", "link_name": "k195", "defined_in": defined_in,
            "symbol": "k195", "params": [], "launched_by": [by],
        }])
    };
    let e = write("e.json", "x", "c", declared("x", &["x"]));
    let f = write("f.json", "y", "c", declared("y", &["w", "x"]));
    let merged = merge(&[e, f], "image").unwrap();
    assert_eq!(merged.kernels[0].defined_in.as_deref(), Some(&["w".into(), "x".into()][..]));
    // Another compiler's manifest: an error that names it.
    let other = write("other.json", "app", "d", json!([]));
    let error = merge(&[&a, &other], "image").unwrap_err();
    let ErrorKind::OtherCompiler(found, first) = &error.kind else { panic!("{error}") };
    assert_eq!((found.as_str(), first.as_str()), ("d", "c"));
    let message = error.to_string();
    assert!(message.contains("another compiler") && message.contains("other.json"), "{message}");
    // No manifests: none of their kernels.
    let empty = merge(&[] as &[PathBuf], "image").unwrap();
    assert_eq!((empty.crate_graph, empty.kernels), (vec!["image".to_string()], vec![]));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_name_the_file_and_what_is_wrong() {
    let dir = scratch("errors");
    let mut header = compiler_written();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        fs::write(&path, text).unwrap();
        path
    };
    let expect = |path: &Path, what: &str, kind: fn(&ErrorKind) -> bool| {
        let error = read(path).unwrap_err();
        let message = error.to_string();
        assert!(kind(&error.kind), "{message}");
        assert_eq!(error.path, path);
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains(what), "{message}");
    };
    expect(&dir.join("missing.json"), "cannot read", |k| matches!(k, ErrorKind::Read(_)));
    let truncated = write("truncated.json", "{\"magic\": \"rustc-offload-manifest\",");
    expect(&truncated, "not an offload manifest", |k| matches!(k, ErrorKind::Json(_)));
    let empty = write("empty.json", "");
    expect(&empty, "not an offload manifest", |k| matches!(k, ErrorKind::Json(_)));
    let other_json = write("package.json", "{\"name\": \"web\"}");
    expect(&other_json, "no `magic` key", |k| matches!(k, ErrorKind::NotAManifest));
    header["magic"] = json!("rustc-offload-manifesto");
    let magic = write("magic.json", &header.to_string());
    expect(&magic, "\"rustc-offload-manifesto\"", |k| matches!(k, ErrorKind::WrongMagic(_)));
    header["magic"] = json!(MAGIC);
    header["format_version"] = json!(2);
    let old = write("old.json", &header.to_string());
    expect(
        &old,
        "format 2, but this tool reads format 5",
        |k| matches!(k, ErrorKind::OtherFormat(found) if found == "2"),
    );
    header.as_object_mut().unwrap().remove("format_version");
    let unversioned = write("unversioned.json", &header.to_string());
    expect(&unversioned, "format null", |k| matches!(k, ErrorKind::OtherFormat(_)));
    header["format_version"] = json!(FORMAT_VERSION);
    header["kernels"][0].as_object_mut().unwrap().remove("symbol");
    let no_symbol = write("no-symbol.json", &header.to_string());
    expect(&no_symbol, "missing field `symbol`", |k| matches!(k, ErrorKind::Invalid(_)));
    header["kernels"][0]["symbol"] = json!("s");
    header["kernels"][0].as_object_mut().unwrap().remove("definition");
    let incomplete = write("incomplete.json", &header.to_string());
    expect(&incomplete, "has neither `link_name` nor all of", |k| {
        matches!(k, ErrorKind::Invalid(_))
    });
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn read_exact_names_what_the_types_would_not_keep() {
    let dir = scratch("exact");
    let path = dir.join("m.json");
    let mut tree = compiler_written();
    fs::write(&path, tree.to_string()).unwrap();
    read_exact(&path).unwrap();
    tree["kernels"][0]["params"][0]["stride"] = json!(4);
    fs::write(&path, tree.to_string()).unwrap();
    // `read` ignores the key, as the compiler does; `read_exact` names it.
    read(&path).unwrap();
    let error = read_exact(&path).unwrap_err().to_string();
    assert!(error.contains("m.json"), "{error}");
    assert!(error.contains("`kernels[0].params[0].stride`"), "{error}");
}
