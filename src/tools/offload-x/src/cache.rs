//! The build cache: everything that is expensive to make and is not ours to commit.
//!
//! It lives outside the checkout, so that every checkout on the machine (CI's fresh clones
//! included) reuses it: `$OFFLOAD_FORK_CACHE`, or `~/.cache/offload-fork` by default.
//!
//! ```text
//! downloads/         the pinned source tarballs (checked by sha256)
//! sysroot/           Debian trixie with LLVM 22 (complete when
//!                    sysroot/.offload-fork-complete exists)
//! tree/              the materialized upstream tree: upstream + our patches + our new files
//! tree.git/          its git directory (kept outside the tree, so bootstrap sees a tarball
//!                    source and takes the commit from `git-commit-info`); branch `upstream`
//!                    is upstream with Debian's preparation, before any change of ours
//! materialized.list  the tree paths that our last materialization wrote
//! build/             bootstrap's build directory
//! tools-target/      cargo's target directory for this harness
//! job/               outputs of the main job
//! ```

use std::fs;
use std::path::{Path, PathBuf};

use crate::pins::HOST;

/// Paths inside the cache root.
#[derive(Clone, Debug)]
pub struct Cache {
    pub root: PathBuf,
}

impl Cache {
    /// The cache named by `$OFFLOAD_FORK_CACHE`, else `$HOME/.cache/offload-fork`.
    pub fn from_env() -> Cache {
        let root = match std::env::var_os("OFFLOAD_FORK_CACHE") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => {
                let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
                Path::new(&home).join(".cache/offload-fork")
            }
        };
        // Absolute, so that the same path is valid inside the sysroot's bind mount.
        let root = std::path::absolute(&root).unwrap_or(root);
        Cache { root }
    }

    pub fn downloads(&self) -> PathBuf {
        self.root.join("downloads")
    }
    pub fn sysroot(&self) -> PathBuf {
        self.root.join("sysroot")
    }
    pub fn sysroot_stamp(&self) -> PathBuf {
        self.sysroot().join(".offload-fork-complete")
    }
    pub fn tree(&self) -> PathBuf {
        self.root.join("tree")
    }
    pub fn tree_git(&self) -> PathBuf {
        self.root.join("tree.git")
    }
    pub fn materialized_list(&self) -> PathBuf {
        self.root.join("materialized.list")
    }
    pub fn build(&self) -> PathBuf {
        self.root.join("build")
    }
    pub fn job(&self) -> PathBuf {
        self.root.join("job")
    }
    /// The stage-1 compiler's sysroot (`build/<host>/stage1`).
    pub fn stage1(&self) -> PathBuf {
        self.build().join(crate::pins::HOST).join("stage1")
    }
    pub fn stage1_rustc(&self) -> PathBuf {
        self.stage1().join("bin/rustc")
    }
}

/// The rustup 1.95.0 toolchain directory (`$RUSTUP_HOME/toolchains/1.95.0-<host>`).
pub fn stage0_toolchain() -> PathBuf {
    let rustup_home = match std::env::var_os("RUSTUP_HOME") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
            Path::new(&home).join(".rustup")
        }
    };
    rustup_home.join("toolchains").join(crate::pins::STAGE0_TOOLCHAIN)
}

/// Where the GPU targets' libraries are kept beside bootstrap's stage-1 sysroot:
/// `build/<host>/offload-gpu-sysroot/lib/rustlib/<target>/lib`. Bootstrap assembles the stage-1
/// sysroot afresh in every invocation, with only the targets of that invocation (an
/// `x.py test` removes the GPU ones), so the run-make tests compile for the GPU with
/// `--sysroot $BUILD_ROOT/offload-gpu-sysroot`, and the harness puts the libraries back.
pub fn gpu_sysroot(cache: &Cache) -> PathBuf {
    cache.build().join(HOST).join("offload-gpu-sysroot")
}

/// `build/<host>/offload-device-sysroot`, beside bootstrap's stage-1 sysroot (which bootstrap
/// reassembles in every invocation).
pub fn device_sysroot(cache: &Cache) -> PathBuf {
    cache.build().join(HOST).join("offload-device-sysroot")
}

/// Where `cargo-offload` is installed: `build/<host>/offload-tools/bin` (and
/// `liboffload_report.so`, which it preloads for `OFFLOAD_REPORT`, in `../lib`), beside the
/// stage-1 toolchain rather than in its `bin/`, which bootstrap assembles afresh (a test run
/// drops what it did not put there). `./x.py cargo` has it on `PATH`, so `./x.py cargo offload ...`
/// finds it as cargo finds any subcommand; the run-make tests find it there too.
pub fn offload_tools_bin(cache: &Cache) -> PathBuf {
    cache.build().join(HOST).join("offload-tools/bin")
}

/// Copies the plain files of `from` into `to`, emptied first.
pub fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    let _ = fs::remove_dir_all(to);
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}
