//! The registration object: one module that registers every device image, and the program's
//! offload entries, with LLVM's offload runtime when the program starts.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{Result, copy_if_changed};
use crate::vendor::{llvm_tool, tool};

/// Wraps the packaged images into the registration object (`llvm-offload-wrapper`, compiled
/// by `llc`): the `__tgt_bin_desc` of all images and the program's offload entries, and the
/// constructor that registers it with the runtime once. Writes `out` only when it changed;
/// returns whether it did.
pub(crate) fn wrap_images(
    dir: &Path,
    host: &str,
    packaged: &[(PathBuf, PathBuf)],
    out: &Path,
) -> Result<bool> {
    let bc = dir.join("offload-registration.bc");
    let fresh = dir.join("offload-registration.new.o");
    let triple = format!("--triple={host}");
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"--kind=openmp", &triple, &"-o", &bc];
    for (_, binary) in packaged {
        args.push(binary);
    }
    tool("registration", &llvm_tool("llvm-offload-wrapper"), &args)?;
    tool(
        "registration",
        &llvm_tool("llc"),
        &[&"-filetype=obj", &"-relocation-model=pic", &bc, &"-o", &fresh],
    )?;
    let changed = copy_if_changed(&fresh, out)?;
    let _ = fs::remove_file(&fresh);
    Ok(changed)
}
