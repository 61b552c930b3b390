//! A damaged `target/offload` heals by itself (scenario B19 of `src/doc/scenarios.md`): nothing
//! that `cargo offload` reuses is trusted unchecked.
//!
//! The workspace: `kernels` (a kernel, `add`, that adds a constant to each element) and `app`
//! (a program that launches it over 256 elements and prints the first and the last), built with
//! `--offload-arch=host,sm_90` in the dev profile. After a clean build, for each kind of file
//! that a build reuses (the packaged image, the loadable image, its published copy, the
//! registration object, a crate's manifest, a device pass's `host.out`, the linked program), the
//! file is truncated, then filled with garbage of its own length, then deleted, each time
//! followed by a build that must:
//! - succeed, and not call a damaged vendor output `(unchanged)`;
//! - leave the file as the clean build wrote it, byte for byte (the program: runnable);
//! - give a program that embeds both images (`llvm-objdump --offloading`) and computes right on
//!   the CPU device.
//!
//! Leftovers of a killed build (an LLVM tool's `<output>.tmp<random>`, rustc's `rmeta<random>`
//! folder) are gone after the next build. Then, for each phase of a build (host compile, device
//! passes, vendor tools, registration, host link), a build after a kernel edit is stopped where
//! the phase begins (`CARGO_OFFLOAD_STOP_AT`, which makes `cargo offload` end itself with
//! `SIGKILL`), and the next build gives a program that embeds both images and runs the edited
//! kernel, whose symbol (a hash of its definition) the NVIDIA image's PTX holds.

//@ only-x86_64
//@ needs-offload

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use run_make_support::offload::{
    cargo_offload, cargo_offload_fails_with, llvm_tool, write_workspace,
};
use run_make_support::{cmd, cwd, rfs, serde_json};

const ARCHS: &str = "--offload-arch=host,sm_90";

/// The kernel crate, adding `by` to each element.
fn kernels(by: u32) -> String {
    format!(
        "#![feature(gpu_offload)]
#![no_std]

use core::offload::{{block_dim_x, block_idx_x, offload_kernel, thread_idx_x}};

#[offload_kernel]
pub fn add(y: &mut [u32]) {{
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < y.len() {{
        y[i] += {by};
    }}
}}
"
    )
}

const APP: &str = "#![feature(gpu_offload)]

fn main() {
    let mut y = vec![41u32; 256];
    core::offload::offload! {
        kernel = kernels::add,
        workgroup_dim = [4, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&mut y[..],),
    }
    println!(\"first {} last {}\", y[0], y[255]);
}
";

/// `(arch, triple)` of each image that `llvm-objdump --offloading` lists in `program`.
fn embedded_images(program: &Path) -> Vec<(String, String)> {
    let dump = cmd(llvm_tool("llvm-objdump")).arg("--offloading").arg(program).run().stdout_utf8();
    let field = |block: &str, key: &str| {
        block.lines().find_map(|l| l.strip_prefix(key)).map(|v| v.trim().to_string())
    };
    let images = dump.split("OFFLOADING IMAGE").skip(1);
    images.map(|b| (field(b, "arch").unwrap_or_default(), field(b, "triple").unwrap())).collect()
}

/// Builds, runs the program and checks what it computes (`41 + by` everywhere) and that it embeds
/// `images`; returns the build's output.
fn build_and_check(ws: &Path, by: u32, images: &[(String, String)], after: &str) -> String {
    let built = cargo_offload(ws, &["build", ARCHS]).stderr_utf8();
    let program = ws.join("target/offload/host/x86_64-unknown-linux-gnu/debug/app");
    assert_eq!(embedded_images(&program), images, "{after}: the program's images\n{built}");
    let ran = cmd(&program).run().stdout_utf8();
    let expected = format!("first {0} last {0}\n", 41 + by);
    assert_eq!(ran, expected, "{after}: the program computed wrong\n{built}");
    built
}

/// The files of the clean build that a later build reuses, by kind, as paths relative to
/// `<ws>/target/offload` (the program's: the file rustc linked, under `deps`).
fn reused_files(offload: &Path) -> Vec<(&'static str, PathBuf)> {
    let deps = offload.join("host/x86_64-unknown-linux-gnu/debug/deps");
    let find = |dir: &Path, prefix: &str, suffix: &str| -> PathBuf {
        let names = rfs::read_dir(dir).map(|e| e.unwrap().file_name().into_string().unwrap());
        let name = names
            .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
            .find(|n| !n.contains('.') || suffix.contains('.'))
            .unwrap_or_else(|| panic!("no {prefix}*{suffix} in {}", dir.display()));
        dir.strip_prefix(offload).unwrap().join(name)
    };
    vec![
        ("packaged image", "images/debug/sm_90.offload".into()),
        ("loadable image", "images/debug/host.so".into()),
        ("published image", "images/sm_90.cubin".into()),
        ("registration object", "images/debug/offload-registration.o".into()),
        ("crate manifest", find(&offload.join("manifests"), "kernels-", ".json")),
        ("device pass image", "device/nvptx64-nvidia-cuda/debug/deps/host.out".into()),
        ("linked program", find(&deps, "app-", "")),
    ]
}

/// Damages the file at `path` in the way `how` names.
fn damage(path: &Path, how: &str) {
    let bytes = rfs::read(path);
    match how {
        "truncated" => rfs::write(path, &bytes[..bytes.len() / 2]),
        // Bytes of a simple generator, as many as the file had: no tool's format.
        "garbage" => {
            let mut state = 0x2545_f491_u32;
            let garbage: Vec<u8> = (0..bytes.len())
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    state as u8
                })
                .collect();
            rfs::write(path, garbage)
        }
        "deleted" => rfs::remove_file(path),
        _ => unreachable!(),
    }
}

