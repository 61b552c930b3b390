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

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// `__tgt_offload_entry` as LLVM 22's runtime reads it (56 bytes).
#[repr(C)]
pub struct OffloadEntry {
    reserved: u64,
    version: u16,
    kind: u16,
    flags: u32,
    /// For a kernel: its host handle, the `host_ptr` of `__tgt_target_kernel`.
    address: *const c_void,
    symbol_name: *const c_char,
    size: u64,
    data: u64,
    aux_addr: *const c_void,
}

/// `__tgt_device_image`: one image as the registration object lays it out.
#[repr(C)]
pub struct DeviceImage {
    image_start: *const u8,
    image_end: *const u8,
    entries_begin: *const OffloadEntry,
    entries_end: *const OffloadEntry,
}

/// `__tgt_bin_desc`: what a program registers with the runtime.
#[repr(C)]
pub struct BinDesc {
    num_device_images: i32,
    device_images: *const DeviceImage,
    host_entries_begin: *const OffloadEntry,
    host_entries_end: *const OffloadEntry,
}

// The layouts above are LLVM 22's (`llvm/Frontend/Offloading/Utility.h`, `omptarget.h`).
const _: () = assert!(
    size_of::<OffloadEntry>() == 56 && size_of::<DeviceImage>() == 32 && size_of::<BinDesc>() == 32
);

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

/// glibc's `RTLD_NEXT` and `RTLD_DEFAULT` (`<dlfcn.h>`).
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;
const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();

/// glibc's `RTLD_LAZY` and `RTLD_NOLOAD` (`<dlfcn.h>`).
const RTLD_LAZY: c_int = 0x1;
const RTLD_NOLOAD: c_int = 0x4;

unsafe extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlclose(handle: *mut c_void) -> c_int;
}

/// `name` as defined by a loaded offload runtime library (`libomptarget*`, `libomp*`) that is
/// not in the program's global scope: a C launcher that `dlopen`s a `cdylib` (by default with
/// `RTLD_LOCAL`) brings the runtime in with it, where neither `RTLD_NEXT` nor `RTLD_DEFAULT`
/// looks. Null when no such library defines it.
fn loaded_runtime_symbol(name: &CStr) -> *mut c_void {
    unsafe extern "C" fn visit(info: *mut PhdrInfo, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: glibc passes a valid `dl_phdr_info` and our `Vec` through `data`.
        let (info, paths) = unsafe { (&*info, &mut *data.cast::<Vec<std::ffi::CString>>()) };
        if info.name.is_null() {
            return 0;
        }
        // SAFETY: the loader's object names are NUL-terminated.
        let path = unsafe { CStr::from_ptr(info.name) };
        let file = path.to_bytes().rsplit(|&b| b == b'/').next().unwrap_or_default();
        if file.starts_with(b"libomptarget") || file.starts_with(b"libomp.") {
            paths.push(path.to_owned());
        }
        0
    }
    let mut paths: Vec<std::ffi::CString> = Vec::new();
    // SAFETY: `visit` only reads what the loader passes and pushes to `paths`.
    unsafe { dl_iterate_phdr(visit, (&raw mut paths).cast()) };
    for path in paths {
        // SAFETY: a NUL-terminated path of a loaded object; `RTLD_NOLOAD` loads nothing new, and
        // the `dlclose` below leaves the object loaded, as it was before.
        let handle = unsafe { dlopen(path.as_ptr(), RTLD_LAZY | RTLD_NOLOAD) };
        if handle.is_null() {
            continue;
        }
        // SAFETY: a handle from `dlopen` and a NUL-terminated name.
        let f = unsafe { dlsym(handle, name.as_ptr()) };
        // SAFETY: the handle of the `dlopen` above.
        unsafe { dlclose(handle) };
        if !f.is_null() {
            return f;
        }
    }
    std::ptr::null_mut()
}

/// The runtime's `name` as the program would find it: in the global scope, else in a runtime
/// library loaded outside it ([`loaded_runtime_symbol`]); null when neither has it.
fn runtime_symbol(name: &CStr) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated; dlsym only reads it.
    let f = unsafe { dlsym(RTLD_DEFAULT, name.as_ptr()) };
    if f.is_null() { loaded_runtime_symbol(name) } else { f }
}

/// The definition of `name` that this library's own hides: the runtime's, after this library
/// in the global scope or, for a runtime that a `dlopen`ed library brought in, in that one.
fn next(name: &CStr) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated; dlsym only reads it.
    let mut f = unsafe { dlsym(RTLD_NEXT, name.as_ptr()) };
    if f.is_null() {
        f = loaded_runtime_symbol(name);
    }
    if f.is_null() {
        // Without the runtime's definition the program cannot go on.
        eprintln!(
            "[offload report] error: LLVM's offload runtime defines no `{}`",
            name.to_string_lossy()
        );
        std::process::abort();
    }
    f
}

