//! Running the cargo passes: [`run`], which drives them in order (the host pass's compile run,
//! which writes the manifests, one device pass per arch, registration, the host pass's link
//! run; or, when the last build's images may stand, the device passes first and one host run
//! that compiles and links) and then runs the programs that `run` and `test` built. Each pass is
//! one cargo command with its own target folder under `<target dir>/offload/`.
//!
//! The passes themselves are in the modules: [`host`] (the host pass's runs), [`device`] (the
//! device passes, the vendor tools and the registration), [`freshness`] (what is built again
//! and why: the compiler's identity, another arch's or image's outputs, the records beside
//! them) and [`log`] (how a pass's cargo messages are read and shown).

mod device;
mod freshness;
mod host;
mod log;

use std::ffi::OsString;
use std::fs;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use serde_json::Value;

use crate::args::{Arch, Invocation, USAGE, Verb, parse_args};
use crate::env;
use crate::heal::{forget_damaged_manifests, remove_leftovers};
use crate::image_crate::ImageBuilder;
use crate::launch::{bundle_folder, run_programs, write_bundle};
use crate::util::{Context, Result};
use crate::workspace::{
    Workspace, check_gpu_archs, host_triple, profile_dir, rustc_version, workspace,
};

use self::device::in_arch_order;
pub(crate) use self::freshness::forget_other_compilers_output;
use self::freshness::{forget_programs_beyond, forget_programs_linked_otherwise};
use self::host::CompileRun;

/// A cargo command for a pass, with the environment of the caller minus what would leak
/// between passes.
fn cargo_command(cargo: &OsString, verb: &str) -> Command {
    let mut cmd = Command::new(cargo);
    cmd.arg(verb)
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        // Only this `cargo offload` writes the plan: a nested one (in a build script or a test)
        // runs its programs itself.
        .env_remove(env::RUN_PLAN)
        // A build script of a pass sees these; a nested `cargo offload` sets its own, and
        // `cargo-offload` takes the role that they name (a wrapper) before any other.
        .env_remove(env::HOST_METADATA_DIR)
        .env_remove(env::DEVICE_TARGET_FLAGS)
        .env_remove(env::DEVICE_PROGRAM)
        .env_remove(env::DEVICE_FAILURES)
        .env_remove(env::HOST_LINK)
        .env_remove(env::HOST_COMPILE_AND_LINK)
        .env_remove(env::USER_RUSTC_WRAPPER);
    cmd
}

/// The path of this `cargo-offload`, which cargo runs as `RUSTC_WRAPPER`.
fn current_exe() -> Result<PathBuf> {
    std::env::current_exe().context(|| "cannot find the cargo-offload program".to_string())
}

/// The role of the cargo subcommand, `cargo offload ARGS` (`args`: those after `offload`):
/// prints the usage for `--help` (before any `--`), else builds what the arguments ask for
/// ([`run`]). Fails for bad usage (exit status 2) and as [`run`] does.
pub(crate) fn subcommand(args: &[String]) -> Result<ExitCode> {
    if args.iter().any(|a| a == "--help" || a == "-h") && !args.iter().any(|a| a == "--") {
        print!("{USAGE}");
        return Ok(ExitCode::SUCCESS);
    }
    run(&parse_args(args)?)
}

/// Builds what `inv` asks for, in one of two orders ([`Build::host_first`] or, when the last
/// build's images may stand, [`Build::images_first`]); `run` and `test` then run the programs.
pub(crate) fn run(inv: &Invocation) -> Result<ExitCode> {
    let mut build = Build::new(inv)?;
    // A bundle's folder is checked before the build, which takes a while.
    let bundle_out = inv.bundle_out.clone().unwrap_or_else(|| build.folders.dir.join("bundle"));
    if inv.verb == Verb::Bundle {
        bundle_folder(&bundle_out)?;
    }
    // The runs share the target folder's files between their steps (the manifests, the
    // `.rlink` files, the images): one `cargo offload` at a time per target folder.
    let _lock = build.lock()?;
    build.heal()?;
    let (compiled, artifacts) = match build.last_image_crate() {
        Some(last) => build.images_first(&last)?,
        None => build.host_first()?,
    };
    let kernels = compiled.kernels;
    let programs = build.products(&artifacts, kernels > 0);
    if inv.verb == Verb::Bundle {
        write_bundle(&bundle_out, &programs)?;
        return Ok(ExitCode::SUCCESS);
    }
    if inv.verb == Verb::Test && build.ws.has_own_library() {
        eprintln!("{DOCTESTS_NOT_RUN}");
    }
    run_programs(inv.verb, &programs, &inv.program_args)
}

