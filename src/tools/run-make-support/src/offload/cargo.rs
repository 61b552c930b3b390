//! `cargo offload` as a user runs it: cargo 1.95.0 (bootstrap's stage-0 cargo, named in the
//! tree's `bootstrap.toml`) with the stage-1 rustc and the installed `cargo-offload`, in a
//! project folder of the test's own, and what the test programs print.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::toolchain::{device_sysroot, offload_tools_bin, stage0_cargo};
use crate::{CompletedProcess, cmd, env_var, rfs};

/// `cargo offload ARGS` in `dir`, with its own target folder inside it and the variables `env`
/// besides; panics with its output unless it succeeds (`succeed`) or fails (`!succeed`).
fn run(dir: &Path, args: &[&str], env: &[(&str, &Path)], succeed: bool) -> CompletedProcess {
    let path = format!("{}:/usr/lib/llvm-22/bin:/usr/bin:/bin", offload_tools_bin().display());
    let mut c = cmd(stage0_cargo());
    c.arg("offload")
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("RUSTC", env_var("RUSTC"))
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env(
            "CARGO_OFFLOAD_CUDA_BIN",
            PathBuf::from(env_var("BUILD_ROOT")).join("offload-cuda/bin"),
        )
        .env("CARGO_OFFLOAD_DEVICE_SYSROOT", device_sysroot())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        // A user's shell sets none; bootstrap's does, for its own builds.
        .env_remove("CARGO_INCREMENTAL")
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("MAKEFLAGS");
    for (name, value) in env {
        c.env(name, value);
    }
    if succeed { c.run() } else { c.run_fail() }
}

/// `cargo offload ARGS` in `dir`; panics with its output unless it succeeds.
pub fn cargo_offload(dir: &Path, args: &[&str]) -> CompletedProcess {
    run(dir, args, &[], true)
}

/// `cargo offload ARGS` in `dir` with the variables `env` (a test's own `CARGO_HOME`, say);
/// panics with its output unless it succeeds.
pub fn cargo_offload_with(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> CompletedProcess {
    run(dir, args, env, true)
}

/// `cargo offload ARGS` in `dir` with the variables `env`; panics with its output unless it
/// fails.
pub fn cargo_offload_fails_with(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
) -> CompletedProcess {
    run(dir, args, env, false)
}

/// `cargo offload ARGS` in `dir`; panics with its output unless it fails.
pub fn cargo_offload_fails(dir: &Path, args: &[&str]) -> CompletedProcess {
    run(dir, args, &[], false)
}

/// The `Cargo.toml` of a test package `name` (version 0.1.0, edition 2024) whose
/// `[dependencies]` table holds `dependencies` (TOML lines, each ending in a newline).
pub fn package_manifest(name: &str, dependencies: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
         [dependencies]\n{dependencies}"
    )
}

/// A package of a test workspace ([`write_workspace`]): its name, its `[dependencies]` lines
/// (each ending in a newline), and its one source file, by its path under `src/` (`lib.rs`,
/// `main.rs`) and its text.
pub type Member<'a> = (&'a str, &'a str, &'a str, &'a str);

/// Writes a workspace into the folder `ws`: a `Cargo.toml` (resolver 3) whose members are
/// `members`, each a package folder of that name with its `Cargo.toml` ([`package_manifest`])
/// and its source file.
pub fn write_workspace(ws: &Path, members: &[Member<'_>]) {
    let names: Vec<String> = members.iter().map(|(name, ..)| format!("\"{name}\"")).collect();
    rfs::create_dir_all(ws);
    rfs::write(
        ws.join("Cargo.toml"),
        format!("[workspace]\nmembers = [{}]\nresolver = \"3\"\n", names.join(", ")),
    );
    for (name, dependencies, file, text) in members {
        rfs::create_dir_all(ws.join(name).join("src"));
        rfs::write(ws.join(name).join("Cargo.toml"), package_manifest(name, dependencies));
        rfs::write(ws.join(name).join("src").join(file), text);
    }
}

/// The start of a kernel crate's `lib.rs` for [`ADD_ONE_KERNEL`]: `no_std`, the grid's indices
/// and the attribute in scope.
pub const ADD_ONE_PRELUDE: &str = "#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};
";

/// A kernel, `add_one`, that adds one to each element of a `u32` slice, one work item per
/// element (the work items past its end do nothing); its crate starts with [`ADD_ONE_PRELUDE`].
pub const ADD_ONE_KERNEL: &str = "#[offload_kernel]
pub fn add_one(y: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < y.len() {
        y[i] += 1;
    }
}
";

/// The `main.rs` of a program that launches [`ADD_ONE_KERNEL`] of the crate `kernels` over 256
/// elements of 41 (4 blocks of 64 work items) and then runs `report`, statements that may read
/// `right`: how many elements became 42.
pub fn add_one_program(report: &str) -> String {
    format!(
        "#![feature(gpu_offload)]

fn main() {{
    let mut y = vec![41u32; 256];
    core::offload::offload! {{
        kernel = kernels::add_one,
        workgroup_dim = [4, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&mut y[..],),
    }}
    let right = y.iter().filter(|v| **v == 42).count();
    {report}
}}
"
    )
}

/// Copies the folder `from` to `to`, without a `target/` folder.
pub fn copy_dir(from: &Path, to: &Path) {
    rfs::create_dir_all(to);
    for entry in rfs::read_dir(from) {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "target" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if src.is_dir() { copy_dir(&src, &dst) } else { rfs::copy(&src, &dst) }
    }
}

/// The `name: mismatches checksum` lines of a test program's output (`offload-cpu-grid`,
/// `offload-slices`), by name.
pub fn reports(stdout: &str) -> BTreeMap<String, (u64, u64)> {
    stdout
        .lines()
        .filter_map(|l| l.split_once(": "))
        .filter_map(|(name, rest)| {
            let mut fields = rest.split_whitespace().map(|v| v.parse::<u64>());
            match (fields.next(), fields.next(), fields.next()) {
                (Some(Ok(m)), Some(Ok(s)), None) => Some((name.to_string(), (m, s))),
                _ => None,
            }
        })
        .collect()
}

/// The copies between the host and the devices that the offload runtime logs with
/// `LIBOMPTARGET_INFO=32` on standard error (one `Copying data from host to device, ...,
/// Size=N, ...` or `from device to host` line per copy): `[bytes to the devices, copies to the
/// devices, bytes back, copies back]`. Panics on a copy line without a size.
pub fn copies_in_log(stderr: &str) -> [u64; 4] {
    let copied = |direction: &str| {
        let line = format!("Copying data from {direction}");
        let sizes = stderr.lines().filter(|l| l.contains(&line)).map(|l| {
            let size = l.split("Size=").nth(1).and_then(|rest| rest.split(',').next());
            size.and_then(|n| n.parse::<u64>().ok()).unwrap_or_else(|| panic!("no size: {l}"))
        });
        sizes.fold((0u64, 0u64), |(bytes, copies), size| (bytes + size, copies + 1))
    };
    let (to, back) = (copied("host to device"), copied("device to host"));
    [to.0, to.1, back.0, back.1]
}
