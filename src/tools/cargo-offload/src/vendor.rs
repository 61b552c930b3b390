//! The vendor tools that turn a device pass's image into what the offload runtime loads: LLVM's
//! (`llc`, `ld.lld`, `llvm-offload-binary`, from `CARGO_OFFLOAD_LLVM_BIN`) and NVIDIA's (`ptxas`,
//! `nvlink`, from `CARGO_OFFLOAD_CUDA_BIN`), and the folder of the runtime's libraries.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use offload_targets::{Role, Tools};

use crate::args::Arch;
use crate::env;
use crate::util::{Failure, Result, fail};

/// An LLVM tool: from `CARGO_OFFLOAD_LLVM_BIN` (default `/usr/lib/llvm-22/bin`) where it is
/// there, else by its name on `PATH`.
pub(crate) fn llvm_tool(name: &str) -> PathBuf {
    let dir = std::env::var_os(env::LLVM_BIN)
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/lib/llvm-22/bin".into());
    let path = dir.join(name);
    if path.is_file() { path } else { PathBuf::from(name) }
}

/// An NVIDIA tool (`ptxas`, `nvlink`): from `CARGO_OFFLOAD_CUDA_BIN` where it is set, else by its
/// name on `PATH`.
pub(crate) fn cuda_tool(name: &str) -> PathBuf {
    match std::env::var_os(env::CUDA_BIN) {
        Some(dir) => PathBuf::from(dir).join(name),
        None => PathBuf::from(name),
    }
}

/// The folder of LLVM's offload runtime (`libomptarget`, `libomp`): `CARGO_OFFLOAD_RUNTIME_LIB`,
/// default `/usr/lib/llvm-22/lib`.
pub(crate) fn runtime_lib_dir() -> PathBuf {
    std::env::var_os(env::RUNTIME_LIB)
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/lib/llvm-22/lib".into())
}

/// Runs a tool of the image build; its complaint becomes the error.
pub(crate) fn tool(
    what: &str,
    program: &Path,
    args: &[&dyn AsRef<std::ffi::OsStr>],
) -> Result<String> {
    let mut cmd = Command::new(program);
    for a in args {
        cmd.arg(a);
    }
    let out = cmd
        .output()
        .map_err(|e| Failure::new(format!("{what}: cannot run `{}`: {e}", program.display())))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return fail(format!("{what}: `{}` refused it: {}", program.display(), stderr.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The record of a device binary's build ([`device_binary`]): each tool (the vendor steps, and
/// `llvm-offload-binary`, which unpacks the image and packages the result) with its arguments
/// and modification time (a toolchain installed anew at the same path makes another record),
/// the packaging spec, then the device pass's image, byte for byte (an image is a few MB at
/// most; comparing its bytes leaves no doubt).
fn vendor_record(
    what: &str,
    steps: &[(PathBuf, Vec<String>)],
    spec: &str,
    image: &Path,
) -> Result<Vec<u8>> {
    let mut record = String::new();
    let packager = (llvm_tool("llvm-offload-binary"), Vec::new());
    for (program, args) in steps.iter().chain([&packager]) {
        let modified = fs::metadata(program).and_then(|m| m.modified()).ok();
        record.push_str(&format!("{} {modified:?} {args:?}\n", program.display()));
    }
    record.push_str(spec);
    record.push('\n');
    let mut record = record.into_bytes();
    let bytes = fs::read(image)
        .map_err(|e| Failure::new(format!("{what}: cannot read {}: {e}", image.display())))?;
    record.extend_from_slice(&bytes);
    Ok(record)
}

/// Compiles the device pass's image (`host.out`: the kernels' optimized LLVM bitcode in an
/// offload binary) into what the runtime's plugin loads, and packages that as an offload
/// binary for the registration: an ELF shared object for the CPU device, a code object (ELF
/// shared object, code object v5) for AMD GPUs, an ELF cubin for NVIDIA GPUs. The steps are the
/// device target's vendor steps (`offload_targets`), with `-O2`/`-O3` for `llc`; every image is
/// linked with nothing undefined but, for the CPU device, the C library the program has.
/// The outputs of the last build are kept when its tools, their arguments and its image were the
/// same (recorded in `<dir>/<arch>.vendor-record`). Returns the packaged file and a summary
/// (kind, file, bytes).
pub(crate) fn device_binary(
    dir: &Path,
    arch: &Arch,
    image: &Path,
    release: bool,
) -> Result<(PathBuf, String)> {
    let what = format!("image {}", arch.name);
    let base = dir.join(&arch.name);
    let bc = base.with_extension("bc");
    let opt = if release { "-O3" } else { "-O2" };
    let loadable = base.with_extension(arch.device.loadable_extension);
    let packaged = base.with_extension("offload");
    let file = |role: Role| {
        let path = match role {
            Role::Input => bc.clone(),
            Role::Assembly => base.with_extension("ptx"),
            Role::Object => base.with_extension("o"),
            Role::Loadable => loadable.clone(),
        };
        path.display().to_string()
    };
    let mut steps = Vec::new();
    for step in arch.device.vendor_steps {
        let program = match step.tools {
            Tools::Llvm => llvm_tool(step.program),
            Tools::Cuda => cuda_tool(step.program),
        };
        steps.push((program, step.args_for(&arch.name, Some(opt), &file)));
    }
    let mut spec =
        format!("--image=file={},triple={},kind=openmp", loadable.display(), arch.target);
    if let Some(cpu) = &arch.cpu {
        spec.push_str(&format!(",arch={cpu}"));
    }
    let summary = || {
        let bytes = fs::metadata(&loadable).map(|m| m.len()).unwrap_or(0);
        format!("{} {} ({bytes} bytes)", arch.device.image_kind, loadable.display())
    };

    // The record of what made the packaged image: the tools, their arguments and the device
    // pass's image, byte for byte. A build whose record equals the last one's (a host-only edit,
    // or an arch whose kernels did not change) reuses its outputs; the record is removed before
    // the tools run, so a build that fails leaves none.
    let record = base.with_extension("vendor-record");
    let key = vendor_record(&what, &steps, &spec, image)?;
    if fs::read(&record).is_ok_and(|old| old == key) && loadable.is_file() && packaged.is_file() {
        return Ok((packaged, format!("{} (unchanged)", summary())));
    }
    // Without the record's removal, a build whose tools fail halfway would leave outputs that
    // the old record vouches for.
    match fs::remove_file(&record) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return fail(format!("{what}: cannot remove {}: {e}", record.display()));
        }
        _ => {}
    }

    let bc_arg = format!("--image=file={},triple={}", bc.display(), arch.target);
    tool(&what, &llvm_tool("llvm-offload-binary"), &[&image, &bc_arg])?;
    for (program, args) in &steps {
        let args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            args.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>).collect();
        tool(&what, program, &args)?;
    }
    let out_arg = packaged.display().to_string();
    tool(&what, &llvm_tool("llvm-offload-binary"), &[&"-o", &out_arg, &spec])?;
    fs::write(&record, key)
        .map_err(|e| Failure::new(format!("{what}: cannot write {}: {e}", record.display())))?;
    Ok((packaged, summary()))
}