/// What `cargo offload test` says where plain `cargo test` would run doctests: it runs the test
/// programs of the host pass alone.
const DOCTESTS_NOT_RUN: &str = "note: [cargo offload] doctests are not run: rustdoc compiles \
    each doctest on its own, without the offload passes, so a doctest that launches a kernel \
    would have no image; `cargo offload test` runs the unit and integration tests";

/// What the passes of one `cargo offload` run share.
struct Build<'a> {
    inv: &'a Invocation,
    /// The cargo that runs every pass (`CARGO`, as cargo sets it for its subcommands).
    cargo: OsString,
    /// The host's target triple.
    host: String,
    archs: Vec<Arch>,
    ws: Workspace,
    folders: Folders,
    /// The user's own rustc wrapper ([`crate::user_wrapper::find`]), for the host pass.
    user_wrapper: Option<PathBuf>,
}

/// Where the passes of one `cargo offload` run keep their files, all under
/// `<target dir>/offload`, and the profile whose images they make.
struct Folders {
    /// `<target dir>/offload`: the target folders of the passes and what they share.
    dir: PathBuf,
    /// The manifests that the host pass writes, one per crate.
    manifests: PathBuf,
    /// `<dir>/images`: the loadable images of the last build, and the image the host pass
    /// names; each profile's images and registration are in a folder of it
    /// ([`Folders::profile_images`]).
    images: PathBuf,
    /// The profile folder (`debug`, `release`, ...) of the user's cargo args.
    profile: String,
}

impl Folders {
    /// Where this profile's images are made, and registered (`<dir>/images/<profile>`): each
    /// profile keeps its own, so that a build of another profile in between does not make the
    /// vendor tools and the link run again (a program of each profile is linked with its own
    /// images). The loadable images of the last build are copied to `<dir>/images`.
    fn profile_images(&self) -> PathBuf {
        self.images.join(&self.profile)
    }

    /// The registration object of this profile's images ([`Folders::profile_images`]).
    fn registration(&self) -> PathBuf {
        self.profile_images().join("offload-registration.o")
    }

    /// Where the host pass's compile run records the programs it compiled.
    fn programs(&self) -> PathBuf {
        self.dir.join("host-programs")
    }
}

impl<'a> Build<'a> {
    /// Reads the toolchain and the workspace, forgets another compiler's output and makes the
    /// manifests' folder.
    fn new(inv: &'a Invocation) -> Result<Build<'a>> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let version = rustc_version()?;
        let host = host_triple(&version)?;
        let archs = inv.archs.iter().map(|a| Arch::parse(a, &host)).collect::<Result<Vec<_>>>()?;
        let ws = workspace(&cargo, &inv.cargo_args)?;
        let user_wrapper = crate::user_wrapper::find(&cargo)?;
        let dir = ws.target_dir.join("offload");
        forget_other_compilers_output(&dir)?;
        fs::create_dir_all(&dir).context_create(&dir)?;
        check_gpu_archs(&archs, &dir, &version)?;
        let manifests = dir.join("manifests");
        let images = dir.join("images");
        let profile = profile_dir(&inv.cargo_args);
        // The profile's own folder of images is made once a cargo pass took the profile's
        // name (which becomes a path there), after the device passes' cargo run.
        for folder in [&manifests, &images] {
            fs::create_dir_all(folder).context_create(folder)?;
        }
        Ok(Build {
            inv,
            cargo,
            host,
            archs,
            ws,
            folders: Folders { dir, manifests, images, profile },
            user_wrapper,
        })
    }

    /// Takes the lock of this target folder's offload build (`<dir>/lock`), waiting while
    /// another `cargo offload` holds it; the lock goes with the returned file.
    fn lock(&self) -> Result<fs::File> {
        let path = self.folders.dir.join("lock");
        let file = fs::File::create(&path).context_create(&path)?;
        if file.try_lock().is_err() {
            eprintln!(
                "[cargo offload] waiting for another cargo offload in {}",
                self.folders.dir.display()
            );
            file.lock().context_lock(&path)?;
        }
        Ok(file)
    }

