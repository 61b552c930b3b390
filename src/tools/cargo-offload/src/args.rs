//! The command line of `cargo offload`: its usage text, its commands ([`Verb`]), the
//! `--offload-arch` values ([`Arch`]) and the split of the arguments into archs, cargo's
//! arguments and the program's ([`parse_args`]).

use std::path::PathBuf;
use std::str::FromStr;

use offload_targets::DeviceTarget;
use serde::{Deserialize, Serialize};

use crate::util::{Failure, Result};

/// The usage text: `--help` prints it, a usage error follows its message with it.
pub(crate) const USAGE: &str = "\
usage: cargo offload <build|run|test> --offload-arch=ARCH[,ARCH...] [--build-std] [cargo args]
       [-- program args]
       cargo offload bundle --offload-arch=ARCH[,ARCH...] [--out DIR] [cargo args]

build: the programs; run: build, then run the one program; test: build and run the test
      programs; bundle: build, then write DIR (default <target dir>/offload/bundle) with each
      program, the libraries it loads and the dynamic loader, and a start script per program
      (DIR/NAME) that runs it on another x86-64 Linux machine without the toolchain

ARCH: host (LLVM offload's CPU device: this machine's CPU), gfxNNN (AMD GPUs, amdgcn-amd-amdhsa),
      sm_NN (NVIDIA GPUs, nvptx64-nvidia-cuda); several archs give one program with an image each
--build-std: build `core` from source for each device pass (-Zbuild-std=core) instead of taking
      the toolchain's (CARGO_OFFLOAD_DEVICE_SYSROOT)

environment: OFFLOAD_REPORT=1 (run, test and the bundle's start scripts: one line per kernel
and device on stderr naming the device and the image that ran it),
CARGO_OFFLOAD_DEVICE_SYSROOT (the toolchain's `core` for each device target, with the MIR of
every function; unset: --build-std), CARGO_OFFLOAD_LLVM_BIN (default /usr/lib/llvm-22/bin),
CARGO_OFFLOAD_RUNTIME_LIB (default /usr/lib/llvm-22/lib), CARGO_OFFLOAD_CUDA_BIN (ptxas and
nvlink; default: PATH); your RUSTC_WRAPPER (or build.rustc-wrapper) runs the host pass's rustc
";

/// The command of `cargo offload`, the first argument. In the run plan it is its name
/// ([`Verb::as_str`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub(crate) enum Verb {
    /// `build`: the programs.
    Build,
    /// `run`: build, then run the one program.
    Run,
    /// `test`: build and run the test programs.
    Test,
    /// `bundle`: build, then write the programs with what they load into a folder.
    Bundle,
}

impl Verb {
    /// Every command, for parsing by name.
    const ALL: [Verb; 4] = [Verb::Build, Verb::Run, Verb::Test, Verb::Bundle];

    /// The command's name on the command line.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verb::Build => "build",
            Verb::Run => "run",
            Verb::Test => "test",
            Verb::Bundle => "bundle",
        }
    }
}

/// A command name that is none of [`Verb::ALL`]'s; shown, it is the usage error's first line
/// (`unknown command `NAME``).
#[derive(Debug, PartialEq)]
pub(crate) struct UnknownVerb(String);

impl std::fmt::Display for UnknownVerb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown command `{}`", self.0)
    }
}

/// Parses a command by its name.
impl FromStr for Verb {
    type Err = UnknownVerb;

    fn from_str(name: &str) -> std::result::Result<Verb, UnknownVerb> {
        let known = Verb::ALL.into_iter().find(|verb| verb.as_str() == name);
        known.ok_or_else(|| UnknownVerb(name.to_string()))
    }
}

impl From<Verb> for &'static str {
    fn from(verb: Verb) -> &'static str {
        verb.as_str()
    }
}

impl TryFrom<String> for Verb {
    type Error = UnknownVerb;