/// The string at `p`, or `?` for a null pointer.
fn string(p: *const c_char) -> String {
    if p.is_null() {
        return "?".to_string();
    }
    // SAFETY: the runtime's and the registration's strings are NUL-terminated.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The `triple` and `arch` of an offload binary (LLVM's `OffloadBinary`, version 1: a 32-byte
/// header `magic 10 FF 10 AD, u32 version, u64 size, u64 entry offset, u64 entry size`; an entry
/// `u16 image kind, u16 offload kind, u32 flags, u64 string offset, u64 string count, u64 image
/// offset, u64 image size`; the strings a table of `u64 key offset, u64 value offset` pairs,
/// offsets from the header's start, values NUL-terminated), as `triple arch`; `None` when
/// `bytes` is not one.
pub fn offload_binary_target(bytes: &[u8]) -> Option<String> {
    let u64_at = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at.checked_add(8)?)?.try_into().ok()?))
    };
    let c_str_at = |at: usize| -> Option<&str> {
        let rest = bytes.get(at..)?;
        std::str::from_utf8(&rest[..rest.iter().position(|b| *b == 0)?]).ok()
    };
    if bytes.get(..4)? != [0x10, 0xFF, 0x10, 0xAD] {
        return None;
    }
    let entry = usize::try_from(u64_at(16)?).ok()?;
    let strings = usize::try_from(u64_at(entry.checked_add(8)?)?).ok()?;
    let count = usize::try_from(u64_at(entry.checked_add(16)?)?).ok()?;
    let (mut triple, mut arch) = (None, None);
    for i in 0..count.min(64) {
        let pair = strings.checked_add(i.checked_mul(16)?)?;
        let key = c_str_at(usize::try_from(u64_at(pair)?).ok()?)?;
        let value = c_str_at(usize::try_from(u64_at(pair.checked_add(8)?)?).ok()?)?;
        match key {
            "triple" => triple = Some(value),
            "arch" => arch = Some(value),
            _ => {}
        }
    }
    let triple = triple?;
    Some(match arch {
        Some(arch) if !arch.is_empty() => format!("{triple} {arch}"),
        _ => triple.to_string(),
    })
}

/// The image offset and size of an offload binary's first entry (see
/// [`offload_binary_target`] for the layout).
pub fn offload_binary_image(bytes: &[u8]) -> Option<(usize, usize)> {
    let u64_at = |at: usize| -> Option<usize> {
        usize::try_from(u64::from_le_bytes(bytes.get(at..at.checked_add(8)?)?.try_into().ok()?))
            .ok()
    };
    if bytes.get(..4)? != [0x10, 0xFF, 0x10, 0xAD] {
        return None;
    }
    let entry = u64_at(16)?;
    Some((u64_at(entry.checked_add(24)?)?, u64_at(entry.checked_add(32)?)?))
}

/// The report line of a kernel's first launch on a device; `devices` is the number of devices
/// the runtime has, `image` the 1-based number of the image loaded on the device and what it is
/// for, `images` what every image is for.
pub fn report_line(
    kernel: &str,
    (device, devices): (i64, i32),
    device_type: &str,
    uid: &str,
    launched: bool,
    image: Option<(usize, usize, &str)>,
    images: &[&str],
) -> String {
    if !launched && (device < 0 || device >= i64::from(devices)) {
        return format!(
            "[offload report] kernel `{kernel}` did not run: the runtime has no device {device} \
             ({devices} device{} run the program's images: {})",
            if devices == 1 { "" } else { "s" },
            images.join(", ")
        );
    }
    let device = format!("device {device} ({device_type}, uid {uid})");
    match (launched, image) {
        (true, Some((number, count, what))) => format!(
            "[offload report] kernel `{kernel}` ran on {device} from image {number} of {count} \
             ({what})"
        ),
        (true, None) => format!("[offload report] kernel `{kernel}` ran on {device}"),
        (false, Some((number, count, what))) => format!(
            "[offload report] kernel `{kernel}` did not run on {device}: the launch failed with \
             image {number} of {count} ({what}) loaded there"
        ),
        (false, None) => format!(
            "[offload report] kernel `{kernel}` did not run on {device}: no image of the \
             program was loaded there (images: {})",
            images.join(", ")
        ),
    }
}

/// The runtime's `__tgt_register_lib`, seen first by this library: records the images and
/// kernels of `desc`, then registers them.
///
/// # Safety
/// `desc` is a `__tgt_bin_desc` as LLVM's offload wrapper lays it out, as the runtime's own
/// definition requires.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __tgt_register_lib(desc: *const BinDesc) {
    if !desc.is_null() {
        // SAFETY: the caller's contract: a valid descriptor whose arrays and ranges live as
        // long as the program.
        unsafe { record(&*desc) };
    }
    type Register = unsafe extern "C" fn(*const BinDesc);
    // SAFETY: the runtime's `__tgt_register_lib` has this signature.
    let register: Register = unsafe { std::mem::transmute(next(c"__tgt_register_lib")) };
    // SAFETY: the caller's `desc`, unchanged.
    unsafe { register(desc) }
}

