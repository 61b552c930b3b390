//! `offload-tidy ROOT`: the checks of upstream's tidy (`src/tools/tidy` of the materialized tree,
//! linked as a library) that read source files, over the tree at ROOT: `style` (line length,
//! whitespace, `ignore-tidy-*` directives, ...) and `alphabetical` on `compiler`, `library`,
//! `src` and `tests`, `edition` on `compiler`, `library` and `src`.
//!
//! Tidy's own `main` also runs the checks of the repository as a whole (`deps`, `extdeps`,
//! `features`, ...), and on Debian's source, which prunes vendored crates and submodules, its
//! `deps` check panics, which stops the run before `style` reports anything. The per-file checks
//! run here are the same functions, with the same context and output (`tidy [CHECK (PATH)]:
//! FILE:LINE: problem`, one line each). Exits 1 when any check failed, whoever's file it was:
//! the harness (`offload-x`, `commands/style.rs`) keeps the lines that name our files.

use std::path::PathBuf;

use tidy::diagnostics::{TidyCtx, TidyFlags};

fn main() {
    let Some(root) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: offload-tidy ROOT");
        std::process::exit(2);
    };
    let ctx = TidyCtx::new(&root, false, TidyFlags::new(false));
    for dir in ["compiler", "library", "src", "tests"] {
        let path = root.join(dir);
        tidy::style::check(&path, ctx.clone());
        tidy::alphabetical::check(&path, ctx.clone());
        if dir != "tests" {
            tidy::edition::check(&path, ctx.clone());
        }
    }
    let failed = ctx.into_failed_checks();
    // The harness requires this line: a check that panicked never gets here.
    eprintln!("offload-tidy: checked compiler, library, src, tests");
    std::process::exit(if failed.is_empty() { 0 } else { 1 });
}
