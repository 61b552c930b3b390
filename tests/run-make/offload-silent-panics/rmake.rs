//! Panics that only reach a silent handler (patches 0037 and 0039): the device pass calls the
//! handler from `core`'s diverging panic functions directly, and from the blocks of other
//! functions that can only end in a panic (`f32::clamp`'s failed `assert!`), so that what
//! formats the messages, which such a handler never reads, is neither collected nor codegened.
//! Six kernels reach the panics that format the most (`panics.rs`). For each handler (none: the
//! image's trap; a `loop {}`; one that reads its `PanicInfo`) and both GPU targets, the image is
//! built at opt-level 0, where LLVM keeps what the collector gave it, and at 3: with a silent
//! handler it defines nothing of `core::fmt`, float formatting or the Unicode tables, and
//! `panic_bounds_check` and `f32::clamp` call the handler; with a handler that reads its
//! argument the formatting is still collected, `clamp`'s included (asserted at opt-level 0,
//! where LLVM removes none of it). A write through a pointer on the way to a panic stays
//! (`kept.rs`: the block that writes is not one that only ends in the handler).
//! Every image exports exactly the manifest's kernels, defines every function it calls, and
//! passes the vendors' tools.

//@ needs-offload
//@ needs-llvm-components: amdgpu nvptx
//@ only-x86_64

use std::path::{Path, PathBuf};

use run_make_support::offload::{
    exported_functions, host_metadata_pass, image_ir, manifest_device_pass, manifest_symbols,
    undefined_functions, vendor_check,
};
use run_make_support::serde_json::{self, Value};
use run_make_support::{cwd, rfs};

/// Parts of the (v0) symbols of what formats panic messages: `core::fmt::Formatter`'s methods,
/// integer and float formatting (`core::fmt::num`, `core::fmt::float`, `core::num::flt2dec`)
/// and the Unicode tables of `char`'s `Debug`. (`fmt::Arguments`' constructors, which a kernel
/// that panics with a message calls itself, are not among them.)
const FORMATTING: &[&str] = &["9Formatter", "3fmt3num", "3fmt5float", "7flt2dec", "7unicode"];

/// The GPU targets, with the CPU each is built for.
const TARGETS: [(&str, Option<&str>); 2] =
    [("amdgcn-amd-amdhsa", Some("gfx90a")), ("nvptx64-nvidia-cuda", None)];

fn main() {
    let manifest = metadata_of("panics");
    let json: Value = serde_json::from_str(&rfs::read_to_string(&manifest)).unwrap();
    let symbols = manifest_symbols(&json);
    assert_eq!(symbols.len(), 6, "the manifest's kernels: {symbols:?}");

    for (target, cpu) in TARGETS {
        for handler in ["none", "loop", "reads"] {
            for opt in ["0", "3"] {
                let dir = cwd().join(format!("{target}-{handler}-O{opt}"));
                let cfg = (handler != "none").then(|| format!("handler_{handler}"));
                device_pass_of("panics", &manifest, target, cpu, cfg.as_deref(), opt, &dir);
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
                        let clamp = function_calls(&ir, "3f32f5clamp", &what);
                        assert!(
                            clamp.iter().any(|call| call.contains("9panic_fmt")),
                            "{what}: `f32::clamp` no longer formats its message: {clamp:?}"
                        );
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
    kept_write();
}

/// `kept.rs`: at both opt-levels, on both targets, the image still stores `0x5eed` (24301)
/// through the kernel's pointer before the panic.
fn kept_write() {
    let manifest = metadata_of("kept");
    for (target, cpu) in TARGETS {
        for opt in ["0", "3"] {
            let dir = cwd().join(format!("kept-{target}-O{opt}"));
            device_pass_of("kept", &manifest, target, cpu, None, opt, &dir);
            let ir = image_ir(&dir.join("host.out"), target);
            assert!(
                ir.lines().any(|l| l.contains("store i32 24301, ptr")),
                "{target}, -O{opt}: the write before the panic is gone\n{ir}"
            );
        }
    }
}

/// The host metadata pass of `<name>.rs`: its manifest.
fn metadata_of(name: &str) -> PathBuf {
    let manifest = cwd().join(format!("{name}.manifest.json"));
    host_metadata_pass(&manifest)
        .input(format!("{name}.rs"))
        .crate_type("lib")
        .edition("2024")
        .run();
    manifest
}

/// The device pass of `<name>.rs` for `target`, into `dir`, with `--cfg cfg` if given (which
/// chooses the panic handler of `panics.rs`).
fn device_pass_of(
    name: &str,
    manifest: &Path,
    target: &str,
    cpu: Option<&str>,
    cfg: Option<&str>,
    opt: &str,
    dir: &Path,
) {
    rfs::create_dir_all(dir);
    let mut rustc = manifest_device_pass(Some(target), cpu, manifest);
    rustc.input(format!("{name}.rs")).crate_type("lib").edition("2024").opt_level(opt).out_dir(dir);
    if let Some(cfg) = cfg {
        rustc.cfg(cfg);
    }
    rustc.run();
}

/// At opt-level 0, `core::panicking::panic_bounds_check` is still a function of the image:
/// its body is one call of the panic handler (`rust_begin_unwind`); and `f32::clamp` (which
/// returns) calls nothing but the handler either, where its failed `assert!` formatted `f32`s.
fn assert_calls_handler(ir: &str, what: &str) {
    for function in ["panicking18panic_bounds_check", "3f32f5clamp"] {
        let calls = function_calls(ir, function, what);
        assert!(
            calls.len() == 1 && calls[0].contains("rust_begin_unwind"),
            "{what}: `{function}` calls {calls:?}"
        );
    }
}

/// The calls (but of LLVM's intrinsics) in the body of the function of `ir` whose symbol
/// contains `function`.
fn function_calls<'a>(ir: &'a str, function: &str, what: &str) -> Vec<&'a str> {
    let start = ir
        .match_indices("\ndefine ")
        .map(|(at, _)| at)
        .find(|&at| ir[at + 1..].lines().next().unwrap().contains(function))
        .unwrap_or_else(|| panic!("{what}: no `{function}` defined in the image\n{ir}"));
    let body = &ir[start..];
    let body = &body[..body.find("\n}").unwrap()];
    body.lines().filter(|l| l.contains("call ") && !l.contains("@llvm.")).collect()
}
