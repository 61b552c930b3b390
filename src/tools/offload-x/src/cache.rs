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

use std::path::{Path, PathBuf};

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
