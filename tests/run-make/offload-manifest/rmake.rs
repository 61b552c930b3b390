//! The three offload passes on one crate, for both GPU targets (DESIGN S1-S3, S7-S10):
//! the host metadata pass records exactly the launched kernel instances, generic ones
//! included; the device pass defines exactly those kernels (and internal helpers they reach,
//! nothing public, no unlaunched kernel); the host pass launches them under the symbols the
//! device pass defined. Host and device passes get different `-C metadata`, as cargo gives.

//@ needs-offload
//@ needs-llvm-components: amdgpu nvptx
//@ only-x86_64

use std::collections::BTreeSet;

use run_make_support::serde_json::{self, Value};
use run_make_support::llvm::llvm_bin_dir;
use run_make_support::{Rustc, cmd, cwd, rfs};

/// `rustc` with `-Zunstable-options`, which every `-Zoffload` mode requires.

/// The stage-1 sysroot's libraries for the GPU targets, which `./x.py build` keeps beside
/// bootstrap's sysroot (bootstrap's test run assembles a sysroot for the host only).

/// An LLVM tool of the LLVM the compiler was built with. Debian puts the unversioned tools
/// beside FileCheck (`/usr/lib/llvm-<N>/bin`), while `LLVM_BIN_DIR` is where `llvm-config-<N>`
/// lives (`/usr/bin`, versioned names only).
fn llvm_tool(name: &str) -> std::path::PathBuf {
    let filecheck = std::path::PathBuf::from(run_make_support::env_var("LLVM_FILECHECK"));
    let beside_filecheck = filecheck.parent().unwrap().join(name);
    if beside_filecheck.exists() { beside_filecheck } else { llvm_bin_dir().join(name) }
}

fn gpu_sysroot() -> std::path::PathBuf {
    let sysroot = std::path::PathBuf::from(run_make_support::env_var("BUILD_ROOT")).join("offload-gpu-sysroot");
    assert!(sysroot.exists(), "{} is missing: run `./x.py build`", sysroot.display());
    sysroot
}

fn rustc() -> Rustc {
    let mut r = run_make_support::rustc();
    r.arg("-Zunstable-options");
    r
}

/// The kernel instances `kernels.rs` launches, as the manifest prints them.
const EXPECTED_KERNELS: &[&str] = &[
    "kernels::a::fill",
    "kernels::b::fill",
    "kernels::clamp_abs",
    "kernels::scale::<f32>",
    "kernels::scale::<f64>",
    "kernels::scale::<u32>",
];

fn main() {
    let manifest = cwd().join("kernels.manifest.json");

    // Host metadata pass.
    rustc()
        .input("kernels.rs")
        .crate_name("kernels")
        .crate_type("lib")
        .edition("2024")
        .metadata("host-side")
        .arg(format!("-Zoffload=HostMetadata={}", manifest.display()))
        .run();
    let text = rfs::read_to_string(&manifest);
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["magic"], "rustc-offload-manifest");
    assert_eq!(json["format_version"], 1);
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
            .arg(format!("-Zoffload=Device={}", manifest.display()));
        if let Some(cpu) = cpu {
            device.target_cpu(cpu);
        }
        device.run();

        // The image's bitcode, as the offload runtime will get it.
        let image = dir.join("host.out");
        let bc = dir.join("image.bc");
        cmd(llvm_tool("llvm-offload-binary"))
            .arg(&image)
            .arg(format!("--image=file={},triple={target}", bc.display()))
            .run();
        let ir = cmd(llvm_tool("llvm-dis")).arg(&bc).arg("-o").arg("-").run().stdout_utf8();
        let defined: Vec<&str> = ir.lines().filter(|l| l.starts_with("define ")).collect();
        let exported: BTreeSet<String> = defined
            .iter()
            .filter(|l| !l.starts_with("define internal ") && !l.starts_with("define private "))
            .map(|l| {
                let at = l.find(" @").unwrap() + 2;
                l[at..].split('(').next().unwrap().to_string()
            })
            .collect();
        assert_eq!(exported, symbols, "{target}: the image must export exactly the manifest's kernels");
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
        let external: Vec<&str> =
            ir.lines().filter(|l| l.starts_with("declare ") && !l.contains("@llvm.")).collect();
        assert!(external.is_empty(), "{target}: the image leaves functions undefined: {external:?}");
        println!("{target}: {} functions defined, {} kernels", defined.len(), symbols.len());

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
        let nm = cmd(llvm_tool("llvm-nm")).arg(host_dir.join("host.o")).run().stdout_utf8();
        let entries: BTreeSet<String> = nm
            .lines()
            .filter_map(|l| l.split_whitespace().last())
            .filter_map(|name| name.strip_prefix(".offloading.entry_name."))
            .map(str::to_string)
            .collect();
        assert_eq!(entries, symbols, "{target}: the host object's offload entries");
    }
}
