//! The stages that several verbs of [`crate::commands`] run first: [`fn@prepare`] (the
//! machine checked, the sources downloaded, the sysroot made, upstream extracted and our
//! patches materialized) and [`fn@build`] (`prepare`, then the stage-1 toolchain, the GPU and
//! device sysroots, the vendors' tools and `cargo offload`).
//!
//! A stage calls the leaf modules of the crate and the stage before it, never a verb: `./x.py
//! prepare` and `./x.py build` are these functions themselves, and every other verb that needs
//! a toolchain starts with one of them.

mod build;
mod prepare;

pub use build::build;
pub(crate) use build::{library_targets, restore_gpu_sysroot};
pub use prepare::{check_machine, prepare};
