//! `cargo offload build|run|test [cargo args] --offload-arch=ARCH[,ARCH...]`: builds a Cargo
//! project whose host code launches kernels through `core::intrinsics::offload` into a program
//! that runs them through LLVM's offload runtime.
//!
//! The passes (see `src/doc/cargo-offload.md` for the whole story):
//! 1. host metadata pass: `cargo check --target <host>`, every crate with
//!    `-Zoffload=HostMetadata=<manifest>` (one manifest per crate, named by its crate name and
//!    cargo's `-C extra-filename`, given through `RUSTC_WRAPPER`, the way cargo-miri drives
//!    rustc); the manifests of the root crates (those of the workspace packages) are merged;
//! 2. one device pass per arch: a generated image crate that depends on the workspace
//!    libraries defining the kernels, built with `-Zoffload=Device=<merged manifest>` and
//!    `-Zbuild-std=core` for the arch's target; its image is compiled by the vendor tools
//!    (`llc`, `ld.lld`; `ptxas`, `nvlink`), packaged with `llvm-offload-binary`, and all images
//!    are wrapped into one registration object by `llvm-offload-wrapper`;
//! 3. host pass: `cargo build|run|test --target <host>` with `-Zoffload=Host=<image>`, linked
//!    with the registration object and LLVM's offload runtime (`libomptarget`), with an rpath.
//!
//! Each pass has its own target folder under `<target dir>/offload/`. Exit status: cargo's
//! when a cargo pass fails, 1 with one `error:` line for anything else, 2 for bad usage.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

const USAGE: &str = "\
usage: cargo offload <build|run|test> --offload-arch=ARCH[,ARCH...] [cargo args] [-- program args]

ARCH: host (LLVM offload's CPU device: this machine's CPU), gfxNNN (AMD GPUs, amdgcn-amd-amdhsa),
      sm_NN (NVIDIA GPUs, nvptx64-nvidia-cuda); several archs give one program with an image each

environment: CARGO_OFFLOAD_LLVM_BIN (default /usr/lib/llvm-22/bin), CARGO_OFFLOAD_RUNTIME_LIB
(default /usr/lib/llvm-22/lib), CARGO_OFFLOAD_CUDA_BIN (ptxas and nvlink; default: PATH)
";

/// The crate that builds the device images: it depends on every workspace library that defines
/// a launched kernel, and the merged manifest names it as its crate.
const IMAGE_CRATE: &str = "offload_image";

/// The cfg that the device passes set, so that a crate can give the device image what only the
/// image needs (a `#[panic_handler]` for the CPU device, say).
const DEVICE_CFG: &str = "offload_device";

/// A failure: one line for the user, and the exit status.
struct Failure(String, u8);

type Result<T> = std::result::Result<T, Failure>;

fn fail<T>(message: impl Into<String>) -> Result<T> {
    Err(Failure(message.into(), 1))
}

/// One `--offload-arch` value.
#[derive(Clone, Debug, PartialEq)]
struct Arch {
    /// As the user wrote it: `host`, `gfx90a`, `sm_90`.
    name: String,
    /// The rustc target of its device pass.
    target: String,
    /// `-Ctarget-cpu` of the device pass, `None` for the CPU device.
    cpu: Option<String>,
}

impl Arch {
    /// Parses one arch; `host` is the CPU device of `host_triple`.
    fn parse(name: &str, host_triple: &str) -> Result<Arch> {
        let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric());
        let (target, cpu) = if name == "host" {
            (host_triple.to_string(), None)
        } else if name.starts_with("gfx") && digits(&name[3..]) {
            ("amdgcn-amd-amdhsa".to_string(), Some(name.to_string()))
        } else if name.starts_with("sm_") && name[3..].chars().all(|c| c.is_ascii_digit()) && name.len() > 3 {
            ("nvptx64-nvidia-cuda".to_string(), Some(name.to_string()))
        } else {
            return Err(Failure(
                format!(
                    "unknown offload arch `{name}`: expected `host` (the CPU device), `gfxNNN` \
                     (an AMD GPU, e.g. gfx90a) or `sm_NN` (an NVIDIA GPU, e.g. sm_90)"
                ),
                2,
            ));
        };
        Ok(Arch { name: name.to_string(), target, cpu })
    }
}

/// The command line of `cargo offload`.
#[derive(Debug, PartialEq)]
struct Invocation {
    /// `build`, `run` or `test`.
    verb: String,
    archs: Vec<String>,
    /// Everything else before `--`, given to every cargo pass that builds the user's crates.
    cargo_args: Vec<String>,
    /// After `--`: the program's arguments (`run`, `test`).
    program_args: Vec<String>,
}

