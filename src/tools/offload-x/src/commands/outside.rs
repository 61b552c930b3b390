//! `[OUTSIDE]` of `./x.py test`: offload programs run on this machine's own OS, not in the
//! toolchain's sysroot.
//!
//! The program (`src/tools/offload-x/outside`: a saxpy kernel over a grid, with slices)
//! prints the `PRETTY_NAME` of the `/etc/os-release` it sees and the device and inode of its
//! `/`, so each run shows where it ran: on this machine's own OS (Debian 12 here), not in the
//! sysroot (Debian 13). Checked:
//! 1. `cargo offload run --release --offload-arch=host,sm_90` (as `./x.py cargo` runs it: the
//!    program starts after leaving the sysroot, with the toolchain's loader and libraries)
//!    gives the right results on the CPU device, and its exit status passes through;
//! 2. with `OFFLOAD_REPORT=1` the program names the CPU device and the image that ran the
//!    kernel;
//! 3. `cargo offload bundle` of the same program, copied to a fresh folder and started from an
//!    empty one with an empty environment apart from `PATH`, gives the same results, passes
//!    arguments and the exit status, reports the device, and loads every library from the
//!    bundle (`ld.so --list`); the glibc and loader it carries are printed beside the machine's;
//! 4. a bundle with only an `sm_90` image stops at the launch with the failed-launch line, and
//!    its report says that no device runs the program's images.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::cache::Cache;
use crate::toolchain::{cargo_with_plan, run_plan};
use crate::ui::{Context, Result, Timer, fail, say};

const STEP: &str = "OUTSIDE";

/// The `PRETTY_NAME` of an `os-release` file's text.
pub fn pretty_name(os_release: &str) -> Option<String> {
    os_release
        .lines()
        .find_map(|line| line.strip_prefix("PRETTY_NAME="))
        .map(|name| name.trim_matches('"').to_string())
}

/// `./x.py cargo ARGS` in `ws`, captured: cargo inside the sysroot, then the programs of
/// `cargo offload run|test` outside it, with `env` added to theirs.
fn x_cargo(cache: &Cache, ws: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
    let (mut inside, plan) =
        cargo_with_plan(cache, ws, args.iter().map(OsString::from).collect(), &[])?;
    let built = crate::sysroot::output(STEP, &mut inside)?;
    if !built.status.success() {
        return fail(
            STEP,
            format!("cargo {} failed:\n{}", args.join(" "), crate::ui::tail(&built.stderr, 30)),
        );
    }
    let Some(plan) = plan.take() else { return Ok(built) };
    let mut run = run_plan(cache, plan);
    for (key, value) in env {
        run.env(key, value);
    }
    run.output().context(STEP, || "cargo-offload --run-plan".into())
}

