//! The dynamic loader: the runtime's definitions (`dlsym`, and the runtime libraries a
//! `dlopen`ed library brought in), C strings, and the loaded segment that holds an address.

use std::ffi::{CStr, c_char, c_int, c_void};

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
pub(crate) fn runtime_symbol(name: &CStr) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated; dlsym only reads it.
    let f = unsafe { dlsym(RTLD_DEFAULT, name.as_ptr()) };
    if f.is_null() { loaded_runtime_symbol(name) } else { f }
}

/// The definition of `name` that this library's own hides: the runtime's, after this library
/// in the global scope or, for a runtime that a `dlopen`ed library brought in, in that one.
pub(crate) fn next(name: &CStr) -> *mut c_void {
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
pub(crate) fn string(p: *const c_char) -> String {
    if p.is_null() {
        return "?".to_string();
    }
    // SAFETY: the runtime's and the registration's strings are NUL-terminated.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
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
pub(crate) fn segment_start(address: usize) -> Option<usize> {
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
