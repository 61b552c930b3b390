//! `cargo offload build|run|test|bundle [cargo args] --offload-arch=ARCH[,ARCH...]`: builds a
//! Cargo project whose host code launches kernels through `core::intrinsics::offload` into a
//! program that runs them through LLVM's offload runtime.
//!
//! The passes (see `src/doc/cargo-offload.md` for the whole story):
//! 1. host pass, compile: `cargo build|test --target <host>`, every crate with
//!    `-Zoffload=Host=<image>` and `-Zoffload=HostMetadata=<manifest>` (one manifest per crate,
//!    named by its crate name and cargo's `-C extra-filename`, given through `RUSTC_WRAPPER`,
//!    the way cargo-miri drives rustc), the programs with `-Zno-link`; the manifests of the
//!    root crates (those of the workspace packages) are merged;
//! 2. one device pass per arch (the archs of distinct targets share one cargo run): a
//!    generated image crate that depends on the workspace libraries defining the kernels (or a
//!    program that defines kernels, compiled as an `rlib`), built with
//!    `-Zoffload=Device=<merged manifest>` for the arch's target against the toolchain's
//!    `core` (the device sysroot, see [`env::DEVICE_SYSROOT`]; `--build-std` builds it from
//!    source); its image is compiled by the vendor tools (`llc`, `ld.lld`;
//!    `ptxas`, `nvlink`), packaged with `llvm-offload-binary`, and all images are wrapped into
//!    one registration object by `llvm-offload-wrapper`;
//! 3. host pass, link: the same cargo command again, which finds every crate fresh but the
//!    programs, which rustc links (`-Zlink-only`) with the registration object and LLVM's
//!    offload runtime (`libomptarget`), with an rpath;
//! 4. `run` and `test` run the programs (in place, or, under `./x.py cargo`, on the machine's
//!    own OS through `--run-plan`); `bundle` writes them with their libraries into a folder.
//!
//! Each pass has its own target folder under `<target dir>/offload/`. Exit status: cargo's
//! when a cargo pass fails, 1 with one `error:` line for anything else, 2 for bad usage.
//!
//! Which role a copy of `cargo-offload` plays (the subcommand, a wrapper of the host build's
//! compile run or of its link run, a wrapper of a device pass, the linker driver, the run plan)
//! is decoded once, here, from its arguments and environment ([`role::Role::decode`]); each
//! role's module has one entry function that [`play`] calls.
//!
//! The modules, in the order of a run: [`role`] (which role this copy plays), [`args`] (the
//! command line), [`wrapper`] (`cargo-offload` as cargo's `RUSTC_WRAPPER`: [`wrapper::host`]
//! for the host build, [`wrapper::device`] for the device passes), [`workspace`] (`cargo
//! metadata`), [`passes`] (the driver: the order of the passes in `passes/mod.rs`, then a file
//! each for the host runs, `host.rs`, the device runs, `device.rs`, what is built again and
//! why, `freshness.rs`, and how a pass's messages are shown, `log.rs`), [`manifests`] (the root
//! crates' manifests, merged), [`image_crate`] (the crate the device passes build, the crates
//! each kernel needs, where `core` comes from), [`vendor`] (the vendor tools that make the
//! loadable images), [`registration`] (the object that registers them), [`seal`] (what a
//! reused file must still hold), [`launch`] (how the programs start), [`linker`] (the linker
//! driver of an installed toolchain, `--cc`), [`heal`] (what a build removes first),
//! [`user_wrapper`] (the user's own `RUSTC_WRAPPER`, which the host pass runs rustc through),
//! [`mod@env`] (the names of the `CARGO_OFFLOAD_*` environment variables) and [`util`]
//! (failures and their context, writing files only when they change).

mod args;
mod env;
mod heal;
mod image_crate;
mod launch;
mod linker;
mod manifests;
mod passes;
mod registration;
mod role;
mod seal;
mod user_wrapper;
mod util;
mod vendor;
mod workspace;
mod wrapper;

use std::process::ExitCode;

use crate::role::Role;
use crate::util::{Failure, Result};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match Role::decode(|name| std::env::var_os(name), &args).and_then(play) {
        Ok(code) => code,
        Err(Failure(message, status)) => {
            eprintln!("error: [cargo offload] {message}");
            ExitCode::from(status)
        }
    }
}

/// Plays `role`: each role's module has one entry function. Returns the exit status of what
/// it ran; a failure is printed as one `error:` line with its exit status ([`Failure`]).
fn play(role: Role) -> Result<ExitCode> {
    match role {
        Role::Subcommand(args) => passes::subcommand(&args),
        Role::HostCompile(rustc, pass) => wrapper::host::compile_run(&rustc, &pass),
        Role::HostLink(rustc, pass, link) => wrapper::host::link_run(&rustc, &pass, &link),
        Role::Device(rustc, pass) => wrapper::device::wrap_device_rustc(&rustc, &pass),
        Role::Linker(args) => linker::link(&args),
        Role::RunPlan(file) => launch::run_plan(&file),
    }
}
