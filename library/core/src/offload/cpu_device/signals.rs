//! What the CPU device does when a work item ends the program: a signal, a panic, a stop.

use super::fibers::{FIBER_STACK, FIBER_STACKS, PAGE};
use super::*;
use crate::fmt::{self, Write};
use crate::sync::atomic::{AtomicBool, AtomicU8};

/// `struct sigaction` of Linux's C libraries (glibc and musl, x86-64 and AArch64): the handler,
/// the signal mask (128 bytes), the flags and the restorer.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct SigAction {
    handler: usize,
    mask: [u64; 16],
    flags: c_int,
    restorer: usize,
}

/// The signals that end a work item which traps, aborts or accesses memory it may not:
/// `SIGILL`, `SIGTRAP`, `SIGABRT`, `SIGBUS`, `SIGFPE` and `SIGSEGV` (their numbers on Linux).
const FATAL_SIGNALS: [c_int; 6] = [4, 5, 6, 7, 8, 11];
/// `SIGBUS` and `SIGSEGV`: an invalid memory access, or a stack overflow.
const MEMORY_SIGNALS: [c_int; 2] = [7, 11];
/// `sa_flags` of our handler: `SA_SIGINFO` (the handler gets the fault's address) and
/// `SA_ONSTACK` (it runs on the thread's alternate signal stack, if any).
const SA_SIGINFO_ONSTACK: c_int = SA_SIGINFO | 0x0800_0000;
/// `SA_SIGINFO`: the handler takes the `siginfo_t` and the context too.
const SA_SIGINFO: c_int = 4;

/// The start of Linux's `siginfo_t` (x86-64 and AArch64): the signal, an error number, the
/// code (above 0 when the kernel sent the signal for a fault or trap; 0 or below when a
/// process did, by `kill` or `raise`), padding, and for `SIGSEGV` and `SIGBUS` the address
/// that faulted.
#[repr(C)]
struct SigInfo {
    _signo: c_int,
    _errno: c_int,
    code: c_int,
    _pad: c_int,
    addr: usize,
}

/// Linux's `stack_t`: an alternate signal stack's start, flags and size in bytes.
#[repr(C)]
pub(super) struct SignalStack {
    sp: *mut c_void,
    flags: c_int,
    size: usize,
}

/// `SS_DISABLE` of `stack_t::ss_flags`: the thread has no alternate signal stack.
const SS_DISABLE: c_int = 2;
/// The bytes of the alternate signal stack that the runner maps for a thread, above a guard
/// page: room for the kernel's signal frame (with the vector registers' state, some KiB on
/// x86-64 with AVX-512), [`on_fatal_signal`] (a line of at most 512 bytes) and a handler that
/// it hands the signal to.
const SIGNAL_STACK: usize = 64 * 1024;
/// `SIG_DFL` and `SIG_IGN`, the default and the ignoring action, as `sa_handler` values.
const SIG_DFL: usize = 0;
const SIG_IGN: usize = 1;

/// The actions that were installed for [`FATAL_SIGNALS`] before ours, which a signal gets
/// back; written once, by [`install_signal_handlers`], before ours is installed.
struct PreviousActions(crate::cell::UnsafeCell<[SigAction; 6]>);

// SAFETY: written only by the thread that wins `HANDLERS_INSTALLED`, before any handler that
// reads it is installed; read-only afterwards.
unsafe impl Sync for PreviousActions {}

static PREVIOUS_ACTIONS: PreviousActions = PreviousActions(crate::cell::UnsafeCell::new(
    [SigAction { handler: 0, mask: [0; 16], flags: 0, restorer: 0 }; 6],
));
static HANDLERS_INSTALLED: AtomicBool = AtomicBool::new(false);
/// Whether a work item has named itself: [`NOT_NAMED`], [`NAMING`] (its line is being
/// written) or [`NAMED`]. When several workers trap at once (every work item of a bad launch
/// may), the program prints one line, the first's; never reset, since the program ends.
static WORK_ITEM_NAMED: AtomicU8 = AtomicU8::new(NOT_NAMED);
const NOT_NAMED: u8 = 0;
const NAMING: u8 = 1;
const NAMED: u8 = 2;

/// A line of at most 1,024 bytes, built without allocating (in a signal handler, or in a panic
/// whose message may be long).
struct Line {
    bytes: [u8; 1024],
    len: usize,
}

