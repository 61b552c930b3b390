//! The device sysroot: `core` for every device target of `cargo offload`, and `std` for the CPU
//! device, built once per toolchain, so that no project builds them for its device passes.
//!
//! The manifest-driven device pass defines in its image everything its kernels reach, from
//! MIR, at the image crate's own `-Ctarget-cpu` (nothing is linked into an image). A `core`
//! whose metadata carries the MIR of every function (`-Zalways-encode-mir`) therefore serves
//! every GPU of its target. Bootstrap builds such a `core` for the GPU targets
//! (`config.example.toml`); the host's own `core` in the stage-1 sysroot is `std`'s, built without
//! it, so the CPU device gets its own, built here with the stage-1 compiler and cargo's
//! `-Zbuild-std=std,panic_abort` (release profile, `-Cpanic=abort` as the image crate's
//! profile, `-Zalways-encode-mir`, `-Zcross-crate-inline-threshold=always` as the device pass
//! compiles crates, and `--cfg offload_device`, which adds `core::offload`'s runner of a
//! launch's grid). Its `std`, on that `core`, lets a `std` program compile unchanged in the CPU
//! device's passes: the host's target has a `std`, a GPU's has none.
//! The folder is a sysroot of its own, `lib/rustlib/<target>/lib` per target, which `cargo
//! offload` takes from `CARGO_OFFLOAD_DEVICE_SYSROOT`.

use std::fs;

use crate::cache::{Cache, stage0_toolchain};
use crate::cache::{copy_dir, device_sysroot, gpu_sysroot};
use crate::pins::HOST;
use crate::toolchain::toolchain;
use crate::ui::{Failure, Result, Timer, fail};

const STEP: &str = "BUILD";

/// How the CPU device's `core` is built; part of the sysroot's `stamp`, so that a change here
/// rebuilds it.
const RECIPE: &str = "cargo build --release -Zbuild-std=std,panic_abort, -Zalways-encode-mir \
                      -Zcross-crate-inline-threshold=always --cfg offload_device, panic=abort";

/// What the CPU device's `core` was built by and how: [`RECIPE`] and the stage-1 compiler's
/// driver library (name, size, modification time). Recorded in the sysroot's `stamp`, which
/// `cargo offload` adds to the compiler identity of its outputs.
fn compiler_identity(cache: &Cache) -> String {
    let mut drivers: Vec<String> = fs::read_dir(cache.stage1().join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("librustc_driver"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
            Some(format!(
                "{} {} {}",
                e.file_name().to_string_lossy(),
                meta.len(),
                modified.as_nanos()
            ))
        })
        .collect();
    drivers.sort();
    format!("{RECIPE}\n{}", drivers.join("\n"))
}

/// Writes the device sysroot: the GPU targets' libraries of the stage-1 build, and the CPU
/// device's `core` and `std`, rebuilt only when the compiler or the recipe changed.
pub fn ensure(cache: &Cache) -> Result<()> {
    let root = device_sysroot(cache);
    let io = |what: String| {
        move |e: std::io::Error| Failure { step: STEP, message: format!("{what}: {e}") }
    };
    for target in offload_targets::gpu_targets().map(|t| t.triple) {
        let rel = format!("lib/rustlib/{target}/lib");
        copy_dir(&gpu_sysroot(cache).join(&rel), &root.join(&rel))
            .map_err(io(format!("cannot copy the {target} libraries to {}", root.display())))?;
    }
    let identity = compiler_identity(cache);
    let stamp = root.join("stamp");
    if fs::read_to_string(&stamp).ok().as_deref() == Some(identity.as_str()) {
        return Ok(());
    }
    let timer = Timer::start(
        STEP,
        format!(
            "`core` and `std` for the CPU device ({HOST}, -Zalways-encode-mir, cross-crate \
             inlinable)"
        ),
    );
    let work = cache.root.join("offload-cpu-device-core");
    fs::create_dir_all(work.join("src"))
        .map_err(io(format!("cannot create {}", work.display())))?;
    let manifest = "[package]\nname = \"offload-cpu-device-core\"\nversion = \"0.0.0\"\n\
                    edition = \"2024\"\n\n[lib]\npath = \"src/lib.rs\"\n\n[workspace]\n\n\
                    [profile.release]\npanic = \"abort\"\n";
    fs::write(work.join("Cargo.toml"), manifest)
        .map_err(io(format!("cannot write {}", work.display())))?;
    fs::write(work.join("src/lib.rs"), "#![no_std]\n")
        .map_err(io(format!("cannot write {}", work.display())))?;
    let target_dir = work.join("target");
    let _ = fs::remove_dir_all(&target_dir);
    let mut enter = toolchain(cache, &work, "cargo")
        .args(["build", "--release", "-Zbuild-std=std,panic_abort", "--target", HOST])
        .arg("--target-dir")
        .arg(&target_dir)
        .env("RUSTC_BOOTSTRAP", "1")
        // `offload_device`: the grid runner and work-item state of `core::offload`. Every
        // function cross-crate inlinable, as the device pass compiles crates (see the GPU
        // targets' `rustflags` in `config.example.toml`).
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            [
                "-Zalways-encode-mir",
                "-Zcross-crate-inline-threshold=always",
                "--cfg",
                "offload_device",
            ]
            .join("\x1f"),
        )
        .env("RUSTFLAGS", "");
    enter.program = stage0_toolchain().join("bin/cargo").into();
    crate::ui::run_captured(STEP, &mut enter.command(cache)?)?;
    let deps = target_dir.join(HOST).join("release/deps");
    let lib = root.join(format!("lib/rustlib/{HOST}/lib"));
    let _ = fs::remove_dir_all(&lib);
    fs::create_dir_all(&lib).map_err(io(format!("cannot create {}", lib.display())))?;
    // One `core` and one `std`: a second copy of either would make every device pass that
    // names it ambiguous.
    let (mut cores, mut stds) = (0, 0);
    for entry in
        fs::read_dir(&deps).map_err(io(format!("cannot read {}", deps.display())))?.flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".rlib") && !name.starts_with("liboffload_cpu_device_core") {
            fs::copy(entry.path(), lib.join(&name)).map_err(io(format!("cannot copy {name}")))?;
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
    fs::write(&stamp, identity).map_err(io(format!("cannot write {}", stamp.display())))?;
    timer.done();
    Ok(())
}
