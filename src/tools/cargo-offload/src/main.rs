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
//! The modules, in the order of a run: [`args`] (the command line), [`wrapper`] (`cargo-offload`
//! as cargo's `RUSTC_WRAPPER`), [`workspace`] (`cargo metadata`), [`passes`] (the cargo passes
//! and the driver), [`manifests`] (the root crates' manifests, merged), [`image_crate`] (the
//! crate the device passes build), [`vendor`] (the vendor tools that make the loadable images),
//! [`registration`] (the object that registers them), [`seal`] (what a reused file must still
//! hold), [`launch`] (how the programs start),
//! [`linker`] (the linker driver of an installed toolchain, `--cc`),
//! [`heal`] (what a build removes first), [`env`] (the names of the `CARGO_OFFLOAD_*`
//! environment variables) and [`util`].

mod args;
mod env;
mod heal;
mod image_crate;
mod launch;
mod linker;
mod manifests;
mod passes;
mod registration;
mod seal;
mod util;
mod vendor;
mod workspace;
mod wrapper;

use std::process::ExitCode;

use crate::args::{USAGE, parse_args};
use crate::passes::run;
use crate::util::Failure;
use crate::wrapper::{wrap_device_rustc, wrap_host_rustc};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    // As `RUSTC_WRAPPER`, cargo runs us as `cargo-offload <rustc> <args>`.
    if let Ok(pass) = std::env::var(env::HOST_METADATA_DIR) {
        return wrap_host_rustc(&pass, &args[1..]);
    }
    if let Ok(target_flags) = std::env::var(env::DEVICE_TARGET_FLAGS) {
        let program = std::env::var(env::DEVICE_PROGRAM).ok();
        return wrap_device_rustc(&target_flags, program.as_deref(), &args[1..]);
    }
    // As the linker driver of an installed toolchain (`lib/offload/bin/cc`).
    if args.get(1).map(String::as_str) == Some("--cc") {
        return linker::link(&args[2..]);
    }
    // As `./x.py cargo` runs us after leaving the sysroot: the programs of `run` or `test`.
    if args.get(1).map(String::as_str) == Some("--run-plan") {
        let [_, _, file] = &args[..] else {
            eprintln!("error: [cargo offload] --run-plan takes one argument: the plan's file");
            return ExitCode::from(2);
        };
        return match launch::run_plan(std::path::Path::new(file)) {
            Ok(code) => code,
            Err(Failure(message, status)) => {
                eprintln!("error: [cargo offload] {message}");
                ExitCode::from(status)
            }
        };
    }
    // As a cargo subcommand: `cargo-offload offload <verb> ...`.
    let rest =
        if args.get(1).map(String::as_str) == Some("offload") { &args[2..] } else { &args[1..] };
    if rest.iter().any(|a| a == "--help" || a == "-h") && !rest.iter().any(|a| a == "--") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    match parse_args(rest).and_then(|inv| run(&inv)) {
        Ok(code) => code,
        Err(Failure(message, status)) => {
            eprintln!("error: [cargo offload] {message}");
            ExitCode::from(status)
        }
    }
}
