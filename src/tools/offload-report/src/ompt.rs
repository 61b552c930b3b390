//! The OMPT tool interface (OpenMP 5.1, chapter 4) that the runtime offers: `ompt_start_tool`,
//! `initialize`, `finalize`, and the callbacks that record the devices, the images loaded on
//! them and the data operations.

use std::ffi::{c_char, c_int, c_void};

use crate::data::{count_data_op, print_traffic};
use crate::loader::string;
use crate::state;

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

/// `ompt_scope_end` (`ompt_scope_endpoint_t`: begin 1, end 2, beginend 3).
const SCOPE_END: c_int = 2;

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
