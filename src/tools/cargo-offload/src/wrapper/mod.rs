//! The `RUSTC_WRAPPER` side of `cargo offload`, the way cargo-miri drives rustc: cargo runs
//! `cargo-offload <rustc> <args>` for every rustc it needs. In the host build each crate
//! compiled for the target also writes its own manifest (`-Zoffload=HostMetadata=<manifest>`
//! beside `-Zoffload=Host=<image>`), and a program is linked only once the images exist
//! ([`host`]). In a device pass each crate compiled for a target gets that target's flags, and
//! a program that defines kernels is compiled as an `rlib` ([`device`]). Which of them a
//! wrapper is, and what its pass told it, [`crate::role`] decoded; this module has what both
//! read of rustc's arguments.

pub(crate) mod device;
pub(crate) mod host;

use std::process::{Command, ExitCode};

use crate::util::{Context, Result, exit_code_of};

/// The source file among rustc's `args`: the one argument that ends in `.rs` and is no flag's
/// value.
fn source_file(args: &[String]) -> Option<&str> {
    let mut rest = args.iter();
    let mut source = None;
    while let Some(arg) = rest.next() {
        if VALUE_FLAGS.contains(&arg.as_str()) {
            rest.next();
        } else if !arg.starts_with('-') && arg.ends_with(".rs") {
            source = Some(arg.as_str());
        }
    }
    source
}

/// rustc's flags that take their value as the next argument.
const VALUE_FLAGS: &[&str] = &[
    "--crate-name",
    "--crate-type",
    "--edition",
    "--emit",
    "--out-dir",
    "--target",
    "--extern",
    "--cfg",
    "--check-cfg",
    "--cap-lints",
    "--error-format",
    "--json",
    "--diagnostic-width",
    "--explain",
    "--print",
    "-o",
    "-L",
    "-l",
    "-C",
    "-Z",
    "-A",
    "-W",
    "-D",
    "-F",
];

/// The values of `--crate-type` among `args`.
fn crate_types(args: &[String]) -> Vec<&str> {
    let mut types = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        if arg == "--crate-type" {
            types.extend(args.get(i + 1).into_iter().flat_map(|list| list.split(',')));
        } else if let Some(list) = arg.strip_prefix("--crate-type=") {
            types.extend(list.split(','));
        }
    }
    types
}

/// The value of `flag` among `args`, given as `flag VALUE` or `flag=VALUE`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            args.get(i + 1).map(String::as_str)
        } else {
            a.strip_prefix(flag).and_then(|rest| rest.strip_prefix('='))
        }
    })
}

/// The value of `--crate-name` among `args`.
fn crate_name(args: &[String]) -> Option<&str> {
    flag_value(args, "--crate-name")
}

/// Runs rustc (`rustc`, as cargo named it) as `cmd`; its exit status is the wrapper's
/// ([`exit_code_of`]). Fails if rustc cannot be started.
fn run_rustc(rustc: &str, mut cmd: Command) -> Result<ExitCode> {
    let status = cmd.status().context_run(rustc)?;
    Ok(exit_code_of(rustc, status))
}
