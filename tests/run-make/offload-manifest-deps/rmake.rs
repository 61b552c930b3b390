//! A two-crate graph through the offload passes (DESIGN S4, S9, S10): the root launches a
//! kernel of its dependency and a kernel of its own with the same name. The dependency's
//! device compilation (same `-Zoffload=Device=<manifest>` flag, as cargo passes RUSTFLAGS to
//! every crate) writes no image; the root's image exports exactly the two kernels, under two
//! distinct symbols, with the dependency's helper instantiated inside it. Every pass gets its
//! own `-C metadata`.

//@ needs-offload
//@ needs-llvm-components: amdgpu
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

const TARGET: &str = "amdgcn-amd-amdhsa";

fn main() {
    let manifest = cwd().join("root.manifest.json");
    let (host_dir, device_dir) = (cwd().join("host"), cwd().join("device"));
    rfs::create_dir_all(&host_dir);
    rfs::create_dir_all(&device_dir);

    // Host metadata pass of the root, on the host build of the dependency.
    rustc().input("dep.rs").crate_type("rlib").edition("2024").metadata("dep-host").out_dir(&host_dir).run();
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
    let symbols: BTreeSet<String> = json["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["symbol"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(symbols.len(), 2, "the two `fill` kernels share a symbol");

    // Device pass: the dependency first, with the same flag; it builds no image.
    rustc()
        .input("dep.rs")
        .crate_type("rlib")
        .edition("2024")
        .target(TARGET)
            .sysroot(gpu_sysroot())
        .target_cpu("gfx90a")
        .metadata("dep-device")
        .opt_level("3")
        .out_dir(&device_dir)
        .arg(format!("-Zoffload=Device={}", manifest.display()))
        .run();
    assert!(!device_dir.join("host.out").exists(), "a dependency wrote a device image");
    rustc()
        .input("root.rs")
        .crate_type("lib")
        .edition("2024")
        .target(TARGET)
            .sysroot(gpu_sysroot())
        .target_cpu("gfx90a")
        .metadata("root-device")
        .opt_level("3")
        .library_search_path(&device_dir)
        .extern_("dep", device_dir.join("libdep.rlib"))
        .out_dir(&device_dir)
        .arg(format!("-Zoffload=Device={}", manifest.display()))
        .run();
    let image = device_dir.join("host.out");
    let bc = device_dir.join("image.bc");
    cmd(llvm_tool("llvm-offload-binary"))
        .arg(&image)
        .arg(format!("--image=file={},triple={TARGET}", bc.display()))
        .run();
    let ir = cmd(llvm_tool("llvm-dis")).arg(&bc).arg("-o").arg("-").run().stdout_utf8();
    let exported: BTreeSet<String> = ir
        .lines()
        .filter(|l| l.starts_with("define ") && !l.starts_with("define internal ") && !l.starts_with("define private "))
        .map(|l| l[l.find(" @").unwrap() + 2..].split('(').next().unwrap().to_string())
        .collect();
    assert_eq!(exported, symbols);
    assert!(!ir.contains("unreached_dep_function"), "an unreached dependency function is in the image");
    // Everything the kernels call (the dependency's `smooth`, core's `clamp`) is instantiated
    // in the image: nothing is left to resolve but LLVM intrinsics.
    let external: Vec<&str> =
        ir.lines().filter(|l| l.starts_with("declare ") && !l.contains("@llvm.")).collect();
    assert!(external.is_empty(), "the image leaves functions undefined: {external:?}");

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
    let nm = cmd(llvm_tool("llvm-nm")).arg(host_dir.join("host.o")).run().stdout_utf8();
    let entries: BTreeSet<String> = nm
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter_map(|name| name.strip_prefix(".offloading.entry_name."))
        .map(str::to_string)
        .collect();
    assert_eq!(entries, symbols);
}
