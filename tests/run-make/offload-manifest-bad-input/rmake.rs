//! Bad input to the offload passes (scenarios B1-B9, and what complete images need): each is one
//! clear diagnostic that names the file, kernel or flag, a non-zero exit, and never an ICE, an
//! empty device image or one that leaves a symbol undefined.

//@ needs-offload
//@ needs-llvm-components: amdgpu
//@ only-x86_64

use std::collections::BTreeSet;

use run_make_support::offload::{
    device_pass, exported_functions, gpu_sysroot, image_ir, rustc, vendor_check,
};
use run_make_support::serde_json::{self, Value};
use run_make_support::{Rustc, cwd, rfs};

const TARGET: &str = "amdgcn-amd-amdhsa";

fn host(input: &str) -> Rustc {
    let mut r = rustc();
    r.input(input).crate_type("lib").edition("2024");
    r
}

fn device(input: &str, manifest: &str) -> Rustc {
    let mut r = device_pass(Some(TARGET), Some("gfx90a"), &format!("Device={manifest}"));
    r.input(input).crate_type("lib").edition("2024");
    r
}

/// Runs `r`, which must fail with `expected` in its stderr and no ICE.
fn refused(r: &mut Rustc, expected: &str) {
    let out = r.run_fail();
    out.assert_stderr_contains(expected);
    out.assert_stderr_not_contains("internal compiler error");
    out.assert_stderr_not_contains("panicked");
}

