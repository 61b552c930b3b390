//! The stage-1 toolchain as a user runs it: programs inside the sysroot with `cargo offload`,
//! LLVM's tools, the device sysroot and NVIDIA's tools in reach ([`toolchain`]), and `cargo
//! offload run|test`'s programs, which run on the machine's own OS afterwards
//! ([`cargo_with_plan`], [`run_plan`]).

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::{Cache, device_sysroot, offload_tools_bin, stage0_toolchain};
use crate::pins::SYSROOT_LLVM_BIN;
use crate::project::project_root;
use crate::sysroot::Enter;
use crate::tools::install_cargo_offload;
use crate::ui::{Context, Result};

/// `program` in `cwd` inside the sysroot as an installed toolchain: the stage-1 toolchain,
/// `cargo-offload` and LLVM 22's tools first on `PATH`, `RUSTC` set, the device sysroot
/// (`CARGO_OFFLOAD_DEVICE_SYSROOT`, [`crate::device_sysroot`], unless the caller set it),
/// NVIDIA's `ptxas` and `nvlink` for `cargo offload` (`CARGO_OFFLOAD_CUDA_BIN`) once
/// `./x.py build` fetched them; `cwd` and the project are visible at their own paths.
pub fn toolchain(cache: &Cache, cwd: &Path, program: &str) -> Enter {
    let mut enter = Enter::new(cache, cwd, program).bind(project_root());
    let path = format!(
        "{}:{}:{SYSROOT_LLVM_BIN}:/usr/local/bin:/usr/bin:/bin",
        cache.stage1().join("bin").display(),
        offload_tools_bin(cache).display()
    );
    enter = enter.env("PATH", path).env("RUSTC", cache.stage1_rustc());
    // A caller's own value passes through, as every `CARGO*` variable does.
    if std::env::var_os("CARGO_OFFLOAD_DEVICE_SYSROOT").is_none() {
        let sysroot = device_sysroot(cache);
        enter = enter.env("CARGO_OFFLOAD_DEVICE_SYSROOT", sysroot);
    }
    let cuda = crate::cuda::cuda_bin(cache);
    if cuda.join("ptxas").is_file() {
        enter = enter.env("CARGO_OFFLOAD_CUDA_BIN", cuda);
    }
    enter
}

/// The file into which `cargo offload run|test` inside the sysroot writes the programs to run
/// (`CARGO_OFFLOAD_RUN_PLAN`), removed when dropped, with the folders that the sysroot saw at
/// their own paths; [`PlanFile::take`] gives it once written.
pub struct PlanFile(PathBuf, Vec<PathBuf>);

impl PlanFile {
    /// The plan if `cargo offload` wrote one.
    pub fn take(&self) -> Option<&PlanFile> {
        self.0.is_file().then_some(self)
    }
}

impl Drop for PlanFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// `cargo ARGS` of the toolchain in `cwd` inside the sysroot (cargo 1.95.0 with
/// `cargo offload` installed) with `env` added, and the plan file in which
/// `cargo offload run|test` leaves the programs to run on the machine's own OS ([`run_plan`]).
pub fn cargo_with_plan(
    cache: &Cache,
    cwd: &Path,
    args: Vec<OsString>,
    env: &[(&str, OsString)],
) -> Result<(Command, PlanFile)> {
    install_cargo_offload(&project_root(), cache)?;
    let plans = cache.root.join("run-plans");
    fs::create_dir_all(&plans).at("RUN", &plans)?;
    // One per process and call, so that two `./x.py cargo` at once keep theirs apart.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let plan_path = plans.join(format!("{}-{call}", std::process::id()));
    let _ = fs::remove_file(&plan_path);
    let mut enter =
        toolchain(cache, cwd, "cargo").args(args).env("CARGO_OFFLOAD_RUN_PLAN", &plan_path);
    enter.program = stage0_toolchain().join("bin/cargo").into();
    // cargo 1.95.0 is a stable build: `-Zbuild-std` and friends need this.
    if std::env::var_os("RUSTC_BOOTSTRAP").is_none() {
        enter = enter.env("RUSTC_BOOTSTRAP", "1");
    }
    for (key, value) in env {
        enter = enter.env(key, value.clone());
    }
    // The folders that the machine sees at the same path: `--run-plan` keeps their paths, and
    // `cargo offload bundle` writes only under them.
    let mut binds: Vec<PathBuf> = enter.bound_dirs(cache).into_iter().map(|(d, _)| d).collect();
    binds.push(PathBuf::from("/tmp"));
    let joined = std::env::join_paths(&binds).unwrap_or_default();
    enter = enter.env("CARGO_OFFLOAD_BINDS", joined);
    Ok((enter.command(cache)?, PlanFile(plan_path, binds)))
}

/// `cargo-offload --run-plan PLAN` on this machine's own OS, with the caller's environment:
/// it runs the programs of `cargo offload run|test` with the sysroot's loader and libraries
/// (see `src/tools/cargo-offload/src/launch.rs`).
pub fn run_plan(cache: &Cache, plan: &PlanFile) -> Command {
    let mut cmd = Command::new(offload_tools_bin(cache).join("cargo-offload"));
    cmd.arg("--run-plan")
        .arg(&plan.0)
        .env("CARGO_OFFLOAD_ROOT", cache.sysroot())
        .env("CARGO_OFFLOAD_BINDS", std::env::join_paths(&plan.1).unwrap_or_default());
    cmd
}
