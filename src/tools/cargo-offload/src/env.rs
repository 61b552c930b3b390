//! The names of the `CARGO_OFFLOAD_*` environment variables, each defined once here: those that
//! a user or `./x.py` sets for `cargo offload`, and those through which `cargo offload` talks to
//! the copies of itself that cargo runs as `RUSTC_WRAPPER` or `./x.py` runs with `--run-plan`
//! (those that say which role a copy plays, and what its pass is, are read in one place:
//! [`crate::role`]). (The usage text names the user's own as text; a test checks that it names
//! them all.)

/// The device sysroot: a sysroot whose `lib/rustlib/<target>/lib` holds `core` for each device
/// target (the GPU targets and the host's own, for the CPU device), built once per toolchain
/// with `-Zalways-encode-mir`, so that a device pass instantiates in its image whatever its
/// kernels reach of `core` without building `core` for the project. `./x.py build` makes it;
/// `./x.py cargo` sets this variable (unless its caller did). Unset, each device pass builds
/// `core` from source (`--build-std`). Its `stamp` file is part of the compiler's identity
/// ([`crate::passes::forget_other_compilers_output`]).
pub(crate) const DEVICE_SYSROOT: &str = "CARGO_OFFLOAD_DEVICE_SYSROOT";

/// The folder of LLVM's tools (`llc`, `ld.lld`, `llvm-offload-binary`, `llvm-offload-wrapper`),
/// set by the user; default `/usr/lib/llvm-22/bin`, and a tool missing there is taken from
/// `PATH` ([`crate::vendor::llvm_tool`]).
pub(crate) const LLVM_BIN: &str = "CARGO_OFFLOAD_LLVM_BIN";

/// The folder of NVIDIA's `ptxas` and `nvlink`, set by the user or by `./x.py cargo` once
/// `./x.py build` fetched them; unset, they are taken from `PATH` ([`crate::vendor::cuda_tool`]).
pub(crate) const CUDA_BIN: &str = "CARGO_OFFLOAD_CUDA_BIN";

/// The folder of LLVM's offload runtime (`libomptarget`, `libomp`), which the programs link
/// and find through their rpath; set by the user, default `/usr/lib/llvm-22/lib`
/// ([`crate::vendor::runtime_lib_dir`]).
pub(crate) const RUNTIME_LIB: &str = "CARGO_OFFLOAD_RUNTIME_LIB";

/// Set by `cargo offload` for the host build, whose `RUSTC_WRAPPER` is `cargo-offload`: it
/// tells that copy which pass it wraps, and holds the folder of the manifests, one per crate
/// ([`crate::wrapper::host`]).
pub(crate) const HOST_METADATA_DIR: &str = "CARGO_OFFLOAD_HOST_METADATA_DIR";

/// Set by `cargo offload` for the host build: the image path that every crate's
/// `-Zoffload=Host=<image>` names (the first arch's `host.out`; the compilations do not read
/// it, since they write the manifests the images are built from).
pub(crate) const HOST_IMAGE: &str = "CARGO_OFFLOAD_HOST_IMAGE";

/// Set by `cargo offload` for the host build's run that links the programs (the second run,
/// or the one run of [`HOST_COMPILE_AND_LINK`]): the link arguments that add the registration
/// of the images and the offload runtime, separated by `\x1f` (empty when no kernel is
/// launched). Unset in a first run that links nothing.
pub(crate) const HOST_LINK: &str = "CARGO_OFFLOAD_HOST_LINK";

/// Set by `cargo offload`, beside [`HOST_LINK`], for a host build that compiles and links in
/// one run, with the images that the device passes built before it
/// ([`crate::wrapper::host`]): each program is compiled and linked in one
/// compilation, and recorded as in a first run.
pub(crate) const HOST_COMPILE_AND_LINK: &str = "CARGO_OFFLOAD_HOST_COMPILE_AND_LINK";

/// Set by `cargo offload` for the host build: the folder where the wrapper records the
/// programs that the first run compiled ([`crate::manifests::root_manifests`] reads it).
pub(crate) const HOST_PROGRAMS: &str = "CARGO_OFFLOAD_HOST_PROGRAMS";

/// Set by `cargo offload` for the host build when the user has a rustc wrapper of their own
/// (`RUSTC_WRAPPER` or `build.rustc-wrapper`, [`crate::user_wrapper::find`]): its path or
/// name, through which the host build's wrapper runs rustc.
pub(crate) const USER_RUSTC_WRAPPER: &str = "CARGO_OFFLOAD_USER_RUSTC_WRAPPER";

/// Set by `cargo offload` for the device pass of a program that defines kernels: the crate
/// name of that program, which the wrapper compiles as an `rlib`
/// ([`crate::wrapper::device::wrap_device_rustc`]).
pub(crate) const DEVICE_PROGRAM: &str = "CARGO_OFFLOAD_DEVICE_PROGRAM";

/// Set by `cargo offload` for each device pass, whose `RUSTC_WRAPPER` is `cargo-offload`: the
/// rustc flags of each of the pass's targets
/// ([`crate::wrapper::device::encode_target_flags`]), which the wrapper adds to the crates it
/// compiles for that target ([`crate::wrapper::device::wrap_device_rustc`]).
pub(crate) const DEVICE_TARGET_FLAGS: &str = "CARGO_OFFLOAD_DEVICE_TARGET_FLAGS";

/// Set by `cargo offload` for each device pass: a file to which the wrapper appends the target
/// of each compilation that failed, one a line, so that the error names the archs that failed
/// ([`crate::wrapper::device::wrap_device_rustc`]).
pub(crate) const DEVICE_FAILURES: &str = "CARGO_OFFLOAD_DEVICE_FAILURES";

/// Set by `./x.py cargo`: the file into which `run` and `test` write the programs to run
/// ([`crate::launch::Plan`]) instead of running them, for `./x.py` to run outside the sysroot.
/// `cargo offload` removes it from the cargo passes and from the programs it runs, so that a
/// nested `cargo offload` runs its programs itself.
pub(crate) const RUN_PLAN: &str = "CARGO_OFFLOAD_RUN_PLAN";

/// Set by `./x.py` for `cargo-offload --run-plan`: the toolchain's sysroot as the machine sees
/// it (absolute), under which the plan's loader and library folders lie.
pub(crate) const ROOT: &str = "CARGO_OFFLOAD_ROOT";

/// Set by `./x.py cargo` and for `--run-plan`: the folders that `./x.py cargo` binds into the
/// sysroot at their own paths, `:`-separated. A path under one of them is the same outside;
/// any other path is the sysroot's own, found under [`ROOT`]. `bundle` writes only under them.
pub(crate) const BINDS: &str = "CARGO_OFFLOAD_BINDS";

/// Set by a test, never by `cargo offload`: the phase at whose start `cargo offload` ends
/// itself with `SIGKILL` ([`crate::util::stop_point`]), so that a test can check that the next
/// build heals whatever a build stopped there left (`tests/run-make/offload-cargo-heal`).
pub(crate) const STOP_AT: &str = "CARGO_OFFLOAD_STOP_AT";