/// Records the images and kernels of `desc`.
///
/// # Safety
/// As [`__tgt_register_lib`].
unsafe fn record(desc: &BinDesc) {
    // Read before locking: `enclosing_binary` asks the loader (see `State`).
    let mut images = Vec::new();
    for i in 0..usize::try_from(desc.num_device_images).unwrap_or(0) {
        // SAFETY: `device_images` has `num_device_images` elements.
        let image = unsafe { &*desc.device_images.add(i) };
        let (start, end) = (image.image_start as usize, image.image_end as usize);
        let what = enclosing_binary(start, end).unwrap_or_else(|| "?".to_string());
        images.push((start, end, what));
    }
    let mut kernels = Vec::new();
    let mut entry = desc.host_entries_begin;
    while !entry.is_null() && entry < desc.host_entries_end {
        // SAFETY: the host entries lie between their begin and end.
        let e = unsafe { &*entry };
        kernels.push((e.address as usize, string(e.symbol_name)));
        // SAFETY: still within the same array (or one past its end).
        entry = unsafe { entry.add(1) };
    }
    let mut state = state();
    let registration = state.registrations;
    state.registrations += 1;
    for (start, end, what) in images {
        state.images.push(Image { registration, start, end, what });
    }
    for (handle, name) in kernels {
        state.kernels.insert(handle, (name, registration));
    }
}

/// What the offload binary around the image at `start..end` is for (`triple arch`). LLVM's
/// offload wrapper embeds each whole offload binary (header, string table, image; 8-byte
/// aligned) and registers only the image inside it, so the header lies before `start`: the
/// nearest 8-byte-aligned magic below `start`, taken only if its entry places its image exactly
/// at `start..end`. The search stays within the loaded segment that holds the image (found with
/// `dl_iterate_phdr`), so it reads only mapped memory.
fn enclosing_binary(start: usize, end: usize) -> Option<String> {
    // An offload binary's header and string table take a few hundred bytes: 64 KiB bounds the
    // search where the layout is not the wrapper's.
    let lowest = segment_start(start)?.max(start.saturating_sub(1 << 16));
    let mut at = (start & !7).checked_sub(8)?;
    while at >= lowest {
        // SAFETY: `at..start` lies within the mapped segment that holds the image.
        let head = unsafe { std::slice::from_raw_parts(at as *const u8, 4) };
        if head == [0x10, 0xFF, 0x10, 0xAD] {
            // SAFETY: from the header to the image's end is one mapped segment.
            let bytes =
                unsafe { std::slice::from_raw_parts(at as *const u8, end.checked_sub(at)?) };
            let (offset, size) = offload_binary_image(bytes)?;
            if at + offset == start && offset + size == end - at {
                return offload_binary_target(bytes);
            }
            return None;
        }
        at = at.checked_sub(8)?;
    }
    None
}

/// `dl_phdr_info`'s leading fields (`<link.h>`).
#[repr(C)]
struct PhdrInfo {
    address: usize,
    name: *const c_char,
    headers: *const ProgramHeader,
    count: u16,
}

/// `Elf64_Phdr`.
#[repr(C)]
struct ProgramHeader {
    kind: u32,
    flags: u32,
    offset: u64,
    virtual_address: u64,
    physical_address: u64,
    file_size: u64,
    memory_size: u64,
    align: u64,
}

unsafe extern "C" {
    fn dl_iterate_phdr(
        callback: unsafe extern "C" fn(*mut PhdrInfo, usize, *mut c_void) -> c_int,
        data: *mut c_void,
    ) -> c_int;
}

/// The first address of the loaded segment (`PT_LOAD`) of any loaded object that holds
/// `address`.
fn segment_start(address: usize) -> Option<usize> {
    unsafe extern "C" fn visit(info: *mut PhdrInfo, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `(usize, Option<usize>)` below; `info` is the loader's.
        let (address, found) = unsafe { &mut *(data as *mut (usize, Option<usize>)) };
        let info = unsafe { &*info };
        for i in 0..usize::from(info.count) {
            // SAFETY: the object has `count` program headers.
            let header = unsafe { &*info.headers.add(i) };
            let first = info.address.wrapping_add(header.virtual_address as usize);
            let last = first.wrapping_add(header.memory_size as usize);
            if header.kind == 1 && (first..last).contains(address) {
                *found = Some(first);
                return 1;
            }
        }
        0
    }
    let mut data: (usize, Option<usize>) = (address, None);
    // SAFETY: `visit` reads `data` as the type it is.
    unsafe { dl_iterate_phdr(visit, &mut data as *mut _ as *mut c_void) };
    data.1
}

/// The runtime's `__tgt_target_kernel`, seen first by this library: launches through the
/// runtime, then reports the kernel's first launch on the device. Returns the runtime's result
/// (0: the kernel ran on the device).
///
/// # Safety
/// As the runtime's `__tgt_target_kernel`: the arguments of a kernel launch.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __tgt_target_kernel(
    loc: *mut c_void,
    device_id: i64,
    num_teams: i32,
    thread_limit: i32,
    host_ptr: *mut c_void,
    args: *mut c_void,
) -> c_int {
    type Launch =
        unsafe extern "C" fn(*mut c_void, i64, i32, i32, *mut c_void, *mut c_void) -> c_int;
    // SAFETY: the runtime's `__tgt_target_kernel` has this signature.
    let launch: Launch = unsafe { std::mem::transmute(next(c"__tgt_target_kernel")) };
    let kernel = host_ptr as usize;
    // The copies of this launch's `begin_mapper`, made before the kernel was known, are its.
    state().ledger.launch(kernel, thread());
    LAST_KERNEL.set(Some(kernel));
    // SAFETY: the caller's arguments, unchanged.
    let result = with_role(Role::Kernel(kernel), || unsafe {
        launch(loc, device_id, num_teams, thread_limit, host_ptr, args)
    });
    let device =
        if device_id < 0 { i64::from(runtime_int(c"omp_get_default_device")) } else { device_id };
    report(host_ptr as usize, device, result == 0);
    result
}

