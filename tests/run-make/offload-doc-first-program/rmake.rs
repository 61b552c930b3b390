//! The first program of `src/doc/cargo-offload.md` ("A first program") builds and runs as the
//! page says. The test takes the two Rust blocks of that section from the page itself (the
//! kernel library, `// kernels/src/lib.rs`, and the program, `// runner/src/main.rs`), puts them
//! into the workspace that the section's TOML block describes, runs `cargo offload run
//! --release --offload-arch=host -- 100000` and checks that the program prints the lines that
//! the page says it prints: its first values and that none of the 100,000 elements differs from
//! the host's. So the page's program, `offload!`, `#[offload_kernel]` and slices
//! included, is the one that is tested.

//@ only-x86_64
//@ needs-offload

use std::path::PathBuf;

use run_make_support::offload::{cargo_offload, package_manifest};
use run_make_support::{cwd, env_var, rfs};

/// The Rust code block of `section` that starts with the comment line `first_line`.
fn rust_block(section: &str, first_line: &str) -> String {
    let start = section
        .find(&format!("```rust\n{first_line}\n"))
        .unwrap_or_else(|| panic!("no Rust block starting with `{first_line}` in the section"));
    let code = &section[start + "```rust\n".len()..];
    code[..code.find("```").expect("an unterminated code block")].to_string()
}

fn main() {
    let page = PathBuf::from(env_var("OFFLOAD_FORK_PROJECT")).join("src/doc/cargo-offload.md");
    let page = rfs::read_to_string(&page);
    let start = page.find("## A first program").expect("no section \"A first program\"");
    let section = &page[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)];

    let ws = cwd().join("first");
    rfs::create_dir_all(ws.join("kernels/src"));
    rfs::create_dir_all(ws.join("runner/src"));
    // The workspace as the section's TOML block describes it.
    assert!(section.contains("members = [\"kernels\", \"runner\"]"), "the section's workspace");
    rfs::write(
        ws.join("Cargo.toml"),
        "[workspace]\nmembers = [\"kernels\", \"runner\"]\nresolver = \"3\"\n",
    );
    rfs::write(ws.join("kernels/Cargo.toml"), package_manifest("kernels", ""));
    assert!(section.contains("kernels = { path = \"../kernels\" }"), "the runner's dependency");
    rfs::write(
        ws.join("runner/Cargo.toml"),
        package_manifest("runner", "kernels = { path = \"../kernels\" }\n"),
    );
    rfs::write(ws.join("kernels/src/lib.rs"), rust_block(section, "// kernels/src/lib.rs"));
    rfs::write(ws.join("runner/src/main.rs"), rust_block(section, "// runner/src/main.rs"));

    let command = "cargo offload run --release --offload-arch=host -- 100000";
    assert!(section.contains(command), "the section's command");
    // The program's first values, then its own check of all 100,000 elements against the host
    // (a NaN or an element that no work item wrote counts as different).
    let printed = ["`[1.0, 3.0, 5.0, 7.0]`", "`0 of 100000 elements differ from the host's`"];
    let run = cargo_offload(&ws, &["run", "--release", "--offload-arch=host", "--", "100000"]);
    let stdout = run.stdout_utf8();
    for line in printed {
        assert!(section.contains(line), "the section's output {line}");
        assert!(
            stdout.lines().any(|printed| printed == line.trim_matches('`')),
            "the first program did not print {line}:\n{stdout}"
        );
    }
}
