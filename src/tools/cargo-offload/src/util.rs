//! What every part of `cargo offload` shares: its failures ([`Failure`]: one line and an exit
//! status), and writing files only when their content changed.

use std::fmt::Display;
use std::fs;
use std::path::Path;
use std::process::Command;

use crate::env;

/// A failure: one line for the user, and the exit status.
pub(crate) struct Failure(pub(crate) String, pub(crate) u8);

impl Failure {
    /// A failure with exit status 1, that of everything but bad usage and a failed program.
    pub(crate) fn new(message: impl Into<String>) -> Failure {
        Failure(message.into(), 1)
    }

    /// Bad usage of the command line: exit status 2.
    pub(crate) fn usage(message: impl Into<String>) -> Failure {
        Failure(message.into(), 2)
    }

    /// A failure whose exit status is another program's (cargo's, a failed test's).
    pub(crate) fn with_status(message: impl Into<String>, status: u8) -> Failure {
        Failure(message.into(), status)
    }
}

/// A manifest that cannot be used: its error names the file and what is wrong.
impl From<offload_manifest_format::Error> for Failure {
    fn from(error: offload_manifest_format::Error) -> Failure {
        Failure::new(error.to_string())
    }
}

/// What may fail with a [`Failure`].
pub(crate) type Result<T> = std::result::Result<T, Failure>;

/// Makes the error of what failed (an I/O error, mostly) a [`Failure`] with exit status 1 whose
/// line says what was done, then the error: `cannot read <path>: <error>`. Each message shape
/// is written here once.
pub(crate) trait Context<T>: Sized {
    /// The failure `<what>: <error>`; `what` is made only on failure.
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;

    /// The failure `cannot read <path>: <error>`.
    fn context_read(self, path: impl AsRef<Path>) -> Result<T> {
        self.context(|| format!("cannot read {}", path.as_ref().display()))
    }

    /// The failure `cannot write <path>: <error>`.
    fn context_write(self, path: impl AsRef<Path>) -> Result<T> {
        self.context(|| format!("cannot write {}", path.as_ref().display()))
    }

    /// The failure `cannot create <path>: <error>` (a folder, or a file made empty).
    fn context_create(self, path: impl AsRef<Path>) -> Result<T> {
        self.context(|| format!("cannot create {}", path.as_ref().display()))
    }

    /// The failure `cannot remove <path>: <error>`.
    fn context_remove(self, path: impl AsRef<Path>) -> Result<T> {
        self.context(|| format!("cannot remove {}", path.as_ref().display()))
    }

    /// The failure `cannot lock <path>: <error>`.
    fn context_lock(self, path: impl AsRef<Path>) -> Result<T> {
        self.context(|| format!("cannot lock {}", path.as_ref().display()))
    }

    /// The failure `cannot run <program>: <error>` (`program`: its name or path, as shown).
    fn context_run(self, program: impl Display) -> Result<T> {
        self.context(|| format!("cannot run {program}"))
    }
}

impl<T, E: Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Failure::new(format!("{}: {e}", what())))
    }
}

/// A [`Failure`] with exit status 1.
pub(crate) fn fail<T>(message: impl Into<String>) -> Result<T> {
    Err(Failure::new(message))
}

/// The exit code with which a wrapper that ran `program` ends when the program ended with
/// `status`: the program's own, or, for a program that a signal ended (a killed `rustc`), 128
/// plus the signal's number, as a shell gives it, after a line that names the program and the
/// signal (cargo would only see a failure without a word).
pub(crate) fn exit_code_of(
    program: &str,
    status: std::process::ExitStatus,
) -> std::process::ExitCode {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        // `ExitStatus` names the signal: `signal: 9 (SIGKILL)`.
        eprintln!("error: [cargo offload] `{program}` was ended by a signal ({status})");
        return std::process::ExitCode::from((128 + signal).clamp(0, 255) as u8);
    }
    std::process::ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8)
}

/// The fault-injection hook of the tests: where `phase` begins, `cargo offload` ends itself
/// with `SIGKILL`, as a user's `kill -9` or the machine's end would, when
/// [`env::STOP_AT`] names that phase (`host-compile`, `device-passes`, `vendor`,
/// `registration`, `host-link`). Nothing is cleaned up; the next build must heal what is left.
pub(crate) fn stop_point(phase: &str) {
    if std::env::var(env::STOP_AT).is_ok_and(|at| at == phase) {
        eprintln!("[cargo offload] {} names `{phase}`: stopping with SIGKILL", env::STOP_AT);
        let pid = std::process::id().to_string();
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
        // `kill` is on every machine that runs cargo; without it, end as abruptly (SIGABRT).
        std::process::abort();
    }
}

/// Writes `bytes` to `path` unless it holds them already (so that its modification time, which
/// cargo's fingerprints see, stays); returns whether it wrote.
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    if fs::read(path).ok().as_deref() == Some(bytes) {
        return Ok(false);
    }
    fs::write(path, bytes).context_write(path)?;
    Ok(true)
}

/// Copies `from` to `to` unless `to` holds its content already; returns whether it wrote.
pub(crate) fn copy_if_changed(from: &Path, to: &Path) -> Result<bool> {
    let bytes = fs::read(from).context_read(from)?;
    write_if_changed(to, &bytes)
}

/// `s` as owned strings, as arguments arrive.
#[cfg(test)]
pub(crate) fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rustc that a signal ended makes the wrapper exit with 128 plus the signal's number, as
    /// a shell reports it; one that exited keeps its code.
    #[test]
    fn a_program_ended_by_a_signal_gives_128_plus_the_signal() {
        use std::os::unix::process::ExitStatusExt;
        let killed = std::process::ExitStatus::from_raw(9);
        assert_eq!(exit_code_of("rustc", killed), std::process::ExitCode::from(137));
        let exited = std::process::ExitStatus::from_raw(1 << 8);
        assert_eq!(exit_code_of("rustc", exited), std::process::ExitCode::from(1));
    }

    #[test]
    fn files_are_written_only_when_they_change() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-write-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        assert!(matches!(write_if_changed(&a, b"one"), Ok(true)));
        assert!(matches!(write_if_changed(&a, b"one"), Ok(false)));
        assert!(matches!(copy_if_changed(&a, &b), Ok(true)));
        assert!(matches!(copy_if_changed(&a, &b), Ok(false)));
        assert!(matches!(write_if_changed(&a, b"two"), Ok(true)));
        assert_eq!(fs::read(&a).unwrap(), b"two");
        let missing = dir.join("missing");
        assert!(
            matches!(copy_if_changed(&missing, &b), Err(Failure(m, 1)) if m.contains("cannot read"))
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