fn main() {
    // A good manifest to start from.
    host("kernel.rs").arg("-Zoffload=HostMetadata=good.json").run();
    let good = rfs::read_to_string("good.json");

    // B1: no such file.
    refused(
        &mut device("kernel.rs", "missing.json"),
        "cannot read the offload manifest `missing.json`",
    );

    // B2: empty, truncated, corrupted.
    rfs::write("empty.json", "");
    refused(
        &mut device("kernel.rs", "empty.json"),
        "the offload manifest `empty.json` is damaged: the file is empty",
    );
    rfs::write("truncated.json", &good[..good.len() / 2]);
    refused(
        &mut device("kernel.rs", "truncated.json"),
        "the offload manifest `truncated.json` is damaged: it is not a complete manifest",
    );
    rfs::write("corrupted.json", good.replace("rustc-offload-manifest", "rustc-offload-manifesto"));
    refused(
        &mut device("kernel.rs", "corrupted.json"),
        "its `magic` field is missing or not `rustc-offload-manifest`",
    );

    // B3: another format version, another compiler.
    rfs::write("v1.json", good.replace("\"format_version\": 5", "\"format_version\": 1"));
    refused(
        &mut device("kernel.rs", "v1.json"),
        "was written by another compiler or format (format 1",
    );
    let commit = good.split("\"rustc_commit\": \"").nth(1).unwrap().split('"').next().unwrap();
    rfs::write(
        "other-rustc.json",
        good.replace(commit, "0000000000000000000000000000000000000000"),
    );
    refused(
        &mut device("kernel.rs", "other-rustc.json"),
        "compiler 0000000000000000000000000000000000000000",
    );

    // The host and the device lay out a kernel's parameter type differently (a field that
    // only the host target has): the runtime would copy 12 bytes into an 8-byte parameter.
    host("layout.rs").arg("-Zoffload=HostMetadata=layout.json").run();
    refused(
        &mut device("layout.rs", "layout.json"),
        "disagree on the layout of kernel `layout::affine`: parameter 2 (`p`: `Params`) is 12 \
         bytes aligned to 4 on the host and 8 bytes aligned to 4 here",
    );

    // A stale manifest whose generic argument changed kind: `W<T>` became `W<'a>`.
    host("kind.rs").arg("-Zoffload=HostMetadata=kind.json").run();
    let mut kind = device("kind.rs", "kind.json");
    kind.cfg("lifetime");
    refused(
        &mut kind,
        "the offload manifest `kind.json` is stale: kernel `kind::k::<kind::W<u32>>`",
    );

    // A stale manifest whose ADT argument no longer satisfies the ADT's bounds: refused before
    // the type is built.
    host("bound.rs").arg("-Zoffload=HostMetadata=bound.json").run();
    let mut bound = device("bound.rs", "bound.json");
    bound.cfg("stricter");
    refused(
        &mut bound,
        "the offload manifest `bound.json` is stale: kernel `bound::k::<bound::W<u32>>`: a generic \
         argument names a type that no longer exists or no longer has that shape",
    );

    // B4: the kernel was renamed since the host metadata pass.
    let mut stale = device("kernel.rs", "good.json");
    stale.cfg("renamed");
    refused(
        &mut stale,
        "the offload manifest `good.json` is stale: kernel `kernel::double`: no such item",
    );

    // B5: the manifest of another crate.
    let mut other = device("kernel.rs", "good.json");
    other.crate_name("unrelated");
    refused(
        &mut other,
        "was made for the crate `kernel`, whose crate graph has no crate `unrelated`",
    );

    // B6: an unwritable manifest path.
    refused(
        host("kernel.rs").arg("-Zoffload=HostMetadata=no-such-dir/out.json"),
        "cannot write the offload manifest `no-such-dir/out.json`",
    );

    // B6, continued: a manifest path that would destroy what the user has: the crate's own
    // source, a folder, a compiler output's name. The source stays as it was.
    let source = rfs::read("kernel.rs");
    refused(
        host("kernel.rs").arg("-Zoffload=HostMetadata=kernel.rs"),
        "cannot write the offload manifest `kernel.rs` (`-Zoffload=HostMetadata`): the name is \
         that of a compiler input or output",
    );
    assert_eq!(rfs::read("kernel.rs"), source, "the host metadata pass overwrote the source");
    rfs::copy("kernel.rs", "source.json");
    refused(
        host("source.json").arg("-Zoffload=HostMetadata=source.json"),
        "it is the crate's source file",
    );
    assert_eq!(rfs::read("source.json"), source, "the host metadata pass overwrote the source");
    rfs::create_dir("a-folder");
    refused(
        host("kernel.rs").arg("-Zoffload=HostMetadata=a-folder"),
        "it exists and is not a regular file",
    );
    refused(
        host("kernel.rs").arg("-Zoffload=HostMetadata=libkernel.rlib"),
        "the name is that of a compiler input or output",
    );

    // The host metadata pass on a GPU target, or together with another pass.
    let mut on_gpu = rustc();
    on_gpu
        .input("kernel.rs")
        .crate_type("lib")
        .edition("2024")
        .target(TARGET)
        .sysroot(gpu_sysroot());
    on_gpu.target_cpu("gfx90a").arg("-Zoffload=HostMetadata=gpu.json");
    refused(
        &mut on_gpu,
        "is the host metadata pass: it runs for the host target (not `amdgcn-amd-amdhsa`), alone \
         or beside `-Zoffload=Host=<image>`",
    );
    refused(
        host("kernel.rs").arg("-Zoffload=HostMetadata=both.json,Test"),
        "is the host metadata pass: it runs for the host target",
    );
    // Beside `Host=<image>` the pass is part of the host build: the crate compiles and its
    // manifest is written; the image, which the device pass builds from that manifest
    // afterwards, is not read.
    host("kernel.rs").arg("-Zoffload=HostMetadata=beside.json,Host=/nonexistent/host.out").run();
    assert_eq!(rfs::read_to_string("beside.json"), good, "the manifest beside `Host=<image>`");

    // A kernel that device code calls directly: it is an entry point of the image, with the
    // GPU kernel calling convention, so the call would be wrong.
    let mut calls = host("more.rs");
    calls.cfg("calls").arg("-Zoffload=HostMetadata=calls.json").run();
    let mut calls = device("more.rs", "calls.json");
    calls.cfg("calls");
    refused(&mut calls, "the offload kernel `callee` is used by device code (`fn caller`)");

    // Two kernels whose identity text coincides (`k` in module `m` and in function `m`) no
    // longer share a symbol, since a symbol also hashes the kernel's definition: both are
    // recorded, under two symbols, and both are in the image.
    host("more.rs").cfg("clash").arg("-Zoffload=HostMetadata=clash.json").run();
    let clash: Value = serde_json::from_str(&rfs::read_to_string("clash.json")).unwrap();
    let symbols: BTreeSet<&str> = clash["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["kernel"] == "more::m::k")
        .map(|k| k["symbol"].as_str().unwrap())
        .collect();
    assert_eq!(symbols.len(), 2, "the two `more::m::k` kernels: {symbols:?}");
    rfs::create_dir_all("clash-device");
    device("more.rs", "clash.json").cfg("clash").out_dir("clash-device").run();
    let exported = exported_functions(&image_ir(&cwd().join("clash-device/host.out"), TARGET));
    assert_eq!(exported, symbols.iter().map(|s| s.to_string()).collect(), "the image's kernels");

    // A type inside a kernel's generic arguments changed shape since the host metadata pass.
    let mut shape = host("more.rs");
    shape.cfg("shape_a").arg("-Zoffload=HostMetadata=shape.json").run();
    let mut shape = device("more.rs", "shape.json");
    shape.cfg("shape_b");
    // (Its arguments no longer fit the ADT: `KernelTy::to_ty` refuses to build the type.)
    refused(
        &mut shape,
        "kernel `more::gk::<more::L<u8>>`: a generic argument names a type that no longer exists \
         or no longer has that shape",
    );

    // Code whose error only codegen would report (a value too large for the target), in a crate
    // that launches a kernel, where the pass skips codegen: the pass says so instead of ending
    // in an internal compiler error, and writes no manifest. In a crate that launches none, the
    // pass compiles the crate as usual (it may be a build script's dependency), so codegen
    // reports the error itself.
    let too_big = "pub fn f() { let _ = unsafe { (0x1000 as *const [u8; 1 << 62]).read() }; }\n";
    let launch = concat!(
        "#![feature(core_intrinsics, rustc_attrs)]\n",
        "#[rustc_offload_kernel]\n",
        "pub fn k(x: *mut f32) { unsafe { *x = 1.0 } }\n",
        "pub fn l(x: *mut f32) {\n",
        "    core::intrinsics::offload::<_, _, ()>(k, [1; 3], [1; 3], (x,))\n",
        "}\n",
    );
    rfs::write("too_big.rs", format!("#![no_std]\n{launch}{too_big}"));
    refused(
        host("too_big.rs").arg("-Zoffload=HostMetadata=too_big.json"),
        "the offload host metadata pass found code that cannot be compiled for this target",
    );
    assert!(!cwd().join("too_big.json").exists(), "a manifest was written despite the error");
    rfs::write("too_big_alone.rs", format!("#![no_std]\n{too_big}"));
    refused(
        host("too_big_alone.rs").arg("-Zoffload=HostMetadata=too_big_alone.json"),
        "are too big for the target architecture",
    );

    // B7: launches of a closure, a function pointer, a function without the attribute.
    for what in ["closure", "fn_pointer", "no_attribute"] {
        let mut r = host("not_kernels.rs");
        r.cfg(what).arg(format!("-Zoffload=HostMetadata={what}.json"));
        refused(&mut r, "which is not a `#[rustc_offload_kernel]` function");
    }

    // B8: a manifest that lists nothing; a generic kernel with bare -Zoffload=Device.
    host("nothing.rs")
        .arg("-Zoffload=HostMetadata=nothing.json")
        .run()
        .assert_stderr_contains("warning: the offload manifest `nothing.json` lists no kernels");
    refused(
        &mut device("nothing.rs", "nothing.json"),
        "the offload manifest `nothing.json` lists no kernels",
    );
    let mut bare = device_pass(Some(TARGET), Some("gfx90a"), "Device");
    bare.input("nothing.rs").crate_type("lib").edition("2024");
    refused(
        &mut bare,
        "the generic offload kernel `generic_fill` cannot be compiled by `-Zoffload=Device` \
         without a manifest",
    );

    // B9: a cdylib with fat LTO and panic=abort through the manifest-driven device pass: the
    // image holds the kernel, linking a GPU dynamic library is skipped with a note, and the
    // linker's GPU flavor selection (which panics in the base compiler) is never reached.
    host("cdylib.rs").arg("-Zoffload=HostMetadata=cdylib.json").run();
    let dir = cwd().join("cdylib");
    rfs::create_dir_all(&dir);
    let out = device_pass(Some(TARGET), Some("gfx90a"), "Device=cdylib.json")
        .input("cdylib.rs")
        .crate_type("cdylib")
        .edition("2024")
        .arg("-Clto=fat")
        .panic("abort")
        .out_dir(&dir)
        .run();
    out.assert_stderr_contains("does not link GPU executables or dynamic libraries");
    let image = rfs::read(dir.join("host.out"));
    let kernels = vendor_check(&dir.join("host.out"), TARGET).kernels;
    let symbol = rfs::read_to_string("cdylib.json");
    let symbol = symbol.split("\"symbol\": \"").nth(1).unwrap().split('"').next().unwrap();
    assert!(
        image.windows(symbol.len()).any(|w| w == symbol.as_bytes()),
        "the device image does not define the kernel {symbol}"
    );
    assert_eq!(kernels.into_iter().collect::<Vec<_>>(), [symbol.to_string()]);

    // A kernel declared on the host (1.95 style) that no crate defines for the GPU, or whose
    // definition is not a kernel.
    host("declared.rs").arg("-Zoffload=HostMetadata=declared.json").run();
    refused(
        &mut device("declared.rs", "declared.json"),
        "the offload manifest `declared.json` launches the declared kernel `declared_kernel`, \
         which no crate of this crate graph defines",
    );
    refused(
        device("declared.rs", "declared.json").cfg("not_a_kernel"),
        "the host launches `declared_kernel` as an offload kernel, but its definition \
         `declared_kernel` is not a `#[rustc_offload_kernel]` function",
    );

    // A kernel that can panic, and no crate of the graph defines the panic handler: the image
    // gets one that traps, and the vendor tools accept it (nothing undefined).
    host("no_panic_handler.rs").arg("-Zoffload=HostMetadata=no_panic_handler.json").run();
    let handler_dir = cwd().join("no-panic-handler");
    rfs::create_dir_all(&handler_dir);
    device("no_panic_handler.rs", "no_panic_handler.json").out_dir(&handler_dir).run();
    let image = handler_dir.join("host.out");
    vendor_check(&image, TARGET);
    let ir = image_ir(&image, TARGET);
    let handler = ir
        .lines()
        .find(|l| l.starts_with("define internal") && l.contains("rust_begin_unwind"))
        .unwrap_or_else(|| panic!("the image defines no panic handler:\n{ir}"));
    let body = ir.split(handler).nth(1).unwrap().split("\n}").next().unwrap();
    assert!(body.contains("call void @llvm.trap()"), "the panic handler does not trap: {body}");

    // A declaration whose symbol two crates define: the device pass cannot pick one. With one
    // definition (no `--cfg twice`), the image binds to it and the vendor tools accept it.
    let (twice_host, twice_device) = (cwd().join("twice-host"), cwd().join("twice-device"));
    rfs::create_dir_all(&twice_host);
    rfs::create_dir_all(&twice_device);
    host("twice_dep.rs").crate_type("rlib").out_dir(&twice_host).run();
    host("twice.rs")
        .extern_("twice_dep", twice_host.join("libtwice_dep.rlib"))
        .arg("-Zoffload=HostMetadata=twice.json")
        .run();
    device_pass(Some(TARGET), Some("gfx90a"), "Device=twice.json")
        .input("twice_dep.rs")
        .crate_type("rlib")
        .edition("2024")
        .out_dir(&twice_device)
        .run();
    let twice_device_pass = || {
        let mut r = device("twice.rs", "twice.json");
        r.extern_("twice_dep", twice_device.join("libtwice_dep.rlib")).out_dir(&twice_device);
        r
    };
    twice_device_pass().run();
    vendor_check(&twice_device.join("host.out"), TARGET);
    refused(
        twice_device_pass().cfg("twice"),
        "the symbol `offload_test_twice` is defined twice in this crate graph",
    );

    // A kernel that reaches a function of a dependency built without the device flag: the
    // image could not define it, so the device pass refuses instead of leaving it undefined.
    let (nomir_host, nomir_device) = (cwd().join("nomir-host"), cwd().join("nomir-device"));
    rfs::create_dir_all(&nomir_host);
    rfs::create_dir_all(&nomir_device);
    host("nomir_dep.rs").crate_type("rlib").out_dir(&nomir_host).run();
    host("nomir_root.rs")
        .extern_("nomir_dep", nomir_host.join("libnomir_dep.rlib"))
        .arg("-Zoffload=HostMetadata=nomir.json")
        .run();
    rustc()
        .input("nomir_dep.rs")
        .crate_type("rlib")
        .edition("2024")
        .target(TARGET)
        .sysroot(gpu_sysroot())
        .target_cpu("gfx90a")
        .opt_level("3")
        .out_dir(&nomir_device)
        .run();
    refused(
        device("nomir_root.rs", "nomir.json")
            .opt_level("3")
            .extern_("nomir_dep", nomir_device.join("libnomir_dep.rlib"))
            .out_dir(&nomir_device),
        "an offload kernel of `nomir.json` reaches `helper`, which the crate \
         `nomir_dep` provides only as compiled code",
    );
    assert!(!nomir_device.join("host.out").exists(), "an incomplete image was written");
}
