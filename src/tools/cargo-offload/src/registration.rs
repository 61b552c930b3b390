//! The registration object: one module that registers every device image, and the program's
//! offload entries, with LLVM's offload runtime when the program starts.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{Result, copy_if_changed};
use crate::vendor::{ToolRecord, llvm_tool, tool};

/// Wraps the packaged images into the registration object (`llvm-offload-wrapper`, compiled
/// by `llc`): the `__tgt_bin_desc` of all images and the program's offload entries, and the
/// constructor that registers it with the runtime once. Writes `out` only when it changed;
/// returns whether it did. The tools do not run again when the images and the tools are the
/// last build's (`<dir>/offload-registration.record`, see [`ToolRecord`]).
pub(crate) fn wrap_images(
    dir: &Path,
    host: &str,
    packaged: &[(PathBuf, PathBuf)],
    out: &Path,
) -> Result<bool> {
    let what = "registration";
    let bc = dir.join("offload-registration.bc").display().to_string();
    let fresh = dir.join("offload-registration.new.o");
    let mut wrap = vec!["--kind=openmp".to_string(), format!("--triple={host}"), "-o".into()];
    wrap.push(bc.clone());
    wrap.extend(packaged.iter().map(|(_, binary)| binary.display().to_string()));
    let llc = ["-filetype=obj", "-relocation-model=pic", &bc, "-o"].map(str::to_string);
    let mut llc = llc.to_vec();
    llc.push(fresh.display().to_string());
    let tools = [(llvm_tool("llvm-offload-wrapper"), wrap), (llvm_tool("llc"), llc)];
    // The same images as the last build's (a host-only edit) give the same object.
    let inputs: Vec<&Path> = packaged.iter().map(|(_, binary)| binary.as_path()).collect();
    let record = ToolRecord::new(what, dir.join("offload-registration.record"), &tools, &inputs)?;
    if record.unchanged(&[out]) {
        return Ok(false);
    }
    record.forget(what)?;
    for (program, args) in &tools {
        let args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            args.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>).collect();
        tool(what, program, &args)?;
    }
    let changed = copy_if_changed(&fresh, out)?;
    let _ = fs::remove_file(&fresh);
    record.keep(what)?;
    Ok(changed)
}
