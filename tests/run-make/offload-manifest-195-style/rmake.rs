//! Kernels in the 1.95 style (host `extern "C"` declarations, GPU `#[no_mangle]
//! #[rustc_offload_kernel] extern "gpu-kernel"` definitions) through the manifest pipeline,
//! unchanged, as a `cdylib` with fat LTO: the host metadata pass records each launch by its
//! link name (launches from trait methods and from plain functions), with the crate whose host
//! build removed the definition by `cfg` (`defined_in`); the device pass roots
//! exactly the definitions of those names (the unlaunched one stays out), and the image passes
//! the GPU vendors' tools with exactly those kernels. The host pass accepts the image, and only
//! warns when an image lacks a declared kernel it launches. The base pipeline (bare
//! `-Zoffload=Device`) still compiles the same source, and its image holds every definition,
//! the unlaunched one included.

//@ needs-offload
//@ needs-llvm-components: amdgpu nvptx
//@ only-x86_64

use std::collections::BTreeSet;
use std::path::Path;

use run_make_support::offload::{
    check_manifest_format, exported_functions, host_metadata_pass, image_ir, manifest_symbols,
    passes, vendor_check,
};
use run_make_support::serde_json::{self, Value};
use run_make_support::{CompletedProcess, Rustc, cwd, rfs};

const LAUNCHED: &[&str] = &["suite_daxpy", "suite_dot", "suite_minmax", "suite_stencil3"];

fn cdylib(rustc: &mut Rustc) -> &mut Rustc {
    rustc
        .input("suite.rs")
        .crate_name("suite")
        .crate_type("cdylib")
        .edition("2024")
        .opt_level("3")
        .codegen_units(1)
        .arg("-Clto=fat")
        .arg("-Cpanic=abort")
}

/// The device pass of the cdylib for `target`, into `dir`, with `offload` (`Device` or
/// `Device=<manifest>`).
fn device_pass(target: &str, cpu: Option<&str>, offload: &str, dir: &Path) {
    rfs::create_dir_all(dir);
    let mut device = passes::device_pass(Some(target), cpu, offload);
    cdylib(&mut device).metadata("device").out_dir(dir);
    device.run();
}

/// The host pass of the cdylib into `dir` (emptied first), with the image `image`.
fn host_pass(dir: &Path, image: &Path) -> CompletedProcess {
    let _ = std::fs::remove_dir_all(dir);
    rfs::create_dir_all(dir);
    cdylib(&mut passes::host_pass(image)).metadata("host").out_dir(dir).run()
}

fn main() {
    let manifest = cwd().join("suite.manifest.json");
    cdylib(&mut host_metadata_pass(&manifest)).metadata("host").run();
    // Declared kernels (`link_name`) through the tools' manifest types, which must keep all of
    // their entries.
    check_manifest_format(&[&manifest]);
    let json: Value = serde_json::from_str(&rfs::read_to_string(&manifest)).unwrap();
    let entries = json["kernels"].as_array().unwrap();
    let link_names: Vec<&str> = entries.iter().map(|k| k["link_name"].as_str().unwrap()).collect();
    assert_eq!(link_names, LAUNCHED, "the manifest names declared kernels by their link names");
    for entry in entries {
        assert_eq!(entry["symbol"], entry["link_name"]);
        assert_eq!(entry["launched_by"], serde_json::json!(["suite"]));
        // The host build removed the `cfg`'d definitions: `suite` is where they are.
        assert_eq!(entry["defined_in"], serde_json::json!(["suite"]));
    }
    let symbols = manifest_symbols(&json);
    let launched: BTreeSet<String> = LAUNCHED.iter().map(|s| s.to_string()).collect();
    assert_eq!(symbols, launched);

    for (target, cpu) in [("amdgcn-amd-amdhsa", Some("gfx90a")), ("nvptx64-nvidia-cuda", None)] {
        // The manifest pipeline.
        let dir = cwd().join(target);
        device_pass(target, cpu, &format!("Device={}", manifest.display()), &dir);
        let image = dir.join("host.out");
        let ir = image_ir(&image, target);
        assert_eq!(exported_functions(&ir), launched, "{target}: the image's exports");
        assert!(
            !ir.contains("suite_never_launched"),
            "{target}: an unlaunched kernel is in the image"
        );
        assert_eq!(
            vendor_check(&image, target).kernels,
            launched,
            "{target}: the vendors' kernels"
        );

        // The host pass checks the image against its launches: this image defines them all.
        // An image without `suite_minmax` (from a manifest that lacks it; the cdylib's one
        // exported function launches it, the other launches are not reachable from its
        // exports) is a warning for declared kernels, which rustc 1.95 accepts: the cdylib is
        // still built.
        let host_dir = cwd().join(format!("{target}-host"));
        host_pass(&host_dir, &image).assert_stderr_not_contains("does not define");
        let mut partial = json.clone();
        partial["kernels"].as_array_mut().unwrap().retain(|k| k["link_name"] != "suite_minmax");
        let partial_manifest = cwd().join(format!("{target}-partial.json"));
        rfs::write(&partial_manifest, serde_json::to_string_pretty(&partial).unwrap());
        let partial_dir = cwd().join(format!("{target}-partial"));
        device_pass(target, cpu, &format!("Device={}", partial_manifest.display()), &partial_dir);
        let partial_image = partial_dir.join("host.out");
        let out = host_pass(&host_dir, &partial_image);
        // (`({target}, <arch>)`: the arch is the device pass's target CPU.)
        out.assert_stderr_contains(format!(
            "warning: the offload image `{}` ({target}, ",
            partial_image.display()
        ));
        out.assert_stderr_contains(
            "does not define `suite_minmax`, launched by the code being compiled",
        );
        out.assert_stderr_not_contains("suite_daxpy");
        assert!(host_dir.join("libsuite.so").exists(), "{target}: the warning stopped the build");

        // The base pipeline compiles the same source; its image keeps every kernel definition.
        let base_dir = cwd().join(format!("{target}-base"));
        device_pass(target, cpu, "Device", &base_dir);
        let base_ir = image_ir(&base_dir.join("host.out"), target);
        for kernel in LAUNCHED.iter().chain(&["suite_never_launched"]) {
            assert!(
                base_ir.contains(&format!("@{kernel}(")),
                "{target}: base image lacks {kernel}"
            );
        }
    }
}
