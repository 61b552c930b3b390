//! The three offload passes on one crate, for both GPU targets (scenarios S1-S3, S7-S10):
//! the host metadata pass records exactly the launched kernel instances, generic ones
//! included; the device pass defines exactly those kernels (and internal helpers they reach,
//! nothing exported, a `#[no_mangle]` helper hidden, no unlaunched kernel, no function that no
//! kernel reaches), and the GPU vendors' tools accept the image with exactly those kernels; the
//! host pass launches them under the symbols the device pass defined. Host and device passes
//! get different `-C metadata`, as cargo gives.

//@ needs-offload
//@ needs-llvm-components: amdgpu nvptx
//@ only-x86_64

use std::collections::BTreeSet;

use run_make_support::offload::{
    check_manifest_format, exported_functions, gpu_sysroot, image_ir, offload_entries, rustc,
    undefined_functions, unreached_functions, vendor_check,
};
use run_make_support::serde_json::{self, Value};
use run_make_support::{cwd, rfs};

/// The kernel instances `kernels.rs` launches, as the manifest prints them.
const EXPECTED_KERNELS: &[&str] = &[
    "kernels::a::fill",
    "kernels::b::fill",
    "kernels::clamp_abs",
    "kernels::mix",
    "kernels::negate",
    "kernels::scale::<f32>",
    "kernels::scale::<f64>",
    "kernels::scale::<u32>",
];