/// Parses `args` (after `cargo offload`).
fn parse_args(args: &[String]) -> Result<Invocation> {
    let usage = |m: &str| Err(Failure(format!("{m}\n{USAGE}"), 2));
    let Some(verb) = args.first() else { return usage("no command given") };
    if !matches!(verb.as_str(), "build" | "run" | "test") {
        return usage(&format!("unknown command `{verb}`"));
    }
    let mut archs = Vec::new();
    let mut cargo_args = Vec::new();
    let mut program_args = Vec::new();
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            program_args.extend(rest.by_ref().cloned());
            break;
        }
        let value = if let Some(v) = arg.strip_prefix("--offload-arch=") {
            Some(v.to_string())
        } else if arg == "--offload-arch" {
            match rest.next() {
                Some(v) => Some(v.clone()),
                None => return usage("`--offload-arch` needs a value"),
            }
        } else {
            None
        };
        match value {
            Some(v) => archs.extend(v.split(',').filter(|a| !a.is_empty()).map(str::to_string)),
            None => {
                if arg == "--target" || arg.starts_with("--target=") {
                    return usage("`--target` comes from `--offload-arch`; cargo offload builds the host for this machine");
                }
                cargo_args.push(arg.clone())
            }
        }
    }
    if archs.is_empty() {
        return usage("no `--offload-arch` given");
    }
    Ok(Invocation { verb: verb.clone(), archs, cargo_args, program_args })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    // As `RUSTC_WRAPPER`, cargo runs us as `cargo-offload <rustc> <args>`.
    if let Ok(pass) = std::env::var(WRAP_VAR) {
        return wrap_rustc(&pass, &args[1..]);
    }
    // As a cargo subcommand: `cargo-offload offload <verb> ...`.
    let rest = if args.get(1).map(String::as_str) == Some("offload") { &args[2..] } else { &args[1..] };
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

/// The environment variable that tells a `cargo-offload` run by cargo as `RUSTC_WRAPPER` which
/// pass it wraps; its value is the folder of the manifests.
const WRAP_VAR: &str = "CARGO_OFFLOAD_HOST_METADATA_DIR";

/// `RUSTC_WRAPPER` of the host metadata pass: gives each crate compiled for the target (cargo
/// passes `--target` to those, not to build scripts and proc macros) its own manifest,
/// `<dir>/<crate name><extra filename>.json`, then runs rustc.
fn wrap_rustc(dir: &str, args: &[String]) -> ExitCode {
    let Some((rustc, args)) = args.split_first() else {
        eprintln!("error: [cargo offload] run as RUSTC_WRAPPER without a rustc to run");
        return ExitCode::from(2);
    };
    let mut cmd = Command::new(rustc);
    cmd.args(args).env_remove(WRAP_VAR);
    if let Some(name) = manifest_name(args) {
        cmd.arg("-Zunstable-options").arg(format!("-Zoffload=HostMetadata={dir}/{name}.json"));
    }
    match cmd.status() {
        Ok(status) => ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("error: [cargo offload] cannot run {rustc}: {e}");
            ExitCode::from(1)
        }
    }
}

/// The manifest name of a rustc invocation that compiles a crate for the target, `None` for
/// cargo's probes (`--print`, crate `___`) and host-only crates (no `--target`).
fn manifest_name(args: &[String]) -> Option<String> {
    let value = |flag: &str| {
        args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(String::as_str)
    };
    if !args.iter().any(|a| a == "--target" || a.starts_with("--target=")) {
        return None;
    }
    if args.iter().any(|a| a.starts_with("--print")) {
        return None;
    }
    let krate = value("--crate-name").filter(|c| *c != "___")?;
    let extra = args
        .iter()
        .enumerate()
        .find_map(|(i, a)| {
            a.strip_prefix("-Cextra-filename=")
                .or_else(|| (a == "-C").then(|| args.get(i + 1)?.strip_prefix("extra-filename=")).flatten())
        })
        .unwrap_or("");
    Some(format!("{krate}{extra}"))
}

/// What `cargo metadata --no-deps` tells about the workspace.
struct Workspace {
    target_dir: PathBuf,
    root: PathBuf,
    /// Library crate name (`-` as `_`) -> (package name, package folder).
    libraries: BTreeMap<String, (String, PathBuf)>,
    /// Package ids of the workspace's members (cargo's `workspace_members`).
    member_ids: BTreeSet<String>,
    /// Packages with a target that the host pass links (a program, an example, a test, a
    /// `cdylib`): those link the device images' registration.
    linking_packages: BTreeSet<String>,
}

fn workspace(cargo: &OsString, cargo_args: &[String]) -> Result<Workspace> {
    let mut cmd = Command::new(cargo);
    cmd.args(["metadata", "--no-deps", "--format-version", "1"]);
    if let Some(i) = cargo_args.iter().position(|a| a == "--manifest-path") {
        cmd.args(&cargo_args[i..(i + 2).min(cargo_args.len())]);
    }
    let out = cmd.stderr(Stdio::inherit()).output().map_err(|e| Failure(format!("cannot run cargo: {e}"), 1))?;
    if !out.status.success() {
        return Err(Failure("`cargo metadata` failed (above)".into(), 1));
    }
    let meta: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| Failure(format!("`cargo metadata` printed no JSON: {e}"), 1))?;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut libraries = BTreeMap::new();
    let mut linking_packages = BTreeSet::new();
    for package in meta["packages"].as_array().into_iter().flatten() {
        let dir = PathBuf::from(text(package, "manifest_path")).parent().map(Path::to_path_buf).unwrap_or_default();
        for target in package["targets"].as_array().into_iter().flatten() {
            let kinds: Vec<&str> = target["kind"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            if kinds.iter().any(|k| matches!(*k, "lib" | "rlib")) {
                libraries.insert(text(target, "name").replace('-', "_"), (text(package, "name"), dir.clone()));
            }
            if kinds.iter().any(|k| matches!(*k, "bin" | "example" | "test" | "bench" | "cdylib" | "dylib")) {
                linking_packages.insert(text(package, "name"));
            }
        }
    }
    let member_ids =
        meta["workspace_members"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
    Ok(Workspace {
        target_dir: PathBuf::from(text(&meta, "target_directory")),
        root: PathBuf::from(text(&meta, "workspace_root")),
        libraries,
        member_ids,
        linking_packages,
    })
}

/// The host's target triple, from `rustc -vV`.
fn host_triple() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc).arg("-vV").output().map_err(|e| Failure(format!("cannot run rustc: {e}"), 1))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or_else(|| Failure("`rustc -vV` names no host".into(), 1))
}

