//! The data the runtime copies between the host and the devices: what each thread's copies are
//! for (the two mappers a launch and a `Preload` call), the ledger of copies per kernel and
//! outside launches, and the data report printed at the program's end.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::loader::next;
use crate::state;

/// What the runtime's copies on a thread are made for, as the calls into the runtime that the
/// thread is in say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
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
    pub(crate) static LAST_KERNEL: Cell<Option<usize>> = const { Cell::new(None) };
}

/// A number for this thread, unique among the running threads: its `ROLE`'s address.
pub(crate) fn thread() -> usize {
    ROLE.try_with(|role| role as *const Cell<Role> as usize).unwrap_or(0)
}

/// `f()`, with this thread's copies made for `role` while it runs.
pub(crate) fn with_role<R>(role: Role, f: impl FnOnce() -> R) -> R {
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

/// Whether the data report was printed.
static PRINTED: AtomicBool = AtomicBool::new(false);

/// Prints the data report ([`Ledger::lines`]) on standard error, once: nothing when the
/// program launched no kernel and copied nothing.
pub(crate) fn print_traffic() {
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

/// Counts a data operation for what this thread's call into the runtime is for.
pub(crate) fn count_data_op(optype: c_int, bytes: usize) {
    // `try_with`: a thread's own storage may be gone while it exits.
    let whose = match ROLE.try_with(Cell::get).unwrap_or(Role::Outside) {
        Role::Outside => Whose::Outside,
        Role::Launch => Whose::Launch(thread()),
        Role::Kernel(kernel) => Whose::Kernel(kernel),
    };
    state().ledger.data_op(whose, optype, bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

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
