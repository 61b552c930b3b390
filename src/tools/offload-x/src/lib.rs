//! Build harness of the offload fork.
//!
//! The fork's repository holds only what we write: new compiler files at their upstream paths
//! (`compiler/`, `library/`, `tests/`), patches against upstream files (`src/patches/`), tools
//! and docs. This crate turns that plus the pinned upstream source into a stage-1 toolchain:
//!
//! 1. `[CHECK]` the machine: the rustup 1.95.0 toolchain (stage 0) and free disk;
//! 2. `[DOWNLOAD]` Debian's `rustc` 1.95.0+dfsg1-2 source tarballs from the mirror named in the
//!    machine's apt configuration, checked against pinned sha256 sums ([`pins`], [`fetch`]);
//! 3. `[SYSROOT]` a Debian trixie root with LLVM 22 made by `debootstrap` ([`sysroot`]);
//! 4. `[EXTRACT]` the source with Debian's patch series and `debian/rules`' preparation applied,
//!    recorded as the base commit of a git repository kept outside the tree ([`upstream`]);
//! 5. `[PATCH]` our patches and new files, written only where the result differs from what is
//!    on disk, so an unchanged project rebuilds nothing ([`materialize`]);
//! 6. `[BUILD]`, `[TEST]`, `[RUN]`: upstream's bootstrap inside the sysroot ([`bootstrap`]),
//!    the device sysroots ([`device_sysroot`]), and NVIDIA's `ptxas`/`nvlink` from a pinned
//!    wheel, which check the nvptx images ([`cuda`]);
//! 7. `[STYLE]`: upstream's tidy and rustfmt on our files, part of `./x.py test`
//!    ([`mod@commands::style`]); `[SERIES]`: the patch series as a stack of commits, and a
//!    check that each prefix builds ([`mod@commands::series`]); `[OUTSIDE]`: offload programs
//!    on this machine's own OS ([`mod@commands::outside`]);
//! 8. `[JOB]` and `[BENCH]`: the main job ([`mod@commands::job`]) and the device-pass benchmark
//!    ([`mod@commands::bench`]); `[DIST]`: the toolchain as a folder and a tarball that
//!    installs without root ([`mod@commands::dist`]).
//!
//! The modules come in three layers, each calling only the ones below it:
//! - [`commands`]: the verbs of `./x.py`, one function each, which `main.rs` calls;
//! - [`stages`]: what several verbs run first, steps 1 to 5 ([`fn@stages::prepare`]) and step 6's
//!   toolchain ([`fn@stages::build`]);
//! - the leaves, which call no verb and no stage: [`bootstrap`], [`cache`], [`cuda`],
//!   [`device_sysroot`], [`fetch`], [`fn_length`], [`materialize`], [`pins`], [`project`],
//!   [`sysroot`], [`test_outcomes`], [`toolchain`], [`toolchain_lock`], [`tools`], [`ui`]
//!   (progress lines, and [`ui::Failure`] with [`ui::Context`], the one way an error becomes a
//!   failure) and [`upstream`].
//!
//! Every step that takes long is skipped when its stamp in the cache says it is complete; a
//! step interrupted half-way leaves its work in a `*.tmp` path that the next run discards.

pub mod bootstrap;
pub mod cache;
pub mod commands;
pub mod cuda;
pub mod device_sysroot;
pub mod fetch;
pub mod fn_length;
pub mod materialize;
pub mod pins;
pub mod project;
pub mod stages;
pub mod sysroot;
pub mod test_outcomes;
pub mod toolchain;
pub mod toolchain_lock;
pub mod tools;
pub mod ui;
pub mod upstream;
