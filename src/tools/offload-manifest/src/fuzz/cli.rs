//! The command line of `offload-manifest fuzz`, and the check that the seed itself builds an
//! image before any mutant is judged.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::device::{DevicePass, Outcome, VendorCheck};
use super::runner::{render, run};
use crate::error::{Context, Error, Result};

/// Parses `fuzz` arguments: `--rustc R --work DIR [--seed N] [--first N] [--count N]
/// [--jobs N] [--limit-secs N] [--llvm-bin DIR] -- <rustc arguments of the device pass>`; the
/// seed manifest is `<work>/seed.json`, written beforehand by the host metadata pass. With
/// `--llvm-bin`, every accepted image is checked by [`VendorCheck`].
///
/// Returns whether no mutant was a defect; an error when the arguments are wrong, the seed
/// cannot be read or is refused, or a mutant's files cannot be written.
pub fn main(args: &[String]) -> Result<bool> {
    let mut options: BTreeMap<&str, &str> = BTreeMap::new();
    let mut rest = args.iter();
    let mut rustc_args = Vec::new();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            rustc_args = rest.by_ref().cloned().collect();
            break;
        }
        let Some(name) = arg.strip_prefix("--") else {
            return Err(Error::new(format!("unexpected `{arg}`")));
        };
        let value = rest.next().ok_or_else(|| Error::new(format!("`--{name}` needs a value")))?;
        options.insert(name, value);
    }
    let number = |name: &str, default: u64| -> Result<u64> {
        options.get(name).map_or(Ok(default), |v| v.parse().context(format_args!("--{name}")))
    };
    let required = |name: &str| {
        options
            .get(name)
            .map(PathBuf::from)
            .ok_or_else(|| Error::new(format!("--{name} is required")))
    };
    let rustc = required("rustc")?;
    let work = required("work")?;
    let (seed, first, count) = (number("seed", 1)?, number("first", 0)?, number("count", 200)?);
    let jobs = number("jobs", 2)? as usize;
    let limit = Duration::from_secs(number("limit-secs", 120)?);
    let seed_path = work.join("seed.json");
    let seed_text = std::fs::read_to_string(&seed_path)
        .context(format_args!("cannot read the seed manifest {}", seed_path.display()))?;
    // The seed must be a valid manifest that the library keeps whole (`parse_exact`), so that
    // its JSON tree, which the mutations work on, is the file's tree: no field the compiler
    // writes is left out of the mutants.
    let parsed = offload_manifest_format::parse_exact(seed_text.as_bytes(), &seed_path)
        .context("the seed manifest")?;
    let seed_manifest = serde_json::to_value(&parsed)?;
    let krate = parsed.krate;
    let vendor = options.get("llvm-bin").map(|bin| VendorCheck { llvm_bin: PathBuf::from(bin) });
    let pass = DevicePass { rustc, args: rustc_args, limit, krate, vendor };
    // The unmutated manifest must build an image: otherwise every refusal below proves nothing.
    let baseline = work.join("baseline");
    std::fs::create_dir_all(&baseline)?;
    let (outcome, stderr, kernels) = pass.run(&baseline, &seed_text)?;
    if outcome != Outcome::Accepted {
        return Err(Error::new(format!("the seed manifest itself gives {outcome:?}:\n{stderr}")));
    }
    let seed_kernels = kernels.unwrap_or_default();
    let report = run(&pass, &seed_kernels, &seed_manifest, seed, first, count, jobs, &work)?;
    print!("{}", render(&report, seed, first, count));
    Ok(report.defects.is_empty())
}
