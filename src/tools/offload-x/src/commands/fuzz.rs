//! `./x.py fuzz`: mutated manifests through the device pass.

use std::fs;
use std::path::Path;

use crate::cache::{Cache, gpu_sysroot};
use crate::pins::SYSROOT_LLVM_BIN;
use crate::stages::build;
use crate::toolchain::toolchain;
use crate::tools::manifest_tool;
use crate::ui::{Context, Result, Timer, fail};

/// Mutants that `./x.py test` runs through the device pass (about 15 s on two cores); the
/// long run is `./x.py fuzz` (10,000 by default).
pub const SHORT_FUZZ_COUNT: u64 = 200;

/// `fuzz [--seed S] [--first N] [--count N]`: mutants `first..first + count` of the seed crate's
/// manifest through the device pass (see `src/tools/offload-manifest/src/fuzz/`). Fails when
/// any mutant gives an internal compiler error, a panic, a crash, a hang, a refusal that does
/// not name the manifest, or a success without an image; those are kept under
/// `<cache>/fuzz/defects/`.
pub fn fuzz(project: &Path, cache: &Cache, args: &[String]) -> Result<()> {
    let mut numbers = [("--seed", 1u64), ("--first", 0), ("--count", 10_000)];
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let Some(slot) = numbers.iter_mut().find(|(name, _)| name == flag) else {
            return fail(
                "FUZZ",
                format!(
                    "unknown argument `{flag}`; usage: ./x.py fuzz [--seed S] [--first N] \
                     [--count N]"
                ),
            );
        };
        slot.1 = match rest.next().map(|v| v.parse::<u64>()) {
            Some(Ok(n)) => n,
            _ => return fail("FUZZ", format!("`{flag}` needs a number")),
        };
    }
    build(project, cache)?;
    fuzz_run(project, cache, numbers[0].1, numbers[1].1, numbers[2].1)
}

/// Writes the seed manifest with the host metadata pass of
/// `src/tools/offload-manifest/fuzz/seed.rs` and runs mutants `first..first + count` of it
/// through its `amdgcn-amd-amdhsa` device pass (for the table's default AMD GPU, gfx90a, whose
/// images `offload-manifest fuzz` checks), inside the sysroot, one job per core.
pub fn fuzz_run(project: &Path, cache: &Cache, seed: u64, first: u64, count: u64) -> Result<()> {
    let device = offload_targets::AMDGCN.default_device();
    let timer = Timer::start(
        "FUZZ",
        format!("{count} mutated manifests through the device pass (seed {seed})"),
    );
    let tool = manifest_tool(project, cache, "FUZZ")?;
    let work = cache.root.join("fuzz");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).creating("FUZZ", &work)?;
    let seed_crate = project.join("src/tools/offload-manifest/fuzz/seed.rs");
    let host = toolchain(cache, &work, "rustc")
        .arg("-Zunstable-options")
        .arg(&seed_crate)
        .args(["--crate-type", "lib", "--edition", "2024", "-Zoffload=HostMetadata=seed.json"])
        .status(cache, "FUZZ")?;
    if !host.success() {
        return fail(
            "FUZZ",
            "the host metadata pass of the seed crate failed; its output is above",
        );
    }
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let status = toolchain(cache, &work, &tool.to_string_lossy())
        .arg("fuzz")
        .arg("--rustc")
        .arg(cache.stage1_rustc())
        .arg("--work")
        .arg(&work)
        .args([
            "--seed",
            &seed.to_string(),
            "--first",
            &first.to_string(),
            "--count",
            &count.to_string(),
        ])
        .args(["--jobs", &jobs.to_string(), "--llvm-bin", SYSROOT_LLVM_BIN])
        .args(["--", "-Zunstable-options"])
        .arg(&seed_crate)
        .args(["--crate-type", "lib", "--edition", "2024", "--target", device.target.triple])
        .args(device.pass_flags())
        .arg("--sysroot")
        .arg(gpu_sysroot(cache))
        .status(cache, "FUZZ")?;
    if !status.success() {
        return fail(
            "FUZZ",
            format!(
                "the device pass mishandled mutated manifests (see above); they are in {}",
                work.join("defects").display()
            ),
        );
    }
    timer.done();
    Ok(())
}
