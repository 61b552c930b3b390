//! The verbs of `x.py`.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use crate::cache::{Cache, stage0_toolchain};
use crate::materialize::{self, Drift};
use crate::pins::{GPU_TARGETS, HOST, STAGE0_TOOLCHAIN, SYSROOT_LLVM_BIN};
use crate::sysroot::Enter;
use crate::ui::{Failure, Result, Timer, fail, say};
use crate::{fetch, sysroot, upstream};

/// Disk space a cold setup needs (sysroot 2 GB, tree 2 GB, build ~20 GB), in KiB.
const COLD_DISK_KIB: u64 = 30 * 1024 * 1024;
/// Disk space any run wants free, in KiB.
const WARM_DISK_KIB: u64 = 3 * 1024 * 1024;

/// `[CHECK]`: stage 0 and disk space.
pub fn check_machine(cache: &Cache) -> Result<()> {
    let stage0 = stage0_toolchain();
    if !stage0.join("bin/rustc").exists() || !stage0.join("bin/cargo").exists() {
        return fail(
            "CHECK",
            format!(
                "the rustup toolchain {STAGE0_TOOLCHAIN} (stage 0) is missing at {}; install it \
                 with `rustup toolchain install 1.95.0` and rerun",
                stage0.display()
            ),
        );
    }
    fs::create_dir_all(&cache.root).map_err(|e| Failure {
        step: "CHECK",
        message: format!(
            "cannot create the cache {}: {e}; set OFFLOAD_FORK_CACHE to a writable folder",
            cache.root.display()
        ),
    })?;
    let need = if cache.build().join(HOST).join("stage1/bin/rustc").exists() {
        WARM_DISK_KIB
    } else {
        COLD_DISK_KIB
    };
    let out = Command::new("df").arg("-Pk").arg(&cache.root).output();
    if let Ok(out) = out {
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(avail) = text
            .lines()
            .nth(1)
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse::<u64>().ok())
        {
            if avail < need {
                return fail(
                    "CHECK",
                    format!(
                        "only {} MiB free at {}, {} MiB needed; free disk space (or point \
                         OFFLOAD_FORK_CACHE elsewhere) and rerun",
                        avail / 1024,
                        cache.root.display(),
                        need / 1024
                    ),
                );
            }
        }
    }
    Ok(())
}

/// The bootstrap configuration: `config.example.toml` with its placeholders filled in.
pub fn bootstrap_toml(project: &Path, cache: &Cache) -> Result<Vec<u8>> {
    let template =
        fs::read_to_string(project.join("config.example.toml")).map_err(|e| Failure {
            step: "PATCH",
            message: format!("cannot read {}: {e}", project.join("config.example.toml").display()),
        })?;
    Ok(template
        .replace("@CACHE@", &cache.root.to_string_lossy())
        .replace("@STAGE0@", &stage0_toolchain().to_string_lossy())
        .into_bytes())
}

/// Everything up to a tree that bootstrap can build: check, download, sysroot, extract,
/// materialize.
pub fn prepare(project: &Path, cache: &Cache) -> Result<()> {
    check_machine(cache)?;
    fetch::ensure_sources(&cache.downloads())?;
    sysroot::ensure(cache)?;
    upstream::ensure(cache)?;
    let config = bootstrap_toml(project, cache)?;
    let report = materialize::materialize(project, cache, &[("bootstrap.toml", config)])?;
    if report.written.is_empty() && report.removed.is_empty() {
        say("PATCH", "tree up to date");
    } else {
        for rel in &report.written {
            say("PATCH", format!("wrote {rel}"));
        }
        for rel in &report.removed {
            say("PATCH", format!("removed {rel}"));
        }
    }
    Ok(())
}

/// Runs upstream's `x.py` in the tree, inside the sysroot.
pub fn bootstrap(cache: &Cache, step: &'static str, args: &[&str]) -> Result<()> {
    let status = bootstrap_command(cache, args)?
        .status()
        .map_err(|e| Failure { step, message: format!("cannot start unshare: {e}") })?;
    bootstrap_status(step, args, status)
}

