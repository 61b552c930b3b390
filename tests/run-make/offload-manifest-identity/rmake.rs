//! Kernel identity and stale inputs across the offload passes:
//! - two versions of one crate in one graph (renamed dependencies), each launching its own
//!   `fill`: two kernels, two symbols, and the image runs each version's body;
//! - a `cfg` that shifts a disambiguator, so that the recorded path names another kernel of the
//!   same text on the GPU: stale, never the other kernel;
//! - a kernel edited after the host metadata pass: stale; and the host pass refuses an image
//!   built before the edit (or a file that is no image);
//! - the manifest path stays out of the crate hash (SVH): the same rmeta, byte for byte, for
//!   two manifest paths, in the host metadata pass and in the device pass;
//! - a dependency compiled without the host metadata pass is named;
//! - two crates of one name with byte-identical root files, whose kernels nothing tells
//!   apart: refused;
//! - after a change of a crate's root file that leaves its HIR alone, an incremental build
//!   launches the new symbol (the source fingerprint is not cached);
//! - an incremental host metadata pass writes, after each edit (a kernel's body, a launch
//!   added, a launch removed), the manifest that a fresh pass writes, and the device pass
//!   takes it;
//! - a device pass whose crate is in the manifest's graph but builds only a final artifact (so
//!   no crate of the build makes the image) is an error; a library that also builds an rlib is
//!   not;
//! - stock rustc (rustup 1.95.0, bootstrap's stage 0) and the fork refuse each other's crate
//!   metadata: the fork's crate root is not upstream's layout.

//@ needs-offload
//@ needs-llvm-components: amdgpu nvptx
//@ only-x86_64

use std::collections::BTreeSet;
use std::path::Path;

use run_make_support::offload::{
    exported_functions, image_ir, manifest_device_pass, manifest_symbols, offload_entries, rustc,
    vendor_check,
};
use run_make_support::serde_json::{self, Value};
use run_make_support::{Rustc, cmd, cwd, rfs, source_root};

const TARGET: &str = "amdgcn-amd-amdhsa";

fn host(input: &str) -> Rustc {
    let mut r = rustc();
    r.input(input).crate_type("lib").edition("2024");
    r
}

fn device(input: &str, manifest: &Path) -> Rustc {
    let mut r = device_without_crate_type(TARGET, input, manifest);
    r.crate_type("lib");
    r
}

fn device_without_crate_type(target: &str, input: &str, manifest: &Path) -> Rustc {
    let cpu = (target == TARGET).then_some("gfx90a");
    let mut r = manifest_device_pass(Some(target), cpu, manifest);
    r.input(input).edition("2024").opt_level("3");
    r
}

/// Runs `r`, which must fail with each of `expected` in its stderr and no ICE.
fn refused(r: &mut Rustc, expected: &[&str]) {
    let out = r.run_fail();
    for e in expected {
        out.assert_stderr_contains(e);
    }
    out.assert_stderr_not_contains("internal compiler error");
    out.assert_stderr_not_contains("panicked");
}

fn main() {
    two_versions_of_one_crate();
    shifted_disambiguator();
    edited_kernel();
    incremental_build_sees_the_root_file();
    incremental_host_metadata_pass();
    stale_image();
    manifest_path_out_of_the_crate_hash();
    stock_and_fork_refuse_each_other();
}

