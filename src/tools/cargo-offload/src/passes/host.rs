//! The host pass's runs: the cargo command that both share, the compile run (or the one run
//! that compiles and links), what it found ([`CompileRun`]), the link run, and the programs
//! that came out.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::process::Command;

use offload_manifest_format::Manifest;
use serde_json::Value;

use super::log::cargo_pass;
use super::{Build, cargo_command, current_exe};
use crate::args::Verb;
use crate::env;
use crate::image_crate::resolved_features;
use crate::manifests::{Roots, merge_manifests, root_manifests};
use crate::util::{Context, Result, fail, stop_point};
use crate::vendor::runtime_lib_dir;

/// What the host pass's compile run found.
pub(super) struct CompileRun {
    /// The merged manifest of the root crates.
    pub(super) manifest: Manifest,
    /// Its number of kernel instances.
    pub(super) kernels: usize,
    /// The features that the host build resolved for the workspace's crates
    /// ([`resolved_features`]).
    pub(super) features: BTreeMap<String, BTreeSet<String>>,
    /// The root crates' own manifests, and the program files that exist after the run.
    pub(super) roots: Roots,
}

impl<'a> Build<'a> {
    /// The cargo command of the host pass, both runs: `cargo build`, or `cargo test --no-run`
    /// (`run` and `test` build with cargo and run the programs themselves: cargo would put the
    /// toolchain's library folder on `LD_LIBRARY_PATH`, whose copy of `libomp` the runtime would
    /// then load a second time beside the program's own), with `cargo-offload` as
    /// `RUSTC_WRAPPER` ([`crate::wrapper::host`]). Both runs have the same flags, so
    /// that the second finds fresh what the first compiled. The user's flags reach the host
    /// crates as they reach those of `cargo build --target <host>` (`RUSTFLAGS`, or else
    /// `target.<triple>.rustflags`, or else `build.rustflags` of `.cargo/config.toml`): cargo
    /// picks them, and the wrapper adds the offload flags.
    pub(super) fn host_command(&self) -> Result<Command> {
        let (inv, host) = (self.inv, &self.host);
        let mut cmd =
            cargo_command(&self.cargo, if inv.verb == Verb::Test { "test" } else { "build" });
        cmd.args(&inv.cargo_args)
            .args(if inv.verb == Verb::Test { &["--no-run"][..] } else { &[] })
            .args(["--target", host, "--target-dir"])
            .arg(self.folders.dir.join("host"))
            // The passes' folders are apart only if cargo's build folder (`build.build-dir`)
            // follows the target folder.
            .env("CARGO_BUILD_BUILD_DIR", self.folders.dir.join("host"))
            .env("RUSTC_WRAPPER", current_exe()?)
            .env(env::HOST_METADATA_DIR, &self.folders.manifests)
            .env(env::HOST_IMAGE, self.folders.images.join("host.out"))
            .env(env::HOST_PROGRAMS, self.folders.programs());
        if let Some(wrapper) = &self.user_wrapper {
            cmd.env(env::USER_RUSTC_WRAPPER, wrapper);
        }
        Ok(cmd)
    }

    /// The host pass's first run: with `link_args` (the images are built), the one run, which
    /// compiles and links every program ([`env::HOST_COMPILE_AND_LINK`]); without, the compile
    /// run, which links none. Each crate writes its manifest. Returns cargo's artifact messages
    /// ([`Build::compile_run`] reads them).
    pub(super) fn host_compile(&self, link_args: Option<&[String]>) -> Result<Vec<Value>> {
        stop_point("host-compile");
        let programs = self.folders.programs();
        if programs.exists() {
            fs::remove_dir_all(&programs).context_remove(&programs)?;
        }
        let mut cmd = self.host_command()?;
        let what = match link_args {
            Some(link_args) => {
                cmd.env(env::HOST_LINK, link_args.join("\x1f"))
                    .env(env::HOST_COMPILE_AND_LINK, "1");
                "compile and link"
            }
            None => "compile",
        };
        cargo_pass(&format!("host pass ({}): {what}", self.host), cmd, false)
    }

    /// What the compile run with `artifacts` found: the manifests of the root crates, merged,
    /// and the features it resolved; the path dependencies it built join the workspace.
    pub(super) fn compile_run(&mut self, artifacts: &[Value]) -> Result<CompileRun> {
        let host = &self.host;
        let programs = self.folders.programs();
        let roots = root_manifests(artifacts, &self.ws, host, &self.folders.manifests, &programs)?;
        let manifest = merge_manifests(&roots.manifests)?;
        let kernels = manifest.kernels.len();
        let count = roots.manifests.len();
        eprintln!(
            "[cargo offload] {kernels} kernel instance{} in the manifests of {count} root crate{}",
            if kernels == 1 { "" } else { "s" },
            if count == 1 { "" } else { "s" }
        );
        // The path dependencies outside the workspace may define kernels too.
        self.ws.add_dependencies(artifacts, host);
        let features = resolved_features(artifacts, &self.ws, host);
        Ok(CompileRun { manifest, kernels, features, roots })
    }

    /// The host pass's link run: the same cargo command as the first run, which links the
    /// programs that it finds missing with `link_args` (`-Zlink-only`,
    /// [`crate::wrapper::host`]). Fails if the launches then differ from those of
    /// `compiled`, the first run's, of which the images were built. Returns the run's artifacts.
    pub(super) fn host_link(
        &self,
        compiled: &CompileRun,
        link_args: &[String],
    ) -> Result<Vec<Value>> {
        stop_point("host-link");
        let mut cmd = self.host_command()?;
        cmd.env(env::HOST_LINK, link_args.join("\x1f"));
        let artifacts = cargo_pass(&format!("host pass ({}): link", self.host), cmd, true)?;
        // A file edited while this build ran may have changed the launches after the images
        // were built: the programs are linked, but with images of the earlier launches.
        if merge_manifests(&compiled.roots.manifests)? != compiled.manifest {
            return fail(
                "the sources changed while this build ran: the launches that the host pass \
                 recorded differ from those the device images were built from; build again",
            );
        }
        Ok(artifacts)
    }

    /// The programs among the host pass's `artifacts` (for `test`, the test harnesses, not the
    /// examples that `cargo test` builds beside them), each named on one line; a static library
    /// is named with what to link it with, when there are `images`.
    pub(super) fn products(&self, artifacts: &[Value], images: bool) -> Vec<String> {
        let test = self.inv.verb == Verb::Test;
        let programs: Vec<String> = artifacts
            .iter()
            .filter(|a| !test || a["profile"]["test"].as_bool() == Some(true))
            .filter_map(|a| a["executable"].as_str())
            .map(str::to_string)
            .collect();
        for program in &programs {
            eprintln!("[cargo offload] built {program}");
        }
        // A static library carries no link arguments: whoever links it links the registration.
        for artifact in artifacts {
            let kinds = artifact["target"]["kind"].as_array().into_iter().flatten();
            if kinds.filter_map(Value::as_str).any(|k| k == "staticlib") && images {
                let files = artifact["filenames"].as_array().into_iter().flatten();
                for lib in files.filter_map(Value::as_str).filter(|f| f.ends_with(".a")) {
                    eprintln!(
                        "[cargo offload] built {lib}: link it with {} -L{rt} -lomptarget -lomp \
                         -Wl,-rpath,{rt} -Wl,--allow-shlib-undefined",
                        self.folders.registration().display(),
                        rt = runtime_lib_dir().display()
                    );
                }
            }
        }
        programs
    }
}