/// As [`bootstrap`], and also returns what bootstrap printed on its standard output, which
/// passes through to ours line by line as it comes.
pub fn bootstrap_tee(cache: &Cache, step: &'static str, args: &[&str]) -> Result<String> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = bootstrap_command(cache, args)?
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Failure { step, message: format!("cannot start unshare: {e}") })?;
    let mut output = String::new();
    let mut reader = BufReader::new(child.stdout.take().expect("a piped standard output"));
    let mut line = Vec::new();
    let mut stdout = std::io::stdout();
    // Bytes, not `lines()`: a test's output need not be UTF-8, and the terse renderer writes
    // no newline until a row is full, so each chunk is echoed as it comes.
    while reader
        .read_until(b'\n', &mut line)
        .map_err(|e| Failure { step, message: format!("cannot read bootstrap's output: {e}") })?
        > 0
    {
        let _ = stdout.write_all(&line);
        let _ = stdout.flush();
        output.push_str(&String::from_utf8_lossy(&line));
        line.clear();
    }
    let status = child
        .wait()
        .map_err(|e| Failure { step, message: format!("cannot wait for unshare: {e}") })?;
    bootstrap_status(step, args, status)?;
    Ok(output)
}

/// Upstream's `x.py` with `args`, in the tree, inside the sysroot.
fn bootstrap_command(cache: &Cache, args: &[&str]) -> Result<Command> {
    let project = project_root();
    let fingerprint = source_fingerprint(&project)?;
    // The project is visible inside, at its own path, for the run-make tests that build its
    // bundled example as a Cargo program (`OFFLOAD_FORK_PROJECT`).
    Enter::new(cache, &cache.tree(), "python3")
        .arg("x.py")
        .args(args.iter().copied())
        .env(SOURCE_FINGERPRINT_VAR, fingerprint)
        .env("OFFLOAD_FORK_PROJECT", &project)
        .bind(&project)
        .command(cache)
}

fn bootstrap_status(step: &'static str, args: &[&str], status: ExitStatus) -> Result<()> {
    if !status.success() {
        return fail(
            step,
            format!("`x.py {}` failed ({status}); its output is above", args.join(" ")),
        );
    }
    Ok(())
}

/// `[BUILD]`: stage-1 compiler, host std, `core` and `alloc` for the GPU targets.
///
/// One bootstrap invocation for all targets: each invocation assembles the stage-1 sysroot
/// afresh, keeping only the libraries of the targets it built.
pub fn build(project: &Path, cache: &Cache) -> Result<()> {
    prepare(project, cache)?;
    let mut targets = vec![HOST.to_string()];
    targets.extend(GPU_TARGETS.iter().map(|(t, _)| t.to_string()));
    let targets = targets.join(",");
    let timer = Timer::start(
        "BUILD",
        format!(
            "stage-1 compiler, library for {targets} (cold: about 27 minutes; up to date: seconds)"
        ),
    );
    bootstrap(cache, "BUILD", &["build", "--stage", "1", "library", "--target", &targets])?;
    timer.done();
    save_gpu_sysroot(cache)?;
    crate::device_sysroot::ensure(cache)?;
    crate::cuda::ensure_cuda_tools(cache)?;
    install_cargo_offload(project, cache)?;
    Ok(())
}

/// Where the GPU targets' libraries are kept beside bootstrap's stage-1 sysroot:
/// `build/<host>/offload-gpu-sysroot/lib/rustlib/<target>/lib`. Bootstrap assembles the stage-1
/// sysroot afresh in every invocation, with only the targets of that invocation (an
/// `x.py test` removes the GPU ones), so the run-make tests compile for the GPU with
/// `--sysroot $BUILD_ROOT/offload-gpu-sysroot`, and the harness puts the libraries back.
pub fn gpu_sysroot(cache: &Cache) -> PathBuf {
    cache.build().join(HOST).join("offload-gpu-sysroot")
}

/// Copies the plain files of `from` into `to`, emptied first.
pub fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    let _ = fs::remove_dir_all(to);
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Copies the GPU targets' libraries from the stage-1 sysroot to [`gpu_sysroot`].
fn save_gpu_sysroot(cache: &Cache) -> Result<()> {
    for (target, _) in GPU_TARGETS {
        let rel = format!("lib/rustlib/{target}/lib");
        copy_dir(&cache.stage1().join(&rel), &gpu_sysroot(cache).join(&rel)).map_err(|e| {
            Failure {
                step: "BUILD",
                message: format!("cannot save the {target} libraries of the stage-1 sysroot: {e}"),
            }
        })?;
    }
    Ok(())
}

