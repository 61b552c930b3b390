//! A four-crate graph through the offload passes (scenarios S5, S6): `app` depends on `mid` and
//! `util`, which are siblings, and all three depend on `kernels`. `mid` and `util` launch
//! kernels from non-generic functions that `app` calls (S5): `app`'s own collection never sees
//! those functions' bodies, so only their crate metadata can carry the launches. `mid` and
//! `app` both launch one kernel (S6). Every crate gets the same
//! `-Zoffload=HostMetadata=<path>`, as `RUSTFLAGS` gives under cargo: each crate writes the
//! manifest of its own graph there, the root's is the union with the launching crates of each
//! kernel, and a file that is not a manifest is never replaced.

//@ needs-offload
//@ needs-llvm-components: amdgpu
//@ only-x86_64

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use run_make_support::offload::{
    exported_functions, gpu_sysroot, image_ir, manifest_symbols, offload_entries, rustc,
    undefined_functions, vendor_check,
};
use run_make_support::serde_json::{self, Value, json};
use run_make_support::{Rustc, cwd, rfs};

const TARGET: &str = "amdgcn-amd-amdhsa";

/// The crates of the graph with their dependencies, in build order.
const GRAPH: &[(&str, &[&str])] = &[
    ("kernels", &[]),
    ("mid", &["kernels"]),
    ("util", &["kernels"]),
    ("app", &["kernels", "mid", "util"]),
];