/// The value of the runtime's `int f(void)` called `name`, or -1 when it has none.
fn runtime_int(name: &CStr) -> c_int {
    let f = runtime_symbol(name);
    if f.is_null() {
        return -1;
    }
    // SAFETY: the OpenMP API's `int f(void)` functions have this signature.
    let f: unsafe extern "C" fn() -> c_int = unsafe { std::mem::transmute(f) };
    // SAFETY: no arguments; the runtime is initialized once a kernel was launched.
    unsafe { f() }
}

/// The device's UID (`omp_get_uid_from_device`), or `?`.
fn device_uid(device: i64) -> String {
    let f = runtime_symbol(c"omp_get_uid_from_device");
    let Ok(device) = c_int::try_from(device) else { return "?".to_string() };
    if f.is_null() || device < 0 || device >= runtime_int(c"omp_get_num_devices") {
        return "?".to_string();
    }
    // SAFETY: OpenMP 6.0's `const char *omp_get_uid_from_device(int)`.
    let f: unsafe extern "C" fn(c_int) -> *const c_char = unsafe { std::mem::transmute(f) };
    // SAFETY: a device number the runtime has.
    string(unsafe { f(device) })
}

/// Prints the report line of the first launch of the kernel with host handle `kernel` on
/// `device`; nothing for later launches.
fn report(kernel: usize, device: i64, launched: bool) {
    if !state().reported.insert((kernel, device)) {
        return;
    }
    // Asked without the lock (see `State`).
    let uid = device_uid(device);
    let devices = runtime_int(c"omp_get_num_devices");
    let state = state();
    let (name, registration) = match state.kernels.get(&kernel) {
        Some((name, registration)) => (name.clone(), Some(*registration)),
        None => (format!("{kernel:#x}"), None),
    };
    let device_type = i32::try_from(device)
        .ok()
        .and_then(|d| state.device_types.get(&d).cloned())
        .unwrap_or_else(|| "?".to_string());
    // The images of the kernel's own registration (a program and a library it loads register
    // theirs apart), numbered within it.
    let images: Vec<&Image> =
        state.images.iter().filter(|i| registration.is_none_or(|r| i.registration == r)).collect();
    let loaded = i32::try_from(device).ok().and_then(|d| state.loaded.get(&d));
    let image = loaded.into_iter().flatten().find_map(|address| {
        let number = images.iter().position(|i| (i.start..i.end).contains(address))?;
        Some((number + 1, images.len(), images[number].what.as_str()))
    });
    let targets: Vec<&str> = images.iter().map(|i| i.what.as_str()).collect();
    let line = report_line(&name, (device, devices), &device_type, &uid, launched, image, &targets);
    drop(state);
    eprintln!("{line}");
}

/// What the runtime's copies on a thread are made for, as the calls into the runtime that the
/// thread is in say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// No launch: a `Preload`'s mapping, `offload_sync`.
    Outside,
    /// A launch's `__tgt_target_data_begin_mapper`, before its kernel is known.
    Launch,
    /// The launch of the kernel with this host handle (its `__tgt_target_kernel` and the
    /// `__tgt_target_data_end_mapper` after it).
    Kernel(usize),
}

thread_local! {
    static ROLE: Cell<Role> = const { Cell::new(Role::Outside) };
    /// The kernel this thread launched last: a launch's `end_mapper` comes after its kernel.
    static LAST_KERNEL: Cell<Option<usize>> = const { Cell::new(None) };
}

/// A number for this thread, unique among the running threads: its `ROLE`'s address.
fn thread() -> usize {
    ROLE.try_with(|role| role as *const Cell<Role> as usize).unwrap_or(0)
}

/// `f()`, with this thread's copies made for `role` while it runs.
fn with_role<R>(role: Role, f: impl FnOnce() -> R) -> R {
    let outer = ROLE.replace(role);
    let result = f();
    ROLE.set(outer);
    result
}

/// The runtime's `__tgt_target_data_begin_mapper`, seen first by this library: a launch maps
/// its arguments with it before the kernel (with the program's `ident_t` as `loc`), a
/// `Preload` its data (with a null `loc`). Passes the call on unchanged.
///
/// # Safety
/// As the runtime's: `count` entries in each array, a valid `device`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __tgt_target_data_begin_mapper(
    loc: *mut c_void,
    device: i64,
    count: i32,
    bases: *mut *mut c_void,
    pointers: *mut *mut c_void,
    sizes: *mut i64,
    types: *mut i64,
    names: *mut *mut c_void,
    mappers: *mut *mut c_void,
) {
    // SAFETY: the runtime's mappers have this signature.
    let mapper: Mapper = unsafe { std::mem::transmute(next(c"__tgt_target_data_begin_mapper")) };
    let role = if loc.is_null() { Role::Outside } else { Role::Launch };
    // SAFETY: the caller's arguments, unchanged.
    with_role(role, || unsafe {
        mapper(loc, device, count, bases, pointers, sizes, types, names, mappers)
    })
}