    /// Removes what killed builds left behind and what a damaged file would make wrong, before
    /// any pass: temporary files ([`remove_leftovers`]), and each crate's manifest that does
    /// not match its seal, with the crate's outputs, so that cargo compiles the crate again
    /// ([`forget_damaged_manifests`]). Every other reused file is checked where it is reused.
    fn heal(&self) -> Result<()> {
        remove_leftovers(&self.folders.dir);
        forget_damaged_manifests(
            &self.folders.manifests,
            &self.folders.dir.join("host").join(&self.host),
        )
    }

    /// The build when no images of an earlier build may stand: 1. the host pass's compile run
    /// (every crate compiled once, writing its manifest, no program linked), 2. the device
    /// passes of the merged manifest and the registration of their images, 3. the link run.
    /// Returns what the compile run found and the link run's artifacts.
    fn host_first(&mut self) -> Result<(CompileRun, Vec<Value>)> {
        let artifacts = self.host_compile(None)?;
        let compiled = self.compile_run(&artifacts)?;
        let link_args = match self.image_builder(&compiled)? {
            Some((builder, _)) => self.images(&builder)?,
            None => Vec::new(),
        };
        forget_programs_linked_otherwise(&compiled.roots.linked_programs, &link_args)?;
        let artifacts = self.host_link(&compiled, &link_args)?;
        Ok((compiled, artifacts))
    }

    /// The build when the last build's images came from the image crate as it is (`last`:
    /// [`Build::last_image_crate`]), as after most edits, which change no launch: 1. the device
    /// passes of `last` (cargo finds them fresh unless a crate of theirs changed) and the
    /// registration of their images, 2. one host run that compiles and links, as plain `cargo
    /// build` does. The images stand if that run left the launches, and so the image crate, as
    /// they were; otherwise (`the image crate changed` is printed) the device passes of the new
    /// image crate run, and a link run links again each program whose images changed (one that
    /// the host run compiled is compiled again: that run left no `.rlink`). If a device pass of
    /// `last` fails, its lines are dropped and the build is [`Build::host_first`]'s: the edit
    /// may be the fix of what failed. Returns what the host run found and the artifacts of the
    /// last host run.
    fn images_first(&mut self, last: &ImageBuilder) -> Result<(CompileRun, Vec<Value>)> {
        let passes = self.device_passes(last, false);
        if passes.iter().any(|(_, result)| result.is_err()) {
            return self.host_first();
        }
        let mut packaged = Vec::new();
        for (log, result) in passes {
            log.flush();
            packaged.extend(result.ok());
        }
        let link_args = self.register(&in_arch_order(packaged))?;
        // The kernels of the images that the host run links with: a build that fails after it
        // must not leave a program behind that launches others.
        let imaged = offload_manifest_format::read(last.manifest())
            .map(|m| m.kernels.into_iter().map(|k| k.symbol).collect())
            .unwrap_or_default();
        self.host_after_images(&link_args).inspect_err(|_| {
            forget_programs_beyond(&self.folders.programs(), &self.folders.manifests, &imaged)
        })
    }

    /// [`Build::images_first`] once the images of the last image crate are registered
    /// (`link_args`): the one host run, then what its launches need.
    fn host_after_images(&mut self, link_args: &[String]) -> Result<(CompileRun, Vec<Value>)> {
        let artifacts = self.host_compile(Some(link_args))?;
        let compiled = self.compile_run(&artifacts)?;
        let linked = &compiled.roots.linked_programs;
        let builder = self.image_builder(&compiled)?;
        if let Some((ImageBuilder::ImageCrate(_), false)) = &builder {
            // The images stand. A program that the run found fresh may have been linked with
            // other images.
            if !forget_programs_linked_otherwise(linked, link_args)? {
                return Ok((compiled, artifacts));
            }
            let artifacts = self.host_link(&compiled, link_args)?;
            return Ok((compiled, artifacts));
        }
        let new_link_args = match &builder {
            Some((builder, _)) => {
                eprintln!(
                    "[cargo offload] the image crate changed (launches, features or locked \
                     versions): the device passes run again"
                );
                self.images(builder)?
            }
            None => Vec::new(),
        };
        forget_programs_linked_otherwise(linked, &new_link_args)?;
        let artifacts = self.host_link(&compiled, &new_link_args)?;
        Ok((compiled, artifacts))
    }
}