    fn try_from(name: String) -> std::result::Result<Verb, UnknownVerb> {
        name.parse()
    }
}

/// One `--offload-arch` value, with its row of the device targets' table
/// ([`offload_targets`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Arch {
    /// As the user wrote it: `host`, `gfx90a`, `sm_90`.
    pub(crate) name: String,
    /// The rustc target of its device pass.
    pub(crate) target: String,
    /// `-Ctarget-cpu` of the device pass, `None` for the CPU device.
    pub(crate) cpu: Option<String>,
    /// Its device target: the device pass's flags, the vendor steps of its image.
    pub(crate) device: &'static DeviceTarget,
}

impl Arch {
    /// Parses one arch; `host` is the CPU device of `host_triple`.
    pub(crate) fn parse(name: &str, host_triple: &str) -> Result<Arch> {
        let device = offload_targets::for_arch(name).map_err(|e| Failure::usage(e.to_string()))?;
        Ok(Arch {
            name: name.to_string(),
            target: device.triple_on(host_triple).to_string(),
            cpu: device.cpu().map(str::to_string),
            device: device.target,
        })
    }

    /// What its device pass adds to the rustc flags (the target CPU, say).
    pub(crate) fn pass_flags(&self) -> Vec<String> {
        offload_targets::Device { name: self.name.clone(), target: self.device }.pass_flags()
    }
}

/// The command line of `cargo offload`.
#[derive(Debug, PartialEq)]
pub(crate) struct Invocation {
    /// The command.
    pub(crate) verb: Verb,
    /// The `--offload-arch` values, as given.
    pub(crate) archs: Vec<String>,
    /// Everything else before `--`, given to every cargo pass that builds the user's crates.
    pub(crate) cargo_args: Vec<String>,
    /// After `--`: the program's arguments (`run`, `test`).
    pub(crate) program_args: Vec<String>,
    /// `--build-std`: build `core` from source for each device pass instead of taking the
    /// toolchain's.
    pub(crate) build_std: bool,
    /// `bundle --out DIR`: the bundle's folder.
    pub(crate) bundle_out: Option<PathBuf>,
}

/// A usage error: `message`, then the usage text.
fn usage_error(message: &str) -> Failure {
    Failure::usage(format!("{message}\n{USAGE}"))
}

/// Whether `arg` is `flag` or `flag=VALUE`.
pub(crate) fn is_flag(arg: &str, flag: &str) -> bool {
    arg.strip_prefix(flag).is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
}

/// The value of `flag` when `arg` is `flag=VALUE`, or `flag` followed by VALUE (taken from
/// `rest`); `None` when `arg` is another argument. `flag` as the last argument is a usage
/// error: "`flag` needs `needs`".
fn flag_value<'a>(
    flag: &str,
    needs: &str,
    arg: &'a str,
    rest: &mut impl Iterator<Item = &'a String>,
) -> Result<Option<&'a str>> {
    if arg == flag {
        return match rest.next() {
            Some(value) => Ok(Some(value)),
            None => Err(usage_error(&format!("`{flag}` needs {needs}"))),
        };
    }
    Ok(arg.strip_prefix(flag).and_then(|rest| rest.strip_prefix('=')))
}