/// Prints one progress line for a pass: `[cargo offload] <what> (<seconds> s)`.
fn progress(what: &str, start: Instant) {
    eprintln!("[cargo offload] {what} ({:.1} s)", start.elapsed().as_secs_f64());
}

/// Runs a cargo pass; its JSON messages are read for the artifacts, diagnostics are shown as
/// rendered. Returns the `compiler-artifact` messages.
fn cargo_pass(what: &str, mut cmd: Command, json: bool) -> Result<Vec<Value>> {
    let start = Instant::now();
    eprintln!("[cargo offload] {what}");
    let mut artifacts = Vec::new();
    let status = if json {
        cmd.arg("--message-format=json-diagnostic-rendered-ansi").stdout(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| Failure(format!("cannot run cargo: {e}"), 1))?;
        for line in BufReader::new(child.stdout.take().unwrap()).lines().map_while(|l| l.ok()) {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                println!("{line}");
                continue;
            };
            match message["reason"].as_str() {
                Some("compiler-message") => {
                    // Every crate writes the manifest of its graph, and a library whose kernels
                    // other crates launch writes an empty one, about which rustc warns; only
                    // the merged manifest matters here, and an empty one gets its own note.
                    let text = message["message"]["message"].as_str().unwrap_or("");
                    if text.starts_with("the offload manifest `") && text.contains("` lists no kernels: neither") {
                        continue;
                    }
                    if let Some(rendered) = message["message"]["rendered"].as_str() {
                        eprint!("{rendered}");
                    }
                }
                Some("compiler-artifact") => artifacts.push(message),
                _ => {}
            }
        }
        child.wait().map_err(|e| Failure(format!("cargo did not finish: {e}"), 1))?
    } else {
        cmd.status().map_err(|e| Failure(format!("cannot run cargo: {e}"), 1))?
    };
    if !status.success() {
        let code = status.code().unwrap_or(1).clamp(1, 255) as u8;
        return Err(Failure(format!("{what} failed (cargo's messages are above)"), code));
    }
    progress(&format!("{what}: done"), start);
    Ok(artifacts)
}

/// A cargo command for a pass, with the environment of the caller minus what would leak
/// between passes.
fn cargo_command(cargo: &OsString, verb: &str) -> Command {
    let mut cmd = Command::new(cargo);
    cmd.arg(verb)
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET");
    cmd
}

/// The `--release`/`--profile` of the user's cargo args, as the profile folder name.
fn profile_dir(cargo_args: &[String]) -> String {
    if cargo_args.iter().any(|a| a == "--release" || a == "-r") {
        return "release".into();
    }
    match cargo_args.iter().position(|a| a == "--profile").and_then(|i| cargo_args.get(i + 1)) {
        Some(p) if p == "dev" || p == "test" => "debug".into(),
        Some(p) if p == "bench" => "release".into(),
        Some(p) => p.clone(),
        None => "debug".into(),
    }
}

