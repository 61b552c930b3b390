//! The edit loop of `cargo offload` (scenarios S28 and S30 of `src/doc/scenarios.md`): a program
//! in the dev profile is built as plain `cargo build` builds it, and an edit rebuilds only what
//! it changed.
//!
//! The workspace: `kernels` (a kernel, `saxpy`, that calls into `helper`, a path dependency
//! outside the workspace's folder that stands for a registry crate), `launcher` (a library
//! that launches `saxpy` too) and `runner` (a program that launches `saxpy`, calls `launcher`
//! and prints one element of the result). Built with `--offload-arch=host`:
//! - the host pass passes no `-C lto` (the profile has none) and builds incrementally, as the
//!   dev profile asks; it compiles each crate once (its compile run writes the manifests; no
//!   separate build of the crates for them), and its link run passes only the program to rustc
//!   again (to link it);
//! - `saxpy` is launched from two crates, each of whose objects holds its offload entry, and
//!   the linked program holds one (the entries are COMDAT groups), as many bytes of entries as
//!   `launcher`'s object; the program's results are the host's;
//! - after an edit of the program alone, the device pass runs first, compiles nothing and
//!   reuses its image (the vendor tools do not run again), and the host pass is one run that
//!   compiles and links only `runner`, as plain `cargo build` does;
//! - after an edit of the kernel alone, the host pass runs first (the kernel's manifest entry
//!   changed), the device pass compiles `kernels` and the image, not `helper`, and the
//!   program, whose own source did not change, runs the edited kernel; the next host edit
//!   runs the device pass first again;
//! - after an edit of the program that drops its launch (the launches change), the device pass
//!   runs again after the host pass, with the new launches; its image, of the same kernel, has
//!   the bytes of the last, so the program that the host pass linked with it stands;
//! - a release build in between leaves the dev build fresh: no vendor tool, no compilation, no
//!   link.

//@ only-x86_64
//@ needs-offload

use std::path::Path;

use run_make_support::offload::{cargo_offload, llvm_tool, package_manifest};
use run_make_support::{cmd, cwd, rfs};

const KERNELS: &str = r#"#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};

#[offload_kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < y.len() {
        y[i] = helper::combine(a, x[i], y[i]) + 0.0;
    }
}
"#;

const LAUNCHER: &str = r#"#![feature(gpu_offload)]

/// `saxpy` with `a = 3` over `y`, launched from this crate.
pub fn saxpy3(x: &[f32], y: &mut [f32]) {
    core::offload::offload! {
        kernel = kernels::saxpy,
        workgroup_dim = [y.len().div_ceil(64) as u32, 1, 1],
        thread_dim = [64, 1, 1],
        args = (3.0f32, x, y),
    }
}
"#;

const RUNNER: &str = r#"#![feature(gpu_offload)]

fn main() {
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; n];
    core::offload::offload! {
        kernel = kernels::saxpy,
        workgroup_dim = [(n as u32).div_ceil(64), 1, 1],
        thread_dim = [64, 1, 1],
        args = (2.0f32, &x[..], &mut y[..]),
    }
    launcher::saxpy3(&x, &mut y);
    println!("edit 0: y[10] = {}, y[999] = {}", y[10], y[999]);
}
"#;

/// The lines that `cargo offload` (run with `-v`) printed in the step named `step`, between its
/// start line and its `done` line.
fn step_lines<'a>(stderr: &'a str, step: &str) -> Vec<&'a str> {
    let start = format!("[cargo offload] {step}");
    stderr
        .lines()
        .skip_while(|l| !l.starts_with(&start))
        .skip(1)
        .take_while(|l| !l.starts_with(&start))
        .collect()
}

/// The crates that cargo compiled in a step's `lines`.
fn compiled<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    lines
        .iter()
        .filter_map(|l| l.trim_start().strip_prefix("Compiling "))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect()
}

/// The bytes of offload entries (sections `llvm_offload_entries`, one entry per kernel) in the
/// object file, archive or program `path`, by `llvm-readelf`.
fn entry_bytes(path: &Path) -> u64 {
    let sections = cmd(llvm_tool("llvm-readelf")).args(["-S", "-W"]).arg(path).run().stdout_utf8();
    sections
        .lines()
        .filter_map(|l| {
            // `[Nr] Name Type Address Off Size ...`
            let fields: Vec<&str> = l.split_whitespace().collect();
            let at = fields.iter().position(|f| *f == "llvm_offload_entries")?;
            u64::from_str_radix(fields.get(at + 4)?, 16).ok()
        })
        .sum()
}