/// Parses `args` (after `cargo offload`).
pub(crate) fn parse_args(args: &[String]) -> Result<Invocation> {
    let Some(verb) = args.first() else { return Err(usage_error("no command given")) };
    let verb: Verb = verb.parse().map_err(|e: UnknownVerb| usage_error(&e.to_string()))?;
    let mut archs = Vec::new();
    let mut cargo_args = Vec::new();
    let mut program_args = Vec::new();
    let mut build_std = false;
    let mut bundle_out = None;
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            program_args.extend(rest.by_ref().cloned());
            break;
        }
        if arg == "--build-std" {
            build_std = true;
            continue;
        }
        // `--out` is cargo's (unstable) option for every other command.
        let out = if verb == Verb::Bundle {
            flag_value("--out", "a folder", arg, &mut rest)?
        } else {
            None
        };
        if let Some(dir) = out {
            if dir.is_empty() {
                return Err(usage_error("`--out` needs a folder"));
            }
            bundle_out = Some(PathBuf::from(dir));
            continue;
        }
        if let Some(list) = flag_value("--offload-arch", "a value", arg, &mut rest)? {
            // An arch named twice is built once: its device pass, whose folder and image files
            // are the arch's, runs beside the others'.
            for arch in list.split(',').filter(|a| !a.is_empty()) {
                if !archs.iter().any(|a| a == arch) {
                    archs.push(arch.to_string());
                }
            }
            continue;
        }
        if is_flag(arg, "--target") {
            return Err(usage_error(
                "`--target` comes from `--offload-arch`; cargo offload builds the host for this \
                 machine",
            ));
        }
        cargo_args.push(arg.clone());
    }
    if archs.is_empty() {
        return Err(usage_error("no `--offload-arch` given"));
    }
    if verb == Verb::Bundle && !program_args.is_empty() {
        return Err(usage_error(
            "`bundle` runs nothing: program arguments go to its start scripts",
        ));
    }
    Ok(Invocation { verb, archs, cargo_args, program_args, build_std, bundle_out })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env;
    use crate::util::strings;
    use offload_targets::Naming;

    #[test]
    fn usage_names_the_users_environment_variables() {
        for var in [env::DEVICE_SYSROOT, env::LLVM_BIN, env::RUNTIME_LIB, env::CUDA_BIN] {
            assert!(USAGE.contains(var), "the usage text does not name {var}");
        }
    }

    #[test]
    fn verbs_parse_by_the_names_they_print() {
        for verb in Verb::ALL {
            assert_eq!(verb.as_str().parse(), Ok(verb));
            let json = serde_json::to_string(&verb).unwrap();
            assert_eq!(json, format!("\"{}\"", verb.as_str()));
            assert_eq!(serde_json::from_str::<Verb>(&json).ok(), Some(verb));
        }
        let unknown = "publish".parse::<Verb>().map_err(|e| e.to_string());
        assert_eq!(unknown, Err("unknown command `publish`".to_string()));
        assert!(serde_json::from_str::<Verb>("\"Run\"").is_err());
        assert!(is_flag("--target", "--target") && is_flag("--target=x", "--target"));
        assert!(!is_flag("--targets", "--target") && !is_flag("-target", "--target"));
    }

    #[test]
    fn archs_map_to_targets() {
        let host = "x86_64-unknown-linux-gnu";
        assert_eq!(Arch::parse("host", host).ok().unwrap().target, host);
        let gfx = Arch::parse("gfx90a", host).ok().unwrap();
        assert_eq!(
            (gfx.target.as_str(), gfx.cpu.as_deref()),
            ("amdgcn-amd-amdhsa", Some("gfx90a"))
        );
        let sm = Arch::parse("sm_90", host).ok().unwrap();
        assert_eq!((sm.target.as_str(), sm.cpu.as_deref()), ("nvptx64-nvidia-cuda", Some("sm_90")));
        for bad in ["sm_", "sm_9a", "gfx", "x86-64", "cuda"] {
            let Err(Failure(message, 2)) = Arch::parse(bad, host) else { panic!("{bad} accepted") };
            assert!(message.contains(&format!("unknown offload arch `{bad}`")), "{message}");
        }
        assert_eq!(gfx.pass_flags(), ["-Ctarget-cpu=gfx90a"]);
        assert_eq!(
            Arch::parse("host", host).ok().unwrap().pass_flags(),
            ["-Ztls-model=initial-exec"]
        );
    }

    #[test]
    fn usage_names_every_arch_and_gpu_target() {
        // The ARCH paragraph is prose; the table is the device targets' (`offload-targets`).
        let paragraph =
            &USAGE[USAGE.find("\nARCH: ").unwrap()..USAGE.find("\n--build-std").unwrap()];
        for target in offload_targets::TARGETS {
            let named = match target.naming {
                Naming::Exact(name) => format!("{name} ("),
                Naming::Prefix { prefix, .. } => format!("{prefix}NN"),
            };
            assert!(paragraph.contains(&named), "the usage text does not name {named}");
            let gpu = target.kind != offload_targets::Kind::Cpu;
            assert!(!gpu || paragraph.contains(target.triple), "{}", target.triple);
        }
    }

    #[test]
    fn arguments_split_into_archs_cargo_and_program() {
        let inv = parse_args(&strings(&[
            "run",
            "--release",
            "--offload-arch=host,sm_90",
            "--offload-arch",
            "gfx90a,sm_90",
            "--",
            "-n",
            "3",
        ]))
        .ok()
        .unwrap();
        assert_eq!(inv.verb, Verb::Run);
        assert_eq!(inv.archs, strings(&["host", "sm_90", "gfx90a"]));
        assert_eq!(inv.cargo_args, strings(&["--release"]));
        assert_eq!(inv.program_args, strings(&["-n", "3"]));
        assert!(!inv.build_std);
        let inv = parse_args(&strings(&[
            "build",
            "--build-std",
            "--offload-arch=sm_90",
            "--",
            "--build-std",
        ]))
        .ok()
        .unwrap();
        assert!(inv.build_std);
        assert_eq!(inv.cargo_args, Vec::<String>::new());
        assert_eq!(inv.program_args, strings(&["--build-std"]));
        assert!(matches!(
            parse_args(&strings(&["build"])),
            Err(Failure(m, 2)) if m.contains("no `--offload-arch`")
        ));
        assert!(matches!(
            parse_args(&strings(&["publish", "--offload-arch=host"])),
            Err(Failure(m, 2)) if m.starts_with("unknown command `publish`\n") && m.ends_with(USAGE)
        ));
        assert!(matches!(
            parse_args(&strings(&["build", "--offload-arch"])),
            Err(Failure(m, 2)) if m.starts_with("`--offload-arch` needs a value\n")
        ));
        assert!(matches!(
            parse_args(&strings(&["bundle", "--offload-arch=host", "--out="])),
            Err(Failure(m, 2)) if m.starts_with("`--out` needs a folder\n")
        ));
        assert!(matches!(
            parse_args(&strings(&[])),
            Err(Failure(m, 2)) if m.starts_with("no command given\n")
        ));
        let inv = parse_args(&strings(&["bundle", "--offload-arch=host", "--out", "d", "-r"]))
            .ok()
            .unwrap();
        assert_eq!((inv.bundle_out, inv.cargo_args), (Some(PathBuf::from("d")), strings(&["-r"])));
        let inv = parse_args(&strings(&["bundle", "--out=e", "--offload-arch=host"])).ok().unwrap();
        assert_eq!(inv.bundle_out, Some(PathBuf::from("e")));
        assert!(matches!(
            parse_args(&strings(&["bundle", "--offload-arch=host", "--out"])),
            Err(Failure(m, 2)) if m.contains("`--out` needs a folder")
        ));
        assert!(matches!(
            parse_args(&strings(&["bundle", "--offload-arch=host", "--", "x"])),
            Err(Failure(m, 2)) if m.contains("`bundle` runs nothing")
        ));
        // `--out` is cargo's (unstable) option for every other verb.
        let inv =
            parse_args(&strings(&["build", "--offload-arch=host", "--out", "d"])).ok().unwrap();
        assert_eq!((inv.bundle_out, inv.cargo_args), (None, strings(&["--out", "d"])));
        assert!(matches!(
            parse_args(&strings(&["build", "--offload-arch=host", "--target", "x"])),
            Err(Failure(m, 2)) if m.contains("`--target` comes from `--offload-arch`")
        ));
    }
}
