//! `liboffload_report.so`: with `OFFLOAD_REPORT=1`, `cargo offload run|test` and the start
//! scripts of `cargo offload bundle` load this library into the program (the dynamic loader's
//! `--preload`), and the program prints one line on standard error for each kernel and device
//! the first time it launches the kernel there: which device ran it and from which of the
//! program's device images, or that the launch failed. Each call goes on to LLVM's offload
//! runtime unchanged; being an OMPT tool turns on `libomp`'s tool callbacks (a small cost per
//! OpenMP event), and replaces a tool the program brings. Without `OFFLOAD_REPORT` the library
//! is not loaded at all. At the program's end, if it launched a kernel or copied data, it
//! prints the data the runtime copied between the host and the devices: in all, during the
//! launches of each kernel, and outside launches (a `core::offload::Preload`'s copies in and
//! out, `offload_sync`).
//!
//! ```text
//! [offload report] kernel `K` ran on device 0 (generic-64bit, uid x86_64-0) from image 1 of 2
//!     (x86_64-unknown-linux-gnu)
//! [offload report] kernel `K` did not run: the runtime has no device 0 (0 devices run the
//!     program's images: nvptx64-nvidia-cuda sm_90)
//! [offload report] data moved: 8000 bytes to devices in 2 copies, 4000 bytes back in 1 copy
//! [offload report] data moved by kernel `K`: 4000 bytes to devices in 1 copy, 4000 bytes back
//!     in 1 copy
//! [offload report] data moved outside launches: 4000 bytes to devices in 1 copy, 0 bytes back
//!     in 0 copies
//! ```
//!
//! (one line each; `K` is the kernel's symbol, as in the program's offload entries; `1 byte`
//! and `1 copy` in the singular). A copy is one data transfer of the runtime, host to device or
//! device to host, as its OMPT data-op callback announces it: one per mapped range it copies,
//! the same copies that `LIBOMPTARGET_INFO=32` prints one line each for. Allocations and
//! releases of device memory are not copies. A kernel has a line once launched, copies or not.
//!
//! How it learns each fact, all from the runtime's own interfaces:
//! - the program's images and kernels: the library defines `__tgt_register_lib`, which the
//!   program's registration object calls at start-up with its `__tgt_bin_desc` (the images,
//!   each an offload binary whose string table names its `triple` and `arch`, and the host
//!   entries, whose addresses are the kernels' host handles and whose names are the kernels'
//!   symbols), and passes the call on to the runtime's definition (`dlsym(RTLD_NEXT)`);
//! - the devices and the images loaded on them: the library is an OMPT tool
//!   (`ompt_start_tool`, OpenMP 5.1 section 4.2.1), registered for `device_initialize`
//!   (device number and type) and `device_load` (the host address of the image the runtime
//!   loaded onto a device);
//! - each launch: the library defines `__tgt_target_kernel`, calls the runtime's, and reports
//!   the kernel's first launch on each device with the launch's result; the device's UID comes
//!   from `omp_get_uid_from_device` (OpenMP 6.0);
//! - the copies: the library registers the OMPT data-op callback (OpenMP 5.1's
//!   `ompt_callback_target_data_op_emi`, number 34, counted at its begin only; the 5.0 form
//!   `ompt_callback_target_data_op`, number 9, where the runtime takes only that), and counts
//!   transfers to and from a device (`ompt_target_data_op_t` 2 and 3, `_async` 18 and 19);
//! - whose copies they are: a launch is three calls into the runtime on one thread,
//!   `__tgt_target_data_begin_mapper` (its arguments copied in), `__tgt_target_kernel` and
//!   `__tgt_target_data_end_mapper` (copied back), the mappers with the program's `ident_t` as
//!   `loc`; a `Preload` calls the same mappers with a null `loc`. The library defines the two
//!   mappers too and notes, for the length of each call, what the thread's copies are for: a
//!   mapper with a null `loc`, outside launches; a launch's `begin_mapper`, the launch whose
//!   kernel comes next on the thread; the kernel's call and the `end_mapper` after it, that
//!   kernel. Copies on a thread in none of these calls count as outside launches;
//! - the program's end: OMPT's `finalize`, which the runtime calls at its shutdown, or an
//!   `atexit` handler registered by `initialize`, whichever comes first, prints the lines.
//!
//! The crate's modules, by concern:
//! - `binary`: the program's registration (`__tgt_register_lib`) and the offload binaries of
//!   its images;
//! - `launch`: kernel launches (`__tgt_target_kernel`) and the line of each kernel's first
//!   launch on a device;
//! - `data`: the data the runtime copies, whose it is (the two mappers), and the data report;
//! - `ompt`: the OMPT tool interface: `ompt_start_tool`, `initialize`, `finalize` and the
//!   callbacks;
//! - `loader`: the dynamic loader: the runtime's definitions and the loaded segments.

mod binary;
mod data;
mod launch;
mod loader;
mod ompt;

pub use binary::{
    __tgt_register_lib, BinDesc, DeviceImage, OffloadEntry, offload_binary_image,
    offload_binary_target,
};
pub use data::{
    __tgt_target_data_begin_mapper, __tgt_target_data_end_mapper, Flow, Ledger, Traffic, Whose,
    traffic_line,
};
pub use launch::{__tgt_target_kernel, report_line};
pub use ompt::{OmptData, StartToolResult, ompt_start_tool};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// One registered image: its bytes in the program's memory and what its offload-binary header
/// names.
struct Image {
    /// The registration (`__tgt_register_lib` call) it came with, counted from 0.
    registration: usize,
    start: usize,
    end: usize,
    /// `triple` and, for a GPU, ` arch` (`nvptx64-nvidia-cuda sm_90`); `?` when the image is
    /// not an offload binary.
    what: String,
}

/// What the library knows; one lock, taken only at registration, device events and a kernel's
/// launches. The runtime calls the OMPT callbacks with its own locks held (a device's
/// initialization, an image's load), and the loader calls a registration with its lock held:
/// so no code calls into the runtime or the loader while holding this lock.
struct State {
    /// How many registrations there were.
    registrations: usize,
    images: Vec<Image>,
    /// Kernel host handle -> kernel symbol and its registration.
    kernels: BTreeMap<usize, (String, usize)>,
    /// Device number -> device type, from OMPT's `device_initialize`.
    device_types: BTreeMap<i32, String>,
    /// Device number -> host addresses of the images loaded there, from OMPT's `device_load`.
    loaded: BTreeMap<i32, Vec<usize>>,
    /// (kernel handle, device) pairs already reported.
    reported: BTreeSet<(usize, i64)>,
    /// The data the runtime copied, by launch.
    ledger: Ledger,
}

static STATE: Mutex<State> = Mutex::new(State {
    registrations: 0,
    images: Vec::new(),
    kernels: BTreeMap::new(),
    device_types: BTreeMap::new(),
    loaded: BTreeMap::new(),
    reported: BTreeSet::new(),
    ledger: Ledger::new(),
});

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