/// `kern` 1 and `kern` 2, compiled with other `-C metadata` on the host and on the GPU, both
/// launched by `app`.
fn two_versions_of_one_crate() {
    let manifest = cwd().join("versions.json");
    let flag = format!("-Zoffload=HostMetadata={}", manifest.display());
    for v in ["1", "2"] {
        let out = cwd().join(format!("meta/v{v}"));
        rfs::create_dir_all(&out);
        host(&format!("kern_v{v}/lib.rs"))
            .crate_name("kern")
            .metadata(&format!("host-v{v}"))
            .emit("metadata")
            .out_dir(&out)
            .arg(&flag)
            .run();
    }
    let app_host = |flag: &str| {
        let mut r = host("app.rs");
        r.crate_name("app")
            .extern_("kern1", cwd().join("meta/v1/libkern.rmeta"))
            .extern_("kern2", cwd().join("meta/v2/libkern.rmeta"))
            .emit("metadata")
            .out_dir(cwd().join("meta"))
            .arg(flag);
        r.run()
    };
    let out = app_host(&flag);
    out.assert_stderr_not_contains("did not go through the offload host metadata pass");
    let json: Value = serde_json::from_str(&rfs::read_to_string(&manifest)).unwrap();
    let kernels = json["kernels"].as_array().unwrap();
    let texts: Vec<&str> = kernels.iter().map(|k| k["kernel"].as_str().unwrap()).collect();
    assert_eq!(texts, ["kern::fill", "kern::fill"], "one kernel per version of `kern`");
    let sources: BTreeSet<&str> =
        kernels.iter().map(|k| k["item"]["crate_source"].as_str().unwrap()).collect();
    assert_eq!(sources.len(), 2, "the two versions have one source fingerprint: {sources:?}");
    let symbols = manifest_symbols(&json);
    assert_eq!(symbols.len(), 2, "the two versions' kernels share a symbol");

    // A dependency compiled without the host metadata pass is named.
    let unflagged = cwd().join("meta/unflagged");
    rfs::create_dir_all(&unflagged);
    host("kern_v2/lib.rs").crate_name("kern").emit("metadata").out_dir(&unflagged).run();
    let mut r = host("app.rs");
    r.crate_name("app")
        .extern_("kern1", cwd().join("meta/v1/libkern.rmeta"))
        .extern_("kern2", unflagged.join("libkern.rmeta"))
        .emit("metadata")
        .out_dir(cwd().join("meta/unflagged-app"))
        .arg(format!("-Zoffload=HostMetadata={}", cwd().join("unflagged.json").display()));
    let out = r.run();
    out.assert_stderr_contains(
        "the crate `kern` did not go through the offload host metadata pass: the offload manifest",
    );
    // The standard library never went through the pass and is not named.
    out.assert_stderr_not_contains("`core`");
    out.assert_stderr_not_contains("`compiler_builtins`");

    // Device pass, with other `-C metadata` than the host's: the image defines both kernels,
    // each with its own version's body.
    for v in ["1", "2"] {
        let out = cwd().join(format!("device/v{v}"));
        rfs::create_dir_all(&out);
        device(&format!("kern_v{v}/lib.rs"), &manifest)
            .crate_name("kern")
            .metadata(&format!("device-v{v}"))
            .out_dir(&out)
            .run();
        assert!(!out.join("host.out").exists(), "kern {v} wrote a device image");
    }
    let app_out = cwd().join("device/app");
    rfs::create_dir_all(&app_out);
    device("app.rs", &manifest)
        .crate_name("app")
        .extern_("kern1", cwd().join("device/v1/libkern.rlib"))
        .extern_("kern2", cwd().join("device/v2/libkern.rlib"))
        .out_dir(&app_out)
        .run();
    let image = app_out.join("host.out");
    let ir = image_ir(&image, TARGET);
    assert_eq!(exported_functions(&ir), symbols);
    // Each kernel stores its own version's value (1111 or 2222): one of each.
    let stored: BTreeSet<&str> = kernels
        .iter()
        .map(|k| {
            let symbol = k["symbol"].as_str().unwrap();
            let body =
                ir.split(&format!("@{symbol}(")).nth(1).unwrap().split("\n}").next().unwrap();
            match (body.contains("1111"), body.contains("2222")) {
                (true, false) => "1111",
                (false, true) => "2222",
                _ => panic!("kernel {symbol} does not store exactly one version's value:\n{body}"),
            }
        })
        .collect();
    assert_eq!(stored, BTreeSet::from(["1111", "2222"]), "one version's body is missing:\n{ir}");
    assert_eq!(vendor_check(&image, TARGET).kernels, symbols);

    // The same on nvptx: its image defines the manifest's symbols, which the host launches.
    const NVPTX: &str = "nvptx64-nvidia-cuda";
    for v in ["1", "2"] {
        let out = cwd().join(format!("nvptx/v{v}"));
        rfs::create_dir_all(&out);
        device_without_crate_type(NVPTX, &format!("kern_v{v}/lib.rs"), &manifest)
            .crate_type("lib")
            .crate_name("kern")
            .metadata(&format!("nvptx-v{v}"))
            .out_dir(&out)
            .run();
    }
    let nvptx_app = cwd().join("nvptx/app");
    rfs::create_dir_all(&nvptx_app);
    device_without_crate_type(NVPTX, "app.rs", &manifest)
        .crate_type("lib")
        .crate_name("app")
        .extern_("kern1", cwd().join("nvptx/v1/libkern.rlib"))
        .extern_("kern2", cwd().join("nvptx/v2/libkern.rlib"))
        .out_dir(&nvptx_app)
        .run();
    let nvptx_image = nvptx_app.join("host.out");
    assert_eq!(exported_functions(&image_ir(&nvptx_image, NVPTX)), symbols, "nvptx image");
    assert_eq!(
        vendor_check(&nvptx_image, NVPTX).kernels,
        symbols,
        "nvptx: the vendors' tools' kernels"
    );

    // Host pass: `app` launches both symbols.
    for v in ["1", "2"] {
        let out = cwd().join(format!("host/v{v}"));
        rfs::create_dir_all(&out);
        host(&format!("kern_v{v}/lib.rs"))
            .crate_name("kern")
            .metadata(&format!("hp-v{v}"))
            .out_dir(&out)
            .run();
    }
    let host_out = cwd().join("host/app");
    rfs::create_dir_all(&host_out);
    host("app.rs")
        .crate_name("app")
        .extern_("kern1", cwd().join("host/v1/libkern.rlib"))
        .extern_("kern2", cwd().join("host/v2/libkern.rlib"))
        .opt_level("3")
        .codegen_units(1)
        .arg("-Clto=fat")
        .arg(format!("-Zoffload=Host={}", image.display()))
        .out_dir(&host_out)
        .run();
    assert_eq!(offload_entries(&host_out.join("host.o")), symbols, "the host's launches");

    // A crate of the manifest's graph that builds only a final artifact: no crate of this build
    // makes `app`'s image. A library that also builds an rlib is a dependency, as usual.
    let staticlib = cwd().join("device/staticlib");
    rfs::create_dir_all(&staticlib);
    refused(
        device_without_crate_type(TARGET, "tool.rs", &manifest)
            .crate_name("kern")
            .crate_type("staticlib")
            .out_dir(&staticlib),
        &[
            "is for the device image of the crate `app`, which this build does not compile",
            "`kern` builds only `staticlib`, which no crate depends on",
        ],
    );
    // (For the CPU device: the GPU targets run LTO on every final artifact, which an rlib
    // beside it refuses.)
    rustc()
        .input("tool.rs")
        .edition("2024")
        .crate_name("kern")
        .crate_type("lib")
        .crate_type("staticlib")
        .panic("abort")
        .out_dir(&staticlib)
        .arg(format!("-Zoffload=Device={}", manifest.display()))
        .run();
    assert!(staticlib.join("libkern.rlib").exists());

    // Two crates `kern` with byte-identical root files (one file, two `-C metadata`): their
    // kernels have one identity, so the host metadata pass refuses them.
    for (dir, meta) in [("same1", "a"), ("same2", "b")] {
        let out = cwd().join("meta").join(dir);
        rfs::create_dir_all(&out);
        host("kern_v1/lib.rs")
            .crate_name("kern")
            .metadata(meta)
            .emit("metadata")
            .out_dir(&out)
            .arg(format!("-Zoffload=HostMetadata={}", cwd().join("same-kern.json").display()))
            .run();
    }
    let mut same = host("app.rs");
    same.crate_name("app")
        .extern_("kern1", cwd().join("meta/same1/libkern.rmeta"))
        .extern_("kern2", cwd().join("meta/same2/libkern.rmeta"))
        .emit("metadata")
        .out_dir(cwd().join("meta/same-app"))
        .arg(format!("-Zoffload=HostMetadata={}", cwd().join("same.json").display()));
    refused(
        &mut same,
        &["the offload kernel `kern::fill` names the crate `kern`, which this crate graph holds \
           more than once with byte-identical root files"],
    );
}

