//! `x.py`'s logic: see `x.py --help` and README.md.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use offload_x::cache::Cache;
use offload_x::commands;
use offload_x::commands::series::Series;
use offload_x::materialize::Drift;
use offload_x::ui::Result;

const HELP: &str = "\
usage: ./x.py <verb> [args]

Builds and tests the offload fork of rustc: Debian's rustc 1.95.0+dfsg1-2 source plus our
patches (src/patches/) and new files (compiler/, library/, tests/), in a Debian trixie sysroot
with LLVM 22. Everything expensive lives in the build cache: $OFFLOAD_FORK_CACHE, default
~/.cache/offload-fork.

verbs:
  job              the main job (default): build what is missing, then compile the bundled
                   offload example (src/offload-example) through the device and host passes
                   and report the device image
  build            stage-1 compiler, host std, and core for amdgcn-amd-amdhsa and
                   nvptx64-nvidia-cuda in its sysroot
  test [PATH...]   harness tests, upstream's rustfmt and tidy on our files (`style`), then at
                   stage 1 tests/codegen-llvm/gpu_offload and our suites under tests/, then
                   `series --check` (prefixes checked before are skipped); PATHs (upstream
                   test paths) run those suites instead
  style            upstream's rustfmt (--check) and tidy on the files we add or patch, rustfmt
                   and lines of at most 100 columns on our tools (src/tools); also refuses a
                   function over 80 lines (ours, in a new file or added by a patch) and a line
                   over 100 columns that a patch adds or a new compiler or library file holds
  rustc ARGS...    the stage-1 rustc, in the current directory, inside the sysroot
  cargo ARGS...    cargo 1.95.0 with the stage-1 rustc (RUSTC_BOOTSTRAP=1, so -Zbuild-std
                   works), in the current directory, inside the sysroot; the programs of
                   `cargo offload run|test` then run on this machine's own OS, with the
                   toolchain's loader and libraries (OFFLOAD_REPORT=1: which device ran each
                   kernel)
  export [--patch NAME]
                   copy edits made in the materialized tree (cache/tree) back into the project:
                   patches regenerated, new files copied; changes to upstream files that no
                   patch owns go to src/patches/NAME.patch
  check            exit 1 if the materialized tree and the project disagree
  series [--check [--from NNNN]]
                   record the patch series as commits, one per patch with the new files its
                   `New-Files:` header names, on branch offload-series of cache/tree.git (every
                   patch must apply after the ones before it; `./x.py test` does this too);
                   --check: `x.py check` of the compiler (and of bootstrap and rustdoc where a
                   patch touches them), prefix by prefix, in a second tree (cache/series), from
                   patch NNNN on
  manifest PATH    print an offload manifest (-Zoffload=HostMetadata=PATH) as text, one
                   kernel per line: instance, symbol, launching crates
  image PATH       print what an offload image (a device pass's host.out) holds: its
                   target, kernels, defined functions and size
  bench [ARGS]     the device-pass benchmark (src/offload-bench/bench.py): stock rustup 1.95.0,
                   our base and manifest device passes and the --emit=metadata floor on core,
                   the example and the kernel suite, both GPU targets; medians, ratios, peak
                   memory, image contents, a scaling series; replaces the committed results
                   in src/offload-bench/results/ unless given --results DIR.
                   ARGS: --runs N (5), --edits N (5: the edit loop's edits per run),
                   --targets T..., --results DIR, --update-readme src/doc/benchmarks.md,
                   --from-json FILE [--reinspect] (only redo the reports of an earlier run),
                   --allocator ROUNDS (only the allocator lever: allocator.json),
                   --edit-loop ROUNDS (only the edit, build, run table of cargo offload
                   against plain cargo build: edit_loop.{json,md})
  gpu-check        a bundle (gpu-check/ in the checkout, at most 64 MiB) that runs every
                   program that the tests run on the CPU device (and the example and the grid
                   benchmark), built with cargo offload for sm_90,gfx90a,host, on an NVIDIA GPU
                   machine without our sysroot: `cargo offload bundle` of each with its output
                   on this machine's CPU device (xz), and run.sh, which prints one table (ok,
                   wrong or did not run per run) and exits 0 only if every row is ok
  dist             the toolchain as a tarball (dist/rust-offload-x86_64-unknown-linux-gnu.tar.xz,
                   built once per toolchain in <cache>/dist) that a user without root unpacks
                   anywhere: `rustup toolchain link offload DIR/rust-offload`, then
                   `cargo +offload offload ...`; no chroot, namespace or machine `cc`; with
                   rustdoc, clippy, rustfmt, rust-src and rust-analyzer's proc-macro server
  dist-check       only the dist check of `./x.py test`: the tarball unpacked, linked with
                   rustup and used by `cargo +offload offload`, doc, clippy and fmt as the
                   user nobody, under strace
  outside          only the outside-the-sysroot checks of `./x.py test`: `cargo offload run`
                   and bundles on this machine's own OS
  fuzz [--seed S] [--first N] [--count N]
                   mutated offload manifests (structure-aware, seeded; 10,000 by default)
                   through the device pass of a small crate: fails on any ICE, panic, crash,
                   hang, refusal that does not name the manifest, or success without an image
                   (`./x.py test` runs 200 of them)
  prepare          download, sysroot, extract and materialize only
  help, --help     this text

exit status: 0 on success; rustc/cargo pass their program's status through; 1 on failure,
with one `error: [STEP] ...` line that says what to do.
";

/// One `./x.py` invocation: the verb and its parsed arguments.
#[derive(Debug, PartialEq)]
enum Verb {
    Help,
    Job,
    Prepare,
    Build,
    /// Upstream test paths; none: everything.
    Test(Vec<String>),
    Style,
    Series(Series),
    Fuzz(Vec<String>),
    GpuCheck,
    Dist,
    DistCheck,
    Outside,
    Bench(Vec<OsString>),
    Image(PathBuf),
    Manifest(PathBuf),
    /// `rustc` or `cargo` with their arguments.
    Tool(String, Vec<OsString>),
    /// `export` (`write`) or `check`, and `export --patch NAME`.
    Export {
        write: bool,
        new_patch: Option<String>,
    },
}

impl Verb {
    /// The verb that `args` (without the program name) ask for; no arguments is the main job.
    /// An unknown verb or wrong arguments give the usage line to print.
    fn parse(mut args: Vec<OsString>) -> std::result::Result<Verb, String> {
        if args.is_empty() {
            return Ok(Verb::Job);
        }
        let verb = args.remove(0).to_string_lossy().into_owned();
        let strings: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let path = |usage: &str| match strings.as_slice() {
            [path] => Ok(std::path::absolute(path).unwrap_or_else(|_| path.into())),
            _ => Err(format!("usage: {usage}")),
        };
        Ok(match verb.as_str() {
            "help" | "--help" | "-h" => Verb::Help,
            "job" => Verb::Job,
            "prepare" => Verb::Prepare,
            "build" => Verb::Build,
            "test" => Verb::Test(strings),
            "style" => Verb::Style,
            "series" => Verb::Series(match strings.as_slice() {
                [] => Series::Apply,
                [check] if check == "--check" => Series::Check { from: None },
                [check, from, n] if check == "--check" && from == "--from" => {
                    Series::Check { from: Some(n.clone()) }
                }
                _ => return Err("usage: ./x.py series [--check [--from NNNN]]".into()),
            }),
            "fuzz" => Verb::Fuzz(strings),
            "gpu-check" => Verb::GpuCheck,
            "dist" => Verb::Dist,
            "dist-check" => Verb::DistCheck,
            "outside" => Verb::Outside,
            "bench" => Verb::Bench(args),
            "image" => Verb::Image(path("./x.py image PATH/host.out")?),
            "manifest" => Verb::Manifest(path("./x.py manifest PATH")?),
            "rustc" | "cargo" => Verb::Tool(verb, args),
            "export" | "check" => {
                let write = verb == "export";
                let new_patch = match strings.as_slice() {
                    [] => None,
                    [flag, name] if flag == "--patch" && write => Some(name.clone()),
                    _ => return Err("usage: ./x.py export [--patch NAME] | ./x.py check".into()),
                };
                Verb::Export { write, new_patch }
            }
            other => return Err(format!("unknown verb `{other}`; see ./x.py --help")),
        })
    }

    /// Runs the verb (a function of [`commands`]); the exit code of the process.
    fn run(self, project: &Path, cache: &Cache) -> Result<ExitCode> {
        let done = |()| ExitCode::SUCCESS;
        match self {
            Verb::Help => {
                print!("{HELP}");
                Ok(ExitCode::SUCCESS)
            }
            Verb::Job => commands::job(project, cache).map(done),
            Verb::Prepare => commands::prepare(project, cache).map(done),
            Verb::Build => commands::build(project, cache).map(done),
            Verb::Test(paths) => commands::test(project, cache, &paths).map(done),
            Verb::Style => commands::style(project, cache).map(done),
            Verb::Series(series) => commands::series(project, cache, &series).map(done),
            Verb::Fuzz(args) => commands::fuzz(project, cache, &args).map(done),
            Verb::GpuCheck => commands::gpu_check(project, cache).map(|_| ExitCode::SUCCESS),
            Verb::Dist => commands::dist(project, cache).map(|_| ExitCode::SUCCESS),
            Verb::DistCheck => commands::dist_check(project, cache).map(done),
            Verb::Outside => commands::outside(project, cache).map(done),
            Verb::Bench(args) => commands::bench(project, cache, args).map(done),
            Verb::Image(path) => commands::image(cache, &path).map(done),
            Verb::Manifest(path) => commands::manifest(project, cache, &path).map(done),
            Verb::Tool(program, args) => {
                let what = tool_command(&program, &args);
                commands::run_tool(cache, &program, args).map(|status| tool_exit(&what, status))
            }
            Verb::Export { write, new_patch } => {
                commands::export(project, cache, write, new_patch.as_deref())
                    .map(|drift| report_drift(&drift, write))
            }
        }
    }
}

/// How an error names the command of `./x.py <program> <args>`: the program and its leading
/// words that are not flags (`cargo offload build`).
fn tool_command(program: &str, args: &[std::ffi::OsString]) -> String {
    let words = args.iter().map(|a| a.to_string_lossy()).take_while(|a| !a.starts_with('-'));
    std::iter::once(program.to_string())
        .chain(words.take(2).map(String::from))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The exit code of `./x.py` for the program `what` that ended with `status`: the program's,
/// or, when a signal ended it (a killed `cargo-offload`, which cargo runs in its own place),
/// 128 plus the signal's number after a line that says so: the program may have had no
/// chance to say anything.
fn tool_exit(what: &str, status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitCode::from(code.clamp(0, 255) as u8),
        (None, Some(signal)) => {
            // `ExitStatus` names the signal: `signal: 9 (SIGKILL)`, `(core dumped)`.
            eprintln!("error: [RUN] `{what}` was ended by a signal ({status})");
            ExitCode::from((128 + signal).clamp(0, 255) as u8)
        }
        (None, None) => {
            eprintln!("error: [RUN] `{what}` ended without an exit status ({status})");
            ExitCode::from(1)
        }
    }
}

/// Prints what `export` (`write`) or `check` found; success when the tree and the project
/// agree, or when `export` brought them together with nothing left without a patch.
fn report_drift(drift: &[Drift], write: bool) -> ExitCode {
    let mut unowned = false;
    for d in drift {
        match d {
            Drift::Patch(p) => {
                println!("[PATCH] {} {}", if write { "wrote" } else { "differs:" }, p.display())
            }
            Drift::NewFile(f) => {
                println!("[PATCH] {} {f}", if write { "copied" } else { "differs:" })
            }
            Drift::Unowned(f) => {
                unowned = true;
                println!("[PATCH] {f} is changed in the tree but no patch owns it")
            }
            Drift::NewFileUnnamed(f) => {
                unowned = true;
                println!(
                    "[PATCH] {f} is a new file that no patch's `New-Files:` names; add it to the \
                     header of the patch that uses it"
                )
            }
            Drift::NewFileMissing(p, f) => {
                unowned = true;
                println!("[PATCH] {} names the new file {f}, which the project lacks", p.display())
            }
        }
    }
    if drift.is_empty() {
        println!("[PATCH] tree and project agree");
        ExitCode::SUCCESS
    } else if unowned && write {
        eprintln!(
            "error: [PATCH] give those files a patch: ./x.py export --patch NNNN-<area>-<what> \
             for upstream files, the patch's `New-Files:` field for new ones"
        );
        ExitCode::FAILURE
    } else if write {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn main() -> ExitCode {
    let verb = match Verb::parse(std::env::args_os().skip(1).collect()) {
        Ok(verb) => verb,
        Err(usage) => {
            eprintln!("error: {usage}");
            return ExitCode::from(2);
        }
    };
    match verb.run(&offload_x::project::project_root(), &Cache::from_env()) {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("{failure}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> std::result::Result<Verb, String> {
        Verb::parse(args.iter().map(OsString::from).collect())
    }

    #[test]
    fn help_names_the_gpu_targets_that_build_builds() {
        let build = &HELP[HELP.find("\n  build ").unwrap()..HELP.find("in its sysroot").unwrap()];
        let build = build.split_whitespace().collect::<Vec<_>>().join(" ");
        for target in offload_targets::gpu_targets() {
            assert!(build.contains(target.triple), "{build}");
        }
    }

    /// A program that a signal ended gives 128 plus the signal's number (and a line that
    /// names it), one that exited its own code.
    #[test]
    fn a_tool_ended_by_a_signal_exits_with_128_plus_the_signal() {
        use std::os::unix::process::ExitStatusExt;
        let killed = std::process::ExitStatus::from_raw(9);
        assert_eq!(tool_exit("cargo offload build", killed), ExitCode::from(137));
        let exited = std::process::ExitStatus::from_raw(3 << 8);
        assert_eq!(tool_exit("cargo offload build", exited), ExitCode::from(3));
        let words = ["offload", "build", "--release", "x"].map(std::ffi::OsString::from);
        assert_eq!(tool_command("cargo", &words), "cargo offload build");
    }

    #[test]
    fn no_verb_is_the_main_job() {
        assert_eq!(parse(&[]), Ok(Verb::Job));
    }

    #[test]
    fn verbs_take_their_arguments() {
        assert_eq!(parse(&["series"]), Ok(Verb::Series(Series::Apply)));
        assert_eq!(parse(&["series", "--check"]), Ok(Verb::Series(Series::Check { from: None })));
        assert_eq!(
            parse(&["series", "--check", "--from", "0041"]),
            Ok(Verb::Series(Series::Check { from: Some("0041".into()) }))
        );
        assert_eq!(
            parse(&["export", "--patch", "0042-x-y"]),
            Ok(Verb::Export { write: true, new_patch: Some("0042-x-y".into()) })
        );
        assert_eq!(parse(&["check"]), Ok(Verb::Export { write: false, new_patch: None }));
        assert_eq!(parse(&["image", "/a/host.out"]), Ok(Verb::Image("/a/host.out".into())));
        assert_eq!(
            parse(&["cargo", "offload", "run"]),
            Ok(Verb::Tool("cargo".into(), vec!["offload".into(), "run".into()]))
        );
    }

    #[test]
    fn wrong_arguments_give_the_usage() {
        assert_eq!(
            parse(&["frobnicate"]),
            Err("unknown verb `frobnicate`; see ./x.py --help".into())
        );
        assert!(parse(&["check", "--patch", "x"]).unwrap_err().starts_with("usage: ./x.py export"));
        assert!(parse(&["series", "--from", "1"]).unwrap_err().contains("series [--check"));
        assert!(parse(&["manifest"]).unwrap_err().contains("manifest PATH"));
    }
}
