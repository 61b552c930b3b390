//! `[JOB]`: the bundled offload example through the base pipeline and through ours.
//!
//! 1. Base device pass: `src/offload-example/lib.rs` for `amdgcn-amd-amdhsa` with bare
//!    `-Zoffload=Device`, `core` from the stage-1 sysroot (built from the upstream source by
//!    `./x.py build`), one codegen unit (each unit's `optimize` writes `host.out` into the same
//!    folder, so with several units the last one written wins). Writes `host.out`, the offload
//!    image (an LLVM OffloadBinary that wraps the device bitcode).
//!    Ours: first the host metadata pass (`-Zoffload=HostMetadata=<manifest>`, host target),
//!    then `-Zoffload=Device=<manifest>`, with another `-C metadata` than the host passes.
//! 2. Host pass: the same file for the host with `-Zoffload=Host=<absolute path of host.out>`
//!    and `-Clto=fat` (the base compiler requires fat LTO for `offload`): writes `host.o`, the
//!    host object with the image embedded.
//! 3. Report, read from the image itself (`llvm-offload-binary` extracts the bitcode,
//!    `llvm-dis` prints it): its kernels (`amdgpu_kernel` definitions), the number of functions
//!    it defines, its size, and the host object's path.
//! 4. The vendor check: the image's bitcode through the device target's vendor steps
//!    (`offload_targets`: `llc -mcpu=gfx90a` for code object v5 and
//!    `ld.lld -shared --no-undefined`), as a code object the AMDGPU runtime loads. The
//!    manifest pipeline's image must pass (the job fails otherwise); the base pipeline's result
//!    is reported beside it (its image is one crate's bitcode, which leaves `core`'s
//!    non-inlinable functions undefined).

use std::fs;
use std::path::{Path, PathBuf};

use offload_targets::{DeviceTarget, KernelSymbols, Role};

use crate::cache::Cache;
use crate::sysroot::Enter;
use crate::ui::{Context, Result, Timer, fail, say};

const STEP: &str = "JOB";

/// The device target of the main job (AMD GPUs) and its GPU (the table's default, gfx90a).
const DEVICE: &DeviceTarget = &offload_targets::AMDGCN;
pub const DEVICE_TARGET: &str = DEVICE.triple;
pub const DEVICE_CPU: &str = DEVICE.default_arch;

/// What the device image holds.
#[derive(Debug)]
pub struct ImageReport {
    pub image: PathBuf,
    pub image_bytes: u64,
    pub kernels: Vec<String>,
    pub defined_functions: usize,
}