/// Puts the GPU targets' libraries back into the stage-1 sysroot after a bootstrap invocation
/// that removed them, so that `./x.py rustc --target <gpu>` keeps working.
fn restore_gpu_sysroot(cache: &Cache) -> Result<()> {
    for (target, _) in GPU_TARGETS {
        let rel = format!("lib/rustlib/{target}/lib");
        if !cache.stage1().join(&rel).exists() {
            copy_dir(&gpu_sysroot(cache).join(&rel), &cache.stage1().join(&rel)).map_err(|e| {
                Failure {
                    step: "TEST",
                    message: format!(
                        "cannot restore the {target} libraries of the stage-1 sysroot: {e}"
                    ),
                }
            })?;
        }
    }
    Ok(())
}

/// Upstream test suites that `x.py test` runs by default, beside our own `tests/`.
pub const UPSTREAM_SUITES: &[&str] = &["tests/codegen-llvm/gpu_offload"];

/// `[TEST]`: the harness's own tests, then compiletest suites at stage 1. `paths` (upstream
/// test paths) replace the default suites.
pub fn test(project: &Path, cache: &Cache, paths: &[String]) -> Result<()> {
    if paths.is_empty() {
        let timer = Timer::start("TEST", "harness tests (cargo test)");
        let cargo = stage0_toolchain().join("bin/cargo");
        let status = Command::new(&cargo)
            .args(["test", "--quiet", "--manifest-path"])
            .arg(project.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", cache.root.join("tools-target"))
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .status()
            .map_err(|e| Failure {
                step: "TEST",
                message: format!("cannot run {}: {e}", cargo.display()),
            })?;
        if !status.success() {
            return fail("TEST", "harness tests failed; their output is above");
        }
        timer.done();
    }
    build(project, cache)?;
    if paths.is_empty() {
        crate::style::rustfmt(cache)?;
        crate::style::tidy(project, cache)?;
        series_apply(project, cache)?;
        let timer =
            Timer::start("TEST", "manifest printer and cargo-offload tests (cargo test, offline)");
        test_manifest_tool(project, cache)?;
        test_cargo_offload(project, cache)?;
        timer.done();
        fuzz_run(project, cache, 1, 0, SHORT_FUZZ_COUNT)?;
        crate::outside::check(project, cache)?;
    }
    let mut suites: Vec<String> = paths.to_vec();
    if suites.is_empty() {
        suites.extend(UPSTREAM_SUITES.iter().map(|s| s.to_string()));
        suites.extend(our_suites(project));
    }
    let timer = Timer::start("TEST", format!("compiletest at stage 1: {}", suites.join(" ")));
    // `--force-rerun`: compiletest would otherwise skip tests whose last run passed with this
    // compiler, and a test command that runs nothing proves nothing.
    // `rust.verbose-tests`: one line per test with its outcome, which `test_outcomes` reads so
    // that an ignored or missing test fails the step (CI's renderer prints failures only).
    let mut args =
        vec!["test", "--stage", "1", "--force-rerun", "--set", "rust.verbose-tests=true"];
    args.extend(suites.iter().map(String::as_str));
    let tested = bootstrap_tee(cache, "TEST", &args);
    restore_gpu_sysroot(cache)?;
    let output = tested?;
    let expected = crate::test_outcomes::expected_tests(&cache.tree(), &suites);
    match crate::test_outcomes::check(&output, &expected) {
        Ok(passed) => say(
            "TEST",
            format!(
                "{passed} tests passed, none ignored; all {} expected tests ran",
                expected.len()
            ),
        ),
        Err(message) => return fail("TEST", message),
    }
    timer.done();
    if paths.is_empty() {
        // Each prefix of the patch series builds; prefixes checked before are skipped, so this
        // costs time only after a patch changed (about ten minutes for the whole series).
        let timer = Timer::start("SERIES", "x.py check of each prefix of the patch series");
        crate::series::check_prefixes(project, cache, None)?;
        timer.done();
    }
    Ok(())
}

/// `[SERIES]` as `./x.py test` and `./x.py series` run it: the series recorded as commits
/// (every patch applies after the ones before it; every new file belongs to one patch).
pub fn series_apply(project: &Path, cache: &Cache) -> Result<()> {
    let commits = crate::series::build(project, cache)?;
    say(
        "SERIES",
        format!(
            "{} patches apply in order; the stack is branch {} of {} \
             (`git --git-dir {} log -p --reverse {}..{}`)",
            commits.len(),
            crate::series::SERIES_BRANCH,
            cache.tree_git().display(),
            cache.tree_git().display(),
            crate::upstream::BASE_BRANCH,
            crate::series::SERIES_BRANCH,
        ),
    );
    Ok(())
}

/// Mutants that `./x.py test` runs through the device pass (about 15 s on two cores); the
/// long run is `./x.py fuzz` (10,000 by default).
pub const SHORT_FUZZ_COUNT: u64 = 200;

/// `fuzz [--seed S] [--first N] [--count N]`: mutants `first..first + count` of the seed crate's
/// manifest through the device pass (see `src/tools/offload-manifest/src/fuzz.rs`). Fails when
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
/// through its `amdgcn-amd-amdhsa` device pass, inside the sysroot, one job per core.
pub fn fuzz_run(project: &Path, cache: &Cache, seed: u64, first: u64, count: u64) -> Result<()> {
    let timer = Timer::start(
        "FUZZ",
        format!("{count} mutated manifests through the device pass (seed {seed})"),
    );
    let tool = manifest_tool(project, cache)?;
    let work = cache.root.join("fuzz");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| Failure {
        step: "FUZZ",
        message: format!("cannot create {}: {e}", work.display()),
    })?;
    let seed_crate = project.join("src/tools/offload-manifest/fuzz/seed.rs");
    let host = toolchain(cache, &work, "rustc")
        .arg("-Zunstable-options")
        .arg(&seed_crate)
        .args(["--crate-type", "lib", "--edition", "2024", "-Zoffload=HostMetadata=seed.json"])
        .command(cache)?
        .status()
        .map_err(|e| Failure { step: "FUZZ", message: format!("cannot start unshare: {e}") })?;
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
        .args([
            "--crate-type",
            "lib",
            "--edition",
            "2024",
            "--target",
            "amdgcn-amd-amdhsa",
            "-Ctarget-cpu=gfx90a",
        ])
        .arg("--sysroot")
        .arg(gpu_sysroot(cache))
        .command(cache)?
        .status()
        .map_err(|e| Failure { step: "FUZZ", message: format!("cannot start unshare: {e}") })?;
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

/// Our compiletest suites: the folders two levels under the project's `tests/` that hold
/// tests (`tests/<mode>/<folder>`).
pub fn our_suites(project: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(modes) = fs::read_dir(project.join("tests")) else { return out };
    for mode in modes.flatten() {
        let Ok(folders) = fs::read_dir(mode.path()) else { continue };
        for folder in folders.flatten() {
            if folder.path().is_dir() {
                out.push(format!(
                    "tests/{}/{}",
                    mode.file_name().to_string_lossy(),
                    folder.file_name().to_string_lossy()
                ));
            }
        }
    }
    out.sort();
    out
}

/// Runs `program args` in the caller's directory inside the sysroot, with the stage-1
/// toolchain first on PATH. Returns the program's exit status.
pub fn run_tool(cache: &Cache, program: &str, args: Vec<OsString>) -> Result<ExitStatus> {
    let rustc = cache.stage1_rustc();
    if !rustc.exists() {
        return fail(
            "RUN",
            format!("{} does not exist: run `./x.py build` first", rustc.display()),
        );
    }
    let cwd = std::env::current_dir()
        .map_err(|e| Failure { step: "RUN", message: format!("no current directory: {e}") })?;
    if program == "cargo" {
        let (mut inside, plan) = cargo_with_plan(cache, &cwd, args, &[])?;
        let status = inside
            .status()
            .map_err(|e| Failure { step: "RUN", message: format!("cannot start unshare: {e}") })?;
        return match plan.take() {
            Some(plan) if status.success() => run_plan(cache, plan).status().map_err(|e| Failure {
                step: "RUN",
                message: format!(
                    "cannot run {}: {e}",
                    offload_tools_bin(cache).join("cargo-offload").display()
                ),
            }),
            _ => Ok(status),
        };
    }
    let mut enter = toolchain(cache, &cwd, program).args(args);
    if program == "rustc" {
        enter.program = rustc.into();
    }
    enter
        .command(cache)?
        .status()
        .map_err(|e| Failure { step: "RUN", message: format!("cannot start unshare: {e}") })
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
    fs::create_dir_all(&plans)
        .map_err(|e| Failure { step: "RUN", message: format!("{}: {e}", plans.display()) })?;
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
        let sysroot = crate::device_sysroot::device_sysroot(cache);
        enter = enter.env("CARGO_OFFLOAD_DEVICE_SYSROOT", sysroot);
    }
    let cuda = crate::cuda::cuda_bin(cache);
    if cuda.join("ptxas").is_file() {
        enter = enter.env("CARGO_OFFLOAD_CUDA_BIN", cuda);
    }
    enter
}

