//! `./x.py cargo|rustc|<program> ...`: a program of the stage-1 toolchain, run inside the
//! sysroot (and, for `cargo offload run|test`, its programs outside it); and `./x.py manifest`,
//! which runs the toolchain's manifest printer.

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitStatus;

use crate::cache::{Cache, offload_tools_bin};
use crate::toolchain::{cargo_with_plan, run_plan, toolchain};
use crate::toolchain_lock::{ToolchainLock, Use};
use crate::tools::dump_manifest;
use crate::ui::{Context, Result, fail};

/// Runs `program args` in the caller's directory inside the sysroot, with the stage-1
/// toolchain first on PATH. Returns the program's exit status.
pub fn run_tool(cache: &Cache, program: &str, args: Vec<OsString>) -> Result<ExitStatus> {
    // Held until the program (and, for `cargo offload run|test`, the programs it built) ends.
    let _running = ToolchainLock::take(cache, "RUN", Use::Run)?;
    let rustc = cache.stage1_rustc();
    if !rustc.exists() {
        return fail(
            "RUN",
            format!("{} does not exist: run `./x.py build` first", rustc.display()),
        );
    }
    let cwd = std::env::current_dir().context("RUN", || "no current directory".into())?;
    if program == "cargo" {
        let (mut inside, plan) = cargo_with_plan(cache, &cwd, args, &[])?;
        let status = crate::sysroot::status("RUN", &mut inside)?;
        return match plan.take() {
            Some(plan) if status.success() => run_plan(cache, plan)
                .status()
                .running("RUN", offload_tools_bin(cache).join("cargo-offload").display()),
            _ => Ok(status),
        };
    }
    let mut enter = toolchain(cache, &cwd, program).args(args);
    if program == "rustc" {
        enter.program = rustc.into();
    }
    enter.status(cache, "RUN")
}

/// `./x.py manifest PATH`: prints the offload manifest at `path` (`-Zoffload=HostMetadata=PATH`)
/// as text, one kernel per line ([`dump_manifest`]).
pub fn manifest(project: &Path, cache: &Cache, path: &Path) -> Result<()> {
    let text = dump_manifest(project, cache, path)?;
    print!("{text}");
    Ok(())
}
