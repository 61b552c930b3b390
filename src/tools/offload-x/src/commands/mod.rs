//! The verbs of `x.py`, a module each; `main.rs` parses the command line into a `Verb` and calls
//! them. The verbs build on one another (`test` builds first) and on the leaf modules of the
//! crate, which import no verb: `bootstrap` (upstream's `x.py`), `cache`, `project`,
//! `toolchain`, `tools`, `sysroot` and `ui`. The verbs with a module of their own elsewhere are
//! `job`, `bench`, `outside`, `gpu_check`, `series` and `style`.

mod export;
mod fuzz;
mod test;
mod tool;

pub use crate::stages::{build, prepare};
pub use export::export;
pub use fuzz::{SHORT_FUZZ_COUNT, fuzz, fuzz_run};
pub use test::{UPSTREAM_SUITES, our_suites, test};
pub use tool::run_tool;
