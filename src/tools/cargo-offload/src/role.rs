//! Which role a copy of `cargo-offload` plays, decoded once from its arguments and the
//! environment that its caller set ([`Role::decode`]): `cargo offload` itself runs cargo with
//! `cargo-offload` as `RUSTC_WRAPPER` and says through [`crate::env`]'s variables which pass
//! that copy wraps; an installed toolchain runs it as its linker driver (`--cc`); `./x.py` runs
//! it with `--run-plan`. Every other module receives what was decoded here as arguments, and
//! none reads these variables again.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::env;
use crate::util::{Failure, Result};

/// The role of one `cargo-offload` process, with what its caller told it.
#[derive(Debug, PartialEq)]
pub(crate) enum Role {
    /// The cargo subcommand, `cargo offload <verb> ...`: the arguments after `offload` (or,
    /// run as `cargo-offload <verb> ...`, after the program's name).
    Subcommand(Vec<String>),
    /// `RUSTC_WRAPPER` of the host build's compile run ([`env::HOST_LINK`] unset), which links
    /// no program ([`crate::wrapper::host`]).
    HostCompile(Rustc, HostPass),
    /// `RUSTC_WRAPPER` of the host build's run that links the programs: the link run, or the
    /// one run that compiles and links ([`LinkRun::one_run`]).
    HostLink(Rustc, HostPass, LinkRun),
    /// `RUSTC_WRAPPER` of a device pass ([`crate::wrapper::device`]).
    Device(Rustc, DevicePass),
    /// The linker driver of an installed toolchain (`lib/offload/bin/cc`), `cargo-offload --cc
    /// ARGS`: the arguments after `--cc` ([`crate::linker`]).
    Linker(Vec<String>),
    /// `cargo-offload --run-plan FILE`, as `./x.py cargo` runs it after leaving the sysroot:
    /// the plan's file, whose programs it runs ([`crate::launch::run_plan`]).
    RunPlan(PathBuf),
}

/// A rustc that cargo runs through `cargo-offload` as `RUSTC_WRAPPER`
/// (`cargo-offload <rustc> <args>`).
#[derive(Debug, PartialEq)]
pub(crate) struct Rustc {
    /// The rustc to run, as cargo named it.
    pub(crate) program: String,
    /// Its arguments.
    pub(crate) args: Vec<String>,
}

/// What `cargo offload` tells the wrapper of each host build run.
#[derive(Debug, PartialEq)]
pub(crate) struct HostPass {
    /// [`env::HOST_METADATA_DIR`]: the folder of the manifests, one per crate.
    pub(crate) manifests: String,
    /// [`env::HOST_IMAGE`]: the image that every crate's `-Zoffload=Host=` names; empty when
    /// unset.
    pub(crate) image: String,
    /// [`env::USER_RUSTC_WRAPPER`]: the user's rustc wrapper, which runs each rustc; `None`
    /// when unset.
    pub(crate) user_wrapper: Option<String>,
    /// [`env::HOST_PROGRAMS`]: the folder of the records of the programs that a run compiled;
    /// empty when unset.
    pub(crate) programs: String,
}

/// What `cargo offload` tells the wrapper of the host build's run that links the programs.
#[derive(Debug, PartialEq)]
pub(crate) struct LinkRun {
    /// [`env::HOST_LINK`], split at each `\x1f`, without empty ones: the link arguments of the
    /// registration and the offload runtime; none when no kernel is launched.
    pub(crate) link_args: Vec<String>,
    /// Whether [`env::HOST_COMPILE_AND_LINK`] is set: the one run after the device passes,
    /// which compiles and links each program in one compilation.
    pub(crate) one_run: bool,
}

/// What `cargo offload` tells the wrapper of a device pass.
#[derive(Debug, PartialEq)]
pub(crate) struct DevicePass {
    /// [`env::DEVICE_TARGET_FLAGS`]: each target's rustc flags, as
    /// [`crate::wrapper::device::encode_target_flags`] writes them.
    pub(crate) target_flags: String,
    /// [`env::DEVICE_PROGRAM`]: the crate name of the program that defines kernels, if the
    /// pass builds one.
    pub(crate) program: Option<String>,
    /// [`env::DEVICE_FAILURES`]: the file to which a failed compilation appends its target.
    pub(crate) failures: Option<OsString>,
}

