//! The device sysroot: `core`, `alloc` and `std` for every device target of `cargo offload`,
//! built once per toolchain, so that no project builds them for its device passes.
//!
//! The manifest-driven device pass defines in its image everything its kernels reach, from
//! MIR, at the image crate's own `-Ctarget-cpu` (nothing is linked into an image). Libraries
//! whose metadata carries the MIR of every function (`-Zalways-encode-mir`) therefore serve
//! every device of their target. The host's own libraries in the stage-1 sysroot are built
//! without it, and bootstrap builds only `core` and `alloc` for the GPU targets, so each
//! device target gets its own set here, built with the stage-1 compiler and cargo's
//! `-Zbuild-std=std,panic_abort` (release profile, `-Cpanic=abort` as the image crate's
//! profile, `-Zalways-encode-mir`, `-Zcross-crate-inline-threshold=always` as the device pass
//! compiles crates; the target's library CPU, [`offload_targets::DeviceTarget::library_cpu`];
//! for the CPU device `--cfg offload_device`, which adds `core::offload`'s runner of a
//! launch's grid). With its `std`, a `std` program compiles unchanged in every device pass:
//! the CPU device's is the host's own platform; a GPU's (patch 0053) has a platform layer that
//! the device pass refuses to let a kernel reach (0052).
//! The folder is a sysroot of its own, `lib/rustlib/<target>/lib` per target, which `cargo
//! offload` takes from `CARGO_OFFLOAD_DEVICE_SYSROOT`.

use std::fs;

use std::path::Path;

use offload_targets::identity::{driver_identity, files_identity};

use crate::cache::{Cache, device_sysroot, stage0_toolchain};
use crate::toolchain::toolchain;
use crate::ui::{Context, Result, Timer, fail};

const STEP: &str = "BUILD";

/// How the libraries are built; part of the sysroot's `stamp`, so that a change here rebuilds
/// them.
const RECIPE: &str = "cargo build --release -Zbuild-std=std,panic_abort, -Zalways-encode-mir \
                      -Zcross-crate-inline-threshold=always, panic=abort; the target's library \
                      CPU; --cfg offload_device for the CPU device; every device target";

/// What the libraries were built by and how: [`RECIPE`], the stage-1 compiler's driver
/// library, and the stage-1 host `core`, `alloc` and `std` (name, size, modification time of
/// each). The host libraries stand for the library sources, which `-Zbuild-std` compiles
/// here too: bootstrap rebuilds them whenever a file under `library/` changes, also a change
/// that only a device target sees (patch 0053's `cfg`s). Recorded in the sysroot's `stamp`,
/// which `cargo offload` adds to the compiler identity of its outputs.
fn compiler_identity(cache: &Cache) -> String {
    let stage1 = cache.stage1();
    let host_lib = stage1.join("lib/rustlib/x86_64-unknown-linux-gnu/lib");
    let drivers = driver_identity(&stage1);
    let libraries = files_identity(&host_lib, &["libcore-", "liballoc-", "libstd-"]);
    format!("{RECIPE}\n{}\n{}", drivers.join("\n"), libraries.join("\n"))
}

/// Writes the device sysroot: `core`, `alloc` and `std` of every device target, rebuilt only
/// when the compiler or the recipe changed.
pub fn ensure(cache: &Cache) -> Result<()> {
    let root = device_sysroot(cache);
    let identity = compiler_identity(cache);
    let stamp = root.join("stamp");
    if fs::read_to_string(&stamp).ok().as_deref() == Some(identity.as_str()) {
        return Ok(());
    }
    let work = cache.root.join("device-sysroot-work");
    fs::create_dir_all(work.join("src")).creating(STEP, &work)?;
    let manifest = "[package]\nname = \"device-sysroot-work\"\nversion = \"0.0.0\"\n\
                    edition = \"2024\"\n\n[lib]\npath = \"src/lib.rs\"\n\n[workspace]\n\n\
                    [profile.release]\npanic = \"abort\"\n";
    fs::write(work.join("Cargo.toml"), manifest).writing(STEP, &work)?;
    fs::write(work.join("src/lib.rs"), "#![no_std]\n").writing(STEP, &work)?;
    // The stamp goes first, so that a failure leaves the sysroot to be built again.
    let _ = fs::remove_file(&stamp);
    for target in offload_targets::TARGETS {
        build_libraries(cache, &work, &root, target)?;
    }
    fs::write(&stamp, identity).writing(STEP, &stamp)?;
    Ok(())
}

/// Builds `target`'s libraries with the crate in `work` and copies its `rlib`s into `root`'s
/// `lib/rustlib/<target>/lib`, replacing what was there.
fn build_libraries(
    cache: &Cache,
    work: &Path,
    root: &Path,
    target: &offload_targets::DeviceTarget,
) -> Result<()> {
    let triple = target.triple;
    let timer = Timer::start(
        STEP,
        format!(
            "`core`, `alloc` and `std` for {triple} (-Zalways-encode-mir, cross-crate inlinable)"
        ),
    );
    let target_dir = work.join("target");
    let _ = fs::remove_dir_all(&target_dir);
    // Every function cross-crate inlinable, as the device pass compiles crates (see the GPU
    // targets' `rustflags` in `config.example.toml`). The CPU device's `offload_device`: the
    // grid runner and work-item state of `core::offload`.
    let mut flags = vec!["-Zalways-encode-mir", "-Zcross-crate-inline-threshold=always"];
    if target.kind == offload_targets::Kind::Cpu {
        flags.extend(["--cfg", "offload_device"]);
    }
    let cpu = target.library_cpu.map(|cpu| format!("-Ctarget-cpu={cpu}"));
    flags.extend(cpu.as_deref());
    let mut enter = toolchain(cache, work, "cargo")
        .args(["build", "--release", "-Zbuild-std=std,panic_abort", "--target", triple])
        .arg("--target-dir")
        .arg(&target_dir)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"))
        .env("RUSTFLAGS", "");
    enter.program = stage0_toolchain().join("bin/cargo").into();
    crate::ui::run_captured(STEP, &mut enter.command(cache)?)?;
    let deps = target_dir.join(triple).join("release/deps");
    let lib = root.join(format!("lib/rustlib/{triple}/lib"));
    let _ = fs::remove_dir_all(&lib);
    fs::create_dir_all(&lib).creating(STEP, &lib)?;
    // One `core` and one `std`: a second copy of either would make every device pass that
    // names it ambiguous.
    let (mut cores, mut stds) = (0, 0);
    for entry in fs::read_dir(&deps).reading(STEP, &deps)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".rlib") && !name.starts_with("libdevice_sysroot_work") {
            fs::copy(entry.path(), lib.join(&name))
                .context(STEP, || format!("cannot copy {name}"))?;
            cores += usize::from(name.starts_with("libcore-"));
            stds += usize::from(name.starts_with("libstd-"));
        }
    }
    if (cores, stds) != (1, 1) {
        return fail(
            STEP,
            format!(
                "{} holds {cores} libcore and {stds} libstd rlibs after \
                 `-Zbuild-std=std,panic_abort`, not one of each",
                deps.display()
            ),
        );
    }
    timer.done();
    Ok(())
}
