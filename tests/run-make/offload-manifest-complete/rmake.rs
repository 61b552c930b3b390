//! Complete device images (scenarios S10-S15): a corpus of realistic kernels whose code reaches
//! what an image must define itself, since nothing is linked into it: `core`'s panic paths and
//! the panic handler of a dependency, statics of the crate, of a dependency and of `core`
//! (Unicode tables), vtables, a table of function pointers, a dependency's function and static
//! bound by symbol through `extern` declarations, atomics, `#[repr(C)]` and array parameters,
//! generic instances, 128-bit arithmetic. Through both GPU targets, the image must export
//! exactly the kernels, declare nothing but LLVM intrinsics, and pass the vendors' tools
//! (`ld.lld --no-undefined`; `ptxas` + `nvlink`) with exactly the manifest's kernels. The base
//! pipeline (bare `-Zoffload=Device`, the generic kernel's two instances as non-generic
//! kernels) builds the same corpus side by side, and what the vendors' tools say of its image
//! is printed beside ours.

//@ needs-offload
//@ needs-llvm-components: amdgpu nvptx
//@ only-x86_64

use std::collections::BTreeSet;
use std::path::Path;

use run_make_support::offload::{
    device_pass, exported_functions, host_metadata_pass, image_ir, manifest_symbols,
    undefined_functions, unreached_functions, vendor_check, vendor_result,
};
use run_make_support::serde_json::{self, Value};
use run_make_support::{cwd, rfs};

/// The kernel instances that `corpus.rs` launches, as the manifest prints them.
const EXPECTED_KERNELS: &[&str] = &[
    "corpus::affine",
    "corpus::apply_ops",
    "corpus::areas",
    "corpus::axpy::<f32>",
    "corpus::axpy::<u64>",
    "corpus::classify",
    "corpus::divide",
    "corpus::float_math",
    "corpus::gather",
    "corpus::histogram",
    "corpus::strided_dot",
    "corpus::tables",
    "corpus::wide",
];

fn main() {
    let manifest = cwd().join("corpus.manifest.json");
    let host_dir = cwd().join("host");
    rfs::create_dir_all(&host_dir);
    host_metadata_pass(&manifest)
        .input("devlib.rs")
        .crate_type("rlib")
        .edition("2024")
        .metadata("devlib-host")
        .out_dir(&host_dir)
        .emit("metadata")
        .run();
    host_metadata_pass(&manifest)
        .input("corpus.rs")
        .crate_type("lib")
        .edition("2024")
        .metadata("corpus-host")
        .extern_("devlib", host_dir.join("libdevlib.rmeta"))
        .run();
    let json: Value = serde_json::from_str(&rfs::read_to_string(&manifest)).unwrap();
    let kernels: Vec<&str> =
        json["kernels"].as_array().unwrap().iter().map(|k| k["kernel"].as_str().unwrap()).collect();
    assert_eq!(kernels, EXPECTED_KERNELS);
    let symbols = manifest_symbols(&json);

    for (target, cpu) in [("amdgcn-amd-amdhsa", Some("gfx90a")), ("nvptx64-nvidia-cuda", None)] {
        for opt_level in ["0", "3"] {
            let dir = cwd().join(format!("{target}-O{opt_level}"));
            rfs::create_dir_all(&dir);
            let offload = format!("Device={}", manifest.display());
            device_pass_of(&offload, "devlib.rs", target, cpu, opt_level, &dir);
            assert!(!dir.join("host.out").exists(), "{target}: the dependency wrote an image");
            device_pass_of(&offload, "corpus.rs", target, cpu, opt_level, &dir);
            check_image(&dir.join("host.out"), target, opt_level, &symbols);
        }
        // The base pipeline, side by side: one image per crate, the root's written last.
        let base_dir = cwd().join(format!("{target}-base"));
        rfs::create_dir_all(&base_dir);
        device_pass_of("Device", "devlib.rs", target, cpu, "3", &base_dir);
        device_pass_of("Device", "corpus.rs", target, cpu, "3", &base_dir);
        match vendor_result(&base_dir.join("host.out"), target) {
            Ok(report) => println!("{target} base -O3: linked, {} kernels", report.kernels.len()),
            Err(complaint) => {
                let first = complaint.lines().find(|l| l.contains("ndefined")).unwrap_or("");
                println!("{target} base -O3: refused: {first}");
            }
        }
    }
}

/// The device pass (`-Zoffload=<offload>`) of `input` for `target`, as cargo runs it with the
/// flag in `RUSTFLAGS`: the dependency first, then the root, which builds the image. The bare
/// pass gets `--cfg offload_base`.
fn device_pass_of(
    offload: &str,
    input: &str,
    target: &str,
    cpu: Option<&str>,
    opt: &str,
    dir: &Path,
) {
    let crate_name = input.trim_end_matches(".rs");
    let mut rustc = device_pass(Some(target), cpu, offload);
    rustc
        .input(input)
        .crate_type(if crate_name == "devlib" { "rlib" } else { "lib" })
        .edition("2024")
        .metadata(&format!("{crate_name}-device"))
        .opt_level(opt)
        .out_dir(dir)
        .library_search_path(dir);
    if offload == "Device" {
        rustc.cfg("offload_base");
    }
    if crate_name != "devlib" {
        rustc.extern_("devlib", dir.join("libdevlib.rlib"));
    }
    rustc.run();
}

fn check_image(image: &Path, target: &str, opt: &str, symbols: &BTreeSet<String>) {
    let ir = image_ir(image, target);
    assert_eq!(&exported_functions(&ir), symbols, "{target} -O{opt}: the image's exports");
    let undefined = undefined_functions(&ir);
    assert!(undefined.is_empty(), "{target} -O{opt}: undefined functions {undefined:?}\n{ir}");
    let external_globals: Vec<&str> =
        ir.lines().filter(|l| l.starts_with('@') && l.contains(" external ")).collect();
    assert!(
        external_globals.is_empty(),
        "{target} -O{opt}: globals the image does not define: {external_globals:?}"
    );
    // At opt-level 0 LLVM keeps what the collector conservatively adds and nothing calls (the
    // fallback bodies of intrinsics that the backend implements itself).
    if opt != "0" {
        let unreached = unreached_functions(&ir);
        assert!(
            unreached.is_empty(),
            "{target} -O{opt}: functions no kernel reaches: {unreached:?}"
        );
    }
    let report = vendor_check(image, target);
    assert_eq!(&report.kernels, symbols, "{target} -O{opt}: the kernels the vendors' tools see");
    let defined = ir.lines().filter(|l| l.starts_with("define ")).count();
    println!("{target} -O{opt}: {defined} functions, {} kernels", symbols.len());
    for line in &report.resources {
        println!("{target} -O{opt}: {line}");
    }
}