fn build(ws: &Path) -> String {
    cargo_offload(ws, &["build", "-v", "--offload-arch=host"]).stderr_utf8()
}

fn run(ws: &Path) -> String {
    cargo_offload(ws, &["run", "--offload-arch=host"]).stdout_utf8()
}

fn main() {
    let ws = cwd().join("ws");
    for krate in ["kernels", "launcher", "runner"] {
        rfs::create_dir_all(ws.join(krate).join("src"));
    }
    rfs::write(
        ws.join("Cargo.toml"),
        "[workspace]\nmembers = [\"kernels\", \"launcher\", \"runner\"]\nresolver = \"3\"\n",
    );
    // `helper` is a path dependency outside the workspace's folder (a path dependency inside
    // it would be a member), as a registry crate is.
    let helper = cwd().join("helper");
    rfs::create_dir_all(helper.join("src"));
    rfs::write(helper.join("Cargo.toml"), package_manifest("helper", ""));
    rfs::write(
        helper.join("src/lib.rs"),
        "#![no_std]\n/// `a * x + y`.\npub fn combine(a: f32, x: f32, y: f32) -> f32 {\n    \
         a * x + y\n}\n",
    );
    rfs::write(
        ws.join("kernels/Cargo.toml"),
        package_manifest("kernels", "helper = { path = \"../../helper\" }\n"),
    );
    rfs::write(ws.join("kernels/src/lib.rs"), KERNELS);
    rfs::write(
        ws.join("launcher/Cargo.toml"),
        package_manifest("launcher", "kernels = { path = \"../kernels\" }\n"),
    );
    rfs::write(ws.join("launcher/src/lib.rs"), LAUNCHER);
    rfs::write(
        ws.join("runner/Cargo.toml"),
        package_manifest(
            "runner",
            "kernels = { path = \"../kernels\" }\nlauncher = { path = \"../launcher\" }\n",
        ),
    );
    rfs::write(ws.join("runner/src/main.rs"), RUNNER);

    // The first build: the profile's own settings, entries from two crates, one in the program.
    let first = build(&ws);
    let host_pass = step_lines(&first, "host pass");
    let runner_rustc = host_pass
        .iter()
        .find(|l| l.contains("Running `") && l.contains("--crate-name runner"))
        .unwrap_or_else(|| panic!("no rustc command of `runner` in the host pass:\n{first}"));
    assert!(!runner_rustc.contains("lto"), "the host pass asks for LTO: {runner_rustc}");
    assert!(
        runner_rustc.contains("-C incremental="),
        "the host pass of the dev profile is not incremental: {runner_rustc}"
    );
    let mut once = compiled(&host_pass);
    once.sort();
    assert_eq!(once, ["helper", "kernels", "launcher", "runner"], "{first}");
    let link_run = step_lines(&first, "host pass (x86_64-unknown-linux-gnu): link");
    assert_eq!(compiled(&link_run), ["runner"], "{first}");
    let metadata_pass = ws.join("target/offload/host-metadata");
    assert!(!metadata_pass.exists(), "a separate metadata pass built {}", metadata_pass.display());
    let host_dir = ws.join("target/offload/host/x86_64-unknown-linux-gnu/debug");
    let exe = host_dir.join("runner");
    let nm = cmd(llvm_tool("llvm-nm")).arg(&exe).run().stdout_utf8();
    let symbol = nm
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .find_map(|n| n.strip_prefix(".offloading.entry_name."))
        .unwrap_or_else(|| panic!("the program has no offload entry"))
        .to_string();
    assert!(symbol.starts_with("_offload_kernel_saxpy_"), "{symbol}");
    let launcher_rlib = rfs::read_dir(host_dir.join("deps"))
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("liblauncher-") && name.ends_with(".rlib")
        })
        .expect("no rlib of `launcher`");
    // `launcher`'s object holds the entry of its launch, and so does `runner`'s; the program
    // holds one.
    let one_entry = entry_bytes(&launcher_rlib);
    assert!(one_entry > 0, "`launcher` has no offload entry");
    assert_eq!(entry_bytes(&exe), one_entry, "the program's entries of {symbol}");
    assert_eq!(run(&ws).trim(), "edit 0: y[10] = 51, y[999] = 4996");

    // A host-only edit: no device codegen, the image reused, only `runner` compiled, and
    // compiled and linked in one run, after the device pass.
    let main_rs = ws.join("runner/src/main.rs");
    rfs::write(&main_rs, RUNNER.replace("edit 0", "edit 1"));
    let host_edit = build(&ws);
    let device = step_lines(&host_edit, "device pass host");
    assert_eq!(compiled(&device), Vec::<&str>::new(), "device pass after a host edit");
    let order: Vec<&str> = host_edit
        .lines()
        .filter_map(|l| l.strip_prefix("[cargo offload] "))
        .filter(|l| l.starts_with("device pass host (") || l.starts_with("host pass ("))
        .filter(|l| !l.contains(": done"))
        .collect();
    assert_eq!(
        order,
        [
            "device pass host (x86_64-unknown-linux-gnu, the toolchain's core)",
            "host pass (x86_64-unknown-linux-gnu): compile and link"
        ],
        "{host_edit}"
    );
    assert!(
        host_edit
            .lines()
            .any(|l| l.starts_with("[cargo offload] image host: ") && l.contains("(unchanged)")),
        "the image was built again after a host edit:\n{host_edit}"
    );
    assert_eq!(compiled(&step_lines(&host_edit, "host pass")), ["runner"], "{host_edit}");

    // A kernel edit alone: the device pass compiles the kernel crate and the image, not
    // `helper`, and the program's output changes with the kernel.
    rfs::write(ws.join("kernels/src/lib.rs"), KERNELS.replace("+ 0.0;", "+ 1.0;"));
    let kernel_edit = build(&ws);
    // The host pass first: the kernel's manifest entry changed with its source.
    assert!(!kernel_edit.contains("compile and link"), "{kernel_edit}");
    let device = compiled(&step_lines(&kernel_edit, "device pass host"));
    assert!(device.contains(&"kernels"), "the device pass kept the old kernel:\n{kernel_edit}");
    assert!(!device.contains(&"helper"), "the device pass compiled `helper` again: {device:?}");
    assert_eq!(run(&ws).trim(), "edit 1: y[10] = 53, y[999] = 4998");
    // The next host edit takes the images-first order again.
    rfs::write(&main_rs, RUNNER.replace("edit 0", "edit 3"));
    let host_edit = build(&ws);
    assert!(host_edit.contains(": compile and link\n"), "{host_edit}");
    assert_eq!(run(&ws).trim(), "edit 3: y[10] = 53, y[999] = 4998");

    // The program drops its own launch: `launcher`'s alone is left (`y = 3x + 1 + 1`). The
    // device pass of the last launches runs first, then, the launches changed, the device pass
    // of the new ones builds the image crate again; the image, of the same kernel, is the
    // same, so the link run links nothing again.
    let start = RUNNER.find("    core::offload::offload!").unwrap();
    let end = start + RUNNER[start..].find("    }\n").unwrap() + "    }\n".len();
    rfs::write(
        &main_rs,
        format!("{}{}", &RUNNER[..start], &RUNNER[end..]).replace("edit 0", "edit 2"),
    );
    let launch_edit = build(&ws);
    let line = "[cargo offload] the image crate changed (launches, features or locked versions): \
                 the device passes run again";
    assert!(launch_edit.contains(line), "{launch_edit}");
    let again = launch_edit.split("the image crate changed").nth(1).unwrap_or_default();
    let device = compiled(&step_lines(again, "device pass host"));
    assert_eq!(device, ["offload-image"], "{launch_edit}");
    let link_run = step_lines(again, "host pass (x86_64-unknown-linux-gnu): link");
    assert_eq!(compiled(&link_run), Vec::<&str>::new(), "{launch_edit}");
    assert_eq!(run(&ws).trim(), "edit 2: y[10] = 32, y[999] = 2999");

    // A release build in between leaves the dev build as it was: each profile keeps its own
    // images and registration, so the dev build after it runs no vendor tool and compiles and
    // links nothing.
    cargo_offload(&ws, &["build", "--release", "--offload-arch=host"]);
    let dev_again = build(&ws);
    let image = dev_again.lines().find(|l| l.starts_with("[cargo offload] image host: "));
    assert!(image.is_some_and(|l| l.contains("(unchanged)")), "{dev_again}");
    let lines: Vec<&str> = dev_again.lines().collect();
    assert_eq!(compiled(&lines), Vec::<&str>::new(), "{dev_again}");
    assert_eq!(run(&ws).trim(), "edit 2: y[10] = 32, y[999] = 2999");
}
