//! The device passes: the archs in batches that share one cargo run ([`Batch`]), each batch's
//! cargo run with the flags of its archs, the vendor tools that make each arch's loadable
//! image, and the registration object of the images, which the host pass links.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime};

use super::freshness::{BUILT, forget_other_arch};
use super::log::{Log, progress};
use super::{Build, CompileRun, cargo_command, current_exe};
use crate::args::Arch;
use crate::env;
use crate::image_crate::{
    DEVICE_CFG, DeviceCore, ImageBuilder, device_core, image_builder, no_device_sysroot_note,
};
use crate::registration::wrap_images;
use crate::util::{Context, Result, copy_if_changed, fail, stop_point};
use crate::vendor::{device_binary, name_kernels, runtime_lib_dir};
use crate::workspace::{manifest_path_args, profile_args, source_args};
use crate::wrapper::device::encode_target_flags;

/// The outcome of one batch's device passes ([`Build::device_pass`]): its lines, and each
/// arch's place in `--offload-arch` with its image (`host.out`) and packaged image.
pub(super) type DevicePass = (Log, Result<Vec<(usize, (PathBuf, PathBuf))>>);

/// What the vendor tools made of one arch's image ([`Build::vendor_image`]): the image
/// (`host.out`) and the packaged image, with the line that reports them (none for a failure,
/// whose error says it).
type VendorMade = (Result<(PathBuf, PathBuf)>, Option<String>);

/// The images of `batches` (each a [`DevicePass`]'s) in the order of `--offload-arch`.
pub(super) fn in_arch_order(
    batches: Vec<Vec<(usize, (PathBuf, PathBuf))>>,
) -> Vec<(PathBuf, PathBuf)> {
    let mut images: Vec<_> = batches.into_iter().flatten().collect();
    images.sort_by_key(|(index, _)| *index);
    images.into_iter().map(|(_, image)| image).collect()
}

/// The batches of archs ([`Build::batches`]) of `archs` (each arch's target and `core`, in the
/// order of `--offload-arch`): the places in `archs` of each batch's archs. An arch joins the
/// first batch of its `core` that has no arch of its target.
pub(super) fn batch_indexes<C: PartialEq>(archs: &[(&str, C)]) -> Vec<Vec<usize>> {
    let mut batches: Vec<Vec<usize>> = Vec::new();
    for (index, (target, core)) in archs.iter().enumerate() {
        let fits = |batch: &&mut Vec<usize>| {
            archs[batch[0]].1 == *core && batch.iter().all(|&i| archs[i].0 != *target)
        };
        match batches.iter_mut().find(fits) {
            Some(batch) => batch.push(index),
            None => batches.push(vec![index]),
        }
    }
    batches
}

/// Archs whose device passes share one cargo run ([`Build::batches`]).
pub(super) struct Batch<'a> {
    /// Each arch's place in `--offload-arch`, and the arch; no two of one target.
    pub(super) archs: Vec<(usize, &'a Arch)>,
    /// Where their `core` comes from.
    pub(super) core: DeviceCore,
    /// The cargo run's target folder.
    pub(super) target_dir: PathBuf,
}

