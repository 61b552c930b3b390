//! `x.py`'s logic: see `x.py --help` and README.md.

use std::ffi::OsString;
use std::process::ExitCode;

use offload_x::cache::Cache;
use offload_x::commands;
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
                   and lines of at most 100 columns on our tools (src/tools)
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
                   --targets T..., --results DIR, --update-readme README.md,
                   --from-json FILE [--reinspect] (only redo the reports of an earlier run),
                   --allocator ROUNDS (only the allocator lever: allocator.json)
  gpu-check        a bundle (gpu-check/ in the checkout, at most 64 MiB) that runs the bundled
                   example, built with cargo offload for sm_90, on an NVIDIA GPU machine without
                   our sysroot: `cargo offload bundle` of it (xz) and run.sh
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

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let verb = if args.is_empty() {
        "job".to_string()
    } else {
        args.remove(0).to_string_lossy().into_owned()
    };
    let project = commands::project_root();
    let cache = Cache::from_env();
    let strings = |args: &[OsString]| -> Vec<String> {
        args.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    };
    let result: Result<ExitCode> = match verb.as_str() {
        "help" | "--help" | "-h" => {
            print!("{HELP}");
            Ok(ExitCode::SUCCESS)
        }
        "prepare" => commands::prepare(&project, &cache).map(|()| ExitCode::SUCCESS),
        "build" => commands::build(&project, &cache).map(|()| ExitCode::SUCCESS),
        "test" => commands::test(&project, &cache, &strings(&args)).map(|()| ExitCode::SUCCESS),
        "style" => commands::prepare(&project, &cache)
            .and_then(|()| offload_x::style::rustfmt(&cache))
            .and_then(|()| offload_x::style::tidy(&project, &cache))
            .map(|()| ExitCode::SUCCESS),
        "series" => {
            let args = strings(&args);
            let run = match args.as_slice() {
                [] => commands::prepare(&project, &cache)
                    .and_then(|()| commands::series_apply(&project, &cache)),
                [check] if check == "--check" => commands::prepare(&project, &cache)
                    .and_then(|()| offload_x::series::check_prefixes(&project, &cache, None)),
                [check, from, n] if check == "--check" && from == "--from" => {
                    commands::prepare(&project, &cache)
                        .and_then(|()| offload_x::series::check_prefixes(&project, &cache, Some(n)))
                }
                _ => {
                    eprintln!("error: usage: ./x.py series [--check [--from NNNN]]");
                    return ExitCode::from(2);
                }
            };
            run.map(|()| ExitCode::SUCCESS)
        }
        "fuzz" => commands::fuzz(&project, &cache, &strings(&args)).map(|()| ExitCode::SUCCESS),
        "job" => offload_x::job::run(&project, &cache).map(|()| ExitCode::SUCCESS),
        "gpu-check" => offload_x::gpu_check::run(&project, &cache).map(|_| ExitCode::SUCCESS),
        "outside" => commands::build(&project, &cache)
            .and_then(|()| offload_x::outside::check(&project, &cache))
            .map(|()| ExitCode::SUCCESS),
        "bench" => offload_x::bench::run(&project, &cache, args).map(|()| ExitCode::SUCCESS),
        "image" => match strings(&args).as_slice() {
            [path] => {
                let path = std::path::absolute(path).unwrap_or_else(|_| path.into());
                offload_x::job::print_image(&cache, &path).map(|()| ExitCode::SUCCESS)
            }
            _ => {
                eprintln!("error: usage: ./x.py image PATH/host.out");
                return ExitCode::from(2);
            }
        },
        "manifest" => match strings(&args).as_slice() {
            [path] => {
                let path = std::path::absolute(path).unwrap_or_else(|_| path.into());
                commands::dump_manifest(&project, &cache, &path).map(|text| {
                    print!("{text}");
                    ExitCode::SUCCESS
                })
            }
            _ => {
                eprintln!("error: usage: ./x.py manifest PATH");
                return ExitCode::from(2);
            }
        },
        "rustc" | "cargo" => commands::run_tool(&cache, &verb, args)
            .map(|status| ExitCode::from(status.code().map(|c| c as u8).unwrap_or(1))),
        "export" | "check" => {
            let write = verb == "export";
            let args = strings(&args);
            let new_patch = match args.as_slice() {
                [] => None,
                [flag, name] if flag == "--patch" && write => Some(name.as_str()),
                _ => {
                    eprintln!("error: usage: ./x.py export [--patch NAME] | ./x.py check");
                    return ExitCode::from(2);
                }
            };
            commands::export(&project, &cache, write, new_patch).map(|drift| {
                let mut unowned = false;
                for d in &drift {
                    match d {
                        Drift::Patch(p) => println!(
                            "[PATCH] {} {}",
                            if write { "wrote" } else { "differs:" },
                            p.display()
                        ),
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
                                "[PATCH] {f} is a new file that no patch's `New-Files:` names; add \
                                 it to the header of the patch that uses it"
                            )
                        }
                        Drift::NewFileMissing(p, f) => {
                            unowned = true;
                            println!(
                                "[PATCH] {} names the new file {f}, which the project lacks",
                                p.display()
                            )
                        }
                    }
                }
                if drift.is_empty() {
                    println!("[PATCH] tree and project agree");
                    ExitCode::SUCCESS
                } else if unowned && write {
                    eprintln!(
                        "error: [PATCH] give those files a patch: ./x.py export --patch \
                         NNNN-<area>-<what> for upstream files, the patch's `New-Files:` field for \
                         new ones"
                    );
                    ExitCode::FAILURE
                } else if write {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            })
        }
        other => {
            eprintln!("error: unknown verb `{other}`; see ./x.py --help");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("{failure}");
            ExitCode::FAILURE
        }
    }
}
