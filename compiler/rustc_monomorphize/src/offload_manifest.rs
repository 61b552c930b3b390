//! The offload manifest: which kernel instances a crate graph launches.
//!
//! GPU offload compiles one crate graph twice, for the host and for a GPU target. The base
//! device pass codegens every mono root of the crate, `core` included, although the GPU only
//! ever runs the kernels that the host launches. The manifest tells the device pass what
//! those are.
//!
//! # Who writes it
//!
//! The *host metadata pass* (`-Zoffload=HostMetadata=<path>`, host target) runs eager mono
//! item collection (every non-generic function of the crate is a root), then scans the MIR of
//! every collected function for calls of `core::intrinsics::offload`. The first generic
//! argument of each call is the launched function's type; it must be the `FnDef` of a
//! `#[rustc_offload_kernel]` function, and the instance it resolves to (generic arguments
//! included) is recorded. Because collection starts from the crate's mono roots, launches
//! inside generic helpers (`fn launch<T>()`) are found once per instantiation.
//!
//! These are the crate's launches, the `offload_launches` query: the launches that its mono
//! collection instantiates, its own code's and those of the generic (or cross-crate
//! inlinable) functions of other crates that it instantiates. They also go into the crate's
//! metadata. A dependency's non-generic function is collected by the dependency, not by the
//! crates that call it, so the manifest of a crate is the union of `offload_launches` over the
//! crate and every crate of its graph, each kernel with the names of the crates that recorded
//! it (`launched_by`). Every crate of the graph goes through the pass (one flag in `RUSTFLAGS`
//! does that under cargo); a dependency compiled without it contributes nothing. Each crate
//! writes the manifest of its own graph, the root last; a file at that path that is not an
//! offload manifest is never replaced.
//!
//! The pass then stops: nothing is codegened or linked (`rustc_interface` skips both), only
//! the manifest (and, with `--emit=metadata`, the rmeta that dependents read) is written.
//!
//! # Who reads it
//!
//! The *device pass* (`-Zoffload=Device=<path>`, GPU target) replaces mono root collection
//! ([`device_roots`]): the roots are exactly the manifest's kernel instances, so no `pub`
//! function, no `main`, no unlaunched kernel and nothing of `core` becomes a root; the
//! collector then adds what the kernels reach. `-Zoffload=Device=<path>` implies
//! `-Zcross-crate-inline-threshold=always` (see `rustc_session::config`), so every function
//! of a dependency is available for instantiation in the crate that builds the device image.
//! The crate named by the manifest builds the image; any other crate of its graph compiled with
//! the same flag (a dependency, `core` under `-Zbuild-std`) has no roots and codegens nothing.
//!
//! # Identity
//!
//! A kernel instance is named by its crate's name, its disambiguated def path and its generic
//! arguments as type trees (`rustc_middle::ty::offload_kernel`), never by `CrateNum`, `DefId`,
//! `StableCrateId` or `DefPathHash`: the first two are session indices, the last two depend on
//! `-C metadata`, which cargo sets per target. A crate is also named by its source fingerprint
//! (the content hash of its root file), which tells two crates of one name apart. The device
//! pass recomputes the `DefPathHash` of the recorded path under its own session's
//! `StableCrateId`. Each kernel also carries its symbol, which the host metadata pass computed;
//! the device pass recomputes it and refuses a manifest whose symbols it does not reproduce (a
//! stale manifest, or another compiler). And each kernel carries the fingerprint of its
//! definition (`offload_kernel::kernel_definition`: where the item is in which file content),
//! so that a path that now names another item (a `cfg` that shifts a disambiguator) or an edited
//! kernel is reported as stale, never resolved to another item.
//!
//! # Format
//!
//! A JSON document (written by `serde_json`, keys sorted, kernels sorted by their text, so the
//! same input gives byte-identical manifests):
//!
//! ```json
//! {
//!   "magic": "rustc-offload-manifest",
//!   "format_version": 5,
//!   "rustc_commit": "<commit hash of the compiler that wrote it>",
//!   "crate": "<name of the crate of the host metadata pass>",
//!   "crate_graph": ["<names of every crate of its graph, sorted>"],
//!   "kernels": [{
//!     "kernel": "demo::scale::<f32>",
//!     "item": {"crate": "demo", "crate_source": "0123456789abcdef",
//!              "path": [["ValueNs", "scale", 0]]},
//!     "args": [["num", "f32"]],
//!     "symbol": "_offload_kernel_scale_0123456789abcdef",
//!     "definition": "fedcba9876543210",
//!     "params": [{"size": 8, "align": 8}, {"size": 4, "align": 4}],
//!     "launched_by": ["demo"]
//!   }]
//! }
//! ```
//!
//! A type argument is an array whose first element names its kind: `["bool"]`, `["char"]`,
//! `["str"]`, `["never"]`, `["num", "u32"]`, `["adt", <item>, [<args>]]`,
//! `["ref", <mutable>, <type>]`, `["ptr", <mutable>, <type>]`, `["array", <type>, <len>]`,
//! `["slice", <type>]`, `["tuple", [<types>]]`; a lifetime argument is `["lifetime"]`. The
//! `kernel` field is the instance as text (what `--print`-style dumps show); the device pass
//! reads `item`, `args` and `symbol`. A kernel in the 1.95 style, which the host declares in an
//! `extern` block and the GPU build defines `#[no_mangle]`, has `link_name` (its symbol) in
//! place of `item` and `args`, and `kernel` is `extern <link name>`; the device pass roots the
//! `#[rustc_offload_kernel]` definition of that symbol in its crate graph. Format 1 had no
//! such entries. Such an entry also has `defined_in`: the names of the crates of the graph
//! whose host build removed an item of that name by `cfg` (the compiler's
//! `stripped_cfg_items`), where build tools find the definition; the device pass does not read
//! it (format 4 had no `defined_in`). `params` holds the size and ABI alignment in bytes of
//! each of the kernel's parameters as the host laid it out; the device pass refuses a kernel
//! whose parameters it lays out otherwise (format 2 had no `params`). An item (the kernel's,
//! or an ADT's in `args`) names its crate by name and source fingerprint (`crate_source`, see
//! `rustc_middle::ty::offload_kernel::crate_source`), and `definition` is the kernel's
//! definition fingerprint (format 3 had neither). A reader refuses another `magic`,
//! `format_version` or `rustc_commit`.
//!
//! What the kernels reach is made part of the image by `crate::offload_image`.
//!
//! # Where its parts are
//!
//! - `launches`: finding the launches in a crate's MIR (the query `offload_launches`);
//! - `launch_args`: what a launch may pass, kernel signatures, parameter layouts;
//! - `codec`: the JSON codec of the format above, both directions;
//! - `host`: the host metadata pass, which writes the manifest;
//! - `device`: the device pass's roots and its checks of the kernels.