impl Role {
    /// The role of a process started with `args` (the program's name first) in an environment
    /// whose variables `var` gives (`None` for one that is unset). A variable that names a
    /// wrapper's pass comes first (a build script that runs `cargo-offload` sees none: the
    /// passes remove them), then the first argument. A value that the wrappers read as text
    /// counts only if it is UTF-8. Fails (exit status 2) for a wrapper without a rustc to run
    /// and for `--run-plan` without exactly one argument.
    pub(crate) fn decode(var: impl Fn(&str) -> Option<OsString>, args: &[String]) -> Result<Role> {
        let text = |name: &str| var(name).and_then(|value| value.into_string().ok());
        let rustc = || match args.get(1..) {
            Some([program, args @ ..]) => {
                Ok(Rustc { program: program.clone(), args: args.to_vec() })
            }
            _ => Err(Failure::usage("run as RUSTC_WRAPPER without a rustc to run")),
        };
        if let Some(manifests) = text(env::HOST_METADATA_DIR) {
            let pass = HostPass {
                manifests,
                image: text(env::HOST_IMAGE).unwrap_or_default(),
                programs: text(env::HOST_PROGRAMS).unwrap_or_default(),
                user_wrapper: text(env::USER_RUSTC_WRAPPER),
            };
            let Some(link_args) = text(env::HOST_LINK) else {
                return Ok(Role::HostCompile(rustc()?, pass));
            };
            let link = LinkRun {
                link_args: link_args
                    .split('\x1f')
                    .filter(|a| !a.is_empty())
                    .map(Into::into)
                    .collect(),
                one_run: var(env::HOST_COMPILE_AND_LINK).is_some(),
            };
            return Ok(Role::HostLink(rustc()?, pass, link));
        }
        if let Some(target_flags) = text(env::DEVICE_TARGET_FLAGS) {
            let pass = DevicePass {
                target_flags,
                program: text(env::DEVICE_PROGRAM),
                failures: var(env::DEVICE_FAILURES),
            };
            return Ok(Role::Device(rustc()?, pass));
        }
        match args.get(1).map(String::as_str) {
            Some("--cc") => Ok(Role::Linker(args[2..].to_vec())),
            Some("--run-plan") => match args {
                [_, _, file] => Ok(Role::RunPlan(PathBuf::from(file))),
                _ => Err(Failure::usage("--run-plan takes one argument: the plan's file")),
            },
            Some("offload") => Ok(Role::Subcommand(args[2..].to_vec())),
            _ => Ok(Role::Subcommand(args.get(1..).unwrap_or_default().to_vec())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::strings;

    /// The role of `args` in an environment of `vars` (name, value).
    fn decode(vars: &[(&str, &str)], args: &[&str]) -> Result<Role> {
        let var = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.into());
        Role::decode(var, &strings(args))
    }

    fn rustc(args: &[&str]) -> Rustc {
        Rustc { program: "rustc".into(), args: strings(args) }
    }

    #[test]
    fn the_subcommand_and_the_options_of_the_other_roles() {
        let sub = decode(&[], &["cargo-offload", "offload", "build", "--offload-arch=sm_90"]);
        assert_eq!(sub.ok(), Some(Role::Subcommand(strings(&["build", "--offload-arch=sm_90"]))));
        let direct = decode(&[], &["cargo-offload", "test"]);
        assert_eq!(direct.ok(), Some(Role::Subcommand(strings(&["test"]))));
        assert_eq!(decode(&[], &["cargo-offload"]).ok(), Some(Role::Subcommand(Vec::new())));
        let cc = decode(&[], &["cc", "--cc", "-o", "app"]);
        assert_eq!(cc.ok(), Some(Role::Linker(strings(&["-o", "app"]))));
        let plan = decode(&[], &["cargo-offload", "--run-plan", "/t/plan"]);
        assert_eq!(plan.ok(), Some(Role::RunPlan(PathBuf::from("/t/plan"))));
        let Err(Failure(message, 2)) = decode(&[], &["cargo-offload", "--run-plan"]) else {
            panic!("--run-plan without its file accepted")
        };
        assert_eq!(message, "--run-plan takes one argument: the plan's file");
    }

    #[test]
    fn the_host_wrapper_compiles_or_links_as_its_variables_say() {
        let args = ["cargo-offload", "rustc", "--crate-name", "app"];
        let compile = [(env::HOST_METADATA_DIR, "/t/m"), (env::HOST_IMAGE, "/t/host.out")];
        let pass = HostPass {
            manifests: "/t/m".into(),
            image: "/t/host.out".into(),
            user_wrapper: None,
            programs: "".into(),
        };
        assert_eq!(
            decode(&compile, &args).ok(),
            Some(Role::HostCompile(rustc(&["--crate-name", "app"]), pass))
        );
        let link = [(env::HOST_METADATA_DIR, "/t/m"), (env::HOST_LINK, "a.o\x1f\x1f-lomp")];
        let Ok(Role::HostLink(_, _, run)) = decode(&link, &args) else { panic!("no link run") };
        assert_eq!(run, LinkRun { link_args: strings(&["a.o", "-lomp"]), one_run: false });
        let one = [
            (env::HOST_METADATA_DIR, "/t/m"),
            (env::HOST_LINK, ""),
            (env::HOST_COMPILE_AND_LINK, "1"),
        ];
        let Ok(Role::HostLink(_, _, run)) = decode(&one, &args) else { panic!("no one run") };
        assert_eq!(run, LinkRun { link_args: Vec::new(), one_run: true });
        // A wrapper's variables come before the arguments, and it needs a rustc.
        let cc = decode(&compile, &["cargo-offload", "--cc"]);
        assert!(matches!(cc, Ok(Role::HostCompile(Rustc { program, .. }, _)) if program == "--cc"));
        let Err(Failure(message, 2)) = decode(&compile, &["cargo-offload"]) else {
            panic!("a wrapper without a rustc accepted")
        };
        assert_eq!(message, "run as RUSTC_WRAPPER without a rustc to run");
    }

    #[test]
    fn the_device_wrapper_takes_its_targets_flags_and_program() {
        let args = ["cargo-offload", "rustc", "--target", "nvptx64-nvidia-cuda"];
        let vars = [(env::DEVICE_TARGET_FLAGS, "t\x1f-Cx"), (env::DEVICE_PROGRAM, "app")];
        let pass = DevicePass {
            target_flags: "t\x1f-Cx".into(),
            program: Some("app".into()),
            failures: None,
        };
        let expected = Role::Device(rustc(&["--target", "nvptx64-nvidia-cuda"]), pass);
        assert_eq!(decode(&vars, &args).ok(), Some(expected));
        // The host wrapper's variable wins over the device's.
        let both = [(env::DEVICE_TARGET_FLAGS, ""), (env::HOST_METADATA_DIR, "/t/m")];
        assert!(matches!(decode(&both, &args), Ok(Role::HostCompile(..))));
    }
}