fn run(inv: &Invocation) -> Result<ExitCode> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let host = host_triple()?;
    let archs = inv.archs.iter().map(|a| Arch::parse(a, &host)).collect::<Result<Vec<_>>>()?;
    let ws = workspace(&cargo, &inv.cargo_args)?;
    let dir = ws.target_dir.join("offload");
    forget_other_compilers_output(&dir)?;
    let manifests = dir.join("manifests");
    fs::create_dir_all(&manifests).map_err(|e| Failure(format!("cannot create {}: {e}", manifests.display()), 1))?;
    let user_rustflags = std::env::var("RUSTFLAGS").unwrap_or_default();
    let check_cfg = format!("--check-cfg=cfg({DEVICE_CFG})");

    // 1. Host metadata pass.
    let mut check = cargo_command(&cargo, "check");
    check
        .args(&inv.cargo_args)
        .args(if inv.verb == "test" { &["--tests"][..] } else { &[] })
        .args(["--target", &host, "--target-dir"])
        .arg(dir.join("host-metadata"))
        .env("RUSTC_WRAPPER", std::env::current_exe().map_err(|e| Failure(format!("{e}"), 1))?)
        .env(WRAP_VAR, &manifests)
        .env("RUSTFLAGS", format!("{user_rustflags} {check_cfg}"));
    let artifacts = cargo_pass(&format!("host metadata pass ({host})"), check, true)?;
    let roots = root_manifests(&artifacts, &ws, &manifests);
    let manifest = merge_manifests(&roots)?;
    let kernels = manifest["kernels"].as_array().map(Vec::len).unwrap_or(0);
    eprintln!(
        "[cargo offload] {kernels} kernel instance{} in the manifests of {} root crate{}",
        if kernels == 1 { "" } else { "s" },
        roots.len(),
        if roots.len() == 1 { "" } else { "s" }
    );

    // 2. Device passes and the registration object.
    let images_dir = dir.join("images");
    fs::create_dir_all(&images_dir).map_err(|e| Failure(format!("cannot create {}: {e}", images_dir.display()), 1))?;
    let profile = profile_dir(&inv.cargo_args);
    let mut host_rustflags = format!("{user_rustflags} {check_cfg}");
    if kernels > 0 {
        let image_crate = write_image_crate(&dir, &ws, &manifest)?;
        let mut packaged = Vec::new();
        for arch in &archs {
            let mut flags = vec!["-Zunstable-options".to_string()];
            flags.push(format!("-Zoffload=Device={}", image_crate.join("manifest.json").display()));
            flags.push(format!("--cfg={DEVICE_CFG}"));
            flags.push(check_cfg.clone());
            if let Some(cpu) = &arch.cpu {
                flags.push(format!("-Ctarget-cpu={cpu}"));
            }
            let target_dir = dir.join(format!("device-{}", arch.name));
            let mut build = cargo_command(&cargo, "build");
            build
                .arg("--manifest-path")
                .arg(image_crate.join("Cargo.toml"))
                .args(if profile == "release" { &["--release"][..] } else { &[] })
                .args(["-Zbuild-std=core", "--target", &arch.target, "--target-dir"])
                .arg(&target_dir)
                .env("RUSTFLAGS", flags.join(" "));
            cargo_pass(&format!("device pass {} ({})", arch.name, arch.target), build, false)?;
            let image = target_dir.join(&arch.target).join(&profile).join("deps/host.out");
            if !image.is_file() {
                return fail(format!(
                    "the device pass for `{}` wrote no image ({} is missing)",
                    arch.name,
                    image.display()
                ));
            }
            let start = Instant::now();
            let (binary, summary) = device_binary(&images_dir, arch, &image, profile == "release")?;
            progress(&format!("image {}: {summary}", arch.name), start);
            packaged.push((image, binary));
        }
        let start = Instant::now();
        let registration = images_dir.join("offload-registration.o");
        let changed = wrap_images(&images_dir, &host, &packaged, &registration)?;
        progress(&format!("registration of {} image{}: {}", packaged.len(), if packaged.len() == 1 { "" } else { "s" }, registration.display()), start);
        // The host pass must name an image (`host.out`); the first arch's does.
        let host_out = images_dir.join("host.out");
        copy_if_changed(&packaged[0].0, &host_out)?;
        let runtime = runtime_lib_dir();
        // The registration calls `atexit`, which glibc keeps in its static part
        // (`libc_nonshared.a`, named by the `libc.so` linker script): rustc names `-lc` before
        // the link arguments, so the object needs its own `-lc` after it.
        host_rustflags.push_str(&format!(
            " -Zunstable-options -Zoffload=Host={} -Clto=fat -Cembed-bitcode=yes -Clink-arg={} \
             -Clink-arg=-L{rt} -Clink-arg=-lomptarget -Clink-arg=-lomp -Clink-arg=-Wl,-rpath,{rt} \
             -Clink-arg=-lc",
            host_out.display(),
            registration.display(),
            rt = runtime.display(),
        ));
        if changed && !ws.linking_packages.is_empty() {
            // Cargo does not see a link argument's contents: the packages that link programs
            // (or a `cdylib`) are rebuilt against the new images; libraries stay as they are.
            let mut clean = cargo_command(&cargo, "clean");
            clean.args(["--target", &host, "--target-dir"]).arg(dir.join("host"));
            if profile == "release" {
                clean.arg("--release");
            }
            if let Some(i) = inv.cargo_args.iter().position(|a| a == "--manifest-path") {
                clean.args(&inv.cargo_args[i..(i + 2).min(inv.cargo_args.len())]);
            }
            for package in &ws.linking_packages {
                clean.args(["-p", package]);
            }
            let _ = clean.stdout(Stdio::null()).stderr(Stdio::null()).status();
        }
    } else {
        eprintln!("[cargo offload] no kernel launches: the program gets no device image");
    }

    // 3. Host pass. `run` and `test` build with cargo and run the programs themselves: cargo
    // would put the toolchain's library folder on `LD_LIBRARY_PATH`, whose copy of `libomp`
    // the runtime would then load a second time beside the program's own.
    let mut host_pass = cargo_command(&cargo, if inv.verb == "test" { "test" } else { "build" });
    host_pass
        .args(&inv.cargo_args)
        .args(if inv.verb == "test" { &["--no-run"][..] } else { &[] })
        .args(["--target", &host, "--target-dir"])
        .arg(dir.join("host"))
        .env("RUSTFLAGS", host_rustflags.trim());
    let artifacts = cargo_pass(&format!("host pass ({host})"), host_pass, true)?;
    // `test` runs the test harnesses, not the examples that `cargo test` builds beside them.
    let programs: Vec<String> = artifacts
        .iter()
        .filter(|a| inv.verb != "test" || a["profile"]["test"].as_bool() == Some(true))
        .filter_map(|a| a["executable"].as_str())
        .map(str::to_string)
        .collect();
    for program in &programs {
        eprintln!("[cargo offload] built {program}");
    }
    // A static library carries no link arguments: whoever links it links the registration.
    for artifact in &artifacts {
        let kinds = artifact["target"]["kind"].as_array().into_iter().flatten();
        if kinds.filter_map(Value::as_str).any(|k| k == "staticlib") && kernels > 0 {
            let file = artifact["filenames"].as_array().into_iter().flatten().filter_map(Value::as_str);
            for lib in file.filter(|f| f.ends_with(".a")) {
                eprintln!(
                    "[cargo offload] built {lib}: link it with {} -L{rt} -lomptarget -lomp -Wl,-rpath,{rt}",
                    images_dir.join("offload-registration.o").display(),
                    rt = runtime_lib_dir().display()
                );
            }
        }
    }
    match inv.verb.as_str() {
        "run" => match programs.as_slice() {
            [program] => run_program(program, &inv.program_args),
            [] => fail("the host pass built no program to run"),
            _ => fail(format!(
                "the host pass built {} programs; pick one with `--bin NAME` or `--example NAME`",
                programs.len()
            )),
        },
        "test" => {
            for program in &programs {
                let code = run_program(program, &inv.program_args)?;
                if code != ExitCode::SUCCESS {
                    return Err(Failure(format!("test program {program} failed"), 101));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Runs a built program with `args`, without the library path that cargo's environment may
/// carry; returns its exit status.
fn run_program(program: &str, args: &[String]) -> Result<ExitCode> {
    eprintln!("[cargo offload] running {program}");
    let status = Command::new(program)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .status()
        .map_err(|e| Failure(format!("cannot run {program}: {e}"), 1))?;
    Ok(ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8))
}

/// Removes what `cargo offload` built with another compiler build. Builds of the fork share
/// `rustc -vV` (the upstream version and commit), which is all that cargo's fingerprints see
/// of the compiler, so cargo would keep rmeta files, manifests and images of an older build
/// as fresh; the identity here adds the size and modification time of the compiler's driver
/// library. Recorded in `<dir>/compiler`.
fn forget_other_compilers_output(dir: &Path) -> Result<()> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let run = |args: &[&str]| {
        Command::new(&rustc).args(args).output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let version = run(&["-vV"]).map_err(|e| Failure(format!("cannot run rustc: {e}"), 1))?;
    let sysroot = run(&["--print", "sysroot"]).map_err(|e| Failure(format!("cannot run rustc: {e}"), 1))?;
    let mut identity = version;
    if let Ok(entries) = fs::read_dir(Path::new(sysroot.trim()).join("lib")) {
        let mut drivers: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("librustc_driver"))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
                Some(format!("{} {} {}", e.file_name().to_string_lossy(), meta.len(), modified.as_nanos()))
            })
            .collect();
        drivers.sort();
        identity.push_str(&drivers.join("\n"));
    }
    let record = dir.join("compiler");
    // Without a record, whatever is there came from an unknown compiler.
    let previous = fs::read_to_string(&record).ok();
    if previous.as_deref() == Some(identity.as_str()) {
        return Ok(());
    }
    if let Ok(entries) = fs::read_dir(dir) {
        let entries: Vec<_> = entries.flatten().collect();
        if !entries.is_empty() {
            eprintln!("[cargo offload] the compiler changed since the last build: rebuilding all passes");
        }
        for entry in entries {
            let path = entry.path();
            let _ = if path.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
        }
    }
    fs::create_dir_all(dir).map_err(|e| Failure(format!("cannot create {}: {e}", dir.display()), 1))?;
    fs::write(&record, identity).map_err(|e| Failure(format!("cannot write {}: {e}", record.display()), 1))
}

