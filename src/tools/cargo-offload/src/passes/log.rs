//! How the cargo passes are run and shown: each pass's progress lines, cargo's JSON messages
//! read for the artifacts and the diagnostics shown as rendered, and the device passes' logs,
//! which keep the lines of passes that run at once apart ([`Log`]).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use crate::util::{Context, Failure, Result};

/// Prints one progress line for a pass: `[cargo offload] <what> (<seconds> s)`.
pub(super) fn progress(what: &str, start: Instant) {
    eprintln!("[cargo offload] {what} ({:.1} s)", start.elapsed().as_secs_f64());
}

/// Where a device pass writes its progress lines and cargo's messages: straight to standard
/// error, or into a buffer that is printed whole when the pass ends, so that the passes of
/// several arches, which run at once, do not mix their lines.
pub(super) enum Log {
    Live,
    Buffered(Vec<u8>),
}

impl Log {
    pub(super) fn line(&mut self, line: &str) {
        match self {
            Log::Live => eprintln!("[cargo offload] {line}"),
            Log::Buffered(buffer) => {
                buffer.extend_from_slice(format!("[cargo offload] {line}\n").as_bytes())
            }
        }
    }

    pub(super) fn progress(&mut self, what: &str, start: Instant) {
        self.line(&format!("{what} ({:.1} s)", start.elapsed().as_secs_f64()));
    }

    /// Runs a cargo pass of a device (`what` names it) whose messages are only shown; fails
    /// when cargo fails. A crate that the pass compiled without finding `std` gets one error
    /// that names it and the lines that make it build for the device ([`needs_std_error`]), in
    /// place of rustc's, whose hint (`-Zbuild-std`) points the wrong way.
    /// The error names what failed as `failed` says, once cargo has ended.
    pub(super) fn cargo_pass(
        &mut self,
        what: &str,
        mut cmd: Command,
        failed: impl FnOnce() -> String,
    ) -> Result<()> {
        let start = Instant::now();
        self.line(what);
        cmd.arg(message_format()).stdout(Stdio::piped());
        let mut needs_std = BTreeSet::new();
        let status = match self {
            Log::Live => (|| {
                let mut child = cmd.spawn()?;
                for line in lossy_lines(child.stdout.take().unwrap()) {
                    eprint!("{}", shown(&line, &mut needs_std));
                }
                child.wait()
            })(),
            // Cargo's lines (stderr) and rustc's diagnostics (stdout, JSON) in the order they
            // come, as a terminal would show them.
            Log::Buffered(buffer) => (|| {
                let mut child = cmd.stdin(Stdio::null()).stderr(Stdio::piped()).spawn()?;
                let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
                let lines = Mutex::new(Vec::new());
                std::thread::scope(|scope| {
                    scope.spawn(|| {
                        for line in lossy_lines(stderr) {
                            lines.lock().unwrap().extend_from_slice(format!("{line}\n").as_bytes());
                        }
                    });
                    for line in lossy_lines(stdout) {
                        let shown = shown(&line, &mut needs_std);
                        lines.lock().unwrap().extend_from_slice(shown.as_bytes());
                    }
                });
                buffer.extend_from_slice(&lines.into_inner().unwrap());
                child.wait()
            })(),
        };
        let status = status.context_run("cargo")?;
        if !status.success() {
            let code = status.code().unwrap_or(1).clamp(1, 255) as u8;
            let failed = failed();
            let message = match needs_std_error(&failed, &needs_std) {
                Some(message) => message,
                None => format!("{failed} failed (cargo's messages are above)"),
            };
            return Err(Failure::with_status(message, code));
        }
        self.progress(&format!("{what}: done"), start);
        Ok(())
    }

    /// Prints what a buffered log holds.
    pub(super) fn flush(self) {
        if let Log::Buffered(buffer) = self {
            let _ = std::io::stderr().write_all(&buffer);
        }
    }
}

