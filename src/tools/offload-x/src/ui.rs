//! Progress lines and failures.
//!
//! Each step prints one bracketed word (`[DOWNLOAD]`, `[PATCH]`, ...) so that a reader of a
//! log knows where it is, and says how long it took. A failure is one line naming the step,
//! what went wrong and what to do.

use std::fmt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

/// A step that could not be completed: `step` is the bracketed word, `message` says what went
/// wrong and what to do about it.
#[derive(Debug)]
pub struct Failure {
    step: &'static str,
    message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: [{}] {}", self.step, self.message)
    }
}

impl std::error::Error for Failure {}

pub type Result<T> = std::result::Result<T, Failure>;

impl Failure {
    /// A failure of `step` (the bracketed word, without brackets) that says `message`.
    pub fn new(step: &'static str, message: impl Into<String>) -> Failure {
        Failure { step, message: message.into() }
    }

    /// This failure with `advice` (what to do) after its message and a `; `, for a caller that
    /// knows better than the step that failed how to get past it.
    pub fn advise(self, advice: impl fmt::Display) -> Failure {
        Failure { step: self.step, message: format!("{}; {advice}", self.message) }
    }

    /// The bracketed word of the step that failed, without brackets.
    pub fn step(&self) -> &'static str {
        self.step
    }

    /// What went wrong and what to do about it, without the step.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Builds a [`Failure`] of `step`.
pub fn fail<T>(step: &'static str, message: impl Into<String>) -> Result<T> {
    Err(Failure::new(step, message))
}

/// The one way the harness turns another error (`io::Error`, mostly) into a [`Failure`]: each
/// method writes one shape of message, so that "cannot read PATH: error" is written once.
/// `step` is the bracketed word of the failure; paths are shown with [`Path::display`].
pub trait Context<T, E: fmt::Display> {
    /// `WHAT: error`, with `what` computed only on failure.
    fn context(self, step: &'static str, what: impl FnOnce() -> String) -> Result<T>;

    /// `message(error)`, for a message that goes on after the error (what to do).
    fn or_fail(self, step: &'static str, message: impl FnOnce(E) -> String) -> Result<T>;

    /// `PATH: error`.
    fn at(self, step: &'static str, path: &Path) -> Result<T>
    where
        Self: Sized,
    {
        self.context(step, || path.display().to_string())
    }

    /// `cannot read PATH: error`.
    fn reading(self, step: &'static str, path: &Path) -> Result<T>
    where
        Self: Sized,
    {
        self.context(step, || format!("cannot read {}", path.display()))
    }

    /// `cannot write PATH: error`.
    fn writing(self, step: &'static str, path: &Path) -> Result<T>
    where
        Self: Sized,
    {
        self.context(step, || format!("cannot write {}", path.display()))
    }

    /// `cannot create PATH: error`.
    fn creating(self, step: &'static str, path: &Path) -> Result<T>
    where
        Self: Sized,
    {
        self.context(step, || format!("cannot create {}", path.display()))
    }

    /// `cannot run PROGRAM: error`, for a program that could not be started or waited for.
    fn running(self, step: &'static str, program: impl fmt::Display) -> Result<T>
    where
        Self: Sized,
    {
        self.context(step, || format!("cannot run {program}"))
    }
}

impl<T, E: fmt::Display> Context<T, E> for std::result::Result<T, E> {
    fn context(self, step: &'static str, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Failure::new(step, format!("{}: {e}", what())))
    }

    fn or_fail(self, step: &'static str, message: impl FnOnce(E) -> String) -> Result<T> {
        self.map_err(|e| Failure::new(step, message(e)))
    }
}

/// Prints `[STEP] message`.
pub fn say(step: &str, message: impl AsRef<str>) {
    println!("[{step}] {}", message.as_ref());
}

/// Times one step: prints `[STEP] what` at the start and `[STEP] done in N.Ns` when dropped
/// after [`Timer::done`].
pub struct Timer {
    step: &'static str,
    start: Instant,
}

impl Timer {
    pub fn start(step: &'static str, what: impl AsRef<str>) -> Timer {
        say(step, what);
        Timer { step, start: Instant::now() }
    }

    pub fn done(self) {
        say(self.step, format!("done in {:.1}s", self.start.elapsed().as_secs_f64()));
    }
}

/// Runs `cmd`, capturing its output; a failure to start or a non-zero exit becomes a
/// [`Failure`] of `step` that quotes the command's last lines of stderr.
pub fn run_captured(step: &'static str, cmd: &mut Command) -> Result<Output> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().context(step, || format!("cannot start {shown}"))?;
    if !out.status.success() {
        return fail(step, format!("{shown} failed ({}): {}", out.status, tail(&out.stderr, 6)));
    }
    Ok(out)
}

/// Runs `cmd` with inherited stdio; a non-zero exit becomes a [`Failure`] of `step`.
pub fn run_inherited(step: &'static str, cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let status = cmd.status().context(step, || format!("cannot start {shown}"))?;
    if !status.success() {
        return fail(step, format!("{shown} failed ({status})"));
    }
    Ok(())
}

/// The last `lines` lines of `bytes`, joined with " | " so that they fit one error line.
pub fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join(" | ")
}

/// `text` without the terminal colour sequences (`ESC [ ... m`) that tidy and bootstrap write.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each shape of [`Context`] and [`Failure::advise`], as the messages it replaced wrote it.
    #[test]
    fn context_writes_the_harness_messages() {
        let io = || Err::<(), _>(std::io::Error::other("gone"));
        let path = Path::new("/c/x");
        let shown = |r: Result<()>| r.unwrap_err().to_string();
        assert_eq!(shown(io().at("PATCH", path)), "error: [PATCH] /c/x: gone");
        assert_eq!(shown(io().reading("PATCH", path)), "error: [PATCH] cannot read /c/x: gone");
        assert_eq!(shown(io().writing("BUILD", path)), "error: [BUILD] cannot write /c/x: gone");
        assert_eq!(shown(io().creating("FUZZ", path)), "error: [FUZZ] cannot create /c/x: gone");
        assert_eq!(shown(io().running("TEST", "cargo")), "error: [TEST] cannot run cargo: gone");
        assert_eq!(
            shown(io().context("RUN", || "no current directory".into())),
            "error: [RUN] no current directory: gone"
        );
        assert_eq!(
            shown(io().or_fail("SYSROOT", |e| format!("{}: {e} (why)", path.display()))),
            "error: [SYSROOT] /c/x: gone (why)"
        );
        let advised = io().creating("CHECK", path).map_err(|f| f.advise("set X"));
        assert_eq!(shown(advised), "error: [CHECK] cannot create /c/x: gone; set X");
        assert_eq!(Ok::<_, String>(3).at("PATCH", path).unwrap(), 3);
    }
}