/// `export` (write) and `check` (compare only).
pub fn export(
    project: &Path,
    cache: &Cache,
    write: bool,
    new_patch: Option<&str>,
) -> Result<Vec<Drift>> {
    if !upstream::is_ready(cache) {
        return fail(
            "PATCH",
            format!("no materialized tree at {}: run `./x.py build`", cache.tree().display()),
        );
    }
    materialize::export(project, cache, write, new_patch)
}

/// The project root: the folder that holds `x.py` (given by `x.py` in `$OFFLOAD_FORK_PROJECT`).
pub fn project_root() -> PathBuf {
    std::env::var_os("OFFLOAD_FORK_PROJECT")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default())
}

/// `cargo ARGS` of the rustup 1.95.0 toolchain for `src/tools/offload-manifest`, offline, with
/// crates.io replaced by upstream's `vendor/` in the materialized tree.
fn manifest_tool_cargo(project: &Path, cache: &Cache, args: &[&str]) -> Command {
    tool_cargo(project, cache, "offload-manifest", args)
}

/// `cargo ARGS` of the rustup 1.95.0 toolchain for `src/tools/<tool>`, offline, against
/// upstream's vendored crates.
fn tool_cargo(project: &Path, cache: &Cache, tool: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(stage0_toolchain().join("bin/cargo"));
    cmd.args(args)
        .arg("--manifest-path")
        .arg(project.join("src/tools").join(tool).join("Cargo.toml"))
        .args([
            "--offline",
            "--quiet",
            "--config",
            "source.crates-io.replace-with='vendored'",
            "--config",
        ])
        .arg(format!("source.vendored.directory='{}'", cache.tree().join("vendor").display()))
        .env("CARGO_TARGET_DIR", cache.root.join("tools-target"))
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    cmd
}