/// The lines of `pipe` until it ends or fails, each without its line end; a line that is not
/// UTF-8 is read lossily rather than ending the reading (the writer would then find the pipe
/// closed).
pub(super) fn lossy_lines(pipe: impl std::io::Read) -> impl Iterator<Item = String> {
    let mut reader = BufReader::new(pipe);
    std::iter::from_fn(move || {
        let mut bytes = Vec::new();
        match reader.read_until(b'\n', &mut bytes) {
            Ok(0) | Err(_) => None,
            Ok(_) => {
                let line = String::from_utf8_lossy(&bytes);
                Some(line.trim_end_matches(['\n', '\r']).to_string())
            }
        }
    })
}

/// Cargo's `--message-format` for a pass whose messages `cargo offload` reads: JSON, with
/// diagnostics rendered in colour only for a terminal, as cargo itself decides.
pub(super) fn message_format() -> &'static str {
    if std::io::stderr().is_terminal() {
        "--message-format=json-diagnostic-rendered-ansi"
    } else {
        "--message-format=json"
    }
}

/// What a device pass shows of one line of cargo's JSON output: a diagnostic as rustc rendered
/// it, a line that is not JSON as it is, nothing else. rustc's error that a crate cannot find
/// `std` is not shown but recorded in `needs_std` (the crate's name and package id) for
/// [`needs_std_error`].
pub(super) fn shown(line: &str, needs_std: &mut BTreeSet<(String, String)>) -> String {
    let Ok(message) = serde_json::from_str::<Value>(line) else {
        return format!("{line}\n");
    };
    if message["reason"].as_str() != Some("compiler-message") {
        return String::new();
    }
    let diagnostic = &message["message"];
    if diagnostic["code"]["code"].as_str() == Some("E0463")
        && diagnostic["message"].as_str() == Some("can't find crate for `std`")
    {
        let krate = message["target"]["name"].as_str().unwrap_or("").replace('-', "_");
        let id = message["package_id"].as_str().unwrap_or("").to_string();
        needs_std.insert((krate, id));
        return String::new();
    }
    diagnostic["rendered"].as_str().unwrap_or("").to_string()
}

/// The error of a device pass (`what`) in which the crates `needs_std` (name, package id)
/// found no `std`: it names each, and says what makes such a crate build for a device.
/// `None` when no crate missed `std`.
pub(super) fn needs_std_error(
    what: &str,
    needs_std: &BTreeSet<(String, String)>,
) -> Option<String> {
    if needs_std.is_empty() {
        return None;
    }
    let crates: Vec<String> =
        needs_std.iter().map(|(krate, id)| format!("`{krate}` (package `{id}`)")).collect();
    Some(format!(
        "{what} failed: {} cannot find `std`: when `core` is built from source (`--build-std`, \
         or no device sysroot in `{}`), every device pass compiles against `core` only (the \
         toolchain's device sysroot has `core` and `std`, and a GPU's kernels may use what of \
         `std` has a device form). The device pass compiles the crates that define kernels, \
         and their dependencies, for the device. Such a crate builds there under \
         `--build-std` when its root file starts with\n\n    \
         #![cfg_attr(offload_device, no_std)]\n\n\
         and what needs `std` (`fn main`, printing, `Vec`, ...) is under \
         `#[cfg(not(offload_device))]` (the device passes set `offload_device`, the host \
         passes do not). A crate of a registry or a git repository changes with its authors, \
         or with a `[patch]` of your workspace that points at a changed copy",
        crates.join(", "),
        crate::env::DEVICE_SYSROOT
    ))
}

