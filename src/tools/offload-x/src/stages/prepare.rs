//! The prepare stage (`./x.py prepare`) and the `[CHECK]` of the machine that every verb
//! starts with.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::cache::{Cache, stage0_toolchain};
use crate::materialize;
use crate::pins::{HOST, STAGE0_TOOLCHAIN};
use crate::project::bootstrap_toml;
use crate::ui::{Context, Result, fail, say};
use crate::{fetch, sysroot, upstream};

/// Disk space a cold setup needs (sysroot 2 GB, tree 2 GB, build ~20 GB), in KiB.
const COLD_DISK_KIB: u64 = 30 * 1024 * 1024;
/// Disk space any run wants free, in KiB.
const WARM_DISK_KIB: u64 = 3 * 1024 * 1024;

/// `[CHECK]`: stage 0 and disk space.
pub fn check_machine(cache: &Cache) -> Result<()> {
    let stage0 = stage0_toolchain();
    if !stage0.join("bin/rustc").exists() || !stage0.join("bin/cargo").exists() {
        return fail(
            "CHECK",
            format!(
                "the rustup toolchain {STAGE0_TOOLCHAIN} (stage 0) is missing at {}; install it \
                 with `rustup toolchain install 1.95.0` and rerun",
                stage0.display()
            ),
        );
    }
    fs::create_dir_all(&cache.root)
        .context("CHECK", || format!("cannot create the cache {}", cache.root.display()))
        .map_err(|f| f.advise("set OFFLOAD_FORK_CACHE to a writable folder"))?;
    let need = if cache.build().join(HOST).join("stage1/bin/rustc").exists() {
        WARM_DISK_KIB
    } else {
        COLD_DISK_KIB
    };
    let out = Command::new("df").arg("-Pk").arg(&cache.root).output();
    if let Ok(out) = out {
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(avail) = text
            .lines()
            .nth(1)
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse::<u64>().ok())
        {
            if avail < need {
                return fail(
                    "CHECK",
                    format!(
                        "only {} MiB free at {}, {} MiB needed; free disk space (or point \
                         OFFLOAD_FORK_CACHE elsewhere) and rerun",
                        avail / 1024,
                        cache.root.display(),
                        need / 1024
                    ),
                );
            }
        }
    }
    Ok(())
}

/// Everything up to a tree that bootstrap can build: check, download, sysroot, extract,
/// materialize.
pub fn prepare(project: &Path, cache: &Cache) -> Result<()> {
    check_machine(cache)?;
    fetch::ensure_sources(&cache.downloads())?;
    sysroot::ensure(cache)?;
    upstream::ensure(cache)?;
    let config = bootstrap_toml(project, cache)?;
    let report = materialize::materialize(project, cache, &[("bootstrap.toml", config)])?;
    if report.written.is_empty() && report.removed.is_empty() {
        say("PATCH", "tree up to date");
    } else {
        for rel in &report.written {
            say("PATCH", format!("wrote {rel}"));
        }
        for rel in &report.removed {
            say("PATCH", format!("removed {rel}"));
        }
    }
    Ok(())
}
