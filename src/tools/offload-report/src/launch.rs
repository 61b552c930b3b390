//! Kernel launches: `__tgt_target_kernel`, and the report line of each kernel's first launch on
//! a device (which device and image ran it, or that the launch failed).

use std::ffi::{CStr, c_char, c_int, c_void};

use crate::data::{LAST_KERNEL, Role, thread, with_role};
use crate::loader::{next, runtime_symbol, string};
use crate::{Image, state};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
