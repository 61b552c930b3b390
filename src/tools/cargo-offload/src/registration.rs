//! The registration object: one module that registers every device image, and the program's
//! offload entries, with LLVM's offload runtime when the program starts.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{Result, copy_if_changed};
use crate::vendor::{ToolRecord, llvm_tool, tool};

/// Wraps the packaged images into the registration object (`llvm-offload-wrapper`, compiled
/// by `llc`): the `__tgt_bin_desc` of all images and the program's offload entries, and the
/// constructor that registers it with the runtime once. Writes `out` only when it changed
/// (what each program was linked with is recorded apart, [`link_stamp`]). The tools do not
/// run again when the images and the tools are the last build's
/// (`<dir>/offload-registration.record`, see [`ToolRecord`]) and `out` matches its seal.
pub(crate) fn wrap_images(
    dir: &Path,
    host: &str,
    packaged: &[(PathBuf, PathBuf)],
    out: &Path,
) -> Result<()> {
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
        return Ok(());
    }
    record.forget(what)?;
    for (program, args) in &tools {
        let args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            args.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>).collect();
        tool(what, program, &args)?;
    }
    copy_if_changed(&fresh, out)?;
    let _ = fs::remove_file(&fresh);
    record.keep(what, &[out])
}

/// What a program was linked with: a hash of the link arguments that `cargo offload` adds
/// (`link_args`, empty without kernels) and of the content of each of them that names a file
/// (the registration object, whose images change without a change of its path). Written by the
/// link run beside each program it links ([`link_record`]), and compared with the current one
/// before the link run, so that a program linked with other images is linked again. Only the
/// same `cargo-offload` reads what it wrote (`DefaultHasher` is not stable across builds of it,
/// which at worst links a program once more).
pub(crate) fn link_stamp(link_args: &[String]) -> String {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    for arg in link_args {
        arg.hash(&mut hasher);
        if let Ok(bytes) = fs::read(arg) {
            bytes.hash(&mut hasher);
        }
    }
    format!("{:016x}\n", hasher.finish())
}

/// What the link run records for the program file `program` that it linked with `link_args`:
/// their [`link_stamp`], then the seal line of the program's content ([`crate::seal`]), so that a
/// program truncated or overwritten since its link counts as linked otherwise and is linked
/// again. Without a readable program, the stamp alone (which no recorded text equals).
pub(crate) fn link_record_text(program: &Path, link_args: &[String]) -> String {
    let content = crate::seal::content_line(program).unwrap_or_default();
    format!("{}{content}", link_stamp(link_args))
}

/// Where the link run records [`link_record_text`] for the program file `program`: beside it,
/// with `.offload-link` appended to its name.
pub(crate) fn link_record(program: &Path) -> PathBuf {
    let mut name = program.file_name().unwrap_or_default().to_os_string();
    name.push(".offload-link");
    program.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_stamp_follows_the_arguments_and_the_registrations_content() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-stamp-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let object = dir.join("offload-registration.o");
        fs::write(&object, "images a").unwrap();
        let args = vec![object.display().to_string(), "-lomptarget".to_string()];
        let first = link_stamp(&args);
        assert_eq!(link_stamp(&args), first);
        fs::write(&object, "images b").unwrap();
        assert_ne!(link_stamp(&args), first, "the registration's images changed");
        assert_ne!(link_stamp(&args[..1]), link_stamp(&args), "another argument");
        assert_ne!(link_stamp(&[]), first, "no kernels");
        assert_eq!(
            link_record(Path::new("/t/deps/app-1")),
            Path::new("/t/deps/app-1.offload-link")
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