impl Line {
    const EMPTY: Line = Line { bytes: [0; 1024], len: 0 };
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Names the work item that the signal ended, if the calling thread runs one and no other work
/// item was named before; then gives the signal the action that was installed before ours (the
/// default action ends the program by the signal; a crash reporter's handler gets it with its
/// own flags): a fault (`SIGSEGV` or `SIGBUS` that the kernel sent for an access) happens again
/// when the handler returns, with its own address, and any other signal is raised again. A
/// signal outside any work item is handed to the previous handler, if there is one, and ours
/// stays installed.
extern "C" fn on_fatal_signal(signum: c_int, info: *const SigInfo, context: *mut c_void) {
    let kernel = RUNNING_KERNEL.get();
    // Lock-free atomics: async-signal-safe.
    let first = !kernel.is_null()
        && WORK_ITEM_NAMED
            .compare_exchange(NOT_NAMED, NAMING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
    if !first {
        // Another work item is writing its line: give it the moment it needs before this one
        // ends the program (bounded, should it be stuck).
        let mut spins = 0u32;
        while WORK_ITEM_NAMED.load(Ordering::Acquire) == NAMING && spins < 100_000_000 {
            crate::hint::spin_loop();
            spins += 1;
        }
    }
    // SAFETY: the kernel passes a `siginfo_t` to an `SA_SIGINFO` handler.
    let (code, addr) = unsafe { ((*info).code, (*info).addr) };
    // An access that the kernel stopped (`SEGV_MAPERR`, `SEGV_ACCERR`, `SEGV_BNDERR`,
    // `SEGV_PKUERR`; `BUS_ADRALN`, `BUS_ADRERR`, `BUS_OBJERR`), which happens again when the
    // handler returns; other codes (a memory error reported later, a signal sent by a process)
    // would not.
    let fault = matches!((signum, code), (11, 1..=4) | (7, 1..=3));
    if first {
        name_work_item(signum, fault, addr);
    }
    let slot = FATAL_SIGNALS.iter().position(|&s| s == signum).unwrap_or(0);
    // SAFETY: `PREVIOUS_ACTIONS` is read-only once a handler is installed.
    let previous = unsafe { &(*PREVIOUS_ACTIONS.0.get())[slot] };
    if kernel.is_null() && previous.handler != SIG_DFL && previous.handler != SIG_IGN {
        // A signal outside any work item, for a handler that was there before ours (a runtime
        // that survives its own `SIGSEGV`s, Rust's stack overflow report): it gets the signal
        // as if it were installed, and ours stays for the work items of later launches.
        // SAFETY: the previous action's handler, called as its flags say it takes a signal.
        unsafe {
            if previous.flags & SA_SIGINFO != 0 {
                let handler: extern "C" fn(c_int, *const SigInfo, *mut c_void) =
                    crate::mem::transmute(previous.handler);
                handler(signum, info, context);
            } else {
                let handler: extern "C" fn(c_int) = crate::mem::transmute(previous.handler);
                handler(signum);
            }
        }
        return;
    }
    // The program ends: the signal gets the action that was there before ours. `sigaction` and
    // `raise` are async-signal-safe. A raised signal is blocked until this handler returns,
    // then delivered to the previous action; the instruction that faulted runs again and
    // faults again, which the previous action gets with the fault's own `siginfo_t`.
    // SAFETY: the previous action, as `sigaction` gave it.
    unsafe {
        sigaction(signum, previous, ptr::null_mut());
        if !fault {
            raise(signum);
        }
    }
}

/// Writes the line that names the work item that the signal `signum` ended, on standard error,
/// with one `write` (async-signal-safe; no allocation): the kernel, the work item, the launch's
/// grid and the cause. `fault`: the kernel stopped an access at `addr`, which, on a fiber
/// stack's guard page, is the work item's stack overflowing.
fn name_work_item(signum: c_int, fault: bool, addr: usize) {
    let kernel = running_kernel().unwrap_or("?");
    let [stacks, stacks_end] = FIBER_STACKS.get();
    let guard_page = (stacks..stacks_end).contains(&addr) && (addr - stacks) % FIBER_STACK < PAGE;
    let mut line = Line::EMPTY;
    let _ = write!(
        line,
        "error: the offload kernel `{kernel}` stopped the program on the CPU device in work \
         item "
    );
    write_work_item(&mut line);
    let _ = write!(line, " (signal {signum}: ");
    let _ = if fault && guard_page {
        let usable_kib = (FIBER_STACK - PAGE) / 1024;
        write!(
            line,
            "the work item overflowed its stack, which has {usable_kib} KiB on the CPU device \
             in a kernel with barriers"
        )
    } else if MEMORY_SIGNALS.contains(&signum) {
        line.write_str("an invalid memory access or a stack overflow")
    } else {
        line.write_str("a panic or a trap")
    };
    // The line ends with its parenthesis and newline, should a long symbol have filled it.
    line.len = line.len.min(line.bytes.len() - 2);
    let _ = line.write_str(")\n");
    // SAFETY: `write` (async-signal-safe) of bytes on this stack.
    unsafe { write(2, line.bytes.as_ptr().cast(), line.len) };
    WORK_ITEM_NAMED.store(NAMED, Ordering::Release);
}

/// Installs [`on_fatal_signal`] for [`FATAL_SIGNALS`], once per process, keeping the actions it
/// replaces in [`PREVIOUS_ACTIONS`].
pub(super) fn install_signal_handlers() {
    if HANDLERS_INSTALLED.swap(true, Ordering::AcqRel) {
        return;
    }
    let ours = SigAction {
        handler: on_fatal_signal as *const () as usize,
        mask: [0; 16],
        flags: SA_SIGINFO_ONSTACK,
        restorer: 0,
    };
    for (slot, &signum) in FATAL_SIGNALS.iter().enumerate() {
        // SAFETY: this thread alone writes `PREVIOUS_ACTIONS`, slot by slot, through
        // `sigaction`. A signal in the moment before the C library has copied the previous
        // action there finds zeros: the default action, which ends the program by the signal.
        unsafe {
            let previous = &raw mut (*PREVIOUS_ACTIONS.0.get())[slot];
            sigaction(signum, &ours, previous);
        }
    }
}

/// Writes where the calling thread's work item is: `block (x, y, z) thread (x, y, z) of its
/// launch over blocks [x, y, z] of threads [x, y, z]`.
fn write_work_item(line: &mut Line) {
    let (block, [tx, ty, tz]) = (BLOCK.get(), THREAD_IDX.get());
    let [bx, by, bz] = block.block_idx;
    let ([gx, gy, gz], [dx, dy, dz]) = (block.grid_dim, block.block_dim);
    let _ = write!(
        line,
        "block ({bx}, {by}, {bz}) thread ({tx}, {ty}, {tz}) of its launch over blocks \
         [{gx}, {gy}, {gz}] of threads [{dx}, {dy}, {dz}]"
    );
}

/// The panic handler of a CPU device image whose crate graph has none: the device pass defines
/// the graph's handler (`rust_begin_unwind`) as a call of this function with its `&PanicInfo`
/// (`rustc_codegen_llvm::back::offload_device`), and roots it in such images only. Prints, for
/// the first work item of the program that panics or stops it, the panic as a host panic gives
/// it (the location, then the message) with the kernel's Rust path and the work item:
///
/// ```text
/// error: the offload kernel `kernels::saxpy` panicked on the CPU device in work item block (2,
/// 0, 0) thread (5, 0, 0) of its launch over blocks [4, 1, 1] of threads [16, 1, 1] at
/// kernels/src/lib.rs:9:9:
/// index out of bounds: the len is 1000 but the index is 1000
/// ```
///
/// (one line up to the location), then traps, as the handler of a graph without one did
/// before: the program ends by the trap's signal (`SIGILL` on x86-64, `SIGTRAP` on AArch64),
/// without the line of [`on_fatal_signal`], which the panic's line replaces. The line is cut at
/// 1,024 bytes. A message whose formatting panics in turn ends the program by the trap alone
/// (the nested panic finds the line taken, and [`on_fatal_signal`] then waits for it in vain,
/// for a bounded time).
#[unsafe(no_mangle)]
unsafe extern "C" fn __rust_offload_cpu_panic(info: *const c_void) -> ! {
    // SAFETY: the handler passes the `&PanicInfo` that `core` gave it.
    let info = unsafe { &*info.cast::<crate::panic::PanicInfo<'_>>() };
    // As in `on_fatal_signal`: the first work item to stop the program writes the line.
    let first = WORK_ITEM_NAMED
        .compare_exchange(NOT_NAMED, NAMING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok();
    if first {
        let mut line = Line::EMPTY;
        match running_kernel() {
            Some(kernel) => {
                let _ = write!(
                    line,
                    "error: the offload kernel `{kernel}` panicked on the CPU device in work item "
                );
                write_work_item(&mut line);
            }
            None => {
                let _ = line.write_str("error: code of an offload image panicked outside a launch");
            }
        }
        if let Some(location) = info.location() {
            let _ = write!(line, " at {location}");
        }
        let _ = write!(line, ":\n{}", info.message());
        // The message ends with its newline, should it have filled the line.
        line.len = line.len.min(line.bytes.len() - 1);
        let _ = line.write_str("\n");
        // SAFETY: `write` of bytes on this stack.
        unsafe { write(2, line.bytes.as_ptr().cast(), line.len) };
        WORK_ITEM_NAMED.store(NAMED, Ordering::Release);
    }
    crate::intrinsics::abort()
}

/// Prints `message` (one line, after `error: the offload kernel `<kernel>` `) on standard
/// error and ends the program by `SIGABRT`, without the line of [`on_fatal_signal`].
pub(super) fn stop_with(message: fmt::Arguments<'_>) -> ! {
    let kernel = running_kernel().unwrap_or("?");
    RUNNING_KERNEL.set(ptr::null());
    let mut line = Line::EMPTY;
    let _ = writeln!(line, "error: the offload kernel `{kernel}` {message}");
    // SAFETY: `write` of bytes on this stack; `abort` ends the program.
    unsafe {
        write(2, line.bytes.as_ptr().cast(), line.len);
        abort()
    }
}

/// An alternate signal stack that the runner mapped for the calling thread, on which
/// [`on_fatal_signal`] runs when a work item overflowed its stack; none (`base` null) when the
/// thread had one already (Rust's standard library gives its threads one) or the mapping
/// failed, in which case an overflow ends the program without a line.
pub(super) struct AltSignalStack {
    base: *mut c_void,
}

impl AltSignalStack {
    /// Maps and installs a [`SIGNAL_STACK`]-byte alternate signal stack, above a guard page, for
    /// the calling thread if it has none.
    pub(super) fn install() -> AltSignalStack {
        const NONE: AltSignalStack = AltSignalStack { base: ptr::null_mut() };
        let mut current = SignalStack { sp: ptr::null_mut(), flags: 0, size: 0 };
        // SAFETY: `sigaltstack` only reads the thread's current alternate stack here.
        let known = unsafe { sigaltstack(ptr::null(), &mut current) } == 0;
        if !known || current.flags & SS_DISABLE == 0 {
            return NONE;
        }
        const PROT_NONE: c_int = 0;
        const PROT_READ_WRITE: c_int = 1 | 2;
        const MAP_PRIVATE_ANONYMOUS: c_int = 0x02 | 0x20;
        // SAFETY: a new private anonymous mapping: a guard page, then the stack, installed as
        // this thread's alternate stack.
        unsafe {
            let len = PAGE + SIGNAL_STACK;
            let base = mmap(ptr::null_mut(), len, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0);
            if base as isize == -1 {
                return NONE;
            }
            let stack = SignalStack {
                sp: base.cast::<u8>().add(PAGE).cast(),
                flags: 0,
                size: SIGNAL_STACK,
            };
            if mprotect(base, PAGE, PROT_NONE) != 0 || sigaltstack(&stack, ptr::null_mut()) != 0 {
                munmap(base, len);
                return NONE;
            }
            AltSignalStack { base }
        }
    }

    /// Uninstalls and unmaps the stack that [`install`](Self::install) mapped, if any.
    pub(super) fn remove(self) {
        if self.base.is_null() {
            return;
        }
        let disable = SignalStack { sp: ptr::null_mut(), flags: SS_DISABLE, size: 0 };
        // SAFETY: the thread runs no signal handler now (its work items have run), so the
        // stack is not in use; then the mapping of `install`.
        unsafe {
            sigaltstack(&disable, ptr::null_mut());
            munmap(self.base, PAGE + SIGNAL_STACK);
        }
    }
}