/// The manifests of this build's root crates: the crates of workspace packages among the
/// host metadata pass's artifacts, found as `<crate><extra filename>.json` (named after the
/// artifact's `.rmeta`).
fn root_manifests(artifacts: &[Value], ws: &Workspace, dir: &Path) -> Vec<PathBuf> {
    let mut roots = BTreeSet::new();
    for artifact in artifacts {
        if !artifact["package_id"].as_str().is_some_and(|id| ws.member_ids.contains(id)) {
            continue;
        }
        for file in artifact["filenames"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            let stem = Path::new(file).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            if file.ends_with(".rmeta") {
                let stem = stem.strip_prefix("lib").unwrap_or(&stem);
                let path = dir.join(format!("{stem}.json"));
                if path.is_file() {
                    roots.insert(path);
                }
            }
        }
    }
    roots.into_iter().collect()
}

/// The union of the root manifests, as the manifest of [`IMAGE_CRATE`]: every kernel instance
/// once (by its symbol, which tells apart the same path in two versions of one crate; by its
/// instance text where it has none), with the union of its launching crates, and the union of
/// the crate graphs. Identity fields must agree: they come from one compiler.
fn merge_manifests(paths: &[PathBuf]) -> Result<Value> {
    let mut kernels: BTreeMap<String, Value> = BTreeMap::new();
    let mut graph: BTreeSet<String> = BTreeSet::from([IMAGE_CRATE.to_string()]);
    let mut header: Option<(Value, Value, Value)> = None;
    for path in paths {
        let text = fs::read_to_string(path).map_err(|e| Failure(format!("cannot read {}: {e}", path.display()), 1))?;
        let m: Value = serde_json::from_str(&text)
            .map_err(|e| Failure(format!("{} is not an offload manifest: {e}", path.display()), 1))?;
        let this = (m["magic"].clone(), m["format_version"].clone(), m["rustc_commit"].clone());
        match &header {
            Some(h) if *h != this => {
                return fail(format!("{} was written by another compiler than the other manifests", path.display()));
            }
            _ => header = Some(this),
        }
        graph.extend(m["crate_graph"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string));
        for kernel in m["kernels"].as_array().into_iter().flatten() {
            let key = kernel["symbol"]
                .as_str()
                .or(kernel["kernel"].as_str())
                .unwrap_or_default()
                .to_string();
            let entry = kernels.entry(key).or_insert_with(|| kernel.clone());
            let mut by: BTreeSet<String> =
                entry["launched_by"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
            by.extend(kernel["launched_by"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string));
            entry["launched_by"] = json!(by);
        }
    }
    let (magic, format, commit) = header.unwrap_or((json!("rustc-offload-manifest"), json!(2), json!("")));
    Ok(json!({
        "magic": magic,
        "format_version": format,
        "rustc_commit": commit,
        "crate": IMAGE_CRATE,
        "crate_graph": graph,
        "kernels": kernels.into_values().collect::<Vec<_>>(),
    }))
}

/// Writes the image crate (`Cargo.toml`, `lib.rs`, `manifest.json`) under `dir/image`, only
/// the files whose content changed, so that cargo sees an unchanged crate as fresh. It
/// depends on each workspace library that defines a kernel of the manifest.
fn write_image_crate(dir: &Path, ws: &Workspace, manifest: &Value) -> Result<PathBuf> {
    let mut deps = BTreeMap::new();
    for kernel in manifest["kernels"].as_array().into_iter().flatten() {
        let text = kernel["kernel"].as_str().unwrap_or("?");
        let Some(krate) = kernel["item"]["crate"].as_str() else {
            return fail(format!(
                "kernel `{text}` is declared in an `extern` block (the 1.95 style): cargo offload \
                 builds kernels defined as `#[rustc_offload_kernel]` functions in a workspace library"
            ));
        };
        let Some((package, path)) = ws.libraries.get(krate) else {
            return fail(format!(
                "kernel `{text}` is defined in crate `{krate}`, which is not a library of this \
                 workspace ({}): cargo offload builds the device images from workspace libraries",
                ws.root.display()
            ));
        };
        deps.insert(krate.to_string(), (package.clone(), path.clone()));
    }
    let image = dir.join("image");
    fs::create_dir_all(&image).map_err(|e| Failure(format!("cannot create {}: {e}", image.display()), 1))?;
    let mut toml = String::from(
        "# Written by cargo offload: the crate that builds the device images.\n\
         [package]\nname = \"offload-image\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [lib]\nname = \"offload_image\"\npath = \"lib.rs\"\n\n[workspace]\n\n\
         [profile.dev]\npanic = \"abort\"\n\n[profile.release]\npanic = \"abort\"\ncodegen-units = 1\n\n\
         [dependencies]\n",
    );
    let mut lib = String::from("// Written by cargo offload: the crate that builds the device images.\n#![no_std]\n");
    for (krate, (package, path)) in &deps {
        toml.push_str(&format!("{krate} = {{ package = {package:?}, path = {:?} }}\n", path.display().to_string()));
        lib.push_str(&format!("extern crate {krate};\n"));
    }
    let text = serde_json::to_string_pretty(manifest).unwrap();
    write_if_changed(&image.join("Cargo.toml"), toml.as_bytes())?;
    write_if_changed(&image.join("lib.rs"), lib.as_bytes())?;
    write_if_changed(&image.join("manifest.json"), text.as_bytes())?;
    // The workspace's lock file keeps the dependencies' versions; cargo trims it to the image
    // crate's graph.
    let lock = ws.root.join("Cargo.lock");
    if lock.is_file() && !image.join("Cargo.lock").is_file() {
        let _ = fs::copy(&lock, image.join("Cargo.lock"));
    }
    Ok(image)
}

fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    if fs::read(path).ok().as_deref() == Some(bytes) {
        return Ok(false);
    }
    fs::write(path, bytes).map_err(|e| Failure(format!("cannot write {}: {e}", path.display()), 1))?;
    Ok(true)
}

