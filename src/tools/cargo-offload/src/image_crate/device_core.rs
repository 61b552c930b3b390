//! Where each device pass takes its `core` from: the toolchain's device sysroot
//! ([`crate::env::DEVICE_SYSROOT`]) or `core` built from source (`--build-std`).

use std::fs;
use std::path::PathBuf;

use crate::args::Arch;
use crate::env;
use crate::util::{Result, fail};

/// Where the `core` of a device pass comes from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum DeviceCore {
    /// The device sysroot ([`env::DEVICE_SYSROOT`]) has the target's `core`.
    Toolchain(PathBuf),
    /// `-Zbuild-std=core`: built from the toolchain's library source for the project, with the
    /// device pass's flags (`--build-std`, or no device sysroot).
    BuildStd,
}

impl DeviceCore {
    /// How the progress line of a device pass names it.
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            DeviceCore::Toolchain(_) => "the toolchain's core",
            DeviceCore::BuildStd => "core built from source",
        }
    }
}

/// The note of a device pass of `arch` whose `core` is built from source although `--build-std`
/// was not asked for: no device sysroot is set.
pub(crate) fn no_device_sysroot_note(arch: &Arch) -> String {
    format!(
        "note: {} is not set, so `core` is built from source for `{}` (`-Zbuild-std=core`)",
        env::DEVICE_SYSROOT,
        arch.name
    )
}

/// The `core` of `arch`'s device pass: `-Zbuild-std=core` when `build_std` is asked for or no
/// device sysroot is set (the device pass then prints [`no_device_sysroot_note`]), the device
/// sysroot otherwise. A device sysroot without the target's `core` is an error that names the
/// folder it looked in.
pub(crate) fn device_core(arch: &Arch, build_std: bool) -> Result<DeviceCore> {
    if build_std {
        return Ok(DeviceCore::BuildStd);
    }
    let Some(sysroot) = std::env::var_os(env::DEVICE_SYSROOT).filter(|v| !v.is_empty()) else {
        return Ok(DeviceCore::BuildStd);
    };
    let sysroot = PathBuf::from(sysroot);
    let lib = sysroot.join("lib/rustlib").join(&arch.target).join("lib");
    let has_core = fs::read_dir(&lib).into_iter().flatten().flatten().any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        name.starts_with("libcore-") && name.ends_with(".rlib")
    });
    if !has_core {
        return fail(format!(
            "the device sysroot has no `core` for `{}` ({} holds no libcore-*.rlib; \
             {}={}): rebuild the toolchain (`./x.py build`), or pass `--build-std` to build \
             `core` from source",
            arch.target,
            lib.display(),
            env::DEVICE_SYSROOT,
            sysroot.display()
        ));
    }
    Ok(DeviceCore::Toolchain(sysroot))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::Failure;

    #[test]
    fn device_core_comes_from_the_device_sysroot() {
        let dir =
            std::env::temp_dir().join(format!("cargo-offload-sysroot-{}", std::process::id()));
        let host = "x86_64-unknown-linux-gnu";
        let lib = dir.join("lib/rustlib/nvptx64-nvidia-cuda/lib");
        fs::create_dir_all(&lib).unwrap();
        fs::write(lib.join("libcore-0123.rlib"), b"").unwrap();
        // SAFETY: the only test that sets this variable, and no test reads it concurrently.
        unsafe { std::env::set_var(env::DEVICE_SYSROOT, &dir) };
        let sm = Arch::parse("sm_90", host).ok().unwrap();
        assert_eq!(device_core(&sm, false).ok(), Some(DeviceCore::Toolchain(dir.clone())));
        assert_eq!(device_core(&sm, true).ok(), Some(DeviceCore::BuildStd));
        let gfx = Arch::parse("gfx90a", host).ok().unwrap();
        let Err(Failure(message, 1)) = device_core(&gfx, false) else { panic!("no core accepted") };
        assert!(
            message.contains("no `core` for `amdgcn-amd-amdhsa`")
                && message.contains("--build-std"),
            "{message}"
        );
        unsafe { std::env::remove_var(env::DEVICE_SYSROOT) };
        assert_eq!(device_core(&gfx, false).ok(), Some(DeviceCore::BuildStd));
        fs::remove_dir_all(&dir).unwrap();
    }
}
