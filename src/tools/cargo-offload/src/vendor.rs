//! The vendor tools that turn a device pass's image into what the offload runtime loads: LLVM's
//! (`llc`, `ld.lld`, `llvm-offload-binary`, from `CARGO_OFFLOAD_LLVM_BIN`) and NVIDIA's (`ptxas`,
//! `nvlink`, from `CARGO_OFFLOAD_CUDA_BIN`), and the folder of the runtime's libraries.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use offload_targets::{Arg, Role, Tools};

use crate::args::Arch;
use crate::env;
use crate::util::{Context, Failure, Result, copy_if_changed, fail};

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
    let out = cmd.output().context(|| format!("{what}: cannot run `{}`", program.display()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return fail(format!("{what}: `{}` refused it: {}", program.display(), stderr.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `failure` (a vendor tool's refusal of an image) as a user reads it best: each kernel
/// symbol that it names (`_offload_kernel_wave_e3cf14583604d3bb`) followed by the kernel's
/// Rust path (`kernels`: each kernel's symbol and instance, from the manifest the image was
/// built from), and an LLVM crash report (from its `PLEASE submit a bug report` line: the
/// stack dump) cut to one line that says so, since the error line above it is what tells.
pub(crate) fn name_kernels(failure: Failure, kernels: &[(String, String)]) -> Failure {
    let Failure(message, status) = failure;
    let mut lines: Vec<&str> = message.lines().collect();
    let crash = lines.iter().position(|l| l.starts_with("PLEASE submit a bug report"));
    let cut = crash.map(|at| lines.split_off(at).len());
    let mut text = lines.join("\n");
    if let Some(cut) = cut {
        text.push_str(&format!(
            "\n(LLVM's crash report, {cut} lines, left out: run the tool's command again to see \
             it)"
        ));
    }
    // Longer symbols first, so that one that begins another is not named inside it.
    let mut kernels: Vec<&(String, String)> = kernels.iter().collect();
    kernels.sort_by_key(|(symbol, _)| std::cmp::Reverse(symbol.len()));
    for (symbol, kernel) in kernels {
        if text.contains(symbol.as_str()) {
            text = text.replace(symbol.as_str(), &format!("{symbol} (kernel `{kernel}`)"));
        }
    }
    Failure(text, status)
}

/// What made a step's outputs: each tool with its modification time (a toolchain installed
/// anew at the same path makes another record) and its arguments, then each input file, byte
/// for byte (an image is a few MB at most; comparing its bytes leaves no doubt). A step whose
/// record equals the one kept beside its outputs (`path`) reuses them, if each output still
/// matches its seal ([`crate::seal`]); the record is removed before the step runs its tools and
/// written, with the outputs' seals, when they succeeded, so a step that fails leaves none.
pub(crate) struct ToolRecord {
    path: PathBuf,
    key: Vec<u8>,
}

impl ToolRecord {
    /// The record of running `tools` on `inputs`, kept at `path`; `what` names the step in an
    /// error (an input that cannot be read).
    pub(crate) fn new(
        what: &str,
        path: PathBuf,
        tools: &[(PathBuf, Vec<String>)],
        inputs: &[&Path],
    ) -> Result<ToolRecord> {
        let mut text = String::new();
        for (program, args) in tools {
            let modified = fs::metadata(program).and_then(|m| m.modified()).ok();
            text.push_str(&format!("{} {modified:?} {args:?}\n", program.display()));
        }
        let mut key = text.into_bytes();
        for input in inputs {
            let bytes =
                fs::read(input).context(|| format!("{what}: cannot read {}", input.display()))?;
            key.extend_from_slice(format!("{} bytes\n", bytes.len()).as_bytes());
            key.extend_from_slice(&bytes);
        }
        Ok(ToolRecord { path, key })
    }

    /// Whether the last run of the step had this record and left all its `outputs` as it
    /// sealed them: a truncated or overwritten output makes the step run again.
    pub(crate) fn unchanged(&self, outputs: &[&Path]) -> bool {
        fs::read(&self.path).is_ok_and(|old| old == self.key)
            && outputs.iter().all(|o| crate::seal::intact(o))
    }

    /// Removes the kept record before the step's tools run.
    pub(crate) fn forget(&self, what: &str) -> Result<()> {
        match fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).context(|| format!("{what}: cannot remove {}", self.path.display()))
            }
            _ => Ok(()),
        }
    }

    /// Keeps the record once the step's tools succeeded, after sealing its complete `outputs`.
    pub(crate) fn keep(self, what: &str, outputs: &[&Path]) -> Result<()> {
        for output in outputs {
            crate::seal::seal(output)
                .map_err(|Failure(e, _)| Failure::new(format!("{what}: {e}")))?;
        }
        crate::seal::write_atomically(&self.path, &self.key)
            .map_err(|Failure(e, _)| Failure::new(format!("{what}: {e}")))
    }
}

/// Compiles the device pass's image (`host.out`: the kernels' optimized LLVM bitcode in an
/// offload binary) into what the runtime's plugin loads, and packages that as an offload
/// binary for the registration: an ELF shared object for the CPU device, a code object (ELF
/// shared object, code object v5) for AMD GPUs, an ELF cubin for NVIDIA GPUs. The steps are the
/// device target's vendor steps (`offload_targets`), with `-O2`/`-O3` for `llc`; every image is
/// linked with nothing undefined but, for the CPU device, the C library the program has.
/// The outputs of the last build are kept when its tools, their arguments and its image were the
/// same (recorded in `<dir>/<arch>.vendor-record`). The loadable image (and the PTX of an
/// NVIDIA GPU) is copied into `publish` (unless that copy is the same already), where a user
/// finds it whichever folder `dir` is. Returns the packaged file and a summary (kind, published
/// file, bytes).
pub(crate) fn device_binary(
    dir: &Path,
    publish: &Path,
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
    let published = publish.join(loadable.file_name().unwrap_or_default());
    // The loadable image, and the assembly of a target that has one (PTX), which a user reads.
    let assembly = base.with_extension("ptx");
    let summary = || -> Result<String> {
        copy_if_changed(&loadable, &published)?;
        if assembly.is_file() {
            copy_if_changed(&assembly, &publish.join(assembly.file_name().unwrap_or_default()))?;
        }
        let bytes = fs::metadata(&published).map(|m| m.len()).unwrap_or(0);
        Ok(format!("{} {} ({bytes} bytes)", arch.device.image_kind, published.display()))
    };

    // A host-only edit, or an arch whose kernels did not change, gives the same record.
    let bc_arg = format!("--image=file={},triple={}", bc.display(), arch.target);
    let out_arg = packaged.display().to_string();
    let packager = llvm_tool("llvm-offload-binary");
    let mut tools = vec![(packager.clone(), vec![bc_arg.clone()])];
    tools.extend(steps.iter().cloned());
    tools.push((packager.clone(), vec!["-o".to_string(), out_arg.clone(), spec.clone()]));
    let record = ToolRecord::new(&what, base.with_extension("vendor-record"), &tools, &[image])?;
    // The assembly of a target that has one is published too.
    let mut outputs = vec![loadable.as_path(), packaged.as_path()];
    if arch.device.vendor_steps.iter().any(|step| step.args.contains(&Arg::File(Role::Assembly))) {
        outputs.push(&assembly);
    }
    if record.unchanged(&outputs) {
        return Ok((packaged, format!("{} (unchanged)", summary()?)));
    }
    record.forget(&what)?;

    tool(&what, &packager, &[&image, &bc_arg])?;
    for (program, args) in &steps {
        let args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            args.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>).collect();
        tool(&what, program, &args)?;
    }
    tool(&what, &packager, &[&"-o", &out_arg, &spec])?;
    record.keep(&what, &outputs)?;
    Ok((packaged, summary()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal names each kernel by its Rust path beside its symbol, and leaves LLVM's stack
    /// dump out.
    #[test]
    fn a_refusal_names_kernels_by_path_and_leaves_the_stack_dump_out() {
        let message = "image sm_90: `llc` refused it: error: no libcall available for fexp\n\
                       LLVM ERROR: Cannot select: 0x55e9 ch = NVPTXISD::CALL\n\
                       In function: _offload_kernel_wave_e3cf\n\
                       PLEASE submit a bug report to https://example.invalid/ and include it.\n\
                       Stack dump:\n0.\tProgram arguments: llc\n #0 0x1 llvm::sys::Print";
        let kernels = [
            ("_offload_kernel_wave_e3cf".to_string(), "nbody::wave".to_string()),
            ("_offload_kernel_step_0000".to_string(), "nbody::step".to_string()),
        ];
        let Failure(text, status) = name_kernels(Failure::new(message), &kernels);
        assert_eq!(status, 1);
        assert!(text.contains("In function: _offload_kernel_wave_e3cf (kernel `nbody::wave`)"));
        assert!(!text.contains("nbody::step"), "a kernel it does not name");
        assert!(text.ends_with(
            "(LLVM's crash report, 4 lines, left out: run the tool's command \
                                again to see it)"
        ));
        assert!(!text.contains("Stack dump") && !text.contains("PLEASE"));
    }

    /// A record is unchanged only for the same tools, arguments and input bytes, once kept, and
    /// while the outputs exist; `forget` drops it.
    #[test]
    fn a_tool_record_changes_with_tools_arguments_and_inputs() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-record-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let (input, output, path) = (dir.join("in"), dir.join("out"), dir.join("record"));
        fs::write(&input, b"image 1").unwrap();
        fs::write(&output, b"").unwrap();
        let tools = |arg: &str| vec![(PathBuf::from("/bin/sh"), vec![arg.to_string()])];
        let record = |arg: &str| ToolRecord::new("test", path.clone(), &tools(arg), &[&input]);
        let first = record("-O2").ok().unwrap();
        assert!(!first.unchanged(&[&output]), "no record kept yet");
        first.keep("test", &[&output]).ok().unwrap();
        assert!(record("-O2").ok().unwrap().unchanged(&[&output]));
        fs::write(&output, b"damaged").unwrap();
        assert!(!record("-O2").ok().unwrap().unchanged(&[&output]), "an output changed");
        fs::write(&output, b"").unwrap();
        assert!(!record("-O3").ok().unwrap().unchanged(&[&output]), "other arguments");
        assert!(!record("-O2").ok().unwrap().unchanged(&[&output, &dir.join("gone")]), "an output");
        fs::write(&input, b"image 2").unwrap();
        let changed = record("-O2").ok().unwrap();
        assert!(!changed.unchanged(&[&output]), "another input");
        changed.forget("test").ok().unwrap();
        assert!(!path.exists());
        changed.forget("test").ok().unwrap();
        let _ = fs::remove_dir_all(&dir);
    }
}