impl<'a> Build<'a> {
    /// The archs of `--offload-arch` in batches whose device passes share one cargo run: archs
    /// of distinct targets with the same `core` ([`device_core`]). One cargo run for all
    /// targets compiles the build scripts of the kernel crates' dependencies once, starts
    /// cargo once and runs as many jobs as the machine has CPUs, where one run per arch did
    /// each three times over on the same CPUs (dev `gfx90a,sm_90,host` in the benchmark's
    /// workspace, 2 CPUs: 4.3-5.0 s per pass at once, 3.2 s for the one run). Two archs of one
    /// target (`gfx90a,gfx942`) need two runs, as does a target whose `core` the device sysroot
    /// lacks beside one whose it has. The first batch builds into `<dir>/device`, each other
    /// into `<dir>/device-<its first arch>`, so that the usual single batch finds its folder
    /// warm whichever archs are asked for. Fails if an arch has no `core`.
    pub(super) fn batches(&self) -> Result<Vec<Batch<'_>>> {
        let cores = self
            .archs
            .iter()
            .map(|arch| device_core(arch, self.inv.build_std))
            .collect::<Result<Vec<_>>>()?;
        let keys: Vec<(&str, &DeviceCore)> =
            self.archs.iter().map(|a| a.target.as_str()).zip(&cores).collect();
        let batches = batch_indexes(&keys).into_iter().enumerate().map(|(n, indexes)| {
            let first = &self.archs[indexes[0]];
            let folder = if n == 0 { "device".into() } else { format!("device-{}", first.name) };
            Batch {
                archs: indexes.iter().map(|&i| (i, &self.archs[i])).collect(),
                core: cores[indexes[0]].clone(),
                target_dir: self.folders.dir.join(folder),
            }
        });
        Ok(batches.collect())
    }

    /// The device passes of `builder`, one cargo run per batch of archs ([`Build::batches`]).
    /// The batches share nothing but their inputs (each has its own target folder and image
    /// files), so they run at once. Each batch's lines are kept in its log ([`Log::Buffered`]),
    /// but for a `live` single batch, which prints them as they come ([`Log::Live`]).
    pub(super) fn device_passes(&self, builder: &ImageBuilder, live: bool) -> Vec<DevicePass> {
        let batches = match self.batches() {
            Ok(batches) => batches,
            Err(e) => return vec![(Log::Buffered(Vec::new()), Err(e))],
        };
        if let ([batch], true) = (&batches[..], live) {
            let mut log = Log::Live;
            let result = self.device_pass(batch, builder, &mut log);
            return vec![(log, result)];
        }
        std::thread::scope(|scope| {
            let threads: Vec<_> = batches
                .iter()
                .map(|batch| {
                    scope.spawn(move || {
                        let mut log = Log::Buffered(Vec::new());
                        let result = self.device_pass(batch, builder, &mut log);
                        (log, result)
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().expect("a device pass panicked")).collect()
        })
    }

    /// What builds the images of `compiled`, written ([`image_builder`]), with whether a file
    /// of it changed; none when no kernel is launched. Unless that is the image crate, the
    /// image crate's manifest is removed, so that the next build does not build the images of
    /// its launches first ([`Build::last_image_crate`]).
    pub(super) fn image_builder(
        &self,
        compiled: &CompileRun,
    ) -> Result<Option<(ImageBuilder, bool)>> {
        let CompileRun { manifest, features, roots, kernels } = compiled;
        let builder = if *kernels == 0 {
            eprintln!("[cargo offload] no kernel launches: the program gets no device image");
            None
        } else {
            Some(image_builder(&self.folders.dir, &self.ws, manifest, features, &roots.manifests)?)
        };
        if !matches!(builder, Some((ImageBuilder::ImageCrate(_), _))) {
            let _ = fs::remove_file(
                ImageBuilder::ImageCrate(self.folders.dir.join("image")).manifest(),
            );
        }
        Ok(builder)
    }

    /// The device passes of `builder`, their lines printed batch by batch, and the
    /// registration of their images; the first failure in the order of the batches is the
    /// error. Returns the link arguments of the host pass's link run.
    pub(super) fn images(&self, builder: &ImageBuilder) -> Result<Vec<String>> {
        let mut results = Vec::new();
        for (log, result) in self.device_passes(builder, true) {
            log.flush();
            results.push(result);
        }
        let packaged = results.into_iter().collect::<Result<Vec<_>>>()?;
        self.register(&in_arch_order(packaged))
    }

    /// The rustc flags of `arch`'s device pass of `builder`, whose `core` is `core`: those
    /// that every target of its cargo run shares ([`Build::shared_device_flags`]), then the
    /// arch's own ([`Arch::pass_flags`]).
    pub(super) fn device_flags(
        &self,
        arch: &Arch,
        builder: &ImageBuilder,
        core: &DeviceCore,
    ) -> Vec<String> {
        let mut flags = self.shared_device_flags(builder, core);
        flags.extend(arch.pass_flags());
        flags
    }

    /// The rustc flags that the device passes of `builder` with `core` share, whatever the
    /// arch. Cargo hashes them into each crate's fingerprint (`CARGO_ENCODED_RUSTFLAGS`).
    pub(super) fn shared_device_flags(
        &self,
        builder: &ImageBuilder,
        core: &DeviceCore,
    ) -> Vec<String> {
        let mut flags = vec!["-Zunstable-options".to_string()];
        flags.push(format!("-Zoffload=Device={}", builder.manifest().display()));
        flags.push(format!("--cfg={DEVICE_CFG}"));
        // A crate may test the cfg without a warning.
        flags.push(format!("--check-cfg=cfg({DEVICE_CFG})"));
        if let DeviceCore::Toolchain(sysroot) = core {
            flags.push("--sysroot".to_string());
            flags.push(sysroot.display().to_string());
        }
        if let ImageBuilder::Program { .. } = builder {
            // The program's own profile, whose panic strategy may be `unwind`: the image
            // has no unwinder, and the device's `core` aborts.
            flags.push("-Cpanic=abort".to_string());
        }
        flags
    }

    /// The cargo command of `batch`'s device passes of `builder`, once each arch's outputs of
    /// another arch or image are forgotten ([`forget_other_arch`],
    /// [`Build::forget_other_image`]). Returns it with each arch's progress line (its head),
    /// the profile folder and the folder under it where the image goes
    /// ([`Build::device_cargo`]).
    fn batch_cargo(
        &self,
        batch: &Batch<'_>,
        builder: &ImageBuilder,
        log: &mut Log,
    ) -> Result<(Command, Vec<String>, String, &'static str)> {
        let core = &batch.core;
        let target_dir = &batch.target_dir;
        let (mut build, profile, output_folder) = self.device_cargo(builder)?;
        let mut target_flags = Vec::new();
        let mut heads = Vec::new();
        for (_, arch) in &batch.archs {
            if *core == DeviceCore::BuildStd && !self.inv.build_std {
                log.line(&no_device_sysroot_note(arch));
            }
            let deps = target_dir.join(&arch.target).join(&profile).join(output_folder);
            forget_other_arch(target_dir, arch)?;
            self.forget_other_image(
                builder,
                arch,
                target_dir,
                &deps,
                &self.device_flags(arch, builder, core),
            )?;
            build.args(["--target", &arch.target]);
            target_flags.push((arch.target.as_str(), arch.pass_flags()));
            heads.push(format!("device pass {} ({}, {})", arch.name, arch.target, core.describe()));
        }
        build
            .args(if *core == DeviceCore::BuildStd { &["-Zbuild-std=core"][..] } else { &[] })
            // A crate that fails for one target does not stop the others: each arch's errors
            // are shown, as when each arch had a run of its own.
            .arg("--keep-going")
            .arg("--target-dir")
            .arg(target_dir)
            // The image and the records beside it are looked for under the target folder, which
            // a user's `build.build-dir` would otherwise move the crates' outputs out of.
            .env("CARGO_BUILD_BUILD_DIR", target_dir)
            // An incremental build that reuses its one codegen unit skips the optimization in
            // which rustc writes the image, leaving `host.out` missing or another build's.
            .env("CARGO_INCREMENTAL", "0")
            .env("CARGO_ENCODED_RUSTFLAGS", self.shared_device_flags(builder, core).join("\x1f"))
            .env("RUSTC_WRAPPER", current_exe()?)
            .env(env::DEVICE_TARGET_FLAGS, encode_target_flags(&target_flags));
        Ok((build, heads, profile, output_folder))
    }

    /// The device passes of `batch`: one cargo run builds the image builder for each arch's
    /// target, then the vendor tools make each arch's image, the archs at once. Returns each
    /// arch's place in `--offload-arch` with its image (`host.out`) and packaged image.
    pub(super) fn device_pass(
        &self,
        batch: &Batch<'_>,
        builder: &ImageBuilder,
        log: &mut Log,
    ) -> Result<Vec<(usize, (PathBuf, PathBuf))>> {
        stop_point("device-passes");
        let target_dir = &batch.target_dir;
        let (mut build, heads, profile, output_folder) = self.batch_cargo(batch, builder, log)?;
        let what = match &heads[..] {
            [one] => one.clone(),
            _ => {
                for head in &heads {
                    log.line(head);
                }
                let names: Vec<&str> = batch.archs.iter().map(|(_, a)| a.name.as_str()).collect();
                format!("device passes {} (one cargo run)", names.join(", "))
            }
        };
        let failures = target_dir.join("offload-failed-targets");
        let _ = fs::remove_file(&failures);
        build.env(env::DEVICE_FAILURES, &failures);
        // The archs whose targets had a compilation fail, or the whole run if none is known.
        let failed = || {
            let targets = fs::read_to_string(&failures).unwrap_or_default();
            let failed: Vec<&str> = (batch.archs.iter().zip(&heads))
                .filter(|((_, arch), _)| targets.lines().any(|t| t == arch.target))
                .map(|(_, head)| head.as_str())
                .collect();
            if failed.is_empty() { what.clone() } else { failed.join(" and ") }
        };
        let began = SystemTime::now();
        log.cargo_pass(&what, build, failed)?;
        let folders =
            |arch: &Arch| target_dir.join(&arch.target).join(&profile).join(output_folder);
        let made = self.vendor_images(batch, builder, &folders, profile != "debug", began)?;
        // Every arch's line first: one arch's failure does not hide what the others made.
        for (_, line) in &made {
            if let Some(line) = line {
                log.line(line);
            }
        }
        let images = batch
            .archs
            .iter()
            .zip(made)
            .map(|((index, _), (result, _))| result.map(|image| (*index, image)));
        images.collect()
    }

    /// The vendor tools of `batch`'s archs at once (each runs one process at a time), on the
    /// images that `builder`'s device passes, which began at `began`, wrote into each arch's
    /// output folder (`folders`); [`Build::vendor_image`] for each arch, in the batch's order.
    /// A refusal names each kernel by its Rust path beside its symbol ([`name_kernels`], from
    /// `builder`'s manifest). Fails only if this profile's images folder cannot be made.
    pub(super) fn vendor_images(
        &self,
        batch: &Batch<'_>,
        builder: &ImageBuilder,
        folders: &(dyn Fn(&Arch) -> PathBuf + Sync),
        release: bool,
        began: SystemTime,
    ) -> Result<Vec<VendorMade>> {
        let kernels: Vec<(String, String)> = offload_manifest_format::read(builder.manifest())
            .map(|m| m.kernels.into_iter().map(|k| (k.symbol, k.kernel)).collect())
            .unwrap_or_default();
        let kernels = &kernels;
        let profile_images = self.folders.profile_images();
        fs::create_dir_all(&profile_images).context_create(&profile_images)?;
        Ok(std::thread::scope(|scope| {
            let threads: Vec<_> = batch
                .archs
                .iter()
                .map(|(_, arch)| {
                    let deps = folders(arch);
                    scope.spawn(move || {
                        let (made, line) = self.vendor_image(arch, &deps, release, began);
                        (made.map_err(|failure| name_kernels(failure, kernels)), line)
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().expect("a vendor step panicked")).collect()
        }))
    }

    /// The image of `arch` from its device pass's output folder `deps`, made by the vendor
    /// tools (optimizing as for `release`, [`device_binary`]); the pass began at `began`,
    /// recorded in its [`BUILT`] file. Returns the image (`host.out`) and the packaged image,
    /// with the line that reports it (none for a failure: its error says it).
    pub(super) fn vendor_image(
        &self,
        arch: &Arch,
        deps: &Path,
        release: bool,
        began: SystemTime,
    ) -> VendorMade {
        stop_point("vendor");
        let start = Instant::now();
        let image = deps.join("host.out");
        let made = (|| {
            if !image.is_file() {
                return fail(format!(
                    "the device pass for `{}` wrote no image ({} is missing)",
                    arch.name,
                    image.display()
                ));
            }
            // The image is as its pass wrote it: [`Build::forget_other_image`] checked the one
            // that the pass found fresh.
            crate::seal::seal(&image)?;
            let (binary, summary) = device_binary(
                &self.folders.profile_images(),
                &self.folders.images,
                arch,
                &image,
                release,
            )?;
            let built = deps.parent().unwrap_or(deps).join(BUILT);
            fs::File::create(&built).and_then(|f| f.set_modified(began)).context_write(&built)?;
            Ok((binary, summary))
        })();
        match made {
            Ok((binary, summary)) => {
                let line = format!(
                    "image {}: {summary} ({:.1} s)",
                    arch.name,
                    start.elapsed().as_secs_f64()
                );
                (Ok((image, binary)), Some(line))
            }
            Err(e) => (Err(e), None),
        }
    }

    /// The cargo command of a device pass that builds `builder`, without the target, its
    /// folder and the flags ([`Build::device_flags`]): the image crate with cargo's built-in
    /// profiles, or the program with the user's profile and features, named to the wrapper
    /// ([`env::DEVICE_PROGRAM`]). Returns it with the profile folder and the folder under it
    /// where the image goes.
    pub(super) fn device_cargo(
        &self,
        builder: &ImageBuilder,
    ) -> Result<(Command, String, &'static str)> {
        Ok(match builder {
            ImageBuilder::ImageCrate(image_crate) => {
                // The image crate has cargo's two built-in profiles: a custom profile of the
                // user's workspace (`--profile NAME`) gets the optimized one.
                let profile = if self.folders.profile == "debug" { "debug" } else { "release" };
                let mut build = cargo_command(&self.cargo, "build");
                build
                    .arg("--manifest-path")
                    .arg(image_crate.join("Cargo.toml"))
                    .args(source_args(&self.inv.cargo_args))
                    .args(if profile == "release" { &["--release"][..] } else { &[] });
                (build, profile.to_string(), "deps")
            }
            ImageBuilder::Program { krate, program, features, .. } => {
                let mut build = cargo_command(&self.cargo, "build");
                build
                    .args(manifest_path_args(&self.inv.cargo_args))
                    .args(["-p", &program.package])
                    .args(&program.selector)
                    .args(profile_args(&self.inv.cargo_args))
                    .args(source_args(&self.inv.cargo_args))
                    .arg("--no-default-features");
                if !features.is_empty() {
                    let list: Vec<&str> = features.iter().map(String::as_str).collect();
                    build.args(["--features", &list.join(",")]);
                }
                // `cargo-offload` is every device pass's `RUSTC_WRAPPER` ([`Build::device_pass`]).
                build.env(env::DEVICE_PROGRAM, krate);
                (build, self.folders.profile.clone(), program.output_folder())
            }
        })
    }

    /// The registration object of the `packaged` images, and the image the host pass names.
    /// Returns the link arguments of the host pass's link run.
    pub(super) fn register(&self, packaged: &[(PathBuf, PathBuf)]) -> Result<Vec<String>> {
        stop_point("registration");
        self.forget_unpublished();
        let start = Instant::now();
        let registration = self.folders.registration();
        wrap_images(&self.folders.profile_images(), &self.host, packaged, &registration)?;
        let images = if packaged.len() == 1 { "" } else { "s" };
        progress(
            &format!(
                "registration of {} image{images}: {}",
                packaged.len(),
                registration.display()
            ),
            start,
        );
        // The host pass names an image (`host.out`), which it does not read; the first arch's.
        copy_if_changed(&packaged[0].0, &self.folders.images.join("host.out"))?;
        let rt = runtime_lib_dir().display().to_string();
        // The registration calls `atexit`, which glibc keeps in its static part
        // (`libc_nonshared.a`, named by the `libc.so` linker script): rustc names `-lc` before
        // the link arguments, so the object needs its own `-lc` after it.
        // `--allow-shlib-undefined`: without it GNU ld reads every library that `libomptarget`
        // needs (`libLLVM`, with its whole symbol table) to check that library's own undefined
        // symbols, which doubled the link of a small debug program (0.85 s against 0.39 s,
        // `-Clinker` timing script, 2 CPUs). The program's own undefined symbols stay errors;
        // the loader resolves the runtime's when the program starts.
        Ok(vec![
            registration.display().to_string(),
            format!("-L{rt}"),
            "-lomptarget".to_string(),
            "-lomp".to_string(),
            format!("-Wl,-rpath,{rt}"),
            "-Wl,--allow-shlib-undefined".to_string(),
            "-lc".to_string(),
        ])
    }

    /// Removes from `<dir>/images` what is not this build's: the loadable images and PTX of
    /// archs that it does not build, and the files that builds before each profile had its own
    /// folder made there (the vendor tools' outputs and records, the registration). What is
    /// left there is the last build's, as the docs say.
    pub(super) fn forget_unpublished(&self) {
        let ours: BTreeSet<&str> = self.archs.iter().map(|a| a.name.as_str()).collect();
        for entry in fs::read_dir(&self.folders.images).into_iter().flatten().flatten() {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            let (Some(stem), Some(ext)) = (path.file_stem(), path.extension()) else { continue };
            let (stem, ext) = (stem.to_string_lossy(), ext.to_string_lossy());
            let published = matches!(&*ext, "so" | "cubin" | "ptx");
            let earlier_layout = stem.starts_with("offload-registration")
                || matches!(&*ext, "vendor-record" | "offload" | "bc" | "o");
            if (published && !ours.contains(&*stem)) || earlier_layout {
                let _ = fs::remove_file(&path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archs_of_distinct_targets_and_one_core_share_a_batch() {
        let (amd, nv, cpu) =
            ("amdgcn-amd-amdhsa", "nvptx64-nvidia-cuda", "x86_64-unknown-linux-gnu");
        // `gfx90a,sm_90,host`: one cargo run.
        assert_eq!(batch_indexes(&[(amd, 0), (nv, 0), (cpu, 0)]), [vec![0, 1, 2]]);
        // `gfx90a,gfx942,sm_90`: the second amdgcn arch needs a run of its own.
        assert_eq!(batch_indexes(&[(amd, 0), (amd, 0), (nv, 0)]), [vec![0, 2], vec![1]]);
        // `core` from the sysroot beside `core` built from source: two runs.
        assert_eq!(batch_indexes(&[(amd, 0), (nv, 1), (cpu, 0)]), [vec![0, 2], vec![1]]);
    }

    #[test]
    fn images_come_back_in_the_order_of_the_archs() {
        let image = |name: &str| (PathBuf::from(name), PathBuf::from(format!("{name}.offload")));
        let batches = vec![vec![(0, image("a")), (2, image("c"))], vec![(1, image("b"))]];
        assert_eq!(in_arch_order(batches), [image("a"), image("b"), image("c")]);
    }
}
