//! A two-crate graph through the offload passes (scenarios S4, S9, S10): the root launches a
//! kernel of its dependency and a kernel of its own with the same name. The dependency's
//! device compilation (same `-Zoffload=Device=<manifest>` flag, as cargo passes RUSTFLAGS to
//! every crate) writes no image; the root's image exports exactly the two kernels, under two
//! distinct symbols, with the dependency's helper instantiated inside it. Every pass gets its
//! own `-C metadata`. The root's rlib holds the image's bitcode as its object, not machine code
//! (patch 0040), on amdgcn and on the CPU device, unless objects are asked for; the image is the
//! same either way. Its metadata, encoded after codegen starts (patch 0041), is still written
//! and announced to cargo (`--json=artifacts`) before the rlib.

//@ needs-offload
//@ needs-llvm-components: amdgpu
//@ only-x86_64

use std::path::Path;

use run_make_support::object::read::archive::ArchiveFile;
use run_make_support::offload::{
    exported_functions, image_ir, manifest_device_pass, manifest_symbols, offload_entries, rustc,
    undefined_functions, vendor_check,
};
use run_make_support::serde_json::{self, Value};
use run_make_support::{Rustc, cwd, rfs};

const TARGET: &str = "amdgcn-amd-amdhsa";

fn main() {
    let manifest = cwd().join("root.manifest.json");
    let (host_dir, device_dir) = (cwd().join("host"), cwd().join("device"));
    rfs::create_dir_all(&host_dir);
    rfs::create_dir_all(&device_dir);

    // Host metadata pass of the root, on the host build of the dependency.
    rustc()
        .input("dep.rs")
        .crate_type("rlib")
        .edition("2024")
        .metadata("dep-host")
        .out_dir(&host_dir)
        .run();
    rustc()
        .input("root.rs")
        .crate_type("lib")
        .edition("2024")
        .metadata("root-host")
        .library_search_path(&host_dir)
        .extern_("dep", host_dir.join("libdep.rlib"))
        .arg(format!("-Zoffload=HostMetadata={}", manifest.display()))
        .run();
    let json: Value = serde_json::from_str(&rfs::read_to_string(&manifest)).unwrap();
    let kernels: Vec<&str> =
        json["kernels"].as_array().unwrap().iter().map(|k| k["kernel"].as_str().unwrap()).collect();
    assert_eq!(kernels, ["dep::fill", "root::fill"]);
    let symbols = manifest_symbols(&json);
    assert_eq!(symbols.len(), 2, "the two `fill` kernels share a symbol");

    // Device pass: the dependency first, with the same flag; it builds no image.
    dep_device_pass(Some(TARGET), &manifest, &device_dir).run();
    assert!(!device_dir.join("host.out").exists(), "a dependency wrote a device image");

    // The MIR that the device pass encodes is fully optimized (GVN runs) in every crate: in the
    // crates that the manifest names (`dep` defines `dep::fill`) and in a crate that only lends
    // functions, whose MIR the kernels inline. (With `-Zmir-opt-level=1` for the lending
    // crates, `core` above all, four of the benchmark's kernels ran up to 2.2 times slower on a
    // GPU.) `-Zmir-opt-level` given explicitly wins. (`lender` is `dep.rs` under another crate
    // name, compiled to metadata only, as its device pass would refuse a crate outside the
    // manifest's graph at codegen. The GVN dumps show that the dump is where this looks.)
    for (krate, level, gvn_expected) in [
        ("dep", None, true),
        ("dep", Some("1"), false),
        ("lender", None, true),
        ("lender", Some("1"), false),
    ] {
        let name = format!("{krate}-{}", level.unwrap_or("default"));
        let dump = cwd().join(format!("mir-{name}"));
        let mut dep = dep_device_pass(Some(TARGET), &manifest, &cwd().join(format!("out-{name}")));
        dep.crate_name(krate)
            .arg("-Zdump-mir=GVN")
            .arg(format!("-Zdump-mir-dir={}", dump.display()));
        if krate == "lender" {
            dep.emit("metadata");
        }
        if let Some(level) = level {
            dep.arg(format!("-Zmir-opt-level={level}"));
        }
        dep.run();
        let gvn_dumps = std::fs::read_dir(&dump)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().contains(".GVN."))
                    .count()
            })
            .unwrap_or(0);
        assert_eq!(gvn_dumps > 0, gvn_expected, "{name}: {gvn_dumps} GVN dumps of the crate's MIR");
    }
    let artifacts = root_device_pass(Some(TARGET), &manifest, &device_dir, &device_dir)
        .emit("dep-info,metadata,link")
        .error_format("json")
        .json("artifacts")
        .run()
        .stderr_utf8();
    // What cargo waits for: the rmeta, then the rlib, each announced once it is written.
    let announced: Vec<String> = artifacts
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|v| v["$message_type"] == "artifact" && v["emit"] != "dep-info")
        .map(|v| {
            let file = Path::new(v["artifact"].as_str().unwrap()).file_name().unwrap();
            format!("{} {}", v["emit"].as_str().unwrap(), file.to_string_lossy())
        })
        .collect();
    assert_eq!(announced, ["metadata libroot.rmeta", "link libroot.rlib"]);
    assert!(!rfs::read(device_dir.join("libroot.rmeta")).is_empty());
    let image = device_dir.join("host.out");
    // The rlib's object is the image's optimized bitcode: the amdgcn machine code that it held
    // before patch 0040 was read by nothing. Objects asked for (`--emit=obj`) are machine code,
    // in the rlib too, and the image does not change. The dependency codegens nothing and
    // keeps machine code (an empty module).
    assert_eq!(rlib_objects(&device_dir.join("libroot.rlib")), ["bitcode"]);
    assert_eq!(rlib_objects(&device_dir.join("libdep.rlib")), ["ELF"]);
    let with_objects = cwd().join("device-emit-obj");
    rfs::create_dir_all(&with_objects);
    root_device_pass(Some(TARGET), &manifest, &device_dir, &with_objects).emit("link,obj").run();
    assert_eq!(rlib_objects(&with_objects.join("libroot.rlib")), ["ELF"]);
    assert_eq!(object_kind(&rfs::read(with_objects.join("root.o"))), "ELF");
    assert!(
        rfs::read(with_objects.join("host.out")) == rfs::read(&image),
        "the image changed with the kind of the rlib's objects"
    );
    // The CPU device (the host's target), whose objects were x86-64 machine code.
    let cpu_device = cwd().join("cpu-device");
    rfs::create_dir_all(&cpu_device);
    dep_device_pass(None, &manifest, &cpu_device).run();
    root_device_pass(None, &manifest, &cpu_device, &cpu_device).run();
    assert!(cpu_device.join("host.out").exists());
    assert_eq!(rlib_objects(&cpu_device.join("libroot.rlib")), ["bitcode"]);
    assert_eq!(rlib_objects(&cpu_device.join("libdep.rlib")), ["ELF"]);
    let ir = image_ir(&image, TARGET);
    let exported = exported_functions(&ir);
    assert_eq!(exported, symbols);
    assert!(
        !ir.contains("unreached_dep_function"),
        "an unreached dependency function is in the image"
    );
    // Everything the kernels call (the dependency's `smooth`, core's `clamp`) is instantiated
    // in the image: nothing is left to resolve but LLVM intrinsics.
    let external = undefined_functions(&ir);
    assert!(external.is_empty(), "the image leaves functions undefined: {external:?}");
    assert_eq!(vendor_check(&image, TARGET).kernels, symbols, "the vendors' tools' kernels");

    // Host pass.
    rustc()
        .input("root.rs")
        .crate_type("lib")
        .edition("2024")
        .metadata("root-host")
        .opt_level("3")
        .codegen_units(1)
        .arg("-Clto=fat")
        .library_search_path(&host_dir)
        .extern_("dep", host_dir.join("libdep.rlib"))
        .out_dir(&host_dir)
        .arg(format!("-Zoffload=Host={}", image.display()))
        .run();
    let entries = offload_entries(&host_dir.join("host.o"));
    assert_eq!(entries, symbols);
}