/// The host pass of `edit`, incremental, before and after an edit of its root file that leaves
/// the HIR alone (one comment letter's case): the launch's kernel symbol, which hashes the root
/// file's content, must be the one a fresh build gives, never the cached one.
fn incremental_build_sees_the_root_file() {
    let launched = |dir: &str, incremental: bool| -> String {
        let out = cwd().join(dir);
        rfs::create_dir_all(&out);
        let mut r = host("edit.rs");
        r.crate_name("edit").opt_level("0").codegen_units(1).emit("llvm-ir").out_dir(&out);
        // `offload` launches need fat LTO, which an rlib does not run (and incremental allows).
        r.arg("-Clto=fat").arg("-Zoffload=Test");
        if incremental {
            r.arg(format!("-Cincremental={}", cwd().join("incremental").display()));
        }
        r.run();
        let ir = rfs::read_to_string(out.join("edit.ll"));
        let entry =
            ir.split("@.offloading.entry_name.").nth(1).expect("no offload launch in the host IR");
        entry.split(' ').next().unwrap().to_string()
    };
    let before = launched("incremental-1", true);
    let root = rfs::read_to_string("edit.rs");
    let edited = root.replacen("// A kernel, in a module file", "// A KERNEL, in a module file", 1);
    assert_ne!(edited, root);
    rfs::write("edit.rs", &edited);
    let after = launched("incremental-2", true);
    let fresh = launched("fresh", false);
    rfs::write("edit.rs", root);
    assert_ne!(before, after, "the root file changed, the kernel's symbol did not");
    assert_eq!(after, fresh, "the incremental build launches a stale kernel symbol");
}

