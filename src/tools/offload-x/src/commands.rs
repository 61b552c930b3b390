//! The verbs of `x.py`.

use std::ffi::OsString;
use std::fs;
use std::path::Path;
use std::process::{Command, ExitStatus};

use crate::cache::{Cache, copy_dir, gpu_sysroot, offload_tools_bin, stage0_toolchain};
use crate::materialize::{self, Drift};
use crate::pins::{HOST, STAGE0_TOOLCHAIN, SYSROOT_LLVM_BIN};
use crate::project::{SOURCE_FINGERPRINT_VAR, bootstrap_toml, project_root, source_fingerprint};
use crate::sysroot::Enter;
use crate::toolchain::{cargo_with_plan, run_plan, toolchain};
use crate::tools::{install_cargo_offload, manifest_tool, test_cargo_offload, test_manifest_tool};
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
    let status = crate::sysroot::status(step, &mut bootstrap_command(cache, args)?)?;
    bootstrap_status(step, args, status)
}

/// As [`bootstrap`], and also returns what bootstrap printed on its standard output, which
/// passes through to ours line by line as it comes.
pub fn bootstrap_tee(cache: &Cache, step: &'static str, args: &[&str]) -> Result<String> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = bootstrap_command(cache, args)?
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| crate::sysroot::cannot_start(step, e))?;
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
    targets.extend(offload_targets::gpu_targets().map(|t| t.triple.to_string()));
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

/// Copies the GPU targets' libraries from the stage-1 sysroot to [`gpu_sysroot`].
fn save_gpu_sysroot(cache: &Cache) -> Result<()> {
    for target in offload_targets::gpu_targets().map(|t| t.triple) {
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
    for target in offload_targets::gpu_targets().map(|t| t.triple) {
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
        let timer = Timer::start("TEST", "our tools' own tests (cargo test, offline)");
        test_manifest_tool(project, cache)?;
        test_cargo_offload(project, cache)?;
        timer.done();
        fuzz_run(project, cache, 1, 0, SHORT_FUZZ_COUNT)?;
        crate::outside::check(project, cache)?;
        // The GPU check's bundle builds, and its script runs here with every row "did not run".
        crate::gpu_check::check_without_gpu(project, cache)?;
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
    fs::create_dir_all(&work).map_err(|e| Failure {
        step: "FUZZ",
        message: format!("cannot create {}: {e}", work.display()),
    })?;
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
        let status = crate::sysroot::status("RUN", &mut inside)?;
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
    enter.status(cache, "RUN")
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