/// The device pass of the root for `target` (`None`: the CPU device, the host's target), on
/// the dependency's device build in `device_dir`, writing into `out_dir`.
fn root_device_pass(
    target: Option<&str>,
    manifest: &Path,
    device_dir: &Path,
    out_dir: &Path,
) -> Rustc {
    let mut root = device_pass("root.rs", target, manifest, out_dir);
    root.crate_type("lib")
        .metadata("root-device")
        .library_search_path(device_dir)
        .extern_("dep", device_dir.join("libdep.rlib"));
    root
}

/// What each object file of the rlib `rlib` is (every member but the crate metadata), in
/// archive order: see [`object_kind`].
fn rlib_objects(rlib: &Path) -> Vec<&'static str> {
    let data = rfs::read(rlib);
    let archive = ArchiveFile::parse(&*data).unwrap();
    archive
        .members()
        .map(|member| member.unwrap())
        .filter(|member| member.name() != b"lib.rmeta")
        .map(|member| object_kind(member.data(&*data).unwrap()))
        .collect()
}

/// `"bitcode"` for LLVM bitcode, `"ELF"` for an ELF object (machine code), by magic number.
fn object_kind(bytes: &[u8]) -> &'static str {
    if bytes.starts_with(b"BC\xC0\xDE") {
        "bitcode"
    } else if bytes.starts_with(b"\x7fELF") {
        "ELF"
    } else {
        "neither bitcode nor ELF"
    }
}

/// The device pass of the dependency for `target` (`None`: the CPU device), as cargo would run
/// it with the root's manifest in `RUSTFLAGS`, writing into `out_dir`.
fn dep_device_pass(target: Option<&str>, manifest: &Path, out_dir: &Path) -> Rustc {
    let mut dep = device_pass("dep.rs", target, manifest, out_dir);
    dep.crate_type("rlib").metadata("dep-device");
    dep
}

/// A device pass of `input` with `manifest` at opt-level 3: for `target` (amdgcn, `gfx90a`,
/// the GPU sysroot's `core`) or, with `None`, for the CPU device (the host's target, with the
/// `core` of the toolchain's device sysroot, which has the CPU device's grid runner).
fn device_pass(input: &str, target: Option<&str>, manifest: &Path, out_dir: &Path) -> Rustc {
    let mut r = manifest_device_pass(target, target.map(|_| "gfx90a"), manifest);
    r.input(input).edition("2024").opt_level("3").out_dir(out_dir);
    r
}