/// Damages each kind of reused file in each way, and checks that the next build heals it:
/// the file as the clean build wrote it (`offload`: `<ws>/target/offload`), a vendor output
/// never called `(unchanged)`, and the program of [`build_and_check`].
fn damage_each_kind(ws: &Path, offload: &Path, images: &[(String, String)]) {
    let files = reused_files(offload);
    let originals: BTreeMap<&str, Vec<u8>> =
        files.iter().map(|(kind, path)| (*kind, rfs::read(offload.join(path)))).collect();
    for (kind, path) in &files {
        for how in ["truncated", "garbage", "deleted"] {
            let file = offload.join(path);
            damage(&file, how);
            let after = format!("a {how} {kind} ({})", path.display());
            let built = build_and_check(ws, 1, images, &after);
            if *kind == "linked program" {
                // The file rustc linked, not only cargo's copy of it, runs and computes right.
                let ran = cmd(&file).run().stdout_utf8();
                assert_eq!(ran, "first 42 last 42\n", "{after}: not linked again\n{built}");
            } else {
                assert!(rfs::read(&file) == originals[kind], "{after}: not made again\n{built}");
            }
            // A vendor output that was damaged is made again, and never called unchanged.
            let arch = match *kind {
                "packaged image" => "sm_90",
                "loadable image" => "host",
                _ => continue,
            };
            let line =
                built.lines().find(|l| l.starts_with(&format!("[cargo offload] image {arch}: ")));
            let line = line.unwrap_or_else(|| panic!("{after}: no line for image {arch}\n{built}"));
            assert!(
                !line.contains("(unchanged)"),
                "{after}: the damaged image was called unchanged\n{built}"
            );
        }
    }
}

/// A build after a kernel edit, stopped where each phase begins, then the next build, which
/// must run the edited kernel ([`build_and_check`]) and give the NVIDIA image the edited
/// kernel's symbol.
fn stop_at_each_phase(ws: &Path, offload: &Path, images: &[(String, String)]) {
    let phases = ["host-compile", "device-passes", "vendor", "registration", "host-link"];
    for (n, phase) in phases.into_iter().enumerate() {
        let by = 2 + n as u32;
        rfs::write(ws.join("kernels/src/lib.rs"), kernels(by));
        let stopped = cargo_offload_fails_with(
            ws,
            &["build", ARCHS],
            &[("CARGO_OFFLOAD_STOP_AT", Path::new(phase))],
        );
        let said = stopped.stderr_utf8();
        assert!(
            said.contains(&format!("names `{phase}`: stopping")),
            "{phase} not reached\n{said}"
        );
        let after = format!("a build stopped at `{phase}`");
        build_and_check(ws, by, images, &after);
        // The NVIDIA image is the edited kernel's too: its symbol, which hashes the kernel's
        // definition, is the one the manifest records now.
        let manifest: serde_json::Value =
            serde_json::from_str(&rfs::read_to_string(offload.join("image/manifest.json")))
                .unwrap();
        let symbol = manifest["kernels"][0]["symbol"].as_str();
        let symbol = symbol.unwrap_or_else(|| panic!("{after}: no symbol in {manifest}"));
        let ptx = rfs::read_to_string(offload.join("images/sm_90.ptx"));
        assert!(ptx.contains(symbol), "{after}: the sm_90 image lacks `{symbol}`");
    }
}

fn main() {
    let ws = cwd().join("ws");
    write_workspace(
        &ws,
        &[
            ("kernels", "", "lib.rs", &kernels(1)),
            ("app", "kernels = { path = \"../kernels\" }\n", "main.rs", APP),
        ],
    );
    let offload = ws.join("target/offload");
    let clean = cargo_offload(&ws, &["build", ARCHS]).stderr_utf8();
    let program = offload.join("host/x86_64-unknown-linux-gnu/debug/app");
    let images = embedded_images(&program);
    assert_eq!(images.len(), 2, "the clean build's images: {images:?}\n{clean}");
    build_and_check(&ws, 1, &images, "the clean build");

    damage_each_kind(&ws, &offload, &images);

    // Leftovers of a killed build.
    let temporary = offload.join("images/debug/sm_90.offload.tmp5f3a9c1");
    let rmeta = offload.join("host/x86_64-unknown-linux-gnu/debug/deps/rmetaQ1w2E3");
    rfs::write(&temporary, b"half an image");
    rfs::create_dir_all(&rmeta);
    rfs::write(rmeta.join("lib.rmeta"), b"half a crate");
    build_and_check(&ws, 1, &images, "leftovers of a killed build");
    assert!(!temporary.exists() && !rmeta.exists(), "a killed build's leftovers stayed");

    stop_at_each_phase(&ws, &offload, &images);
}
