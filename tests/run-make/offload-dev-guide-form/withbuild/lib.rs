//! A dependency with a build script, as the guide's `libc` is: the build script must have run.

#![no_std]

#[cfg(not(withbuild_ran))]
compile_error!("the build script of `withbuild` did not run");

/// What the build script found.
pub const BUILD_SCRIPT_RAN: bool = cfg!(withbuild_ran);
