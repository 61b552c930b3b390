//! `./x.py export` and `./x.py check`: the materialized tree back into the project.

use std::path::Path;

use crate::cache::Cache;
use crate::materialize::{self, Drift};
use crate::ui::{Result, fail};
use crate::upstream;

/// `export` (write) and `check` (compare only).
pub fn export(
    project: &Path,
    cache: &Cache,
    write: bool,
    new_patch: Option<&str>,
) -> Result<Vec<Drift>> {
    if !upstream::is_ready(cache) {
        return fail(
            "PATCH",
            format!("no materialized tree at {}: run `./x.py build`", cache.tree().display()),
        );
    }
    materialize::export(project, cache, write, new_patch)
}