/// Builds `src/tools/offload-manifest` (the manifest printer); returns its path.
pub fn manifest_tool(project: &Path, cache: &Cache) -> Result<PathBuf> {
    if !upstream::is_ready(cache) {
        return fail(
            "JOB",
            "the manifest printer builds from upstream's vendored crates: run `./x.py build` first",
        );
    }
    crate::ui::run_captured(
        "JOB",
        &mut manifest_tool_cargo(project, cache, &["build", "--release"]),
    )?;
    Ok(cache.root.join("tools-target/release/offload-manifest"))
}

/// The text dump of the manifest at `path` (see `src/tools/offload-manifest`).
pub fn dump_manifest(project: &Path, cache: &Cache, path: &Path) -> Result<String> {
    let tool = manifest_tool(project, cache)?;
    let out = crate::ui::run_captured("JOB", Command::new(&tool).arg(path))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Where `cargo-offload` is installed: `build/<host>/offload-tools/bin` (and
/// `liboffload_report.so`, which it preloads for `OFFLOAD_REPORT`, in `../lib`), beside the
/// stage-1 toolchain rather than in its `bin/`, which bootstrap assembles afresh (a test run
/// drops what it did not put there). `./x.py cargo` has it on `PATH`, so `./x.py cargo offload ...`
/// finds it as cargo finds any subcommand; the run-make tests find it there too.
pub fn offload_tools_bin(cache: &Cache) -> PathBuf {
    cache.build().join(HOST).join("offload-tools/bin")
}

/// Builds `src/tools/cargo-offload` and installs it in [`offload_tools_bin`]. The binary is
/// built on this machine and runs inside the sysroot, whose C library is newer. Returns the
/// installed path.
pub fn install_cargo_offload(project: &Path, cache: &Cache) -> Result<PathBuf> {
    if !upstream::is_ready(cache) {
        return fail(
            "BUILD",
            "cargo offload builds from upstream's vendored crates: run `./x.py build` first",
        );
    }
    crate::ui::run_captured(
        "BUILD",
        &mut tool_cargo(project, cache, "cargo-offload", &["build", "--release"]),
    )?;
    crate::ui::run_captured(
        "BUILD",
        &mut tool_cargo(project, cache, "offload-report", &["build", "--release"]),
    )?;
    let release = cache.root.join("tools-target/release");
    let installed = offload_tools_bin(cache).join("cargo-offload");
    let report = offload_tools_bin(cache).join("../lib/liboffload_report.so");
    for (built, installed) in [
        (release.join("cargo-offload"), &installed),
        (release.join("liboffload_report.so"), &report),
    ] {
        if fs::read(installed).ok() != fs::read(&built).ok() {
            fs::create_dir_all(installed.parent().unwrap())
                .and_then(|()| fs::copy(&built, installed))
                .map_err(|e| Failure {
                    step: "BUILD",
                    message: format!("cannot install {}: {e}", installed.display()),
                })?;
        }
    }
    Ok(installed)
}

/// Runs the tests of `src/tools/cargo-offload` (its argument parsing, image builders, run
/// plans and bundles), of `src/tools/offload-report` and of `src/tools/offload-manifest-format`
/// (the manifest format: reading, round trips, merging, errors).
pub fn test_cargo_offload(project: &Path, cache: &Cache) -> Result<()> {
    for tool in ["cargo-offload", "offload-report", "offload-manifest-format"] {
        let status = tool_cargo(project, cache, tool, &["test"])
            .status()
            .map_err(|e| Failure { step: "TEST", message: format!("cannot run cargo: {e}") })?;
        if !status.success() {
            return fail("TEST", format!("{tool} tests failed; their output is above"));
        }
    }
    Ok(())
}

/// Runs the manifest printer's own tests.
pub fn test_manifest_tool(project: &Path, cache: &Cache) -> Result<()> {
    let status = manifest_tool_cargo(project, cache, &["test"])
        .status()
        .map_err(|e| Failure { step: "TEST", message: format!("cannot run cargo: {e}") })?;
    if !status.success() {
        return fail("TEST", "offload-manifest tests failed; their output is above");
    }
    Ok(())
}

/// The environment variable that carries [`source_fingerprint`] into the compiler's build
/// (`rustc_monomorphize` reads it with `option_env!`, so cargo rebuilds that crate when it
/// changes).
pub const SOURCE_FINGERPRINT_VAR: &str = "OFFLOAD_FORK_SOURCE_HASH";

/// A fingerprint of what the project adds to upstream's compiler: every patch in
/// `src/patches/` and every file under `compiler/` and `library/`, by path and content, hashed
/// with the system's `sha256sum` (the first 16 hex digits). The compiler records it, after the
/// upstream commit, as its identity in offload manifests, so that builds of the fork from
/// different sources refuse each other's manifests. Tests, tools and docs are not part of it.
pub fn source_fingerprint(project: &Path) -> Result<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        if !dir.exists() {
            return Ok(());
        }
        for entry in fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() { walk(&path, out)? } else { out.push(path) }
        }
        Ok(())
    }
    let mut files = Vec::new();
    for dir in ["src/patches", "compiler", "library"] {
        walk(&project.join(dir), &mut files).map_err(|e| Failure {
            step: "BUILD",
            message: format!("cannot read {}: {e}", project.join(dir).display()),
        })?;
    }
    files.sort();
    let mut input = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(project).unwrap_or(file);
        input.extend_from_slice(rel.to_string_lossy().as_bytes());
        input.push(0);
        let content = fs::read(file).map_err(|e| Failure {
            step: "BUILD",
            message: format!("cannot read {}: {e}", file.display()),
        })?;
        input.extend_from_slice(format!("{}\0", content.len()).as_bytes());
        input.extend_from_slice(&content);
    }
    let mut child = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Failure { step: "BUILD", message: format!("cannot run sha256sum: {e}") })?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin was piped");
        stdin.write_all(&input).map_err(|e| Failure {
            step: "BUILD",
            message: format!("cannot write to sha256sum: {e}"),
        })?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Failure { step: "BUILD", message: format!("sha256sum failed: {e}") })?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.split_whitespace().next() {
        Some(sum) if sum.len() == 64 && out.status.success() => Ok(sum[..16].to_string()),
        _ => fail("BUILD", "sha256sum printed no sum for the project's compiler sources"),
    }
}
