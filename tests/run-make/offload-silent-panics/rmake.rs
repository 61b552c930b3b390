//! Panics that only reach a silent handler (patch 0033): the device pass calls the handler
//! from `core`'s diverging panic functions directly, so that what formats the messages, which
//! such a handler never reads, is neither collected nor codegened. Five kernels reach the
//! panics that format the most (`panics.rs`). For each handler (none: the image's trap; a
//! `loop {}`; one that reads its `PanicInfo`) and both GPU targets, the image is built at
//! opt-level 0, where LLVM keeps what the collector gave it, and at 3: with a silent handler
//! it defines nothing of `core::fmt`, float formatting or the Unicode tables, and
//! `panic_bounds_check` calls the handler; with a handler that reads its argument the
//! formatting is still collected (asserted at opt-level 0, where LLVM removes none of it).
//! Every image exports exactly the manifest's kernels, defines every function it calls, and
//! passes the vendors' tools.

//@ needs-offload
//@ needs-llvm-components: amdgpu nvptx
//@ only-x86_64

use std::path::Path;

use run_make_support::serde_json::{self, Value};
use run_make_support::{cwd, rfs};

#[path = "../offload-manifest/helpers.rs"]
mod helpers;
use helpers::{
    exported_functions, gpu_sysroot, image_ir, manifest_symbols, rustc, undefined_functions,
    vendor_check,
};

/// Parts of the (v0) symbols of what formats panic messages: `core::fmt::Formatter`'s methods,
/// integer and float formatting (`core::fmt::num`, `core::fmt::float`, `core::num::flt2dec`)
/// and the Unicode tables of `char`'s `Debug`. (`fmt::Arguments`' constructors, which a kernel
/// that panics with a message calls itself, are not among them.)
const FORMATTING: &[&str] = &["9Formatter", "3fmt3num", "3fmt5float", "7flt2dec", "7unicode"];

fn main() {
    let manifest = cwd().join("panics.manifest.json");
    rustc()
        .input("panics.rs")
        .crate_type("lib")
        .edition("2024")
        .arg(format!("-Zoffload=HostMetadata={}", manifest.display()))
        .run();
    let json: Value = serde_json::from_str(&rfs::read_to_string(&manifest)).unwrap();
    let symbols = manifest_symbols(&json);
    assert_eq!(symbols.len(), 5, "the manifest's kernels: {symbols:?}");

    for (target, cpu) in [("amdgcn-amd-amdhsa", Some("gfx90a")), ("nvptx64-nvidia-cuda", None)] {
        for handler in ["none", "loop", "reads"] {
            for opt in ["0", "3"] {
                let dir = cwd().join(format!("{target}-{handler}-O{opt}"));
                rfs::create_dir_all(&dir);
                device_pass(&manifest, target, cpu, handler, opt, &dir);
                let ir = image_ir(&dir.join("host.out"), target);
                let what = format!("{target}, handler {handler}, -O{opt}");
                assert_eq!(exported_functions(&ir), symbols, "{what}: the image's exports");
                let undefined = undefined_functions(&ir);
                assert!(undefined.is_empty(), "{what}: undefined functions {undefined:?}");
                let defined: Vec<&str> = ir.lines().filter(|l| l.starts_with("define ")).collect();
                let formatting = defined
                    .iter()
                    .filter(|l| FORMATTING.iter().any(|part| l.contains(part)))
                    .count();
                println!("{what}: {} functions, {formatting} of them formatting", defined.len());
                if handler == "reads" {
                    // At opt-level 3 LLVM may still find part of it dead; at 0 it keeps all.
                    if opt == "0" {
                        assert!(formatting > 0, "{what}: the messages' formatting is gone");
                    }
                } else {
                    assert_eq!(formatting, 0, "{what}: formatting the handler never reads");
                    if opt == "0" {
                        assert_calls_handler(&ir, &what);
                    }
                }
                let report = vendor_check(&dir.join("host.out"), target);
                assert_eq!(report.kernels, symbols, "{what}: the kernels the vendors' tools see");
            }
        }
    }
}

/// The device pass of `panics.rs` for `target` with the handler `handler`.
fn device_pass(
    manifest: &Path,
    target: &str,
    cpu: Option<&str>,
    handler: &str,
    opt: &str,
    dir: &Path,
) {
    let mut rustc = rustc();
    rustc
        .input("panics.rs")
        .crate_type("lib")
        .edition("2024")
        .target(target)
        .sysroot(gpu_sysroot())
        .opt_level(opt)
        .out_dir(dir)
        .arg(format!("-Zoffload=Device={}", manifest.display()));
    if handler != "none" {
        rustc.cfg(&format!("handler_{handler}"));
    }
    if let Some(cpu) = cpu {
        rustc.target_cpu(cpu);
    }
    rustc.run();
}

/// At opt-level 0, `core::panicking::panic_bounds_check` is still a function of the image:
/// its body is one call of the panic handler (`rust_begin_unwind`).
fn assert_calls_handler(ir: &str, what: &str) {
    let start = ir
        .match_indices("\ndefine ")
        .map(|(at, _)| at)
        .find(|&at| ir[at + 1..].lines().next().unwrap().contains("panicking18panic_bounds_check"))
        .unwrap_or_else(|| panic!("{what}: no `panic_bounds_check` defined in the image\n{ir}"));
    let body = &ir[start..];
    let body = &body[..body.find("\n}").unwrap()];
    let calls: Vec<&str> = body.lines().filter(|l| l.contains("call ")).collect();
    assert!(
        calls.len() == 1 && calls[0].contains("rust_begin_unwind"),
        "{what}: `panic_bounds_check` calls {calls:?}"
    );
}
