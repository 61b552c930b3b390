//! A one-file `std` program's CPU device image carries no backtrace machinery (issue 67, point
//! 3; scenario S45 of `src/doc/scenarios.md`). The program is `offload-cargo-std-program`'s
//! (`println!`, `Vec`s, a kernel that allocates and prints). `std`'s panic hook on the CPU
//! device (patch 0064) prints no backtrace, so the release image defines none of the unwinder's
//! walk and the symbolizer (`gimli`, `addr2line`, `rustc_demangle`, `miniz_oxide`, `std`'s
//! `backtrace_rs`), 143 of its symbols, and it is at most 120 KB (368 KB before, 73 KB with
//! patch 0064: `src/doc/measurements.md`). A kernel that indexes past its slice, run with
//! `RUST_BACKTRACE=1`, still prints the panic's message and location, then one line that says
//! why there is no backtrace (where `stack backtrace:` with no frames stood), then the CPU
//! device's line with the kernel and the work item; and the program still computes right.

//@ only-x86_64
//@ needs-offload

use std::path::Path;

use run_make_support::offload::{cargo_offload, cargo_offload_fails_with, copy_dir, llvm_tool};
use run_make_support::{cmd, cwd, source_root};

/// What the image must not define: the crates of `std`'s symbolizer and its stack walk (its
/// symbols' demangled paths start with these).
const BACKTRACE_CRATES: [&str; 5] =
    ["gimli::", "addr2line::", "rustc_demangle::", "miniz_oxide::", "backtrace_rs::"];

/// At most this many bytes (issue 67's target): the image was 368,376 bytes with the
/// symbolizer, 73,264 without it.
const MAX_IMAGE_BYTES: u64 = 120_000;

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-cargo-std-program/ws"), &ws);
    let run = cargo_offload(&ws, &["run", "--release", "--offload-arch=host", "--", "1000"]);
    let stdout = run.stdout_utf8();
    assert!(stdout.contains("scale: 0 of 1000 wrong"), "{stdout}");

    let image = ws.join("target/offload/images/release/host.so");
    let bytes = std::fs::metadata(&image).unwrap().len();
    let symbols = defined_symbols(&image);
    let backtrace: Vec<&String> =
        symbols.iter().filter(|f| BACKTRACE_CRATES.iter().any(|c| f.contains(c))).collect();
    assert!(backtrace.is_empty(), "the image defines backtrace machinery: {backtrace:#?}");
    assert!(bytes <= MAX_IMAGE_BYTES, "the image has {bytes} bytes ({} symbols)", symbols.len());

    let rust_backtrace = Path::new("1");
    let oob = ["run", "--release", "--offload-arch=host", "--", "1000", "oob"];
    let env = [("RUST_BACKTRACE", rust_backtrace)];
    let stderr = cargo_offload_fails_with(&ws, &oob, &env).stderr_utf8();
    let message = stderr.find("index out of bounds: the len is 1000 but the index is 1000");
    let note = stderr.find("note: no backtrace: a kernel on the offload CPU device has none");
    let work_item = stderr.find("stopped the program on the CPU device in work item");
    assert!(
        stderr.contains("panicked at src/main.rs:")
            && message.is_some()
            && message < note
            && note < work_item
            && !stderr.contains("stack backtrace:"),
        "{stderr}"
    );
}

/// The demangled names of the symbols that the shared object `so` defines.
fn defined_symbols(so: &Path) -> Vec<String> {
    let mut nm = cmd(llvm_tool("llvm-nm"));
    nm.args(["--defined-only", "--demangle", "--format=just-symbols"]).arg(so);
    nm.run().stdout_utf8().lines().map(str::to_string).collect()
}