fn run_in(
    cache: &Cache,
    cwd: &Path,
    program: impl Into<std::ffi::OsString>,
    args: &[String],
) -> Result<String> {
    let out = Enter::new(cache, cwd, program)
        .args(args.iter().cloned())
        .bind(crate::project::project_root())
        .output(cache, STEP)?;
    if !out.status.success() {
        let mut text = out.stdout.clone();
        text.extend_from_slice(&out.stderr);
        return fail(
            STEP,
            format!(
                "`{}` failed ({}):\n{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&text)
            ),
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Reads `image` (an offload image written by a device pass): extracts its bitcode and lists
/// what it defines.
pub fn inspect_image(cache: &Cache, image: &Path) -> Result<ImageReport> {
    inspect_image_for(cache, image, DEVICE_TARGET)
}

/// [`inspect_image`] for the image of `target`.
pub fn inspect_image_for(cache: &Cache, image: &Path, target: &str) -> Result<ImageReport> {
    let dir = image.parent().unwrap().to_path_buf();
    let image_bytes = fs::metadata(image)
        .context(STEP, || format!("no device image at {}", image.display()))?
        .len();
    // Extracted into the cache, never beside the user's image.
    let scratch = cache.job().join("inspect");
    fs::create_dir_all(&scratch).creating(STEP, &scratch)?;
    let bc = scratch.join("image-device.bc");
    let _ = fs::remove_file(&bc);
    run_in(
        cache,
        &dir,
        "llvm-offload-binary",
        &[image.display().to_string(), format!("--image=file={},triple={target}", bc.display())],
    )?;
    if !bc.exists() {
        return fail(STEP, format!("{} holds no {target} image", image.display()));
    }
    let ir = run_in(cache, &dir, "llvm-dis", &[bc.display().to_string(), "-o".into(), "-".into()])?;
    let mut kernels = Vec::new();
    let mut defined_functions = 0;
    for line in ir.lines().filter(|l| l.starts_with("define ")) {
        defined_functions += 1;
        if line.contains("amdgpu_kernel") || line.contains("ptx_kernel") {
            if let Some(at) = line.find(" @") {
                let name: String = line[at + 2..].chars().take_while(|c| *c != '(').collect();
                kernels.push(name.trim_matches('"').to_string());
            }
        }
    }
    kernels.sort();
    Ok(ImageReport { image: image.to_path_buf(), image_bytes, kernels, defined_functions })
}

/// Which device pass a pipeline runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pipeline {
    /// Upstream's: bare `-Zoffload=Device`, every mono root.
    Base,
    /// Ours: `-Zoffload=HostMetadata=<manifest>`, then `-Zoffload=Device=<manifest>`.
    Manifest,
}

/// What one pipeline produced.
#[derive(Debug)]
pub struct PipelineReport {
    pub manifest: Option<PathBuf>,
    pub image: ImageReport,
    pub host_object: PathBuf,
    /// The vendor check: `Ok` with the code object's kernels (`<name>.kd` symbols), or what
    /// `llc` or `ld.lld --no-undefined` reported.
    pub vendor_check: std::result::Result<Vec<String>, String>,
}

/// Links the amdgcn bitcode `bc` as the AMDGPU runtime would load it, by the [`DEVICE`]'s
/// vendor steps (`offload_targets`): `llc -mcpu=gfx90a` (code object v5) to an object, then
/// `ld.lld -shared --no-undefined`. Returns the code object's kernels (its `.kd` kernel
/// descriptors), or the tools' complaint (an undefined symbol, say).
fn vendor_check_amdgcn(
    cache: &Cache,
    bc: &Path,
) -> Result<std::result::Result<Vec<String>, String>> {
    let dir = bc.parent().unwrap();
    let file = |role: Role| {
        match role {
            Role::Input => bc.to_path_buf(),
            Role::Assembly => bc.with_extension("s"),
            Role::Object => bc.with_extension("o"),
            Role::Loadable => bc.with_extension("so"),
        }
        .display()
        .to_string()
    };
    // The AMD steps are LLVM's only (`llc`, `ld.lld`), on the sysroot's `PATH`.
    for step in DEVICE.vendor_steps {
        let args = step.args_for(DEVICE_CPU, None, &file);
        if let Err(failure) = run_in(cache, dir, step.program, &args) {
            return Ok(Err(failure.message().to_string()));
        }
    }
    let so = bc.with_extension("so");
    let symbols = run_in(cache, dir, "llvm-nm", &[so.display().to_string()])?;
    let mut kernels: Vec<String> = symbols
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter_map(|name| name.strip_suffix(".kd"))
        .map(str::to_string)
        .collect();
    kernels.sort();
    Ok(Ok(kernels))
}

/// `./x.py image PATH`: what the offload image at `path` holds, for whichever GPU target it
/// was built.
pub fn print_image(cache: &Cache, path: &Path) -> Result<()> {
    if !path.is_file() {
        return fail(STEP, format!("no device image at {}", path.display()));
    }
    // `llvm-offload-binary` lists nothing without `--image`: each GPU target is tried in turn,
    // and the one whose bitcode the image holds is reported.
    for target in offload_targets::gpu_targets().map(|t| t.triple) {
        let Ok(report) = inspect_image_for(cache, path, target) else { continue };
        say(
            STEP,
            format!("image {} ({} bytes), {target}", report.image.display(), report.image_bytes),
        );
        say(STEP, format!("functions defined: {}", report.defined_functions));
        say(STEP, format!("kernels: {}", report.kernels.join(", ")));
        return Ok(());
    }
    let targets: Vec<&str> = offload_targets::gpu_targets().map(|t| t.triple).collect();
    fail(STEP, format!("{} holds no image for {}", path.display(), targets.join(" or ")))
}

/// Compiles the example through `pipeline`.
pub fn run_pipeline(project: &Path, cache: &Cache, pipeline: Pipeline) -> Result<PipelineReport> {
    let source = project.join("src/offload-example/lib.rs");
    let rustc = cache.stage1_rustc().display().to_string();
    let out = cache.job().join(match pipeline {
        Pipeline::Base => "base",
        Pipeline::Manifest => "manifest",
    });
    let (device, host) = (out.join("device"), out.join("host"));
    for dir in [&device, &host] {
        let _ = fs::remove_dir_all(dir);
        fs::create_dir_all(dir).creating(STEP, dir)?;
    }
    let common = |dir: &Path| -> Vec<String> {
        vec![
            source.display().to_string(),
            "--edition=2024".into(),
            "--crate-name=offload_example".into(),
            "--crate-type=lib".into(),
            "-Copt-level=3".into(),
            "-Ccodegen-units=1".into(),
            "-Zunstable-options".into(),
            "--out-dir".into(),
            dir.display().to_string(),
        ]
    };

    let mut manifest = None;
    let device_flag = match pipeline {
        Pipeline::Base => "-Zoffload=Device".to_string(),
        Pipeline::Manifest => {
            let path = out.join("offload.manifest.json");
            let timer = Timer::start(STEP, "host metadata pass: -Zoffload=HostMetadata=<manifest>");
            let mut args = common(&host);
            // Different `-C metadata` per pass, as cargo gives: identity must not depend on it.
            args.extend([
                format!("-Zoffload=HostMetadata={}", path.display()),
                "-Cmetadata=host".into(),
            ]);
            run_in(cache, &host, &rustc, &args)?;
            timer.done();
            manifest = Some(path.clone());
            format!("-Zoffload=Device={}", path.display())
        }
    };

    let timer =
        Timer::start(STEP, format!("device pass: {DEVICE_TARGET} ({DEVICE_CPU}), {device_flag}"));
    let mut args = common(&device);
    args.push(format!("--target={DEVICE_TARGET}"));
    // `-Ctarget-cpu=gfx90a`.
    args.extend(DEVICE.default_device().pass_flags());
    args.extend([device_flag, "-Cmetadata=device".into(), "--emit=link".into()]);
    run_in(cache, &device, &rustc, &args)?;
    timer.done();
    let image = device.join("host.out");
    let report = inspect_image(cache, &image)?;
    // `inspect_image` left the image's bitcode in the cache's scratch folder.
    let vendor_check = vendor_check_amdgcn(cache, &cache.job().join("inspect/image-device.bc"))?;

    let timer = Timer::start(STEP, "host pass: -Zoffload=Host=<image>, -Clto=fat");
    let mut args = common(&host);
    args.extend([
        format!("-Zoffload=Host={}", image.display()),
        "-Clto=fat".into(),
        "-Cmetadata=host".into(),
        "--emit=link".into(),
    ]);
    run_in(cache, &host, &rustc, &args)?;
    timer.done();
    let host_object = host.join("host.o");
    if !host_object.exists() {
        return fail(STEP, format!("the host pass wrote no {}", host_object.display()));
    }
    Ok(PipelineReport { manifest, image: report, host_object, vendor_check })
}

/// `./x.py job`: builds what is missing, runs the example through both pipelines, reports.
pub fn run(project: &Path, cache: &Cache) -> Result<()> {
    crate::stages::build(project, cache)?;
    let base = run_pipeline(project, cache, Pipeline::Base)?;
    let ours = run_pipeline(project, cache, Pipeline::Manifest)?;
    if let Some(manifest) = &ours.manifest {
        say(STEP, format!("manifest {}:", manifest.display()));
        for line in crate::tools::dump_manifest(project, cache, manifest)?.lines() {
            say(STEP, format!("  {line}"));
        }
    }
    say(STEP, format!("{:<34} {:>10} {:>10}", "device image", "base", "manifest"));
    say(
        STEP,
        format!("{:<34} {:>10} {:>10}", "bytes", base.image.image_bytes, ours.image.image_bytes),
    );
    say(
        STEP,
        format!(
            "{:<34} {:>10} {:>10}",
            "functions defined", base.image.defined_functions, ours.image.defined_functions
        ),
    );
    say(
        STEP,
        format!(
            "{:<34} {:>10} {:>10}",
            "kernels",
            base.image.kernels.len(),
            ours.image.kernels.len()
        ),
    );
    for (name, report) in [("base", &base), ("manifest", &ours)] {
        say(STEP, format!("{name}: kernels in the image: {}", report.image.kernels.join(", ")));
        say(STEP, format!("{name}: image {}", report.image.image.display()));
        say(STEP, format!("{name}: host object {}", report.host_object.display()));
        match &report.vendor_check {
            Ok(kernels) => say(
                STEP,
                format!(
                    "{name}: llc + ld.lld --no-undefined: linked, kernels {}",
                    kernels.join(", ")
                ),
            ),
            Err(complaint) => {
                let first =
                    complaint.lines().find(|l| l.contains("undefined")).unwrap_or("see above");
                say(
                    STEP,
                    format!("{name}: llc + ld.lld --no-undefined: refused ({})", first.trim()),
                );
            }
        }
    }
    let checked = match &ours.vendor_check {
        Ok(kernels) if *kernels == ours.image.kernels => Ok(()),
        Ok(kernels) => fail(
            STEP,
            format!(
                "the manifest pipeline's code object has the kernels {kernels:?}, the image {:?}",
                ours.image.kernels
            ),
        ),
        Err(complaint) => {
            fail(STEP, format!("the manifest pipeline's image does not link:\n{complaint}"))
        }
    };
    checked?;
    cargo_program(project, cache)
}

/// The archs of the example's Cargo program: both GPUs and the CPU device, which runs it here
/// (every device target's default arch, in the table's order: `gfx90a,sm_90,host`).
fn program_archs() -> String {
    offload_targets::default_archs()
}

/// 5. The example as a Cargo program: `cargo offload build --release` for [`program_archs`]
/// (target folder `job/example-target` in the cache), the images the executable embeds and
/// their kernels (read from the executable: `llvm-objdump --offloading`, `llvm-offload-binary`,
/// then `llvm-nm`), then the program itself, which runs its kernels on the runtime's CPU device
/// (this machine has no GPU) and prints each result beside the host's reference.
pub fn cargo_program(project: &Path, cache: &Cache) -> Result<()> {
    let example = project.join("src/offload-example");
    let target = cache.job().join("example-target");
    crate::tools::install_cargo_offload(project, cache)?;
    let archs = program_archs();
    let timer = Timer::start(STEP, format!("cargo offload build --release --offload-arch={archs}"));
    let out = crate::toolchain::toolchain(cache, &example, "/usr/bin/env")
        .arg(crate::cache::stage0_toolchain().join("bin/cargo"))
        .args(["offload", "build", "--release", &format!("--offload-arch={archs}")])
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", &target)
        .bind(cache.job())
        .output(cache, STEP)?;
    if !out.status.success() {
        return fail(
            STEP,
            format!(
                "cargo offload failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
        );
    }
    timer.done();
    let exe = target.join("offload/host").join(crate::pins::HOST).join("release/offload-example");
    say(STEP, format!("program {}", exe.display()));
    let dump = run_in(
        cache,
        &target,
        "llvm-objdump",
        &["--offloading".into(), exe.display().to_string()],
    )?;
    let field = |block: &str, key: &str| {
        block
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    for block in dump.split("OFFLOADING IMAGE").skip(1) {
        let (arch, triple) = (field(block, "arch"), field(block, "triple"));
        let arch = if arch.is_empty() { "host".to_string() } else { arch };
        let file = target.join(format!("embedded-{arch}.image"));
        let mut spec = format!("--image=file={},triple={triple}", file.display());
        if arch != "host" {
            spec.push_str(&format!(",arch={arch}"));
        }
        run_in(cache, &target, "llvm-offload-binary", &[exe.display().to_string(), spec])?;
        let kernels = embedded_kernels(cache, &target, &file, &triple)?;
        let bytes = fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        say(
            STEP,
            format!("  image {arch} ({triple}), {bytes} bytes, kernels: {}", kernels.join(", ")),
        );
    }
    let timer = Timer::start(
        STEP,
        "run the program on the offload runtime's CPU device (device results vs host reference)",
    );
    let output = run_in(cache, &target, &exe.display().to_string(), &[])?;
    for line in output.lines() {
        say(STEP, format!("  {line}"));
    }
    timer.done();
    Ok(())
}

/// The kernels an image embedded in the executable defines, as its device target names them
/// (`offload_targets::KernelSymbols`): `<kernel>.kd` symbols of an AMD code object, global
/// functions of a cubin, exported `_offload_kernel_` functions of the CPU device's shared
/// object (and any exported function of a 1.95-style kernel).
fn embedded_kernels(cache: &Cache, dir: &Path, image: &Path, triple: &str) -> Result<Vec<String>> {
    let path = image.display().to_string();
    let symbols = offload_targets::by_triple(triple).map(|t| t.kernel_symbols);
    let mut kernels: Vec<String> = if symbols == Some(KernelSymbols::Descriptors) {
        run_in(cache, dir, "llvm-nm", &[path])?
            .lines()
            .filter_map(|l| l.split_whitespace().last()?.strip_suffix(".kd").map(str::to_string))
            .collect()
    } else {
        let symbols = run_in(cache, dir, "llvm-readelf", &["-s".into(), "-W".into(), path])?;
        symbols
            .lines()
            .filter(|l| l.contains(" FUNC ") && l.contains(" GLOBAL ") && !l.contains(" UND "))
            .filter_map(|l| l.split_whitespace().last().map(str::to_string))
            .collect()
    };
    kernels.sort();
    kernels.dedup();
    Ok(kernels)
}
