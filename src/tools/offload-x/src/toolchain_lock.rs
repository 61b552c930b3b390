//! The toolchain lock: one ``./x.py`` at a time replaces the stage-1 toolchain, and never under
//! a program that runs it.
//!
//! The verbs that rebuild the toolchain in the cache (`build`, and `test`, whose bootstrap
//! invocations assemble the stage-1 sysroot afresh) replace files that a `cargo offload` or
//! `rustc` started by `./x.py cargo|rustc|<program>` in another shell is using: such a run used
//! to fail with "stage1/bin/rustc does not exist". So the verbs take `<cache>/toolchain.lock`
//! with `flock(2)` (`std::fs::File::lock`): exclusively while they replace the toolchain, shared
//! while a program of the toolchain runs. A rebuild waits for the runs in progress to end, and
//! a run waits for a rebuild in progress; each says that it waits. The lock goes with the
//! process, so a killed `./x.py` leaves nothing to clean up.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::PathBuf;

use crate::cache::Cache;
use crate::ui::{Context, Result, say};

/// A held toolchain lock; dropping it releases the lock.
#[derive(Debug)]
pub struct ToolchainLock {
    _file: File,
}

/// How a verb holds the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// Replaces the toolchain: no other holder.
    Replace,
    /// Runs a program of the toolchain: other runs may hold it too.
    Run,
}

impl ToolchainLock {
    /// The lock's file in `cache`.
    pub fn path(cache: &Cache) -> PathBuf {
        cache.root.join("toolchain.lock")
    }

    /// Takes the lock of `cache` for `use_`, waiting (and saying so under `step`) while another
    /// process holds it in a way that excludes this one.
    pub fn take(cache: &Cache, step: &'static str, use_: Use) -> Result<ToolchainLock> {
        let path = Self::path(cache);
        let lock = |what: &str| format!("cannot {what} the toolchain lock {}", path.display());
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .context(step, || lock("open"))?;
        let tried = match use_ {
            Use::Replace => file.try_lock(),
            Use::Run => file.try_lock_shared(),
        };
        let taken = match tried {
            Ok(()) => Ok(()),
            Err(TryLockError::WouldBlock) => {
                say(
                    step,
                    match use_ {
                        Use::Replace => {
                            "waiting for the programs that use the toolchain, or another `./x.py` \
                             that rebuilds it, to end"
                        }
                        Use::Run => "waiting for another `./x.py` that rebuilds the toolchain",
                    },
                );
                match use_ {
                    Use::Replace => file.lock(),
                    Use::Run => file.lock_shared(),
                }
            }
            Err(TryLockError::Error(e)) => Err(e),
        };
        taken.context(step, || lock("take"))?;
        Ok(ToolchainLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_share_the_lock_and_a_rebuild_excludes_them() {
        let root = std::env::temp_dir().join(format!("offload-x-lock-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let cache = Cache { root: root.clone() };
        let first = ToolchainLock::take(&cache, "TEST", Use::Run).unwrap();
        let second = ToolchainLock::take(&cache, "TEST", Use::Run).unwrap();
        // Each take opens the file anew, so a second holder in this process is another holder,
        // as another process is.
        let probe = File::options().write(true).open(ToolchainLock::path(&cache)).unwrap();
        assert!(matches!(probe.try_lock(), Err(TryLockError::WouldBlock)));
        drop((first, second));
        let replace = ToolchainLock::take(&cache, "TEST", Use::Replace).unwrap();
        assert!(matches!(probe.try_lock_shared(), Err(TryLockError::WouldBlock)));
        drop(replace);
        assert!(probe.try_lock().is_ok());
        let _ = std::fs::remove_dir_all(&root);
    }
}