/// The manifest at `path`: its crate, and `(kernel, launched_by)` in the manifest's order.
fn kernels_of(path: &Path) -> (String, Vec<(String, Value)>) {
    let json: Value = serde_json::from_str(&rfs::read_to_string(path)).unwrap();
    let kernels = json["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["kernel"].as_str().unwrap().to_string(), k["launched_by"].clone()))
        .collect();
    (json["crate"].as_str().unwrap().to_string(), kernels)
}

fn entries(list: &[(&str, Value)]) -> Vec<(String, Value)> {
    list.iter().map(|(k, by)| (k.to_string(), by.clone())).collect()
}

/// One crate of the graph: `rustc <name>.rs` with its dependencies from `dir`.
fn krate(name: &str, deps: &[&str], dir: &Path, ext: &str) -> Rustc {
    let mut r = rustc();
    r.input(format!("{name}.rs")).crate_type("rlib").edition("2024").library_search_path(dir);
    for dep in deps {
        r.extern_(dep, dir.join(format!("lib{dep}.{ext}")));
    }
    r
}

fn main() {
    // One manifest path for the whole graph.
    let manifest = cwd().join("graph.json");
    let flag = format!("-Zoffload=HostMetadata={}", manifest.display());
    let meta = cwd().join("meta");
    rfs::create_dir_all(&meta);
    // Host metadata pass, crate by crate, each writing its rmeta (what `cargo check` asks for)
    // and the manifest of its own graph to the shared path.
    let host_metadata = |name: &str, deps: &[&str], extra: &[&str]| {
        let mut r = krate(name, deps, &meta, "rmeta");
        r.opt_level("3")
            .metadata(&format!("{name}-check"))
            .emit("metadata")
            .out_dir(&meta)
            .arg(&flag);
        r.args(extra);
        r.run()
    };

    // A crate that defines kernels and launches none is warned about.
    host_metadata("kernels", &[], &[]).assert_stderr_contains("lists no kernels");
    assert_eq!(kernels_of(&manifest), ("kernels".to_string(), vec![]));

    let mid_kernels = entries(&[
        ("kernels::axpy", json!(["mid"])),
        ("kernels::scale::<f64>", json!(["mid"])),
        ("mid::norm", json!(["mid"])),
    ]);
    host_metadata("mid", &["kernels"], &[]);
    assert_eq!(kernels_of(&manifest), ("mid".to_string(), mid_kernels.clone()));
    let mid_rmeta = rfs::read(meta.join("libmid.rmeta"));

    // A sibling replaces `mid`'s manifest with its own; `mid`'s launches are in its rmeta.
    host_metadata("util", &["kernels"], &[]);
    assert_eq!(
        kernels_of(&manifest),
        ("util".to_string(), entries(&[("kernels::scale::<i32>", json!(["util"]))]))
    );

    host_metadata("app", &["kernels", "mid", "util"], &[]);
    let app_kernels = entries(&[
        ("app::fill", json!(["app"])),
        ("kernels::axpy", json!(["app", "mid"])),
        ("kernels::scale::<f32>", json!(["app"])),
        ("kernels::scale::<f64>", json!(["mid"])),
        ("kernels::scale::<i32>", json!(["util"])),
        ("mid::norm", json!(["mid"])),
    ]);
    assert_eq!(kernels_of(&manifest), ("app".to_string(), app_kernels));
    let union = rfs::read(&manifest);

    // A rebuild from the middle (cargo reruns `mid`, then its dependents): the same rmeta byte
    // for byte, and `app`, with several threads, writes the same union again. (`-Zthreads`
    // changes some bytes of an rmeta by itself, so the rmeta comparison runs without it.)
    host_metadata("mid", &["kernels"], &[]);
    assert_eq!(kernels_of(&manifest), ("mid".to_string(), mid_kernels));
    assert!(
        rfs::read(meta.join("libmid.rmeta")) == mid_rmeta,
        "the rmeta of `mid` is not deterministic"
    );
    host_metadata("app", &["kernels", "mid", "util"], &["-Zthreads=4"]);
    assert_eq!(rfs::read(&manifest), union, "the union is not deterministic");

    // A file that is not a manifest is never replaced.
    let notes = "{\"mine\": \"a file the user wrote\"}\n";
    rfs::write("notes.json", notes);
    krate("other", &[], &meta, "rmeta")
        .emit("metadata")
        .out_dir(&meta)
        .arg("-Zoffload=HostMetadata=notes.json")
        .run_fail()
        .assert_stderr_contains(
            "error: cannot write the offload manifest `notes.json` (`-Zoffload=HostMetadata`): \
             the file exists and is not an offload manifest",
        )
        .assert_stderr_contains("help: remove the file, or name another path for the manifest");
    assert_eq!(rfs::read_to_string("notes.json"), notes);

    let json: Value = serde_json::from_slice(&union).unwrap();
    let symbols = manifest_symbols(&json);
    assert_eq!(symbols.len(), 6, "two kernel instances share a symbol");

    // Device pass: every crate with the same flag; only `app` builds an image, and it defines
    // exactly the union's kernels, whichever crate launched them. `app`'s device code never
    // names `mid` or `util` (their launchers are called from host code only): the pass loads
    // every `--extern` crate itself.
    let device = cwd().join("device");
    let device_flag = format!("-Zoffload=Device={}", manifest.display());
    let mut image = PathBuf::new();
    for &(name, deps) in GRAPH {
        let out = device.join(name);
        rfs::create_dir_all(&out);
        krate(name, deps, &device, "rlib")
            .target(TARGET)
            .sysroot(gpu_sysroot())
            .target_cpu("gfx90a")
            .opt_level("3")
            .metadata(&format!("{name}-device"))
            .out_dir(&out)
            .arg(&device_flag)
            .run();
        rfs::copy(out.join(format!("lib{name}.rlib")), device.join(format!("lib{name}.rlib")));
        image = out.join("host.out");
        assert_eq!(
            image.exists(),
            name == "app",
            "crate `{name}`: wrong crate wrote the device image"
        );
    }
    let ir = image_ir(&image, TARGET);
    assert_eq!(exported_functions(&ir), symbols);
    assert!(!ir.contains("never_launched"), "an unlaunched kernel is in the image");
    let external = undefined_functions(&ir);
    assert!(external.is_empty(), "the image leaves functions undefined: {external:?}");
    assert_eq!(vendor_check(&image, TARGET).kernels, symbols, "the vendors' tools' kernels");

    // Two roots that share a path: the last one's manifest stays, and the other root's device
    // pass refuses it as another crate's.
    krate("other", &[], &meta, "rmeta").emit("metadata").out_dir(&meta).arg(&flag).run();
    assert_eq!(kernels_of(&manifest).0, "other");
    krate("app", &["kernels", "mid", "util"], &device, "rlib")
        .target(TARGET)
        .sysroot(gpu_sysroot())
        .target_cpu("gfx90a")
        .out_dir(device.join("refused"))
        .arg(&device_flag)
        .run_fail()
        .assert_stderr_contains(
            "was made for the crate `other`, whose crate graph has no crate `app`",
        );

    // Host pass: each crate's host object launches, by the symbols of the image, exactly the
    // kernels that the manifest says the crate launches.
    let launched_by = |krate: &str| -> BTreeSet<String> {
        json["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k["launched_by"].as_array().unwrap().iter().any(|c| c == krate))
            .map(|k| k["symbol"].as_str().unwrap().to_string())
            .collect()
    };
    let host = cwd().join("host");
    rfs::create_dir_all(&host);
    let host_flag = format!("-Zoffload=Host={}", image.display());
    let mut launched = BTreeSet::new();
    for &(name, deps) in GRAPH {
        let out = host.join(name);
        rfs::create_dir_all(&out);
        let mut r = krate(name, deps, &host, "rlib");
        r.opt_level("3").codegen_units(1).metadata(&format!("{name}-host")).out_dir(&out);
        if name != "kernels" {
            r.arg("-Clto=fat").arg(&host_flag);
        }
        r.run();
        rfs::copy(out.join(format!("lib{name}.rlib")), host.join(format!("lib{name}.rlib")));
        if name != "kernels" {
            let entries = offload_entries(&out.join("host.o"));
            assert_eq!(entries, launched_by(name), "crate `{name}`: host object's offload entries");
            launched.extend(entries);
        }
    }
    assert_eq!(launched, symbols);
}
