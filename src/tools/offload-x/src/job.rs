//! The main job: the bundled offload example through the device and host passes.

use std::path::Path;

use crate::cache::Cache;
use crate::ui::Result;

/// Builds what is missing, then compiles the example and reports the device image.
pub fn run(project: &Path, cache: &Cache) -> Result<()> {
    crate::commands::build(project, cache)?;
    Ok(())
}