use std::collections::BTreeSet;

use rustc_hir::def_id::DefId;
use rustc_middle::middle::codegen_fn_attrs::CodegenFnAttrFlags;
use rustc_middle::query::LocalCrate;
use rustc_middle::ty::offload_kernel::{KernelIdentity, Unsupported};
use rustc_middle::ty::{Instance, TyCtxt};
use rustc_middle::util::Providers;
use rustc_session::declare_lint;

use self::launches::local_offload_launches;

mod codec;
mod device;
mod host;
mod launch_args;
mod launches;

pub(crate) use self::device::{check_kernels_unused_by_device_code, device_roots};
pub use self::device::{offload_device_builds_image, offload_device_manifest_names_this_crate};
pub use self::host::{start_host_metadata_pass, write_host_manifest};

/// How a manifest names a launched kernel instance.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum LaunchKey {
    /// A kernel defined once for both targets, by its target-independent identity.
    Identity(KernelIdentity),
    /// A kernel in the 1.95 style, declared in an `extern` block on the host and defined
    /// `#[no_mangle]` for the GPU: by its link name, the one thing both sides share.
    LinkName(String),
}

impl LaunchKey {
    fn of<'tcx>(tcx: TyCtxt<'tcx>, kernel: Instance<'tcx>) -> Result<LaunchKey, Unsupported> {
        if tcx.is_foreign_item(kernel.def_id()) {
            Ok(LaunchKey::LinkName(tcx.symbol_name(kernel).name.to_string()))
        } else {
            KernelIdentity::of(tcx, kernel).map(LaunchKey::Identity)
        }
    }

    /// The `kernel` field of the manifest entry.
    fn text(&self) -> String {
        match self {
            LaunchKey::Identity(identity) => identity.to_string(),
            LaunchKey::LinkName(name) => format!("extern {name}"),
        }
    }
}