/// The runtime's `__tgt_target_data_end_mapper`, seen first by this library: a launch unmaps
/// its arguments with it after the kernel (its copies back are that kernel's), a `Preload` its
/// data. Passes the call on unchanged.
///
/// # Safety
/// As [`__tgt_target_data_begin_mapper`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __tgt_target_data_end_mapper(
    loc: *mut c_void,
    device: i64,
    count: i32,
    bases: *mut *mut c_void,
    pointers: *mut *mut c_void,
    sizes: *mut i64,
    types: *mut i64,
    names: *mut *mut c_void,
    mappers: *mut *mut c_void,
) {
    // SAFETY: the runtime's mappers have this signature.
    let mapper: Mapper = unsafe { std::mem::transmute(next(c"__tgt_target_data_end_mapper")) };
    let role = match (loc.is_null(), LAST_KERNEL.get()) {
        (true, _) => Role::Outside,
        (false, Some(kernel)) => Role::Kernel(kernel),
        (false, None) => Role::Launch,
    };
    // SAFETY: the caller's arguments, unchanged.
    with_role(role, || unsafe {
        mapper(loc, device, count, bases, pointers, sizes, types, names, mappers)
    })
}

/// `__tgt_target_data_begin_mapper`'s and `end_mapper`'s signature (LLVM 22's `omptarget.h`).
type Mapper = unsafe extern "C" fn(
    *mut c_void,
    i64,
    i32,
    *mut *mut c_void,
    *mut *mut c_void,
    *mut i64,
    *mut i64,
    *mut *mut c_void,
    *mut *mut c_void,
);

/// One direction's share of the data copied: `bytes` in `copies` copies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flow {
    /// Bytes copied, summed over the copies.
    pub bytes: u64,
    /// Copies: data operations of the runtime, one per mapped range it copies.
    pub copies: u64,
}

/// The data copied between the host and the devices, each way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Host to device (`ompt_target_data_transfer_to_device` and its `_async` form).
    pub to_devices: Flow,
    /// Device to host (`ompt_target_data_transfer_from_device` and its `_async` form).
    pub back: Flow,
}

impl Traffic {
    /// No copies either way.
    pub const NONE: Traffic =
        Traffic { to_devices: Flow { bytes: 0, copies: 0 }, back: Flow { bytes: 0, copies: 0 } };

    /// Both ways summed, saturating (a count that large is not a real program's).
    pub fn plus(self, other: Traffic) -> Traffic {
        let add = |a: Flow, b: Flow| Flow {
            bytes: a.bytes.saturating_add(b.bytes),
            copies: a.copies.saturating_add(b.copies),
        };
        Traffic {
            to_devices: add(self.to_devices, other.to_devices),
            back: add(self.back, other.back),
        }
    }
}

/// `ompt_target_data_op_t` values that copy data (OpenMP 5.1's tool interface, chapter 4;
/// the numbers of LLVM 22's `omp-tools.h`): to a device, from a device, and their `_async`
/// forms. The other operations (allocate, delete, associate, disassociate) copy nothing.
const TRANSFER_TO_DEVICE: [c_int; 2] = [2, 18];
const TRANSFER_FROM_DEVICE: [c_int; 2] = [3, 19];

/// `ompt_scope_end` (`ompt_scope_endpoint_t`: begin 1, end 2, beginend 3).
const SCOPE_END: c_int = 2;

/// Whom a copy is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whose {
    /// A launch of the kernel with this host handle.
    Kernel(usize),
    /// A launch on the thread with this number whose kernel is not known yet (its
    /// `begin_mapper` comes before its `__tgt_target_kernel`).
    Launch(usize),
    /// No launch.
    Outside,
}

/// The copies the runtime made: per kernel (by host handle) during its launches, and outside
/// any launch.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    kernels: BTreeMap<usize, Traffic>,
    /// Thread number -> the copies of its launch whose kernel is not known yet.
    pending: BTreeMap<usize, Traffic>,
    outside: Traffic,
}

impl Ledger {
    /// Nothing launched, nothing copied.
    pub const fn new() -> Ledger {
        Ledger { kernels: BTreeMap::new(), pending: BTreeMap::new(), outside: Traffic::NONE }
    }

    /// Notes a launch of the kernel with host handle `kernel` on the thread numbered
    /// `thread`: the copies pending there are the kernel's, and the kernel has a line even
    /// when its launches copy nothing.
    pub fn launch(&mut self, kernel: usize, thread: usize) {
        let pending = self.pending.remove(&thread).unwrap_or_default();
        let traffic = self.kernels.entry(kernel).or_default();
        *traffic = traffic.plus(pending);
    }

    /// Counts one data operation of type `optype` (`ompt_target_data_op_t`) over `bytes`
    /// bytes, made for `whose`; an operation that copies nothing is not counted.
    pub fn data_op(&mut self, whose: Whose, optype: c_int, bytes: usize) {
        let traffic = match whose {
            Whose::Kernel(kernel) => self.kernels.entry(kernel).or_default(),
            Whose::Launch(thread) => self.pending.entry(thread).or_default(),
            Whose::Outside => &mut self.outside,
        };
        let flow = if TRANSFER_TO_DEVICE.contains(&optype) {
            &mut traffic.to_devices
        } else if TRANSFER_FROM_DEVICE.contains(&optype) {
            &mut traffic.back
        } else {
            return;
        };
        flow.bytes = flow.bytes.saturating_add(bytes as u64);
        flow.copies = flow.copies.saturating_add(1);
    }