fn copy_if_changed(from: &Path, to: &Path) -> Result<bool> {
    let bytes = fs::read(from).map_err(|e| Failure(format!("cannot read {}: {e}", from.display()), 1))?;
    write_if_changed(to, &bytes)
}

fn llvm_tool(name: &str) -> PathBuf {
    let dir = std::env::var_os("CARGO_OFFLOAD_LLVM_BIN").map(PathBuf::from).unwrap_or_else(|| "/usr/lib/llvm-22/bin".into());
    let path = dir.join(name);
    if path.is_file() { path } else { PathBuf::from(name) }
}

fn cuda_tool(name: &str) -> PathBuf {
    match std::env::var_os("CARGO_OFFLOAD_CUDA_BIN") {
        Some(dir) => PathBuf::from(dir).join(name),
        None => PathBuf::from(name),
    }
}

fn runtime_lib_dir() -> PathBuf {
    std::env::var_os("CARGO_OFFLOAD_RUNTIME_LIB").map(PathBuf::from).unwrap_or_else(|| "/usr/lib/llvm-22/lib".into())
}

/// Runs a tool of the image build; its complaint becomes the error.
fn tool(what: &str, program: &Path, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Result<String> {
    let mut cmd = Command::new(program);
    for a in args {
        cmd.arg(a);
    }
    let out = cmd.output().map_err(|e| {
        Failure(format!("{what}: cannot run `{}`: {e}", program.display()), 1)
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return fail(format!("{what}: `{}` refused it: {}", program.display(), stderr.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Compiles the device pass's image (`host.out`: the kernels' optimized LLVM bitcode in an
/// offload binary) into what the runtime's plugin loads, and packages that as an offload
/// binary for the registration: an ELF shared object for the CPU device, a code object (ELF
/// shared object, code object v5) for AMD GPUs, an ELF cubin for NVIDIA GPUs. Every image is
/// linked with nothing undefined but, for the CPU device, the C library the program has.
/// Returns the packaged file and a summary (kernels, bytes).
fn device_binary(dir: &Path, arch: &Arch, image: &Path, release: bool) -> Result<(PathBuf, String)> {
    let what = format!("image {}", arch.name);
    let base = dir.join(&arch.name);
    let bc = base.with_extension("bc");
    let bc_arg = format!("--image=file={},triple={}", bc.display(), arch.target);
    tool(&what, &llvm_tool("llvm-offload-binary"), &[&image, &bc_arg])?;
    let opt = if release { "-O3" } else { "-O2" };
    let obj = base.with_extension("o");
    let (loadable, kind) = match &arch.cpu {
        None => {
            let so = base.with_extension("so");
            tool(&what, &llvm_tool("llc"), &[&opt, &"-filetype=obj", &"-relocation-model=pic", &bc, &"-o", &obj])?;
            tool(&what, &llvm_tool("ld.lld"), &[&"-shared", &obj, &"-o", &so])?;
            (so, "shared object")
        }
        Some(cpu) if arch.target.starts_with("amdgcn") => {
            let so = base.with_extension("so");
            let mcpu = format!("-mcpu={cpu}");
            tool(&what, &llvm_tool("llc"), &[&opt, &mcpu, &"--amdhsa-code-object-version=5", &"-filetype=obj", &bc, &"-o", &obj])?;
            tool(&what, &llvm_tool("ld.lld"), &[&"-shared", &"--no-undefined", &obj, &"-o", &so])?;
            (so, "code object")
        }
        Some(cpu) => {
            let ptx = base.with_extension("ptx");
            let cubin = base.with_extension("cubin");
            let mcpu = format!("-mcpu={cpu}");
            let sm = format!("-arch={cpu}");
            tool(&what, &llvm_tool("llc"), &[&opt, &mcpu, &bc, &"-o", &ptx])?;
            tool(&what, &cuda_tool("ptxas"), &[&sm, &"-c", &ptx, &"-o", &obj])?;
            tool(&what, &cuda_tool("nvlink"), &[&sm, &obj, &"-o", &cubin])?;
            (cubin, "cubin")
        }
    };
    let packaged = base.with_extension("offload");
    let mut spec = format!("--image=file={},triple={},kind=openmp", loadable.display(), arch.target);
    if let Some(cpu) = &arch.cpu {
        spec.push_str(&format!(",arch={cpu}"));
    }
    let out_arg = packaged.display().to_string();
    tool(&what, &llvm_tool("llvm-offload-binary"), &[&"-o", &out_arg, &spec])?;
    let bytes = fs::metadata(&loadable).map(|m| m.len()).unwrap_or(0);
    Ok((packaged, format!("{kind} {} ({bytes} bytes)", loadable.display())))
}

/// Wraps the packaged images into the registration object (`llvm-offload-wrapper`, compiled
/// by `llc`): the `__tgt_bin_desc` of all images and the program's offload entries, and the
/// constructor that registers it with the runtime once. Writes `out` only when it changed;
/// returns whether it did.
fn wrap_images(dir: &Path, host: &str, packaged: &[(PathBuf, PathBuf)], out: &Path) -> Result<bool> {
    let bc = dir.join("offload-registration.bc");
    let fresh = dir.join("offload-registration.new.o");
    let triple = format!("--triple={host}");
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"--kind=openmp", &triple, &"-o", &bc];
    for (_, binary) in packaged {
        args.push(binary);
    }
    tool("registration", &llvm_tool("llvm-offload-wrapper"), &args)?;
    tool("registration", &llvm_tool("llc"), &[&"-filetype=obj", &"-relocation-model=pic", &bc, &"-o", &fresh])?;
    let changed = copy_if_changed(&fresh, out)?;
    let _ = fs::remove_file(&fresh);
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn archs_map_to_targets() {
        let host = "x86_64-unknown-linux-gnu";
        assert_eq!(Arch::parse("host", host).ok().unwrap().target, host);
        let gfx = Arch::parse("gfx90a", host).ok().unwrap();
        assert_eq!((gfx.target.as_str(), gfx.cpu.as_deref()), ("amdgcn-amd-amdhsa", Some("gfx90a")));
        let sm = Arch::parse("sm_90", host).ok().unwrap();
        assert_eq!((sm.target.as_str(), sm.cpu.as_deref()), ("nvptx64-nvidia-cuda", Some("sm_90")));
        for bad in ["sm_", "sm_9a", "gfx", "x86-64", "cuda"] {
            let Err(Failure(message, 2)) = Arch::parse(bad, host) else { panic!("{bad} accepted") };
            assert!(message.contains(&format!("unknown offload arch `{bad}`")), "{message}");
        }
    }

    #[test]
    fn arguments_split_into_archs_cargo_and_program() {
        let inv = parse_args(&strings(&["run", "--release", "--offload-arch=host,sm_90", "--offload-arch", "gfx90a", "--", "-n", "3"]))
            .ok()
            .unwrap();
        assert_eq!(inv.verb, "run");
        assert_eq!(inv.archs, strings(&["host", "sm_90", "gfx90a"]));
        assert_eq!(inv.cargo_args, strings(&["--release"]));
        assert_eq!(inv.program_args, strings(&["-n", "3"]));
        assert!(matches!(parse_args(&strings(&["build"])), Err(Failure(m, 2)) if m.contains("no `--offload-arch`")));
        assert!(matches!(parse_args(&strings(&["publish", "--offload-arch=host"])), Err(Failure(m, 2)) if m.contains("unknown command")));
        assert!(matches!(
            parse_args(&strings(&["build", "--offload-arch=host", "--target", "x"])),
            Err(Failure(m, 2)) if m.contains("`--target` comes from `--offload-arch`")
        ));
    }

    #[test]
    fn manifests_are_named_per_crate_and_skip_probes_and_host_crates() {
        let args = strings(&["--crate-name", "app", "--edition=2024", "-C", "extra-filename=-0123abcd", "--target", "x86_64-unknown-linux-gnu"]);
        assert_eq!(manifest_name(&args).as_deref(), Some("app-0123abcd"));
        let build_script = strings(&["--crate-name", "build_script_build", "-C", "extra-filename=-99"]);
        assert_eq!(manifest_name(&build_script), None);
        let probe = strings(&["-", "--crate-name", "___", "--print=file-names", "--target", "x"]);
        assert_eq!(manifest_name(&probe), None);
    }

    #[test]
    fn merged_manifest_is_the_union_under_the_image_crate() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-merge-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, krate: &str, kernels: Value| {
            let m = json!({"magic": "rustc-offload-manifest", "format_version": 2, "rustc_commit": "c",
                "crate": krate, "crate_graph": [krate, "core", "kern"], "kernels": kernels});
            let path = dir.join(name);
            fs::write(&path, m.to_string()).unwrap();
            path
        };
        let a = write("a.json", "app", json!([{"kernel": "kern::k", "symbol": "s_k", "launched_by": ["kern"]}]));
        // `tool` also launches `k` of another version of `kern`: the same text, another symbol.
        let b = write(
            "b.json",
            "tool",
            json!([
                {"kernel": "kern::k", "symbol": "s_k", "launched_by": ["tool"]},
                {"kernel": "kern::j", "symbol": "s_j", "launched_by": ["tool"]},
                {"kernel": "kern::k", "symbol": "s_k2", "launched_by": ["tool"]},
            ]),
        );
        let merged = merge_manifests(&[a.clone(), b]).ok().unwrap();
        assert_eq!(merged["crate"], IMAGE_CRATE);
        assert_eq!(merged["crate_graph"], json!(["app", "core", "kern", IMAGE_CRATE, "tool"]));
        let kernels: Vec<(&str, Value)> =
            merged["kernels"].as_array().unwrap().iter().map(|k| (k["kernel"].as_str().unwrap(), k["launched_by"].clone())).collect();
        assert_eq!(
            kernels,
            vec![
                ("kern::j", json!(["tool"])),
                ("kern::k", json!(["kern", "tool"])),
                ("kern::k", json!(["tool"])),
            ]
        );
        let other = dir.join("other.json");
        fs::write(&other, fs::read_to_string(&a).unwrap().replace("\"c\"", "\"d\"")).unwrap();
        assert!(matches!(merge_manifests(&[a, other]), Err(Failure(m, 1)) if m.contains("another compiler")));
        fs::remove_dir_all(&dir).unwrap();
    }
}
