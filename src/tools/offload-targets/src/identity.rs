//! What a build of the fork's compiler is, as the tools' caches compare it. Builds of the fork
//! share `rustc -vV` (upstream's version and commit), so the tools add the name, size and
//! modification time of the compiler's driver library (and, for the device sysroot, of the
//! host's `core`, `alloc` and `std`). `./x.py build` records it in the device sysroot's
//! `stamp`; `cargo offload` compares it with the record in its target folder. Both must see
//! the same lines for the same files, so both take them from here.

use std::fs;
use std::path::Path;

/// The driver library's name prefix in a sysroot's `lib` folder.
const DRIVER: &str = "librustc_driver";

/// The files of `dir` whose names start with one of `prefixes`, each as one line
/// "name size mtime" (size in bytes, modification time in nanoseconds since the Unix epoch),
/// sorted by name. A file whose metadata cannot be read is left out; an unreadable `dir` gives
/// no lines.
pub fn files_identity(dir: &Path, prefixes: &[&str]) -> Vec<String> {
    let mut files: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| prefixes.iter().any(|p| e.file_name().to_string_lossy().starts_with(p)))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
            Some(format!(
                "{} {} {}",
                e.file_name().to_string_lossy(),
                meta.len(),
                modified.as_nanos()
            ))
        })
        .collect();
    files.sort();
    files
}

/// The identity of the compiler whose sysroot is `sysroot`: [`files_identity`] of its driver
/// library (`<sysroot>/lib/librustc_driver-*.so`), one line per file.
pub fn driver_identity(sysroot: &Path) -> Vec<String> {
    files_identity(&sysroot.join("lib"), &[DRIVER])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_size_and_time_sorted_and_filtered() {
        let dir = std::env::temp_dir().join(format!("offload-identity-{}", std::process::id()));
        fs::create_dir_all(dir.join("lib")).unwrap();
        fs::write(dir.join("lib/librustc_driver-b.so"), b"12345").unwrap();
        fs::write(dir.join("lib/librustc_driver-a.so"), b"1").unwrap();
        fs::write(dir.join("lib/libother.so"), b"1").unwrap();
        let lines = driver_identity(&dir);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("librustc_driver-a.so 1 "), "{lines:?}");
        assert!(lines[1].starts_with("librustc_driver-b.so 5 "), "{lines:?}");
        assert!(driver_identity(&dir.join("missing")).is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }
}