    /// The report's lines: none when nothing was launched or copied; else the total, one line
    /// per launched kernel (named by `name` from its host handle, in the order of the names)
    /// and one for the copies outside launches, with those of a launch whose kernel never came
    /// (so that the lines add up to the total). See [`traffic_line`] for the format.
    pub fn lines(&self, name: impl Fn(usize) -> String) -> Vec<String> {
        let outside = self.pending.values().fold(self.outside, |sum, t| sum.plus(*t));
        if self.kernels.is_empty() && outside == Traffic::NONE {
            return Vec::new();
        }
        let total = self.kernels.values().fold(outside, |sum, t| sum.plus(*t));
        let mut kernels: Vec<(String, Traffic)> =
            self.kernels.iter().map(|(kernel, traffic)| (name(*kernel), *traffic)).collect();
        kernels.sort_by(|a, b| a.0.cmp(&b.0));
        let mut lines = vec![traffic_line("", total)];
        for (kernel, traffic) in kernels {
            lines.push(traffic_line(&format!(" by kernel `{kernel}`"), traffic));
        }
        lines.push(traffic_line(" outside launches", outside));
        lines
    }
}

/// One line of the data report, `whose` after `data moved` (empty for the total, ` by kernel
/// `K``, ` outside launches`):
/// `[offload report] data moved<whose>: B bytes to devices in C copies, B bytes back in C
/// copies` (`1 byte`, `1 copy` in the singular).
pub fn traffic_line(whose: &str, traffic: Traffic) -> String {
    let count = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let (to, back) = (traffic.to_devices, traffic.back);
    format!(
        "[offload report] data moved{whose}: {} to devices in {}, {} back in {}",
        count(to.bytes, "byte", "bytes"),
        count(to.copies, "copy", "copies"),
        count(back.bytes, "byte", "bytes"),
        count(back.copies, "copy", "copies"),
    )
}

// OMPT (OpenMP 5.1, chapter 4): the tool interface the runtime offers.

/// `ompt_data_t`.
#[repr(C)]
pub union OmptData {
    value: u64,
    ptr: *mut c_void,
}

type Lookup = unsafe extern "C" fn(*const c_char) -> *mut c_void;

/// `ompt_start_tool_result_t`.
#[repr(C)]
pub struct StartToolResult {
    initialize: unsafe extern "C" fn(Lookup, c_int, *mut OmptData) -> c_int,
    finalize: unsafe extern "C" fn(*mut OmptData),
    tool_data: OmptData,
}

// SAFETY: the result is read by the runtime only, on the thread that starts the tool.
unsafe impl Sync for StartToolResult {}

/// `ompt_callback_device_initialize` and `ompt_callback_device_load`.
const DEVICE_INITIALIZE: c_int = 12;
const DEVICE_LOAD: c_int = 14;

/// `ompt_callback_target_data_op` (OpenMP 5.0's form) and `ompt_callback_target_data_op_emi`
/// (5.1's), as numbered in `ompt_callbacks_t` (LLVM 22's `omp-tools.h`).
const TARGET_DATA_OP: c_int = 9;
const TARGET_DATA_OP_EMI: c_int = 34;

/// `ompt_set_sometimes` (`ompt_set_result_t`): from it up, the runtime may call a callback
/// it accepted; below it (error, never, impossible) it will not.
const SET_SOMETIMES: c_int = 3;

// The runtime receives `&TOOL.tool_data` as a writable `ompt_data_t *` but, as this tool asks,
// never writes it: `TOOL` may stay read-only.
static TOOL: StartToolResult =
    StartToolResult { initialize, finalize, tool_data: OmptData { value: 0 } };

/// The runtime asks at start-up whether a tool is present: this library is one.
#[unsafe(no_mangle)]
pub extern "C" fn ompt_start_tool(
    _omp_version: u32,
    _runtime_version: *const c_char,
) -> *const StartToolResult {
    &TOOL
}

/// OMPT's `initialize`: registers [`device_initialize`], [`device_load`] and the data-op
/// callback ([`target_data_op_emi`], else [`target_data_op`]), and [`print_traffic`] for the
/// program's exit. Returns 1 (the tool stays active).
unsafe extern "C" fn initialize(lookup: Lookup, _device: c_int, _data: *mut OmptData) -> c_int {
    // SAFETY: the runtime's lookup takes a NUL-terminated entry point name.
    let set = unsafe { lookup(c"ompt_set_callback".as_ptr()) };
    if set.is_null() {
        return 0;
    }
    type SetCallback = unsafe extern "C" fn(c_int, *const c_void) -> c_int;
    // SAFETY: `ompt_set_callback`'s signature (`ompt_set_callback_t`).
    let set: SetCallback = unsafe { std::mem::transmute(set) };
    // SAFETY: each callback has the signature its event requires.
    unsafe {
        set(DEVICE_INITIALIZE, device_initialize as *const c_void);
        set(DEVICE_LOAD, device_load as *const c_void);
        // LLVM's runtime calls only one of the two forms, the 5.1 one when both are set; the
        // older one is asked for only where the runtime will not call the newer.
        if set(TARGET_DATA_OP_EMI, target_data_op_emi as *const c_void) < SET_SOMETIMES {
            set(TARGET_DATA_OP, target_data_op as *const c_void);
        }
    }
    // The runtime calls `finalize` from its own shutdown; `atexit` covers an exit that skips
    // that, and `print_traffic` prints once either way.
    // SAFETY: `at_exit` takes no arguments and may run at any exit.
    unsafe { atexit(at_exit) };
    1
}

