//! The verbs of `x.py`, each a function of this module that `main.rs` calls once it has parsed
//! the command line into a `Verb`:
//!
//! - [`fn@job`] (the main job) and [`image`] (what a device image holds): [`mod@job`];
//! - [`prepare`] and [`build`]: the stages themselves ([`crate::stages`]);
//! - [`fn@test`] (everything, or the upstream test paths given) and [`fn@fuzz`];
//! - [`fn@style`] ([`mod@style`]), [`fn@series`] ([`mod@series`]),
//!   [`fn@outside`] ([`mod@outside`]);
//! - [`fn@gpu_check`] ([`mod@gpu_check`]), [`fn@dist`] ([`mod@dist`]),
//!   [`fn@dist_check`] ([`mod@dist_check`]), [`fn@bench`] ([`mod@bench`]); `dist`'s components
//!   (rustdoc, clippy, rustfmt, `rust-src`): [`mod@components`];
//! - [`run_tool`] (`rustc`, `cargo`), [`manifest`] and [`fn@export`] (`export` and `check`).
//!
//! A verb starts with the stage it needs ([`crate::stages`]: prepare or build) and builds on the
//! leaf modules of the crate: `bootstrap` (upstream's `x.py`), `cache`, `cuda`,
//! `device_sysroot`, `fetch`, `fn_length`, `materialize`, `pins`, `project`, `sysroot`,
//! `test_outcomes`, `toolchain`, `toolchain_lock`, `tools`, `ui` and `upstream`. Only verbs call
//! verbs (`test` runs the checks of `style`, `series`, `fuzz`, `outside`, `dist_check` and
//! `gpu_check`; `dist_check` uses the tarball of `dist`); neither a stage nor a leaf imports
//! anything from here.

pub mod bench;
pub mod components;
pub mod dist;
pub mod dist_check;
mod export;
mod fuzz;
pub mod gpu_check;
pub mod job;
pub mod outside;
pub mod series;
pub mod style;
mod test;
mod tool;

use std::path::Path;

pub use bench::run as bench;
pub use dist::run as dist;
pub use dist_check::check as dist_check;
pub use export::export;
pub use fuzz::{SHORT_FUZZ_COUNT, fuzz, fuzz_run};
pub use gpu_check::run as gpu_check;
pub use job::{print_image as image, run as job};
pub use outside::run as outside;
pub use series::run as series;
pub use test::{UPSTREAM_SUITES, our_suites, test};
pub use tool::{manifest, run_tool};

use crate::cache::Cache;
pub use crate::stages::{build, prepare};
use crate::ui::Result;

/// `./x.py style`: the tree prepared, then upstream's rustfmt ([`style::rustfmt`]) and tidy
/// ([`style::tidy`]) on the files we add or patch, and our tools' style.
pub fn style(project: &Path, cache: &Cache) -> Result<()> {
    prepare(project, cache)?;
    style::rustfmt(cache)?;
    style::tidy(project, cache)
}
