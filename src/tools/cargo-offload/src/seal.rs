//! Content seals: what lets `cargo offload` trust a file it reuses instead of making it again.
//!
//! A file under `<target dir>/offload` that a build reuses (a packaged or loadable image, the
//! registration object, a crate's manifest, a device pass's `host.out`, a linked program) may
//! have been truncated by a full disk, half written by a killed build, or overwritten by hand.
//! Its existence and its modification time say nothing of that; its bytes do. So each such file
//! gets a seal once it is complete: `<file>.sha256` beside it, one line
//! `sha256 <64 hex digits> <length in bytes>`, written to a temporary file and renamed into place
//! (so a seal is never torn). A file is reused only while its seal matches its content
//! ([`intact`]); a missing, unreadable or different seal makes the caller build the file again.
//! SHA-256 (FIPS 180-4) comes from the `sha2` crate that rustc vendors; the cost is a read of
//! each reused file, measured in `src/doc/measurements.md` ("Seals").

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::util::{Context, Result};

/// The seal's line for `bytes` of a file: `sha256 <hex> <length>`.
fn seal_line(digest: &[u8], length: u64) -> String {
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256 {hex} {length}\n")
}

/// The seal's line of the file at `path`, read in blocks (a program may be tens of MB).
pub(crate) fn content_line(path: &Path) -> std::io::Result<String> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut block = vec![0u8; 1 << 16];
    let mut length = 0u64;
    loop {
        let n = file.read(&mut block)?;
        if n == 0 {
            break;
        }
        hasher.update(&block[..n]);
        length += n as u64;
    }
    Ok(seal_line(&hasher.finalize(), length))
}

/// Where the seal of `path` is kept: beside it, `.sha256` appended to its name.
pub(crate) fn seal_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".sha256");
    path.with_file_name(name)
}

/// Seals the complete file at `path` (see the module's doc); writes the seal only when it
/// changed. Fails, naming the file, if it cannot be read or the seal cannot be written.
pub(crate) fn seal(path: &Path) -> Result<()> {
    let line = content_line(path).context_read(path)?;
    let seal = seal_path(path);
    if fs::read_to_string(&seal).is_ok_and(|old| old == line) {
        return Ok(());
    }
    write_atomically(&seal, line.as_bytes())
}

/// Writes `bytes` to `path` through a temporary file beside it that is renamed into place, so
/// that a reader finds the old content or the new one, never a part.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp{}", std::process::id()));
    let temporary = path.with_file_name(name);
    fs::write(&temporary, bytes)
        .and_then(|()| fs::rename(&temporary, path))
        .inspect_err(|_| {
            let _ = fs::remove_file(&temporary);
        })
        .context_write(path)
}

/// Whether the file at `path` exists and its seal matches its content. The length is compared
/// first, so a truncated file costs no read.
pub(crate) fn intact(path: &Path) -> bool {
    let Ok(recorded) = fs::read_to_string(seal_path(path)) else { return false };
    let length = recorded.trim_end().rsplit(' ').next().and_then(|l| l.parse::<u64>().ok());
    let Ok(meta) = fs::metadata(path) else { return false };
    if length != Some(meta.len()) {
        return false;
    }
    content_line(path).is_ok_and(|line| line == recorded)
}

/// Removes the file at `path` and its seal, whichever exist.
pub(crate) fn remove_sealed(path: &Path) {
    let _ = fs::remove_file(path);
    let _ = fs::remove_file(seal_path(path));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sealed file is intact until its bytes change, however its length and time stay; a
    /// file without a seal, or whose seal is damaged, is not.
    #[test]
    fn a_seal_holds_only_for_the_content_it_was_made_of() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-seal-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("host.offload");
        fs::write(&file, b"image bytes").unwrap();
        assert!(!intact(&file), "no seal yet");
        seal(&file).ok().unwrap();
        assert!(intact(&file));
        let line = fs::read_to_string(seal_path(&file)).unwrap();
        // The SHA-256 of "image bytes", as `sha256sum` prints it.
        assert_eq!(
            line,
            "sha256 de7030234493a8bea844dbe1d8676e68a2c1a4b014c721f0425a22b6df66faec 11\n"
        );
        fs::write(&file, b"image bytez").unwrap();
        assert!(!intact(&file), "same length, other bytes");
        fs::write(&file, b"image").unwrap();
        assert!(!intact(&file), "truncated");
        seal(&file).ok().unwrap();
        assert!(intact(&file));
        fs::write(seal_path(&file), b"sha256 garbage").unwrap();
        assert!(!intact(&file), "a damaged seal");
        remove_sealed(&file);
        assert!(!file.exists() && !seal_path(&file).exists());
        assert!(!intact(&file), "missing");
        assert!(seal(&file).is_err(), "nothing to seal");
        let leftovers: Vec<_> = fs::read_dir(&dir).unwrap().collect();
        assert!(leftovers.is_empty(), "no temporary file is left: {leftovers:?}");
        let _ = fs::remove_dir_all(&dir);
    }
}
