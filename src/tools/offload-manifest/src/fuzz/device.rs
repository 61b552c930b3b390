//! One mutant through the device pass: [`DevicePass`] compiles it, judges what the compiler did
//! ([`Outcome`]) and, with a [`VendorCheck`], links an accepted image and compares its kernels
//! with the mutant's.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use offload_manifest_format::keys;
use offload_targets::{DeviceTarget, Role};
use serde_json::Value;

use crate::error::{Context, Error, Result};

/// What the device pass did with one mutant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Exit 0 with a non-empty offload image.
    Accepted,
    /// Exit 0 without an image, as a dependency of the crate that the mutant says builds it.
    Dependency,
    /// Exit 1 with diagnostics that name the manifest file.
    Refused,
    /// An internal compiler error or a panic (exit 101, or either in stderr).
    Ice,
    /// Killed by a signal (a stack overflow, an abort).
    Crashed,
    /// Exit 1, but no diagnostic names the manifest.
    RefusedUnnamed,
    /// Exit 0 without an offload image.
    AcceptedWithoutImage,
    /// Still running after the time limit.
    Hung,
    /// Accepted, but a vendor tool refused the image (something undefined, say).
    ImageRefused,
    /// Accepted, but the linked image's kernels are not the mutant's `symbol`s.
    WrongKernels,
}

impl Outcome {
    /// Whether the compiler may not do this with any manifest.
    pub(super) fn is_defect(self) -> bool {
        !matches!(self, Outcome::Accepted | Outcome::Dependency | Outcome::Refused)
    }
}

/// How the kernels of an accepted mutant's image compare with the seed's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KernelChange {
    /// The seed's kernels, all of them.
    Same,
    /// Some of the seed's kernels, no others.
    Fewer,
    /// Kernels of other names (and maybe some of the seed's).
    Renamed,
}

/// The device target of the images that [`VendorCheck`] links: the device pass that
/// `./x.py fuzz` runs (`amdgcn-amd-amdhsa`, for gfx90a).
const TARGET: &DeviceTarget = &offload_targets::AMDGCN;

/// The tools that check an accepted image, from one LLVM `bin` folder. For
/// `amdgcn-amd-amdhsa` images only ([`TARGET`]), linked for its default arch (gfx90a): the
/// device pass that `./x.py fuzz` runs.
pub struct VendorCheck {
    /// The folder of `llvm-offload-binary`, `llc`, `ld.lld` and `llvm-nm`.
    pub llvm_bin: PathBuf,
}

impl VendorCheck {
    /// Links the `amdgcn-amd-amdhsa` image `host.out` of `dir` as the runtime would load it
    /// (the target's vendor steps, `offload_targets`) and returns its kernels (the `.kd`
    /// symbols, without the suffix); an [`Error`] that names the tool which could not run or
    /// refused the image, with its output.
    pub fn kernels(&self, dir: &Path) -> Result<BTreeSet<String>> {
        let run = |tool: &str, args: &[&str]| -> Result<String> {
            let out = Command::new(self.llvm_bin.join(tool))
                .args(args)
                .current_dir(dir)
                .output()
                .context(format_args!("cannot run {tool}"))?;
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() {
                Ok(stdout)
            } else {
                Err(Error::new(format!(
                    "{tool} refused the image: {stdout}{}",
                    String::from_utf8_lossy(&out.stderr)
                )))
            }
        };
        for file in ["image.bc", "image.o", "image.so"] {
            let _ = std::fs::remove_file(dir.join(file));
        }
        let extract = format!("--image=file=image.bc,triple={}", TARGET.triple);
        run("llvm-offload-binary", &["host.out", &extract])?;
        let file = |role: Role| {
            match role {
                Role::Input => "image.bc",
                Role::Assembly => "image.s",
                Role::Object => "image.o",
                Role::Loadable => "image.so",
            }
            .to_string()
        };
        // The AMD steps are LLVM's only (`llc`, `ld.lld`), all in `llvm_bin`.
        for step in TARGET.vendor_steps {
            let args = step.args_for(TARGET.default_arch, None, &file);
            run(step.program, &args.iter().map(String::as_str).collect::<Vec<_>>())?;
        }
        let symbols = run("llvm-nm", &["image.so"])?;
        Ok(symbols
            .lines()
            .filter_map(|l| l.split_whitespace().last()?.strip_suffix(".kd"))
            .map(str::to_string)
            .collect())
    }
}

/// The `symbol`s of the `kernels` entries of manifest `text` (none when it does not parse).
pub(super) fn manifest_symbols(text: &str) -> BTreeSet<String> {
    let Ok(manifest) = serde_json::from_str::<Value>(text) else { return Default::default() };
    let kernels = manifest.get(keys::KERNELS).and_then(Value::as_array);
    kernels
        .into_iter()
        .flatten()
        .filter_map(|k| k.get(keys::SYMBOL)?.as_str().map(str::to_string))
        .collect()
}