unsafe extern "C" {
    fn atexit(f: extern "C" fn()) -> c_int;
}

extern "C" fn at_exit() {
    print_traffic();
}

/// OMPT's `finalize`, called at the runtime's shutdown: prints the data report.
unsafe extern "C" fn finalize(_data: *mut OmptData) {
    print_traffic();
}

/// Whether the data report was printed.
static PRINTED: AtomicBool = AtomicBool::new(false);

/// Prints the data report ([`Ledger::lines`]) on standard error, once: nothing when the
/// program launched no kernel and copied nothing.
fn print_traffic() {
    if PRINTED.swap(true, Ordering::AcqRel) {
        return;
    }
    let state = state();
    let lines = state.ledger.lines(|kernel| match state.kernels.get(&kernel) {
        Some((name, _)) => name.clone(),
        None => format!("{kernel:#x}"),
    });
    drop(state);
    if lines.is_empty() {
        return;
    }
    // One write, its error ignored: it runs at exit, where a failed `eprintln!` would panic
    // across a C caller (an abort) and no one is left to tell.
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// OMPT's `target_data_op_emi` (`ompt_callback_target_data_op_emi_t`, OpenMP 5.1): counts
/// the operation at its begin only, since the runtime calls this at both ends of each.
unsafe extern "C" fn target_data_op_emi(
    endpoint: c_int,
    _target_task_data: *mut OmptData,
    _target_data: *mut OmptData,
    _host_op_id: *mut u64,
    optype: c_int,
    _src_address: *mut c_void,
    _src_device: c_int,
    _dest_address: *mut c_void,
    _dest_device: c_int,
    bytes: usize,
    _code: *const c_void,
) {
    if endpoint != SCOPE_END {
        count_data_op(optype, bytes);
    }
}

/// OMPT's `target_data_op` (`ompt_callback_target_data_op_t`, OpenMP 5.0): called once per
/// operation.
unsafe extern "C" fn target_data_op(
    _target_id: u64,
    _host_op_id: u64,
    optype: c_int,
    _src_address: *mut c_void,
    _src_device: c_int,
    _dest_address: *mut c_void,
    _dest_device: c_int,
    bytes: usize,
    _code: *const c_void,
) {
    count_data_op(optype, bytes);
}

/// Counts a data operation for what this thread's call into the runtime is for.
fn count_data_op(optype: c_int, bytes: usize) {
    // `try_with`: a thread's own storage may be gone while it exits.
    let whose = match ROLE.try_with(Cell::get).unwrap_or(Role::Outside) {
        Role::Outside => Whose::Outside,
        Role::Launch => Whose::Launch(thread()),
        Role::Kernel(kernel) => Whose::Kernel(kernel),
    };
    state().ledger.data_op(whose, optype, bytes);
}

/// OMPT's `device_initialize`: records the device's type. Called with the runtime's device
/// lock held.
unsafe extern "C" fn device_initialize(
    device: c_int,
    device_type: *const c_char,
    _device: *mut c_void,
    _lookup: *mut c_void,
    _documentation: *const c_char,
) {
    state().device_types.insert(device, string(device_type));
}

/// OMPT's `device_load`: records the host address of the image loaded on the device. Called
/// with the runtime's device lock held.
unsafe extern "C" fn device_load(
    device: c_int,
    _filename: *const c_char,
    _offset_in_file: i64,
    _vma_in_file: *mut c_void,
    _bytes: usize,
    host_address: *mut c_void,
    _device_address: *mut c_void,
    _module_id: u64,
) {
    state().loaded.entry(device).or_default().push(host_address as usize);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An offload binary with the given strings, laid out as LLVM writes version 1.
    fn binary(strings: &[(&str, &str)]) -> Vec<u8> {
        let mut out = vec![0x10, 0xFF, 0x10, 0xAD];
        out.extend(1u32.to_le_bytes());
        let table = 32 + 40;
        let text = table + 16 * strings.len();
        let mut text_bytes = Vec::new();
        let mut pairs = Vec::new();
        for (key, value) in strings {
            let key_at = text + text_bytes.len();
            text_bytes.extend(key.as_bytes());
            text_bytes.push(0);
            let value_at = text + text_bytes.len();
            text_bytes.extend(value.as_bytes());
            text_bytes.push(0);
            pairs.push((key_at as u64, value_at as u64));
        }
        let size = (text + text_bytes.len()) as u64;
        for v in [size, 32, 40] {
            out.extend(v.to_le_bytes());
        }
        out.extend(1u16.to_le_bytes());
        out.extend(1u16.to_le_bytes());
        out.extend(0u32.to_le_bytes());
        for v in [table as u64, strings.len() as u64, size, 0] {
            out.extend(v.to_le_bytes());
        }
        for (k, v) in pairs {
            out.extend(k.to_le_bytes());
            out.extend(v.to_le_bytes());
        }
        out.extend(text_bytes);
        out
    }

    #[test]
    fn offload_binaries_name_their_target() {
        let gpu = binary(&[("triple", "nvptx64-nvidia-cuda"), ("arch", "sm_90")]);
        assert_eq!(offload_binary_target(&gpu).as_deref(), Some("nvptx64-nvidia-cuda sm_90"));
        let cpu = binary(&[("arch", ""), ("triple", "x86_64-unknown-linux-gnu")]);
        assert_eq!(offload_binary_target(&cpu).as_deref(), Some("x86_64-unknown-linux-gnu"));
        assert_eq!(offload_binary_target(b"\x7fELF and more bytes than a header"), None);
        assert_eq!(offload_binary_target(&binary(&[("arch", "gfx90a")])), None, "no triple");
        assert_eq!(offload_binary_target(&gpu[..40]), None, "a truncated binary");
        assert_eq!(offload_binary_image(&gpu), Some((gpu.len(), 0)));
    }

    #[test]
    fn report_lines_say_device_image_or_failure() {
        let image = Some((2, 3, "nvptx64 sm_90"));
        let ran = report_line("k", (0, 1), "sm_90", "GPU-1", true, image, &[]);
        assert_eq!(
            ran,
            "[offload report] kernel `k` ran on device 0 (sm_90, uid GPU-1) from image 2 of 3 \
             (nvptx64 sm_90)"
        );
        let failed =
            report_line("k", (1, 4), "generic-64bit", "x86_64-1", false, None, &["a", "b"]);
        assert!(failed.ends_with("no image of the program was loaded there (images: a, b)"));
        let none = report_line("k", (0, 0), "?", "?", false, None, &["nvptx64 sm_90"]);
        assert_eq!(
            none,
            "[offload report] kernel `k` did not run: the runtime has no device 0 (0 devices \
             run the program's images: nvptx64 sm_90)"
        );
    }

    #[test]
    fn copies_count_per_kernel_and_outside_launches() {
        let mut ledger = Ledger::new();
        assert!(ledger.lines(|_| unreachable!()).is_empty(), "nothing launched or copied");
        // A launch of 0x10 on thread 1: its `begin_mapper` copies before the kernel is known.
        ledger.data_op(Whose::Launch(1), 2, 4000); // to the device
        ledger.data_op(Whose::Launch(1), 18, 4000); // to the device, async
        ledger.data_op(Whose::Launch(1), 1, 4000); // an allocation: not a copy
        ledger.launch(0x10, 1);
        ledger.data_op(Whose::Kernel(0x10), 3, 4000); // back, in its `end_mapper`
        ledger.data_op(Whose::Kernel(0x10), 4, 0); // a deletion: not a copy
        ledger.launch(0x20, 1); // nothing pending: no copies
        ledger.data_op(Whose::Outside, 2, 8000); // a `Preload`
        ledger.data_op(Whose::Outside, 19, 1); // back, async
        let name = |kernel: usize| if kernel == 0x10 { "b_kernel".into() } else { "a".into() };
        assert_eq!(
            ledger.lines(name),
            [
                "[offload report] data moved: 16000 bytes to devices in 3 copies, 4001 bytes \
                 back in 2 copies",
                "[offload report] data moved by kernel `a`: 0 bytes to devices in 0 copies, 0 \
                 bytes back in 0 copies",
                "[offload report] data moved by kernel `b_kernel`: 8000 bytes to devices in 2 \
                 copies, 4000 bytes back in 1 copy",
                "[offload report] data moved outside launches: 8000 bytes to devices in 1 copy, \
                 1 byte back in 1 copy",
            ]
        );
    }

    #[test]
    fn copies_outside_launches_alone_are_reported() {
        let mut ledger = Ledger::new();
        ledger.data_op(Whose::Outside, 5, 64); // an association: not a copy
        assert!(ledger.lines(|_| unreachable!()).is_empty());
        ledger.data_op(Whose::Outside, 3, 4);
        let lines = ledger.lines(|_| unreachable!());
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[0],
            "[offload report] data moved: 0 bytes to devices in 0 copies, 4 bytes back in 1 copy"
        );
        assert!(lines[1].starts_with("[offload report] data moved outside launches: 0 bytes"));
    }

    #[test]
    fn pending_copies_stay_with_their_thread_or_count_outside() {
        let mut ledger = Ledger::new();
        ledger.data_op(Whose::Launch(1), 2, 12);
        ledger.data_op(Whose::Launch(2), 2, 5); // thread 2's kernel never launches
        ledger.launch(7, 1);
        let lines = ledger.lines(|kernel| format!("{kernel:#x}"));
        assert_eq!(
            lines,
            [
                "[offload report] data moved: 17 bytes to devices in 2 copies, 0 bytes back in 0 \
                 copies",
                "[offload report] data moved by kernel `0x7`: 12 bytes to devices in 1 copy, 0 \
                 bytes back in 0 copies",
                "[offload report] data moved outside launches: 5 bytes to devices in 1 copy, 0 \
                 bytes back in 0 copies",
            ]
        );
    }
}
