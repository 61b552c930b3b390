//! Build harness of the offload fork.
//!
//! The fork's repository holds only what we write: new compiler files at their upstream paths
//! (`compiler/`, `library/`, `tests/`), patches against upstream files (`src/patches/`), tools
//! and docs. This crate turns that plus the pinned upstream source into a stage-1 toolchain:
//!
//! 1. `[CHECK]` the machine: the rustup 1.95.0 toolchain (stage 0) and free disk;
//! 2. `[DOWNLOAD]` Debian's `rustc` 1.95.0+dfsg1-2 source tarballs from the mirror named in the
//!    machine's apt configuration, checked against pinned sha256 sums ([`pins`]);
//! 3. `[SYSROOT]` a Debian trixie root with LLVM 22 made by `debootstrap` ([`sysroot`]);
//! 4. `[EXTRACT]` the source with Debian's patch series and `debian/rules`' preparation applied,
//!    recorded as the base commit of a git repository kept outside the tree ([`upstream`]);
//! 5. `[PATCH]` our patches and new files, written only where the result differs from what is
//!    on disk, so an unchanged project rebuilds nothing ([`materialize`]);
//! 6. `[BUILD]`, `[TEST]`, `[RUN]`: upstream's bootstrap inside the sysroot ([`commands`],
//!    [`bootstrap`]), and NVIDIA's `ptxas`/`nvlink` from a pinned wheel, which check the nvptx
//!    images ([`cuda`]);
//! 7. `[STYLE]`: upstream's tidy and rustfmt on our files, part of `./x.py test` ([`style`]);
//!    `[SERIES]`: the patch series as a stack of commits, and a check that each prefix builds
//!    ([`series`]); `[OUTSIDE]`: offload programs on this machine's own OS ([`outside`]);
//! 8. `[JOB]` and `[BENCH]`: the main job ([`job`]) and the device-pass benchmark ([`bench`]);
//!    `[DIST]`: the toolchain as a folder and a tarball that installs without root ([`dist`]).
//!
//! Every step that takes long is skipped when its stamp in the cache says it is complete; a
//! step interrupted half-way leaves its work in a `*.tmp` path that the next run discards.

pub mod bench;
pub mod bootstrap;
pub mod cache;
pub mod commands;
pub mod cuda;
pub mod device_sysroot;
pub mod dist;
pub mod dist_check;
pub mod fetch;
pub mod fn_length;
pub mod gpu_check;
pub mod job;
pub mod materialize;
pub mod outside;
pub mod pins;
pub mod project;
pub mod series;
pub mod style;
pub mod sysroot;
pub mod test_outcomes;
pub mod toolchain;
pub mod toolchain_lock;
pub mod tools;
pub mod ui;
pub mod upstream;