/// Runs a cargo pass; its JSON messages are read for the artifacts, diagnostics are shown as
/// rendered (with `errors_only`, only errors: cargo repeats the warnings of the crates it finds
/// fresh, which the host pass's compile run has shown). Returns the `compiler-artifact`
/// messages.
pub(super) fn cargo_pass(what: &str, mut cmd: Command, errors_only: bool) -> Result<Vec<Value>> {
    let start = Instant::now();
    eprintln!("[cargo offload] {what}");
    let mut artifacts = Vec::new();
    cmd.arg(message_format()).stdout(Stdio::piped());
    let mut child = cmd.spawn().context_run("cargo")?;
    for line in BufReader::new(child.stdout.take().unwrap()).lines().map_while(|l| l.ok()) {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            println!("{line}");
            continue;
        };
        match message["reason"].as_str() {
            Some("compiler-message") => {
                // Every crate writes the manifest of its graph, and a library whose kernels
                // other crates launch writes an empty one, about which rustc warns; only
                // the merged manifest matters here, and an empty one gets its own note.
                let text = message["message"]["message"].as_str().unwrap_or("");
                if text.starts_with("the offload manifest `")
                    && text.contains("` lists no kernels: neither")
                {
                    continue;
                }
                let error =
                    message["message"]["level"].as_str().is_some_and(|l| l.contains("error"));
                if let Some(rendered) = message["message"]["rendered"].as_str()
                    && (error || !errors_only)
                {
                    eprint!("{rendered}");
                }
            }
            Some("compiler-artifact") => artifacts.push(message),
            _ => {}
        }
    }
    let status = child.wait().context(|| "cargo did not finish".to_string())?;
    if !status.success() {
        let code = status.code().unwrap_or(1).clamp(1, 255) as u8;
        return Err(Failure::with_status(
            format!("{what} failed (cargo's messages are above)"),
            code,
        ));
    }
    progress(&format!("{what}: done"), start);
    Ok(artifacts)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_line_that_is_not_utf8_does_not_end_the_reading() {
        let bytes: &[u8] = b"first\n\xff\xfe second\r\nthird";
        let lines: Vec<String> = lossy_lines(bytes).collect();
        assert_eq!(lines, ["first", "\u{fffd}\u{fffd} second", "third"]);
    }

    #[test]
    fn a_crate_without_std_gets_the_device_lines() {
        let mut needs_std = BTreeSet::new();
        let diagnostic = |code: &str, text: &str| {
            json!({
                "reason": "compiler-message",
                "package_id": "registry+https://r/index#std-kern@1.0.0",
                "target": {"name": "std-kern"},
                "message": {"code": {"code": code}, "message": text, "rendered": "rendered\n"}
            })
            .to_string()
        };
        // rustc's own error is replaced; others are shown as rendered, other lines as they are.
        assert_eq!(shown(&diagnostic("E0463", "can't find crate for `std`"), &mut needs_std), "");
        assert_eq!(
            shown(&diagnostic("E0463", "can't find crate for `alloc`"), &mut needs_std),
            "rendered\n"
        );
        let artifact = json!({"reason": "compiler-artifact"}).to_string();
        assert_eq!(shown(&artifact, &mut needs_std), "");
        assert_eq!(shown("plain text", &mut needs_std), "plain text\n");
        let id = "registry+https://r/index#std-kern@1.0.0".to_string();
        assert_eq!(needs_std, BTreeSet::from([("std_kern".to_string(), id)]));
        let error = needs_std_error("device pass sm_90", &needs_std).unwrap();
        assert!(
            error.starts_with(
                "device pass sm_90 failed: `std_kern` (package \
                 `registry+https://r/index#std-kern@1.0.0`) cannot find `std`: when `core` is \
                 built from source (`--build-std`, or no device sysroot in \
                 `CARGO_OFFLOAD_DEVICE_SYSROOT`)"
            ) && error.contains("\n\n    #![cfg_attr(offload_device, no_std)]\n\n")
                && error.contains("`#[cfg(not(offload_device))]`")
                && !error.contains("-Zbuild-std"),
            "{error}"
        );
        assert_eq!(needs_std_error("device pass sm_90", &BTreeSet::new()), None);
    }
}
