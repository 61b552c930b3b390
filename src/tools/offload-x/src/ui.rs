//! Progress lines and failures.
//!
//! Each step prints one bracketed word (`[DOWNLOAD]`, `[PATCH]`, ...) so that a reader of a
//! log knows where it is, and says how long it took. A failure is one line naming the step,
//! what went wrong and what to do.

use std::fmt;
use std::process::{Command, Output};
use std::time::Instant;

/// A step that could not be completed: `step` is the bracketed word, `message` says what went
/// wrong and what to do about it.
#[derive(Debug)]
pub struct Failure {
    pub step: &'static str,
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: [{}] {}", self.step, self.message)
    }
}

impl std::error::Error for Failure {}

pub type Result<T> = std::result::Result<T, Failure>;

/// Builds a [`Failure`] of `step`.
pub fn fail<T>(step: &'static str, message: impl Into<String>) -> Result<T> {
    Err(Failure { step, message: message.into() })
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
    let out = cmd
        .output()
        .map_err(|e| Failure { step, message: format!("cannot start {shown}: {e}") })?;
    if !out.status.success() {
        return fail(step, format!("{shown} failed ({}): {}", out.status, tail(&out.stderr, 6)));
    }
    Ok(out)
}

/// Runs `cmd` with inherited stdio; a non-zero exit becomes a [`Failure`] of `step`.
pub fn run_inherited(step: &'static str, cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| Failure { step, message: format!("cannot start {shown}: {e}") })?;
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
