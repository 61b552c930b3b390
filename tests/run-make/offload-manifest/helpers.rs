//! Helpers shared by the offload-manifest run-make tests (`#[path]`-included by the others).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use run_make_support::llvm::llvm_bin_dir;
use run_make_support::serde_json::Value;
use run_make_support::{Rustc, cmd, env_var};

/// The `symbol` of every kernel of a manifest (parsed JSON).
#[allow(dead_code)] // not every test that includes these helpers reads manifests
pub fn manifest_symbols(manifest: &Value) -> BTreeSet<String> {
    manifest["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["symbol"].as_str().unwrap().to_string())
        .collect()
}

/// `rustc` with `-Zunstable-options`, which every `-Zoffload` mode requires.
pub fn rustc() -> Rustc {
    let mut r = run_make_support::rustc();
    r.arg("-Zunstable-options");
    r
}

/// The stage-1 sysroot's libraries for the GPU targets, which `./x.py build` keeps beside
/// bootstrap's sysroot (bootstrap's test run assembles a sysroot for the host only).
pub fn gpu_sysroot() -> PathBuf {
    let sysroot = PathBuf::from(env_var("BUILD_ROOT")).join("offload-gpu-sysroot");
    assert!(sysroot.exists(), "{} is missing: run `./x.py build`", sysroot.display());
    sysroot
}

/// An LLVM tool of the LLVM the compiler was built with. Debian puts the unversioned tools
/// beside FileCheck (`/usr/lib/llvm-<N>/bin`), while `LLVM_BIN_DIR` is where `llvm-config-<N>`
/// lives (`/usr/bin`, versioned names only).
pub fn llvm_tool(name: &str) -> PathBuf {
    let filecheck = PathBuf::from(env_var("LLVM_FILECHECK"));
    let beside_filecheck = filecheck.parent().unwrap().join(name);
    if beside_filecheck.exists() { beside_filecheck } else { llvm_bin_dir().join(name) }
}

/// The textual IR of the `target` bitcode inside the offload image `image` (`host.out`), as
/// the offload runtime will get it.
pub fn image_ir(image: &Path, target: &str) -> String {
    let bc = image.with_file_name("image.bc");
    cmd(llvm_tool("llvm-offload-binary"))
        .arg(image)
        .arg(format!("--image=file={},triple={target}", bc.display()))
        .run();
    cmd(llvm_tool("llvm-dis")).arg(&bc).arg("-o").arg("-").run().stdout_utf8()
}

/// The functions `ir` defines with a linkage visible outside the module.
pub fn exported_functions(ir: &str) -> BTreeSet<String> {
    ir.lines()
        .filter(|l| l.starts_with("define "))
        .filter(|l| !l.starts_with("define internal ") && !l.starts_with("define private "))
        .map(|l| l[l.find(" @").unwrap() + 2..].split('(').next().unwrap().to_string())
        .collect()
}

/// The functions `ir` declares without defining them, LLVM intrinsics aside.
pub fn undefined_functions(ir: &str) -> Vec<&str> {
    ir.lines().filter(|l| l.starts_with("declare ") && !l.contains("@llvm.")).collect()
}

/// The kernel symbols the host object `object` has offload entries for.
pub fn offload_entries(object: &Path) -> BTreeSet<String> {
    let nm = cmd(llvm_tool("llvm-nm")).arg(object).run().stdout_utf8();
    nm.lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter_map(|name| name.strip_prefix(".offloading.entry_name."))
        .map(str::to_string)
        .collect()
}
