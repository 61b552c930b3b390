//! Upstream's `x.py` (bootstrap) run in the materialized tree, inside the sysroot: what the
//! verbs that build and test start. A leaf module: it imports no verb.

use std::process::{Command, ExitStatus};

use crate::cache::Cache;
use crate::project::{SOURCE_FINGERPRINT_VAR, project_root, source_fingerprint};
use crate::sysroot::Enter;
use crate::ui::{Context, Result, fail};

/// Runs upstream's `x.py` in the tree, inside the sysroot.
pub fn bootstrap(cache: &Cache, step: &'static str, args: &[&str]) -> Result<()> {
    let status = crate::sysroot::status(step, &mut bootstrap_command(cache, args)?)?;
    bootstrap_status(step, args, status)
}

/// As [`bootstrap`], and also returns what bootstrap printed on its standard output, which
/// passes through to ours line by line as it comes.
pub fn bootstrap_tee(cache: &Cache, step: &'static str, args: &[&str]) -> Result<String> {
    use std::io::{BufRead, BufReader, Write};
    let mut command = bootstrap_command(cache, args)?;
    let mut child = crate::sysroot::spawn(step, command.stdout(std::process::Stdio::piped()))?;
    let mut output = String::new();
    let mut reader = BufReader::new(child.stdout.take().expect("a piped standard output"));
    let mut line = Vec::new();
    let mut stdout = std::io::stdout();
    // Bytes, not `lines()`: a test's output need not be UTF-8, and the terse renderer writes
    // no newline until a row is full, so each chunk is echoed as it comes.
    while reader
        .read_until(b'\n', &mut line)
        .context(step, || "cannot read bootstrap's output".into())?
        > 0
    {
        let _ = stdout.write_all(&line);
        let _ = stdout.flush();
        output.push_str(&String::from_utf8_lossy(&line));
        line.clear();
    }
    let status = child.wait().context(step, || "cannot wait for unshare".into())?;
    bootstrap_status(step, args, status)?;
    Ok(output)
}

/// Upstream's `x.py` with `args`, in the tree, inside the sysroot.
fn bootstrap_command(cache: &Cache, args: &[&str]) -> Result<Command> {
    let project = project_root();
    let fingerprint = source_fingerprint(&project)?;
    // The project is visible inside, at its own path, for the run-make tests that build its
    // bundled example as a Cargo program (`OFFLOAD_FORK_PROJECT`).
    Enter::new(cache, &cache.tree(), "python3")
        .arg("x.py")
        .args(args.iter().copied())
        .env(SOURCE_FINGERPRINT_VAR, fingerprint)
        .env("OFFLOAD_FORK_PROJECT", &project)
        .bind(&project)
        .command(cache)
}

/// `Ok` for a successful bootstrap `status`, else a failure of `step` that names `args`.
fn bootstrap_status(step: &'static str, args: &[&str], status: ExitStatus) -> Result<()> {
    if !status.success() {
        return fail(
            step,
            format!("`x.py {}` failed ({status}); its output is above", args.join(" ")),
        );
    }
    Ok(())
}
