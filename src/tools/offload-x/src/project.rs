//! What the checkout holds: where it is, the bootstrap configuration it gives upstream's
//! `x.py`, and the fingerprint of the compiler sources it adds to upstream's. A leaf module: it
//! imports only the cache and the output helpers.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::{Cache, stage0_toolchain};
use crate::ui::{Context, Result, fail};

/// The project root: the folder that holds `x.py` (given by `x.py` in `$OFFLOAD_FORK_PROJECT`).
pub fn project_root() -> PathBuf {
    std::env::var_os("OFFLOAD_FORK_PROJECT")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default())
}

/// The bootstrap configuration: `config.example.toml` with its placeholders filled in.
pub fn bootstrap_toml(project: &Path, cache: &Cache) -> Result<Vec<u8>> {
    let config = project.join("config.example.toml");
    let template = fs::read_to_string(&config).reading("PATCH", &config)?;
    Ok(template
        .replace("@CACHE@", &cache.root.to_string_lossy())
        .replace("@STAGE0@", &stage0_toolchain().to_string_lossy())
        .into_bytes())
}

/// The environment variable that carries [`source_fingerprint`] into the compiler's build
/// (`rustc_monomorphize` reads it with `option_env!`, so cargo rebuilds that crate when it
/// changes).
pub const SOURCE_FINGERPRINT_VAR: &str = "OFFLOAD_FORK_SOURCE_HASH";

/// A fingerprint of what the project adds to upstream's compiler: every patch in
/// `src/patches/` and every file under `compiler/` and `library/`, by path and content, hashed
/// with the system's `sha256sum` (the first 16 hex digits). The compiler records it, after the
/// upstream commit, as its identity in offload manifests, so that builds of the fork from
/// different sources refuse each other's manifests. Tests, tools and docs are not part of it.
pub fn source_fingerprint(project: &Path) -> Result<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        if !dir.exists() {
            return Ok(());
        }
        for entry in fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() { walk(&path, out)? } else { out.push(path) }
        }
        Ok(())
    }
    let mut files = Vec::new();
    for dir in ["src/patches", "compiler", "library"] {
        walk(&project.join(dir), &mut files).reading("BUILD", &project.join(dir))?;
    }
    files.sort();
    let mut input = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(project).unwrap_or(file);
        input.extend_from_slice(rel.to_string_lossy().as_bytes());
        input.push(0);
        let content = fs::read(file).reading("BUILD", file)?;
        input.extend_from_slice(format!("{}\0", content.len()).as_bytes());
        input.extend_from_slice(&content);
    }
    let mut child = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .running("BUILD", "sha256sum")?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin was piped");
        stdin.write_all(&input).context("BUILD", || "cannot write to sha256sum".into())?;
    }
    let out = child.wait_with_output().context("BUILD", || "sha256sum failed".into())?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.split_whitespace().next() {
        Some(sum) if sum.len() == 64 && out.status.success() => Ok(sum[..16].to_string()),
        _ => fail("BUILD", "sha256sum printed no sum for the project's compiler sources"),
    }
}