/// What the host metadata pass records of one launched kernel instance besides its
/// [`LaunchKey`].
struct LaunchRecord {
    /// The symbol that the device pass gives the kernel.
    symbol: String,
    /// The names of the crates whose code launches the kernel.
    launched_by: BTreeSet<String>,
    /// Size and ABI alignment in bytes of each parameter, as the host lays it out.
    params: Vec<(u64, u64)>,
    /// The kernel's definition fingerprint (`kernel_definition`).
    definition: String,
    /// For a kernel named by its link name, the crates whose host build removed an item of that
    /// name by `cfg`: those whose device build defines it (see `host::crates_stripping`).
    defined_in: BTreeSet<String>,
}

/// First field of every manifest.
pub(crate) const MAGIC: &str = "rustc-offload-manifest";
/// Version of the format described in the module documentation.
pub(crate) const FORMAT_VERSION: u64 = 5;

/// The identity of this compiler build, as manifests record it (`rustc_commit`):
/// `<upstream commit>+fork.<fingerprint>`. The commit is bootstrap's (`CFG_VER_HASH`); the
/// fingerprint, of the fork's patches and new compiler files, is what the fork's build harness
/// passes (`OFFLOAD_FORK_SOURCE_HASH`, see `src/tools/offload-x`). Builds of the fork from
/// different sources thus refuse each other's manifests, not only builds of another upstream.
pub(crate) fn compiler_commit() -> String {
    let commit = option_env!("CFG_VER_HASH").unwrap_or("unknown");
    let fork = option_env!("OFFLOAD_FORK_SOURCE_HASH").unwrap_or("unknown");
    format!("{commit}+fork.{fork}")
}

declare_lint! {
    /// The `offload_shared_for_mutable` lint detects an offload launch that passes a shared
    /// pointer or reference (`*const T`, `&T`) where the kernel takes a mutable one (`*mut T`,
    /// `&mut T`). It is reported by the offload host metadata pass
    /// (`-Zoffload=HostMetadata=<manifest>`).
    ///
    /// ### Example
    ///
    /// ```rust,ignore (needs the offload host metadata pass)
    /// #[rustc_offload_kernel]
    /// fn fill(x: *mut [f32; 64]) { /* ... */ }
    ///
    /// let x = [0.0f32; 64];
    /// core::intrinsics::offload::<_, _, ()>(fill, [1, 1, 1], [64, 1, 1], (&raw const x,));
    /// ```
    ///
    /// ### Explanation
    ///
    /// The runtime maps an argument by the kernel's parameter type: for a mutable one it copies
    /// what the kernel wrote back into the memory that the launch handed over as read-only.
    /// Rustc 1.95 accepted such launches (the two have one ABI), so this is a lint, not an
    /// error. It is reported inside `core::offload::offload!` too (an external macro): the
    /// arguments it names are the user's.
    pub OFFLOAD_SHARED_FOR_MUTABLE,
    Warn,
    "an offload launch passes a shared pointer where the kernel takes a mutable one",
    report_in_external_macro
}

pub(crate) fn provide(providers: &mut Providers) {
    providers.queries.offload_launches = local_offload_launches;
    providers.queries.offload_host_metadata_pass =
        |tcx, LocalCrate| tcx.sess.opts.offload_host_metadata_manifest().is_some();
}

/// Whether `def_id` is a function marked `#[rustc_offload_kernel]`.
fn is_kernel(tcx: TyCtxt<'_>, def_id: DefId) -> bool {
    tcx.def_kind(def_id).is_fn_like()
        && tcx.codegen_fn_attrs(def_id).flags.contains(CodegenFnAttrFlags::OFFLOAD_KERNEL)
}