fn main() {
    let manifest = cwd().join("kernels.manifest.json");

    // Host metadata pass, at opt-level 3 (where `launch_negate` is cross-crate inlinable).
    rustc()
        .input("kernels.rs")
        .crate_name("kernels")
        .crate_type("lib")
        .edition("2024")
        .opt_level("3")
        .metadata("host-side")
        .arg(format!("-Zoffload=HostMetadata={}", manifest.display()))
        .run();
    // The tools (`cargo offload`, the printer, the fuzzer) read it with their own types, which
    // must keep all of it.
    check_manifest_format(&[&manifest]);
    let text = rfs::read_to_string(&manifest);
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["magic"], "rustc-offload-manifest");
    assert_eq!(json["format_version"], 5);
    // The compiler's identity: the upstream commit and the fingerprint of the fork's sources.
    let identity = json["rustc_commit"].as_str().unwrap();
    let (commit, fork) = identity.split_once("+fork.").expect("no fork fingerprint");
    assert_eq!(commit.len(), 40, "{identity}");
    assert!(fork.len() == 16 && fork.chars().all(|c| c.is_ascii_hexdigit()), "{identity}");
    assert_eq!(json["crate"], "kernels");
    let entries = json["kernels"].as_array().unwrap();
    let kernels: Vec<&str> = entries.iter().map(|k| k["kernel"].as_str().unwrap()).collect();
    assert_eq!(kernels, EXPECTED_KERNELS);
    let symbols: BTreeSet<String> =
        entries.iter().map(|k| k["symbol"].as_str().unwrap().to_string()).collect();
    assert_eq!(symbols.len(), EXPECTED_KERNELS.len(), "two kernel instances share a symbol");
    for entry in entries {
        assert_eq!(entry["launched_by"], serde_json::json!(["kernels"]));
        assert!(entry["symbol"].as_str().unwrap().starts_with("_offload_kernel_"));
    }
    // Deterministic: the same input gives the same bytes.
    let again = cwd().join("again.manifest.json");
    rustc()
        .input("kernels.rs")
        .crate_name("kernels")
        .crate_type("lib")
        .edition("2024")
        .metadata("host-side")
        .arg(format!("-Zoffload=HostMetadata={}", again.display()))
        .run();
    assert_eq!(rfs::read(&again), rfs::read(&manifest));
    let exports = symbols.clone();

    // At opt-level 0, where generic instances are shared with downstream crates, the image
    // still exports only the kernels.
    let o0 = cwd().join("O0");
    rfs::create_dir_all(&o0);
    rustc()
        .input("kernels.rs")
        .crate_name("kernels")
        .crate_type("lib")
        .edition("2024")
        .target("amdgcn-amd-amdhsa")
        .target_cpu("gfx90a")
        .sysroot(gpu_sysroot())
        .metadata("device-side")
        .opt_level("0")
        .out_dir(&o0)
        .arg(format!("-Zoffload=Device={}", manifest.display()))
        .run();
    let ir = image_ir(&o0.join("host.out"), "amdgcn-amd-amdhsa");
    assert_eq!(
        exported_functions(&ir),
        exports,
        "opt-level 0: the image must export the kernels and no more"
    );
    assert_eq!(vendor_check(&o0.join("host.out"), "amdgcn-amd-amdhsa").kernels, symbols);
    // The entry of a generic kernel's instance calls the instance, an internal function of its
    // own (the shape of a 1.95-style wrapper, which the optimizer simplifies before inlining it;
    // at opt-level 0 nothing inlines it); a non-generic kernel's body is its entry's.
    for entry in entries {
        let symbol = entry["symbol"].as_str().unwrap();
        let generic = entry["kernel"].as_str().unwrap().contains("::<");
        let instance = format!("define internal void @{symbol}.instance(");
        assert_eq!(ir.contains(&instance), generic, "opt-level 0: {symbol}'s instance:\n{ir}");
        let call = format!("call void @{symbol}.instance(");
        assert_eq!(ir.contains(&call), generic, "opt-level 0: {symbol}'s entry:\n{ir}");
    }

    for (target, cpu, kernel_cc) in [
        ("amdgcn-amd-amdhsa", Some("gfx90a"), "amdgpu_kernel"),
        ("nvptx64-nvidia-cuda", None, "ptx_kernel"),
    ] {
        let dir = cwd().join(target);
        rfs::create_dir_all(&dir);
        let mut device = rustc();
        device
            .input("kernels.rs")
            .crate_name("kernels")
            .crate_type("lib")
            .edition("2024")
            .target(target)
            .sysroot(gpu_sysroot())
            .metadata("device-side")
            .opt_level("3")
            .out_dir(&dir)
            .emit("link,dep-info")
            .arg(format!("-Zoffload=Device={}", manifest.display()));
        if let Some(cpu) = cpu {
            device.target_cpu(cpu);
        }
        device.run();
        // The image depends on the manifest: a build tool that reads the dep-info rebuilds the
        // image when the host metadata pass rewrites it.
        let dep_info = rfs::read_to_string(dir.join("kernels.d"));
        assert!(
            dep_info.contains(&manifest.display().to_string()),
            "{target}: the device pass's dep-info does not list the manifest:\n{dep_info}"
        );

        // The image's bitcode, as the offload runtime will get it.
        let ir = image_ir(&dir.join("host.out"), target);
        let image = dir.join("host.out");
        let defined = ir.lines().filter(|l| l.starts_with("define ")).count();
        // `mix`'s public and `#[inline(never)]` generic helpers, which a library exports, are
        // internal in the image, and its `#[no_mangle]` helper is hidden: only the offload
        // runtime links against the image.
        assert_eq!(
            exported_functions(&ir),
            exports,
            "{target}: the image must export the kernels and no more"
        );
        // Everything else the image defines is reached from a kernel; the `#[no_mangle]`
        // helper, whose symbol its author bound, stays even where `mix` no longer calls it.
        let unreached = unreached_functions(&ir);
        assert!(
            unreached.iter().all(|f| f == "offload_test_unmangled_step"),
            "{target}: functions that no kernel reaches: {unreached:?}\n{ir}"
        );
        for symbol in &symbols {
            assert!(
                ir.contains(&format!("define {kernel_cc} void @{symbol}(")),
                "{target}: {symbol} is not a {kernel_cc}:\n{ir}"
            );
        }
        for absent in ["never_launched", "unreached_public_helper", "launch_scale", "run_all"] {
            assert!(!ir.contains(absent), "{target}: {absent} must not be in the device image");
        }
        // The helpers the kernels reach (core's `abs`, `min`, iterators) are instantiated in
        // the image: nothing is left to resolve but LLVM intrinsics.
        let external = undefined_functions(&ir);
        assert!(
            external.is_empty(),
            "{target}: the image leaves functions undefined: {external:?}"
        );
        // The vendors' tools accept the image, nothing undefined, with exactly the kernels.
        let report = vendor_check(&image, target);
        assert_eq!(report.kernels, symbols, "{target}: the kernels of the linked code object");
        println!("{target}: {defined} functions defined, {} kernels", symbols.len());
        for line in &report.resources {
            println!("{target}: {line}");
        }

        // Host pass: launches under the device pass's symbols.
        let host_dir = cwd().join(format!("host-{target}"));
        rfs::create_dir_all(&host_dir);
        rustc()
            .input("kernels.rs")
            .crate_name("kernels")
            .crate_type("lib")
            .edition("2024")
            .metadata("host-side")
            .opt_level("3")
            .codegen_units(1)
            .arg("-Clto=fat")
            .out_dir(&host_dir)
            .arg(format!("-Zoffload=Host={}", image.display()))
            .run();
        // Each launched kernel gets one offload entry, named by its symbol; nothing else does.
        let entries = offload_entries(&host_dir.join("host.o"));
        // `launch_negate` is cross-crate inlinable at opt-level 3: its callers codegen it, and
        // with it the launch of `negate`. Everything else is launched from this crate.
        let negate = entries_of(&json, "kernels::negate");
        let launched_here: BTreeSet<String> =
            symbols.iter().filter(|s| **s != negate).cloned().collect();
        assert_eq!(entries, launched_here, "{target}: the host object's offload entries");
    }
}

/// The symbol the manifest gives the kernel instance `kernel`.
fn entries_of(json: &Value, kernel: &str) -> String {
    json["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kernel"] == kernel)
        .map(|k| k["symbol"].as_str().unwrap().to_string())
        .unwrap()
}
