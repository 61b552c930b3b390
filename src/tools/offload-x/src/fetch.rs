//! `[DOWNLOAD]`: the pinned upstream source, from the machine's own Debian mirror.
//!
//! The mirror is never written into the project: it is read from the machine's apt
//! configuration (`/etc/apt/sources.list` and `/etc/apt/sources.list.d/*.list|*.sources`),
//! first `deb`/`deb-src` entry of a Debian archive (one whose suites include a Debian release
//! name, not a `-security` archive). A download goes to `NAME.part`, resumes after an
//! interruption, and becomes `NAME` only once its sha256 matches the pin.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::pins::{POOL_DIR, PinnedFile, SOURCE_FILES};
use crate::ui::{Context, Result, Timer, fail, run_captured};

const STEP: &str = "DOWNLOAD";

/// Mirror URIs of the apt configuration under `etc_apt` (normally `/etc/apt`), in the order
/// apt reads them, security archives excluded.
pub fn apt_mirrors(etc_apt: &Path) -> Vec<String> {
    let mut files: Vec<PathBuf> = vec![etc_apt.join("sources.list")];
    if let Ok(dir) = fs::read_dir(etc_apt.join("sources.list.d")) {
        let mut more: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        more.sort();
        files.extend(more);
    }
    let mut mirrors = Vec::new();
    for file in files {
        let Ok(text) = fs::read_to_string(&file) else { continue };
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".sources") {
            // deb822: stanzas with `URIs:` and `Suites:` fields.
            for stanza in text.split("\n\n") {
                let field = |key: &str| {
                    stanza.lines().find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
                };
                if let (Some(uris), Some(suites)) = (field("URIs:"), field("Suites:")) {
                    if suites.contains("-security") {
                        continue;
                    }
                    mirrors.extend(uris.split_whitespace().map(str::to_string));
                }
            }
        } else if name == "sources.list" || name.ends_with(".list") {
            for line in text.lines() {
                let mut words = line.split_whitespace().filter(|w| !w.starts_with('['));
                match words.next() {
                    Some("deb") | Some("deb-src") => {}
                    _ => continue,
                }
                if let (Some(uri), Some(suite)) = (words.next(), words.next()) {
                    if !suite.contains("-security") {
                        mirrors.push(uri.to_string());
                    }
                }
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    mirrors.retain(|m| seen.insert(m.clone()));
    mirrors
}

/// sha256 of `path`, lowercase hex, by the system's `sha256sum`.
pub fn sha256(path: &Path) -> Result<String> {
    let out = run_captured(STEP, Command::new("sha256sum").arg(path))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.split_whitespace().next() {
        Some(sum) if sum.len() == 64 => Ok(sum.to_string()),
        _ => fail(STEP, format!("sha256sum printed nothing usable for {}", path.display())),
    }
}

/// Checks `path` against `pin`: Ok(true) when it matches, Ok(false) when it does not exist,
/// a [`Failure`](crate::ui::Failure) that names the file and both sums when it differs.
pub fn verify(path: &Path, pin: &PinnedFile) -> Result<bool> {
    if !path.exists() {
        return Ok(false);
    }
    let sum = sha256(path)?;
    if sum != pin.sha256 {
        return fail(
            STEP,
            format!(
                "checksum mismatch for {}: sha256 {sum}, expected {}; delete the file and rerun \
                 (if the mirror serves it so again, the mirror is wrong, not the pin)",
                path.display(),
                pin.sha256
            ),
        );
    }
    Ok(true)
}

/// Makes sure every pinned source file is in `dir`, downloading what is missing.
pub fn ensure_sources(dir: &Path) -> Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).creating(STEP, dir)?;
    let mut paths = Vec::new();
    for pin in &SOURCE_FILES {
        let path = dir.join(pin.name);
        if !verify(&path, pin)? {
            download(&path, pin)?;
        }
        paths.push(path);
    }
    Ok(paths)
}

fn download(path: &Path, pin: &PinnedFile) -> Result<()> {
    let mirrors = apt_mirrors(Path::new("/etc/apt"));
    if mirrors.is_empty() {
        return fail(
            STEP,
            "no Debian mirror in /etc/apt/sources.list{,.d}; add the machine's mirror to apt's \
             configuration and rerun",
        );
    }
    let part = path.with_extension("xz.part");
    let timer = Timer::start(STEP, format!("{} ({} bytes)", pin.name, pin.size));
    let mut last_error = String::new();
    for mirror in &mirrors {
        let url = format!("{}/{POOL_DIR}/{}", mirror.trim_end_matches('/'), pin.name);
        // `-C -` resumes a `.part` left by an interrupted run.
        let status = Command::new("curl")
            .args(["-fL", "--retry", "3", "--connect-timeout", "20", "-sS", "-C", "-", "-o"])
            .arg(&part)
            .arg(&url)
            .status();
        match status {
            Ok(s) if s.success() => {
                let sum = sha256(&part)?;
                if sum != pin.sha256 {
                    let _ = fs::remove_file(&part);
                    return fail(
                        STEP,
                        format!(
                            "checksum mismatch for {} from the apt mirror: sha256 {sum}, \
                             expected {}; the download was deleted, rerun to fetch it again",
                            pin.name, pin.sha256
                        ),
                    );
                }
                fs::rename(&part, path)
                    .context(STEP, || format!("cannot rename {}", part.display()))?;
                timer.done();
                return Ok(());
            }
            Ok(s) => last_error = format!("curl exited with {s}"),
            Err(e) => last_error = format!("cannot run curl: {e}"),
        }
    }
    fail(
        STEP,
        format!(
            "cannot fetch {} from the apt mirror(s) {} ({last_error}); check the network to the \
             package registry and rerun: the partial download resumes",
            pin.name,
            mirrors.len()
        ),
    )
}
