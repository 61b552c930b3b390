//! The one error shape of `offload-manifest`'s commands: a message that says what failed and
//! why, which `main` prints after `error: ` before it exits with the command's status.

use std::fmt;

/// A failed command: its message, one or more lines (no trailing newline).
#[derive(Debug)]
pub struct Error(String);

/// The result of a step of a command.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error whose whole message is `message`.
    pub fn new(message: impl Into<String>) -> Error {
        Error(message.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

// An I/O or JSON error that passes up without context says enough by itself (the seed's work
// folder, the mutants' files): its message is the whole message, as it always was.
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error(e.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Error {
        Error(e.to_string())
    }
}

/// Says what was being done when an error happened, so that each caller writes its
/// "cannot read X" once and the cause follows it.
pub trait Context<T> {
    /// The error as `<what>: <the error>`; `what` is formatted only when there is one.
    fn context(self, what: impl fmt::Display) -> Result<T>;
}

impl<T, E: fmt::Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl fmt::Display) -> Result<T> {
        self.map_err(|e| Error(format!("{what}: {e}")))
    }
}