/// The host metadata pass of `incr.rs`, incremental (one cache, manifest path and output folder
/// for every session, since the manifest path is among the options that an incremental
/// session must match) and fresh, on the unedited file and after each of three edits: the
/// kernel's body, a launch of another instance added, the first launch removed. After the
/// first session, each incremental one must use the cache (`-Zincremental-info` says when it
/// ignores it), and its manifest must be the fresh pass's, byte for byte, and name the
/// launched instances; the last one builds the image.
fn incremental_host_metadata_pass() {
    // The manifest's text, its kernels (`<instance> <definition>`), and whether the session
    // used the incremental cache.
    let manifest = |dir: &str, incremental: bool| -> (String, Vec<String>, bool) {
        let out = cwd().join(dir);
        rfs::create_dir_all(&out);
        let path = out.join("incr.json");
        let mut r = host("incr.rs");
        r.crate_name("incr")
            .emit("metadata")
            .out_dir(&out)
            .arg(format!("-Zoffload=HostMetadata={}", path.display()));
        if incremental {
            r.arg(format!("-Cincremental={}", cwd().join("incr-cache").display()))
                .arg("-Zincremental-info");
        }
        let run = r.run();
        let reused = !run.stderr_utf8().contains("completely ignoring cache");
        let text = rfs::read_to_string(&path);
        let parsed: Value = serde_json::from_str(&text).unwrap();
        let kernels = parsed["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| format!("{} {}", k["kernel"].as_str().unwrap(), k["definition"]))
            .collect();
        (text, kernels, reused)
    };
    let original = rfs::read_to_string("incr.rs");
    let launch = |ty: &str| {
        format!(
            "#[cfg(target_arch = \"x86_64\")]\npub fn launch_{ty}(x: &mut [{ty}; 4]) {{\n    \
             core::intrinsics::offload::<_, _, ()>(scale::<{ty}>, [1, 1, 1], [1, 1, 1], \
             (x as *mut _, 2.0{ty}))\n}}\n"
        )
    };
    assert!(
        original.contains(&launch("f32")),
        "incr.rs does not launch `scale::<f32>` as expected"
    );
    let body = original.replacen("*v = *v * a;", "*v = *v * a * a;", 1);
    let added = format!("{body}\n{}", launch("f64"));
    let removed = added.replacen(&launch("f32"), "", 1);
    assert!(body != original && added != body && removed != added, "an edit changed nothing");
    let mut definitions = Vec::new();
    for (step, source) in [original.as_str(), &body, &added, &removed].into_iter().enumerate() {
        rfs::write("incr.rs", source);
        let (incremental, kernels, reused) = manifest("incr", true);
        assert!(reused || step == 0, "step {step}: the incremental session ignored its cache");
        rfs::copy(cwd().join("incr/incr.json"), cwd().join(format!("incr-{step}.json")));
        let (fresh, _, _) = manifest(&format!("incr-fresh/{step}"), false);
        assert_eq!(incremental, fresh, "step {step}: the incremental pass's manifest is stale");
        let names: Vec<&str> = kernels.iter().map(|k| k.split(' ').next().unwrap()).collect();
        let want: &[&str] = match step {
            0 | 1 => &["incr::scale::<f32>"],
            2 => &["incr::scale::<f32>", "incr::scale::<f64>"],
            _ => &["incr::scale::<f64>"],
        };
        assert_eq!(names, want, "step {step}: the manifest's kernels");
        definitions.push(kernels[0].split(' ').nth(1).unwrap().to_string());
    }
    assert_ne!(definitions[0], definitions[1], "the body's edit left the definition fingerprint");
    let out = cwd().join("incr-device");
    rfs::create_dir_all(&out);
    device("incr.rs", &cwd().join("incr-3.json")).crate_name("incr").out_dir(&out).run();
    assert!(out.join("host.out").exists(), "the incremental pass's manifest built no image");
    rfs::write("incr.rs", original);
}

/// The host pass of `edit`, with the image of its device pass, then after an edit of the
/// kernel's file (one character of its body) without a new device pass: the image, built from
/// the older source, does not define the kernel the host now launches (its symbol hashes the
/// kernel's definition), and the host pass refuses it, naming the image and the kernel. This is
/// what a device build that writes no image (`cargo build --lib` of a dependency) leaves
/// behind. A file that is no offload image is refused, named.
fn stale_image() {
    let manifest = cwd().join("stale-image.json");
    let device_dir = cwd().join("stale-image/device");
    rfs::create_dir_all(&device_dir);
    let image = device_dir.join("host.out");
    let metadata_and_device = || {
        host("edit.rs")
            .out_dir(cwd().join("stale-image/meta"))
            .emit("metadata")
            .arg(format!("-Zoffload=HostMetadata={}", manifest.display()))
            .run();
        device("edit.rs", &manifest).out_dir(&device_dir).run();
    };
    let host_pass = |image: &Path| {
        let out = cwd().join("stale-image/host");
        rfs::create_dir_all(&out);
        let mut r = host("edit.rs");
        // (At opt-level 0, so that the small `launch` is codegened here, not left to callers
        // as cross-crate inlinable.)
        r.opt_level("0")
            .codegen_units(1)
            .arg("-Clto=fat")
            .arg(format!("-Zoffload=Host={}", image.display()))
            .out_dir(out);
        r
    };
    metadata_and_device();
    host_pass(&image).run().assert_stderr_not_contains("does not define");

    let kernels = rfs::read_to_string("edit_kernels.rs");
    let edited = kernels.replacen("*v *= 2.0;", "*v *= 3.0;", 1);
    assert_ne!(edited, kernels);
    rfs::write("edit_kernels.rs", &edited);
    host("edit.rs")
        .out_dir(cwd().join("stale-image/meta"))
        .emit("metadata")
        .arg(format!("-Zoffload=HostMetadata={}", manifest.display()))
        .run();
    refused(
        &mut host_pass(&image),
        &[
            &format!(
                "the offload image `{}` (amdgcn-amd-amdhsa, gfx90a) does not define 1 of the \
                 kernels launched by the code being compiled: `_offload_kernel_scale_",
                image.display()
            ),
            "run the host metadata pass and the device pass (`-Zoffload=Device=<manifest>`) of \
             this source again",
        ],
    );
    metadata_and_device();
    host_pass(&image).run().assert_stderr_not_contains("does not define");
    rfs::write("edit_kernels.rs", kernels);

    let garbage = cwd().join("stale-image/garbage/host.out");
    rfs::create_dir_all(garbage.parent().unwrap());
    rfs::write(&garbage, "not an offload image");
    refused(
        &mut host_pass(&garbage),
        &[&format!(
            "the offload image `{}` cannot be read as offload binaries with LLVM bitcode:",
            garbage.display()
        )],
    );
}

/// A host-only anonymous `const` block shifts the disambiguators of the kernels' blocks.
fn shifted_disambiguator() {
    let manifest = cwd().join("shift.json");
    host("shift.rs").arg(format!("-Zoffload=HostMetadata={}", manifest.display())).run();
    let json: Value = serde_json::from_str(&rfs::read_to_string(&manifest)).unwrap();
    assert_eq!(json["kernels"][0]["kernel"], "shift::_#1::fill");
    let out = cwd().join("shift-device");
    rfs::create_dir_all(&out);
    refused(
        device("shift.rs", &manifest).out_dir(&out),
        &["shift.json` is stale: kernel `shift::_#1::fill`: its definition is not the one the \
             host metadata pass recorded"],
    );
    assert!(!out.join("host.out").exists(), "an image with the other kernel was written");
}

/// The kernel's file changes (one character of its body) after the host metadata pass; then,
/// instead, the crate root file does.
fn edited_kernel() {
    let manifest = cwd().join("edit.json");
    host("edit.rs").arg(format!("-Zoffload=HostMetadata={}", manifest.display())).run();
    let out = cwd().join("edit-device");
    rfs::create_dir_all(&out);
    // Unchanged, the manifest builds the image.
    device("edit.rs", &manifest).out_dir(&out).run();
    assert!(out.join("host.out").exists());
    rfs::remove_file(out.join("host.out"));
    let kernels = rfs::read_to_string("edit_kernels.rs");
    assert!(kernels.contains("*v *= 2.0;"));
    rfs::write("edit_kernels.rs", kernels.replace("*v *= 2.0;", "*v *= 3.0;"));
    refused(
        device("edit.rs", &manifest).out_dir(&out),
        &["edit.json` is stale: kernel `edit::kernels::scale`: its definition is not the one the \
             host metadata pass recorded"],
    );
    rfs::write("edit_kernels.rs", kernels);
    let root = rfs::read_to_string("edit.rs");
    rfs::write("edit.rs", format!("{root}\n// edited\n"));
    refused(
        device("edit.rs", &manifest).out_dir(&out),
        &["edit.json` is stale: kernel `edit::kernels::scale`: no crate `edit` of this crate \
             graph has the root source that the host metadata pass saw"],
    );
    rfs::write("edit.rs", root);
    assert!(!out.join("host.out").exists(), "a stale manifest built an image");
}

/// The same crate with its manifest in two folders: the same crate metadata, byte for byte.
fn manifest_path_out_of_the_crate_hash() {
    let rmeta = |dir: &str, flag: &str| {
        let out = cwd().join(dir);
        rfs::create_dir_all(&out);
        let manifest = out.join("m.json");
        let mut r = if flag == "HostMetadata" {
            host("edit.rs")
        } else {
            rfs::copy(cwd().join("edit.json"), &manifest);
            device("edit.rs", &manifest)
        };
        r.crate_name("edit")
            .metadata("same")
            .emit("metadata")
            .out_dir(&out)
            .arg(format!("-Zoffload={flag}={}", manifest.display()))
            .run();
        rfs::read(out.join("libedit.rmeta"))
    };
    assert!(
        rmeta("svh/a", "HostMetadata") == rmeta("svh/elsewhere/b", "HostMetadata"),
        "host metadata pass: the manifest path changes the crate metadata"
    );
    assert!(
        rmeta("svh/c", "Device") == rmeta("svh/elsewhere/d", "Device"),
        "device pass: the manifest path changes the crate metadata"
    );
}

/// Bootstrap's stage-0 rustc (rustup 1.95.0, the stock compiler of the same upstream commit):
/// the `rustc = "..."` line of the tree's `bootstrap.toml`.
fn stock_rustc() -> String {
    let config = rfs::read_to_string(source_root().join("bootstrap.toml"));
    let line =
        config.lines().find(|l| l.trim_start().starts_with("rustc =")).expect("no stage-0 rustc");
    line.split('"').nth(1).unwrap().to_string()
}

/// What either compiler says of the other's crate: the metadata header's version differs
/// (`METADATA_VERSION` is 11 in the fork, 10 upstream), so neither reads the crate root.
const STOCK_FORK_REFUSAL: &str = "found crate `plain` compiled by an incompatible version of rustc";

/// Each compiler builds `plain`; the other compiler's `user` must refuse it with a clear error
/// rather than misread the crate root.
fn stock_and_fork_refuse_each_other() {
    for (maker, reader) in [("stock", "fork"), ("fork", "stock")] {
        let dir = cwd().join(format!("{maker}-made"));
        rfs::create_dir_all(&dir);
        let compiler =
            |who: &str| if who == "stock" { cmd(stock_rustc()) } else { cmd(env_rustc()) };
        compiler(maker)
            .args(["plain.rs", "--crate-type", "rlib", "--edition", "2024", "--out-dir"])
            .arg(&dir)
            .run();
        let out = compiler(reader)
            .args(["user.rs", "--crate-type", "rlib", "--edition", "2024", "--out-dir"])
            .arg(&dir)
            .arg("--extern")
            .arg(format!("plain={}", dir.join("libplain.rlib").display()))
            .run_fail();
        out.assert_stderr_contains(STOCK_FORK_REFUSAL);
        out.assert_stderr_not_contains("internal compiler error");
        out.assert_stderr_not_contains("panicked");
    }
}

/// The stage-1 rustc under test.
fn env_rustc() -> String {
    run_make_support::env_var("RUSTC")
}