/// How one mutant is compiled: `rustc ARGS -Zoffload=Device=<mutant>` in a directory of its own.
pub struct DevicePass {
    /// The compiler.
    pub rustc: PathBuf,
    /// Its arguments before `-Zoffload=Device=<mutant>`: the small crate and its flags.
    pub args: Vec<String>,
    /// How long one compilation may run before it is killed and counted [`Outcome::Hung`].
    pub limit: Duration,
    /// The name of the compiled crate (the seed manifest's `crate`).
    pub krate: String,
    /// The check of each accepted image, if any.
    pub vendor: Option<VendorCheck>,
}

/// Whether `text` is a manifest that names another crate than `krate` as the one that builds
/// the image and lists `krate` in that crate's graph.
pub(super) fn names_krate_a_dependency(text: &str, krate: &str) -> bool {
    let Ok(manifest) = serde_json::from_str::<Value>(text) else { return false };
    manifest.get(keys::CRATE).and_then(Value::as_str).is_some_and(|root| root != krate)
        && manifest
            .get(keys::CRATE_GRAPH)
            .and_then(Value::as_array)
            .is_some_and(|graph| graph.iter().any(|c| c.as_str() == Some(krate)))
}

/// The mutant's file in its folder: a refusal that does not name it is a defect.
const MUTANT_FILE: &str = "mutant.json";

impl DevicePass {
    /// Runs the device pass on `text` in `dir`; the outcome, the compiler's stderr (with the
    /// vendor tool's complaint after it for [`Outcome::ImageRefused`]) and, for an accepted
    /// mutant whose image was checked, the image's kernels.
    pub fn run(
        &self,
        dir: &Path,
        text: &str,
    ) -> std::io::Result<(Outcome, String, Option<BTreeSet<String>>)> {
        let _ = std::fs::remove_file(dir.join("host.out"));
        std::fs::write(dir.join(MUTANT_FILE), text)?;
        let (status, stderr) = self.compile(dir)?;
        let outcome = self.judge(dir, text, status, &stderr);
        let (Outcome::Accepted, Some(vendor)) = (outcome, &self.vendor) else {
            return Ok((outcome, stderr, None));
        };
        Ok(match vendor.kernels(dir) {
            Err(complaint) => (Outcome::ImageRefused, format!("{stderr}{complaint}"), None),
            Ok(kernels) if kernels != manifest_symbols(text) => {
                let message = format!(
                    "{stderr}the image's kernels {kernels:?} are not the manifest's {:?}",
                    manifest_symbols(text)
                );
                (Outcome::WrongKernels, message, Some(kernels))
            }
            Ok(kernels) => (outcome, stderr, Some(kernels)),
        })
    }

    /// Compiles [`MUTANT_FILE`] in `dir`: the compiler's exit status (`None` when it ran past
    /// [`DevicePass::limit`] and was killed) and its stderr.
    fn compile(&self, dir: &Path) -> std::io::Result<(Option<ExitStatus>, String)> {
        let mut child = Command::new(&self.rustc)
            .args(&self.args)
            .arg(format!("-Zoffload=Device={MUTANT_FILE}"))
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        // Read on a thread of its own: a compiler that fills the pipe would otherwise block
        // and look hung.
        let stderr = child.stderr.take().unwrap();
        let reader =
            std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if start.elapsed() > self.limit {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Ok((status, reader.join().unwrap_or_default()))
    }

    /// What the compiler did with mutant `text` in `dir`, from its exit `status` (`None`: it
    /// was killed at the time limit), its `stderr` and the image it left (or not).
    fn judge(&self, dir: &Path, text: &str, status: Option<ExitStatus>, stderr: &str) -> Outcome {
        match status {
            None => Outcome::Hung,
            Some(_)
                if stderr.contains("internal compiler error") || stderr.contains("panicked") =>
            {
                Outcome::Ice
            }
            Some(status) => match status.code() {
                None => Outcome::Crashed,
                Some(101) => Outcome::Ice,
                Some(0) => {
                    let image =
                        std::fs::metadata(dir.join("host.out")).map(|m| m.len()).unwrap_or(0);
                    if image > 0 {
                        Outcome::Accepted
                    } else if names_krate_a_dependency(text, &self.krate) {
                        Outcome::Dependency
                    } else {
                        Outcome::AcceptedWithoutImage
                    }
                }
                Some(_) if stderr.contains(MUTANT_FILE) => Outcome::Refused,
                Some(_) => Outcome::RefusedUnnamed,
            },
        }
    }
}