/// Fails unless `output` exited with `status` and its stdout holds every line of `stdout` and
/// its stderr every text of `stderr`.
fn expect(
    what: &str,
    output: &Output,
    status: i32,
    stdout: &[&str],
    stderr: &[&str],
) -> Result<()> {
    let (out, err) =
        (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let lines: Vec<&str> = out.lines().collect();
    let missing_out = stdout.iter().find(|l| !lines.contains(l));
    let missing_err = stderr.iter().find(|t| !err.contains(*t));
    if output.status.code() != Some(status) || missing_out.is_some() || missing_err.is_some() {
        return fail(
            STEP,
            format!(
                "{what}: expected exit status {status}, the lines {stdout:?} and {stderr:?} on \
                 stderr; got {:?}\n--- stdout\n{out}--- stderr\n{err}",
                output.status
            ),
        );
    }
    Ok(())
}

/// `./x.py outside`: the toolchain built ([`crate::stages::build`]), then [`check`].
pub fn run(project: &Path, cache: &Cache) -> Result<()> {
    crate::stages::build(project, cache)?;
    check(project, cache)
}

/// Runs the checks (see the module's documentation) with the toolchain that is built.
pub fn check(project: &Path, cache: &Cache) -> Result<()> {
    let timer = Timer::start(STEP, "programs outside the sysroot: cargo offload run, bundles");
    let machine = Machine::identify(cache)?;
    let work = cache.root.join("outside-test");
    let ws = copy_workspace(project, &work)?;
    check_run(cache, &ws, &machine)?;
    check_bundle(cache, &ws, &work, &machine)?;
    check_gpu_only_bundle(cache, &ws, &work)?;
    timer.done();
    Ok(())
}

/// What the test program prints of the machine it runs on, as this machine gives it.
struct Machine {
    /// `PRETTY_NAME` of this machine's `/etc/os-release`.
    name: String,
    /// The program's `os: ...` line.
    os_line: String,
    /// The program's `root: DEV:INODE` line.
    root_line: String,
}

impl Machine {
    /// This machine, told apart from the sysroot by its release and its root folder.
    fn identify(cache: &Cache) -> Result<Machine> {
        let machine = pretty_name(&fs::read_to_string("/etc/os-release").unwrap_or_default());
        let sysroot = fs::read_to_string(cache.sysroot().join("etc/os-release"))
            .or_else(|_| fs::read_to_string(cache.sysroot().join("usr/lib/os-release")))
            .unwrap_or_default();
        let (Some(name), Some(sysroot)) = (machine, pretty_name(&sysroot)) else {
            return fail(STEP, "no PRETTY_NAME in /etc/os-release of the machine or the sysroot");
        };
        // The root folder tells the machine from the sysroot even where both run one release.
        let (own_root, sysroot_root) =
            (root_identity(Path::new("/"))?, root_identity(&cache.sysroot())?);
        if own_root == sysroot_root {
            return fail(STEP, "the machine's root folder is the sysroot's");
        }
        say(
            STEP,
            format!(
                "this machine: {name}, root {own_root}; the sysroot: {sysroot}, root \
                 {sysroot_root}"
            ),
        );
        Ok(Machine { os_line: format!("os: {name}"), root_line: format!("root: {own_root}"), name })
    }
}

/// The test workspace (`src/tools/offload-x/outside`) copied into `work/ws`, whose last copy
/// goes but for its target folder (so that cargo rebuilds only what changed); its path.
fn copy_workspace(project: &Path, work: &Path) -> Result<PathBuf> {
    let ws = work.join("ws");
    fs::create_dir_all(&ws).at(STEP, &ws)?;
    for entry in fs::read_dir(&ws).at(STEP, &ws)?.flatten() {
        if entry.file_name() != "target" {
            let path = entry.path();
            let _ = if path.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
        }
    }
    shell(&format!(
        "cp -a {}/. {}/",
        quote(&project.join("src/tools/offload-x/outside")),
        quote(&ws)
    ))?;
    Ok(ws)
}

/// The archs of the checks' builds: the CPU device and a GPU that this machine lacks (the
/// default archs of `offload_targets::CPU` and `NVPTX`, as the test below checks).
const ARCHS: &str = "--offload-arch=host,sm_90";

/// What `OFFLOAD_REPORT=1` says of a launch that the CPU device ran.
const RAN_ON_CPU: &str =
    "ran on device 0 (generic-64bit, uid x86_64-0) from image 1 of 2 (x86_64-unknown-linux-gnu)";

/// Checks 1 and 2: `cargo offload run` runs the program on this machine's own OS with its
/// arguments and exit status, and reports devices only with `OFFLOAD_REPORT`.
fn check_run(cache: &Cache, ws: &Path, machine: &Machine) -> Result<()> {
    let Machine { os_line, root_line, .. } = machine;
    let run = ["offload", "run", "--release", ARCHS, "--", "1000", "7"];
    let output = x_cargo(cache, ws, &run, &[])?;
    let ok_1000 = "saxpy over 1000 elements: ok";
    expect("cargo offload run", &output, 7, &[os_line, root_line, ok_1000], &[])?;
    if String::from_utf8_lossy(&output.stderr).contains("[offload report]") {
        return fail(STEP, "cargo offload run reported devices without OFFLOAD_REPORT");
    }
    let output = x_cargo(cache, ws, &run[..6], &[("OFFLOAD_REPORT", "1")])?;
    expect("OFFLOAD_REPORT=1 cargo offload run", &output, 0, &[root_line], &[RAN_ON_CPU])?;
    say(STEP, format!("cargo offload run: `{os_line}`, results right, exit status 7 passed"));
    Ok(())
}

/// Runs `program` with `args` in an empty folder of `fresh`, with an empty environment but
/// `PATH` (and `OFFLOAD_REPORT=1` with `report`).
fn start_bare(fresh: &Path, program: &Path, args: &[&str], report: bool) -> Result<Output> {
    let mut cmd = Command::new(program);
    cmd.args(args).env_clear().env("PATH", "/usr/bin:/bin").current_dir(fresh.join("empty"));
    if report {
        cmd.env("OFFLOAD_REPORT", "1");
    }
    cmd.output().at(STEP, program)
}

/// The first line that `program` with `args` prints.
fn first_line(program: &Path, args: &[&OsStr]) -> Result<String> {
    let output = Command::new(program).args(args).output().at(STEP, program)?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    Ok(text.lines().next().unwrap_or("?").to_string())
}

/// Check 3: a bundle, copied to a fresh folder, runs with an empty environment but `PATH`, and
/// loads only its own libraries.
fn check_bundle(cache: &Cache, ws: &Path, work: &Path, machine: &Machine) -> Result<()> {
    let Machine { name, os_line, root_line } = machine;
    let bundle = work.join("bundle");
    // The test's own folders: each run writes its bundles anew.
    for old in [&bundle, &work.join("bundle-sm_90")] {
        let _ = fs::remove_dir_all(old);
    }
    let args = ["offload", "bundle", "--release", ARCHS, "--out"];
    x_cargo(cache, ws, &[&args[..], &[bundle.to_str().unwrap()]].concat(), &[])?;
    let fresh = Fresh(std::env::temp_dir().join(format!("offload-outside-{}", std::process::id())));
    let fresh = &fresh.0;
    let _ = fs::remove_dir_all(fresh);
    fs::create_dir_all(fresh.join("empty")).at(STEP, fresh)?;
    shell(&format!("cp -a {} {}", quote(&bundle), quote(&fresh.join("bundle"))))?;
    let app = fresh.join("bundle/app");
    let output = start_bare(fresh, &app, &["2000", "5"], false)?;
    expect("the bundle", &output, 5, &[os_line, root_line, "saxpy over 2000 elements: ok"], &[])?;
    let output = start_bare(fresh, &app, &[], true)?;
    expect("OFFLOAD_REPORT=1 with the bundle", &output, 0, &[root_line], &[RAN_ON_CPU])?;
    // The bundle's `libc.so.6` prints its version when run by the bundle's loader (the
    // machine's would not load a newer C library).
    let lib = fresh.join("bundle/lib");
    let loader = lib.join("ld-linux-x86-64.so.2");
    let libc = first_line(
        &loader,
        &["--library-path".as_ref(), lib.as_os_str(), lib.join("libc.so.6").as_os_str()],
    )?;
    // Every library the program loads is the bundle's.
    let list = Command::new(&loader)
        .args(["--library-path".as_ref(), lib.as_os_str(), "--list".as_ref()])
        .arg(fresh.join("bundle/bin/app"))
        .output()
        .at(STEP, &loader)?;
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    let resolved: Vec<&str> = list.lines().filter_map(|l| l.split(" => ").nth(1)).collect();
    if resolved.len() < 5 || resolved.iter().any(|path| !Path::new(path).starts_with(&lib)) {
        return fail(STEP, format!("the bundle's program loads libraries from elsewhere:\n{list}"));
    }
    let loader = first_line(&loader, &["--version".as_ref()])?;
    let own = first_line(Path::new("/usr/bin/ldd"), &["--version".as_ref()])?;
    say(STEP, format!("the bundle ran on {name} (its own C library: {own})"));
    say(STEP, format!("  the bundle's C library: {libc}"));
    say(STEP, format!("  the bundle's loader lib/ld-linux-x86-64.so.2: {loader}"));
    Ok(())
}

/// Check 4: a bundle with only an sm_90 image stops at its launch with the failed-launch line,
/// since no device here can run the kernel.
fn check_gpu_only_bundle(cache: &Cache, ws: &Path, work: &Path) -> Result<()> {
    let gpu_only = work.join("bundle-sm_90");
    let args = ["offload", "bundle", "--release", "--offload-arch=sm_90", "--out"];
    x_cargo(cache, ws, &[&args[..], &[gpu_only.to_str().unwrap()]].concat(), &[])?;
    let fresh = Fresh(std::env::temp_dir().join(format!("offload-sm90-{}", std::process::id())));
    let _ = fs::remove_dir_all(&fresh.0);
    fs::create_dir_all(fresh.0.join("empty")).at(STEP, &fresh.0)?;
    let output = start_bare(&fresh.0, &gpu_only.join("app"), &[], true)?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let failed = stderr
        .lines()
        .any(|l| l.starts_with("error: the offload launch of kernel `") && l.contains("saxpy"));
    let no_image = "did not run: the runtime has no device 0 (0 devices run the program's \
                    images: nvptx64-nvidia-cuda sm_90)";
    if output.status.success() || !failed || !stderr.contains(no_image) {
        return fail(
            STEP,
            format!(
                "the sm_90-only bundle: expected a failed launch of saxpy and the report \
                 `{no_image}`; got {:?}\n{stderr}",
                output.status
            ),
        );
    }
    say(STEP, "the sm_90-only bundle stops at the launch with the failed-launch line");
    Ok(())
}

/// The fresh folder of the bundle's copy, removed however the check ends.
struct Fresh(PathBuf);

impl Drop for Fresh {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `DEV:INODE` of the folder `path`.
fn root_identity(path: &Path) -> Result<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(path).at(STEP, path)?;
    Ok(format!("{}:{}", meta.dev(), meta.ino()))
}

fn shell(script: &str) -> Result<()> {
    let status = Command::new("sh").args(["-c", script]).status().running(STEP, "sh")?;
    if !status.success() {
        return fail(STEP, format!("`{script}` failed"));
    }
    Ok(())
}

fn quote(path: &Path) -> String {
    crate::sysroot::shell_quote(&path.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_names_come_from_os_release() {
        let text = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(pretty_name(text).as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
        assert_eq!(pretty_name("PRETTY_NAME=Plain\n").as_deref(), Some("Plain"));
        assert_eq!(pretty_name("NAME=x\n"), None);
    }

    #[test]
    fn the_checks_archs_are_the_tables() {
        let (cpu, gpu) = (offload_targets::CPU, offload_targets::NVPTX);
        assert_eq!(ARCHS, format!("--offload-arch={},{}", cpu.default_arch, gpu.default_arch));
        assert_eq!(RAN_ON_CPU.matches(cpu.triple).count(), 1);
    }
}
