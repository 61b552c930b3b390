//! How the offload runtime's CPU device runs a launch: every work item of its grid.
//!
//! LLVM's offload runtime runs images for the host's own target through its host plugin, which
//! loads an image as a shared object and calls a kernel once, through libffi, with the
//! launch's arguments; it passes on neither the grid nor the block. So the compiler's device
//! pass gives each kernel of such an image an entry that hands its arguments to
//! [`__rust_offload_cpu_launch`], together with a function that runs a row of work items on them
//! (`rustc_codegen_llvm::back::offload_device`), and roots that function of this module in the
//! image. The grid comes from the launching program: its launch code stores the launch's
//! `blocks` and `threads` into the thread-local [`Launch`] record `__rust_offload_launch`
//! right before it calls the runtime, which calls the kernel on the same thread
//! (`rustc_codegen_llvm::builder::gpu_offload`), and the program exports that record to the
//! image (`rustc_codegen_ssa::back::link`).
//!
//! Blocks are shared out among worker threads: the launching thread and up to `n - 1` threads
//! started for the launch, where `n` is the number of online CPUs, or the value of the
//! environment variable `RUST_OFFLOAD_CPU_WORKERS` (a positive integer) when set, and never more
//! than the grid's blocks; both are read at the first launch and kept. Each worker takes the
//! next block not yet taken and runs its threads one after another, x fastest (a loop inside
//! the kernel's row function, into which the kernel's body is inlined), then y, then z. The
//! launch returns when every block has run.
//!
//! A work item that ends the program by a signal (`SIGILL` of the trap that a panic handler's
//! `core::intrinsics::abort()` executes, `SIGTRAP`, `SIGABRT`, `SIGFPE`, and `SIGSEGV` or
//! `SIGBUS` of an invalid memory access or a stack overflow) prints one line first, on standard
//! error, naming the kernel (its Rust path, with its generic arguments), the work item, the
//! launch's grid and the cause; the program then ends by the signal as it would have. A panic
//! in a crate graph without a panic handler prints, instead, the panic's location and message
//! ([`__rust_offload_cpu_panic`]). The handler is installed at the first
//! launch and runs on an alternate signal stack (each worker thread gets one, and the launching
//! thread one for the launch if it has none), so that a work item that overflowed its stack is
//! named too; a signal outside any work item goes to the handler that was there before.
//!
//! **Barriers.** A kernel that reaches [`sync_threads`] (the device pass tells the runner, see
//! [`KERNEL_SYNCS`]) runs each block's threads as fibers on the worker's thread, each work item
//! on its own stack ([`FIBER_STACK`], with a guard page): a work item that calls
//! `sync_threads` switches back to the block's scheduler, which runs the block's other work
//! items up to the barrier and then releases them all, round after round, until every work item
//! has ended. A block whose work items do not all reach a barrier (some ended while others
//! wait) stops the program with a line that names the kernel and the block: stricter than the
//! GPUs, where threads that have exited are no longer waited for. The switch saves and restores
//! the callee-saved general registers in a few instructions (x86-64 only); the SSE and x87
//! control words are the worker's, shared by the block's work items. A work item's stack is
//! smaller than a thread's; overflowing it hits its guard page, and the line names the work
//! item and the stack's size. Block-shared memory (`core::offload::block_shared!`) is a
//! thread-local of the image, so each worker's block, whose fibers all run on the worker's
//! thread, has its own.
//!
//! This module is built only into the `core` of the CPU device (`--cfg offload_device`), which
//! the device pass instantiates from MIR into each image; no other `core` has it.

use crate::cell::Cell;
use crate::ffi::{CStr, c_char, c_int, c_long, c_void};
use crate::fmt::{self, Write};
use crate::ptr;
use crate::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

/// The block that the calling thread runs work items of, and its launch's dimensions.
#[derive(Clone, Copy)]
struct Block {
    block_idx: [u32; 3],
    block_dim: [u32; 3],
    grid_dim: [u32; 3],
}

impl Block {
    /// A thread that runs no launch is in block 0 of one block of one thread.
    const OUTSIDE_LAUNCH: Block = Block { block_idx: [0; 3], block_dim: [1; 3], grid_dim: [1; 3] };
}

// Set once per block; the thread index once per work item, by the kernel's row function,
// which names it by its symbol: with the store and the kernel's reads of one global in one
// function, LLVM forwards the index to the reads and can vectorize the row.
#[thread_local]
static BLOCK: Cell<Block> = Cell::new(Block::OUTSIDE_LAUNCH);
#[thread_local]
#[unsafe(export_name = "__rust_offload_thread_idx")]
static THREAD_IDX: Cell<[u32; 3]> = Cell::new([0; 3]);

/// The kernel (its Rust path, NUL-terminated) whose work items the calling thread runs; null
/// outside a launch.
#[thread_local]
static RUNNING_KERNEL: Cell<*const c_char> = Cell::new(ptr::null());

pub(super) fn thread_idx(dim: usize) -> u32 {
    THREAD_IDX.get()[dim]
}

pub(super) fn block_idx(dim: usize) -> u32 {
    BLOCK.get().block_idx[dim]
}

pub(super) fn block_dim(dim: usize) -> u32 {
    BLOCK.get().block_dim[dim]
}

pub(super) fn grid_dim(dim: usize) -> u32 {
    BLOCK.get().grid_dim[dim]
}

/// The launching program's record of its current launch, 32 bytes: `blocks` and `threads`
/// as the launch gave them, x, y, z, the bytes of dynamic block-shared memory that it asks
/// for (`core::offload::launch`; 0 otherwise), and the device it asks for plus one
/// (`core::offload::launch_on_device`; 0, the runtime's default, otherwise), which the
/// program's launch code reads before the runtime runs the kernel.
#[repr(C)]
struct Launch {
    blocks: [u32; 3],
    threads: [u32; 3],
    dynamic_shared: u32,
    // Read by the program's launch code only; here for the record's layout.
    #[allow(dead_code)]
    device_plus_one: u32,
}

/// `pthread_t`, an `unsigned long` on Linux.
type PthreadT = crate::ffi::c_ulong;

/// `_SC_NPROCESSORS_ONLN` of Linux's C libraries (glibc and musl).
const SC_NPROCESSORS_ONLN: c_int = 84;

/// At most this many workers run one launch.
const MAX_WORKERS: usize = 256;

unsafe extern "C" {
    /// Defined and exported by the launching program (see the module's documentation).
    #[thread_local]
    static __rust_offload_launch: Launch;

    // The image binds to the C library of the program that loads it.
    fn pthread_create(
        thread: *mut PthreadT,
        attr: *const c_void,
        start: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
        arg: *mut c_void,
    ) -> c_int;
    fn pthread_join(thread: PthreadT, retval: *mut *mut c_void) -> c_int;
    fn sysconf(name: c_int) -> c_long;
    fn getenv(name: *const c_char) -> *const c_char;
    fn sigaction(signum: c_int, act: *const SigAction, old: *mut SigAction) -> c_int;
    fn sigaltstack(stack: *const SignalStack, old: *mut SignalStack) -> c_int;
    fn raise(signum: c_int) -> c_int;
    fn write(fd: c_int, buf: *const c_void, count: usize) -> isize;
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        offset: i64,
    ) -> *mut c_void;
    fn mprotect(addr: *mut c_void, len: usize, prot: c_int) -> c_int;
    fn munmap(addr: *mut c_void, len: usize) -> c_int;
    fn abort() -> !;
}

/// `struct sigaction` of Linux's C libraries (glibc and musl, x86-64 and AArch64): the handler,
/// the signal mask (128 bytes), the flags and the restorer.
#[repr(C)]
#[derive(Clone, Copy)]
struct SigAction {
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
struct SignalStack {
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
fn install_signal_handlers() {
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

/// Runs the work items of one row of a block (x = `first..first + count`, `count` > 0): the
/// kernel on the arguments that the kernel's entry packed, writing each x to
/// `__rust_offload_thread_idx[0]` first (the caller sets y and z). Made by the device pass for
/// each kernel.
type RowFn = unsafe extern "C" fn(args: *const c_void, first: u32, count: u32);

/// A bit of the runner's `flags`: the kernel reaches [`sync_threads`] through the calls that
/// the device pass can follow (direct calls), so its blocks run as fibers.
const KERNEL_SYNCS: u32 = 1;

/// One launch, shared by its workers.
struct Grid {
    row: RowFn,
    args: *const c_void,
    kernel: *const c_char,
    blocks: [u32; 3],
    threads: [u32; 3],
    block_count: u64,
    next_block: AtomicU64,
    /// The kernel reaches `sync_threads` ([`KERNEL_SYNCS`]).
    syncs: bool,
    /// Bytes of dynamic block-shared memory per block.
    dynamic_shared: usize,
}

/// Runs blocks of `grid` until none is left to take.
fn run_blocks(grid: &Grid) {
    RUNNING_KERNEL.set(grid.kernel);
    let [blocks_x, blocks_y, _] = grid.blocks.map(u64::from);
    let [threads_x, threads_y, threads_z] = grid.threads;
    let fibers = if grid.syncs && grid.threads != [1; 3] { Some(Fibers::new(grid)) } else { None };
    let dynamic_shared = DynamicShared::new(grid.dynamic_shared);
    loop {
        let block = grid.next_block.fetch_add(1, Ordering::Relaxed);
        if block >= grid.block_count {
            RUNNING_KERNEL.set(ptr::null());
            if let Some(fibers) = fibers {
                fibers.release();
            }
            dynamic_shared.release();
            return;
        }
        // The indices fit in `u32`: each is below a dimension of the grid.
        let block_idx = [
            (block % blocks_x) as u32,
            (block / blocks_x % blocks_y) as u32,
            (block / (blocks_x * blocks_y)) as u32,
        ];
        BLOCK.set(Block { block_idx, block_dim: grid.threads, grid_dim: grid.blocks });
        if let Some(fibers) = &fibers {
            fibers.run_block(grid);
            continue;
        }
        for z in 0..threads_z {
            for y in 0..threads_y {
                THREAD_IDX.set([0, y, z]);
                // SAFETY: the kernel's entry passed a row function and the arguments it takes,
                // which stay alive until `__rust_offload_cpu_launch` returns; the row writes x
                // into this thread's `THREAD_IDX`.
                unsafe { (grid.row)(grid.args, 0, threads_x) };
            }
        }
    }
}

/// The kernel that the calling thread runs work items of (the Rust path that its entry passed,
/// see [`__rust_offload_cpu_launch`]), `None` outside a launch.
fn running_kernel() -> Option<&'static str> {
    let kernel = RUNNING_KERNEL.get();
    // SAFETY: the kernel's entry passed a NUL-terminated constant of the image.
    (!kernel.is_null()).then(|| unsafe { CStr::from_ptr(kernel) }.to_str().unwrap_or("?"))
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
fn stop_with(message: fmt::Arguments<'_>) -> ! {
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

/// A worker's dynamic block-shared memory, which each block that it runs uses in turn: `len`
/// bytes (none when 0), mapped once per launch and worker, page-aligned.
struct DynamicShared {
    base: *mut u8,
    len: usize,
}

impl DynamicShared {
    fn new(len: usize) -> DynamicShared {
        if len == 0 {
            DYNAMIC_SHARED.set(ptr::null_mut());
            return DynamicShared { base: ptr::null_mut(), len };
        }
        const PROT_RW: c_int = 1 | 2;
        const MAP_ANON: c_int = 0x02 | 0x20;
        // SAFETY: a new private anonymous mapping.
        let base = unsafe { mmap(ptr::null_mut(), len, PROT_RW, MAP_ANON, -1, 0) };
        if base as isize == -1 {
            stop_with(format_args!(
                "asks for {len} bytes of dynamic block-shared memory, which the CPU device could \
                 not map"
            ));
        }
        DYNAMIC_SHARED.set(base.cast());
        DynamicShared { base: base.cast(), len }
    }

    fn release(self) {
        DYNAMIC_SHARED.set(ptr::null_mut());
        if !self.base.is_null() {
            // SAFETY: the mapping of `new`, which no work item uses any longer.
            unsafe { munmap(self.base.cast(), self.len) };
        }
    }
}

/// The most threads of a block that runs with barriers: a GPU's limit.
const MAX_BLOCK_THREADS: usize = 1024;
/// The stack of each work item of a block that runs with barriers, its guard page included.
const FIBER_STACK: usize = 256 * 1024;
/// The page size of Linux on x86-64, the size of a stack's guard page.
const PAGE: usize = 4096;

/// Where a work item of a block with barriers is.
#[derive(Clone, Copy, PartialEq)]
enum FiberState {
    /// Not started, or released from a barrier.
    Ready,
    /// Waiting at `sync_threads`.
    AtBarrier,
    /// Its kernel call returned.
    Ended,
}

/// A work item of a block with barriers: its saved stack pointer while it waits, and its
/// thread index.
#[derive(Clone, Copy)]
struct Fiber {
    sp: usize,
    state: FiberState,
    thread_idx: [u32; 3],
}

/// The work item that the calling thread runs as a fiber, null outside one; the grid it
/// belongs to; and where the block's scheduler saved its stack pointer.
#[thread_local]
static CURRENT_FIBER: Cell<*mut Fiber> = Cell::new(ptr::null_mut());
#[thread_local]
static CURRENT_GRID: Cell<*const Grid> = Cell::new(ptr::null());
#[thread_local]
static SCHEDULER_SP: Cell<*mut usize> = Cell::new(ptr::null_mut());

/// The stacks of the calling worker's fibers (see [`Fibers`]), from the first stack's guard
/// page to the end of the last stack; `[0, 0]` when it runs none. Read by [`on_fatal_signal`].
#[thread_local]
static FIBER_STACKS: Cell<[usize; 2]> = Cell::new([0; 2]);

/// The dynamic block-shared memory of the block that the calling thread runs (a worker's, for
/// each block it runs), null when the launch asks for none.
#[thread_local]
static DYNAMIC_SHARED: Cell<*mut u8> = Cell::new(ptr::null_mut());

/// `core::offload::dynamic_shared_memory` on the CPU device.
pub(super) fn dynamic_shared_memory() -> *mut u8 {
    DYNAMIC_SHARED.get()
}

/// One worker's memory for the fibers of a block: the [`Fiber`]s, then one stack per thread of
/// the block, each with a guard page below it, mapped once per launch and worker.
struct Fibers {
    base: *mut u8,
    len: usize,
    fibers: *mut Fiber,
    count: usize,
}

impl Fibers {
    /// Maps the memory for the blocks of `grid`; stops the program when the block has more
    /// than [`MAX_BLOCK_THREADS`] threads or the memory cannot be mapped.
    fn new(grid: &Grid) -> Fibers {
        let count = grid.threads.iter().try_fold(1usize, |n, &t| n.checked_mul(t as usize));
        let count = count.unwrap_or(usize::MAX);
        if count > MAX_BLOCK_THREADS || !cfg!(target_arch = "x86_64") {
            stop_with(format_args!(
                "calls `core::offload::sync_threads` in blocks of {count} threads; the CPU device \
                 runs barriers in blocks of at most {MAX_BLOCK_THREADS} threads, on x86-64"
            ));
        }
        let table = (count * size_of::<Fiber>()).next_multiple_of(PAGE);
        let len = table + count * FIBER_STACK;
        const PROT_NONE: c_int = 0;
        const PROT_READ_WRITE: c_int = 1 | 2;
        const MAP_PRIVATE_ANONYMOUS_NORESERVE: c_int = 0x02 | 0x20 | 0x4000;
        // SAFETY: a new private anonymous mapping; each guard page lies inside it.
        let base = unsafe {
            let base =
                mmap(ptr::null_mut(), len, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS_NORESERVE, -1, 0);
            if base as isize == -1 {
                stop_with(format_args!(
                    "needs {len} bytes of stacks for its blocks of {count} threads, which the \
                     CPU device could not map"
                ));
            }
            for i in 0..count {
                let guard = base.cast::<u8>().add(table + i * FIBER_STACK);
                if mprotect(guard.cast(), PAGE, PROT_NONE) != 0 {
                    // Without its guard page, a work item's stack overflow would write into
                    // its neighbour's stack (the kernel's maps exhausted `vm.max_map_count`).
                    stop_with(format_args!(
                        "runs its blocks of {count} threads with barriers, and the CPU device \
                         could not protect the stack of each work item (too many workers or \
                         threads for the system's limit of memory maps)"
                    ));
                }
            }
            base.cast::<u8>()
        };
        FIBER_STACKS.set([base as usize + table, base as usize + len]);
        Fibers { base, len, fibers: base.cast(), count }
    }

    fn release(self) {
        FIBER_STACKS.set([0; 2]);
        // SAFETY: the mapping of `new`, which no fiber uses any longer.
        unsafe { munmap(self.base.cast(), self.len) };
    }

    /// Runs the current block (`BLOCK`) of `grid`: every work item as a fiber, round after
    /// round, each round running every work item up to its next barrier or its end.
    fn run_block(&self, grid: &Grid) {
        let [tx, ty, _] = grid.threads;
        let table = (self.count * size_of::<Fiber>()).next_multiple_of(PAGE);
        for i in 0..self.count {
            let i32 = i as u32;
            let thread_idx = [i32 % tx, i32 / tx % ty, i32 / (tx * ty)];
            // The stack's top, 16-aligned, holds `fiber_main` (where the first switch returns
            // to, with the stack then aligned as at a call) and a null return address.
            // SAFETY: inside the mapping; the top 16 bytes of the work item's stack.
            let sp = unsafe {
                let top = self.base.add(table + (i + 1) * FIBER_STACK) as *mut usize;
                top.sub(1).write(0);
                top.sub(2).write(fiber_main as *const () as usize);
                top.sub(2) as usize
            };
            // SAFETY: inside the mapping's table of `count` fibers.
            unsafe { self.fibers.add(i).write(Fiber { sp, state: FiberState::Ready, thread_idx }) };
        }
        CURRENT_GRID.set(grid);
        let mut scheduler_sp = 0usize;
        SCHEDULER_SP.set(&raw mut scheduler_sp);
        loop {
            let (mut waiting, mut ended) = (0, 0);
            for i in 0..self.count {
                // SAFETY: a fiber of the table, which only this thread uses.
                let fiber = unsafe { self.fibers.add(i) };
                // SAFETY: as above.
                if unsafe { (*fiber).state } == FiberState::Ended {
                    ended += 1;
                    continue;
                }
                // SAFETY: as above; the switch runs the fiber until it waits or ends, and it
                // comes back here through `SCHEDULER_SP`.
                unsafe {
                    (*fiber).state = FiberState::Ready;
                    THREAD_IDX.set((*fiber).thread_idx);
                    CURRENT_FIBER.set(fiber);
                    switch_stack(&raw mut scheduler_sp, (*fiber).sp);
                    match (*fiber).state {
                        FiberState::AtBarrier => waiting += 1,
                        _ => ended += 1,
                    }
                }
            }
            if ended == self.count {
                CURRENT_FIBER.set(ptr::null_mut());
                return;
            }
            if ended > 0 {
                let [bx, by, bz] = BLOCK.get().block_idx;
                stop_with(format_args!(
                    "waits at `core::offload::sync_threads` on the CPU device in {waiting} work \
                     items of block ({bx}, {by}, {bz}), but {ended} of its {} work items ended \
                     without reaching that barrier: every thread of a block must reach each \
                     barrier",
                    self.count
                ));
            }
        }
    }
}

/// The first code of a fiber: runs its work item, marks it ended and switches back to the
/// block's scheduler, which never resumes it.
extern "C" fn fiber_main() -> ! {
    let (fiber, grid) = (CURRENT_FIBER.get(), CURRENT_GRID.get());
    // SAFETY: the scheduler set both before it switched here; the grid outlives its blocks.
    unsafe {
        let grid = &*grid;
        (grid.row)(grid.args, (*fiber).thread_idx[0], 1);
        (*fiber).state = FiberState::Ended;
        switch_stack(&raw mut (*fiber).sp, *SCHEDULER_SP.get());
        abort()
    }
}

/// Saves the calling context's callee-saved registers and stack pointer (at `save`) and
/// continues the context whose stack pointer is `to`: a fiber's or the scheduler's, which
/// returns from its own `switch_stack` (or, for a new fiber, enters `fiber_main`). The 128
/// bytes below the stack pointer (the System V red zone) are left alone.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
unsafe fn switch_stack(save: *mut usize, to: usize) {
    // SAFETY: the caller passes a valid `save` and the stack pointer of a suspended context
    // (or of a new fiber's stack, prepared by `run_block`).
    unsafe {
        crate::arch::asm!(
            "sub rsp, 128",
            "push rbp",
            "push rbx",
            "lea rax, [rip + 2f]",
            "push rax",
            "mov [rdi], rsp",
            "mov rsp, rsi",
            "ret",
            "2:",
            "pop rbx",
            "pop rbp",
            "add rsp, 128",
            in("rdi") save,
            in("rsi") to,
            out("rax") _,
            out("r12") _,
            out("r13") _,
            out("r14") _,
            out("r15") _,
            clobber_abi("C"),
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn switch_stack(_save: *mut usize, _to: usize) {
    // SAFETY: `abort` ends the program; `Fibers::new` stops it before any switch here.
    unsafe { abort() }
}

/// `core::offload::sync_threads` on the CPU device: the calling work item waits until every
/// work item of its block has reached the barrier (see the module's documentation). Outside a
/// fiber, the block has one thread (nothing to wait for), or the kernel reached the barrier
/// through a call that the device pass could not follow, which stops the program.
#[unsafe(export_name = "__rust_offload_cpu_sync_threads")]
pub(super) fn sync_threads() {
    let fiber = CURRENT_FIBER.get();
    if fiber.is_null() {
        if BLOCK.get().block_dim == [1; 3] {
            return;
        }
        stop_with(format_args!(
            "reached `core::offload::sync_threads` through a call that the compiler could not \
             follow (a function pointer or a `dyn` method), so the CPU device runs its blocks' \
             threads one after another and cannot wait at the barrier"
        ));
    }
    // SAFETY: the fiber that the scheduler runs on this thread; the scheduler resumes it at the
    // next round.
    unsafe {
        (*fiber).state = FiberState::AtBarrier;
        switch_stack(&raw mut (*fiber).sp, *SCHEDULER_SP.get());
    }
}

unsafe extern "C" fn worker(grid: *mut c_void) -> *mut c_void {
    // A new thread has no alternate signal stack.
    let signal_stack = AltSignalStack::install();
    // SAFETY: `__rust_offload_cpu_launch` joins every worker before its `Grid` goes away.
    run_blocks(unsafe { &*(grid as *const Grid) });
    signal_stack.remove();
    ptr::null_mut()
}

/// An alternate signal stack that the runner mapped for the calling thread, on which
/// [`on_fatal_signal`] runs when a work item overflowed its stack; none (`base` null) when the
/// thread had one already (Rust's standard library gives its threads one) or the mapping
/// failed, in which case an overflow ends the program without a line.
struct AltSignalStack {
    base: *mut c_void,
}

impl AltSignalStack {
    /// Maps and installs a [`SIGNAL_STACK`]-byte alternate signal stack, above a guard page, for
    /// the calling thread if it has none.
    fn install() -> AltSignalStack {
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
    fn remove(self) {
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

/// [`worker_limit`] once known (0 before the first launch).
static WORKER_LIMIT: AtomicU64 = AtomicU64::new(0);

/// The most workers that a launch may use: `RUST_OFFLOAD_CPU_WORKERS`, else the online CPUs.
/// Read at the first launch of the process and kept: reading them takes a `getenv` and a
/// `sysconf`, which reads `/sys` (about 3 us), at every launch otherwise.
fn worker_limit() -> u64 {
    match WORKER_LIMIT.load(Ordering::Relaxed) {
        0 => {
            let limit = read_worker_limit();
            WORKER_LIMIT.store(limit, Ordering::Relaxed);
            limit
        }
        limit => limit,
    }
}

/// [`worker_limit`] as the environment and the machine give it now (at least 1).
fn read_worker_limit() -> u64 {
    // SAFETY: `getenv` with a NUL-terminated name; the C library keeps the value alive.
    let value = unsafe { getenv(c"RUST_OFFLOAD_CPU_WORKERS".as_ptr()) };
    if !value.is_null() {
        // SAFETY: a non-null result of `getenv` is a NUL-terminated string.
        let value = unsafe { CStr::from_ptr(value) };
        if let Some(n) = value.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()) {
            if n > 0 {
                return n;
            }
        }
    }
    // SAFETY: `sysconf` takes any name and returns -1 for one it does not know.
    let online = unsafe { sysconf(SC_NPROCESSORS_ONLN) };
    if online > 0 { online as u64 } else { 1 }
}

/// Runs every work item of the calling thread's current launch (`__rust_offload_launch`):
/// `row(args, ..)` once per row of each block, or per work item as a fiber when `flags` has
/// [`KERNEL_SYNCS`], with the indices of this module set for each work item. Called by the
/// entry of each kernel of a CPU device image, which passes its Rust path as `kernel` (a C string,
/// named if a work item ends the program); returns when all work items have run.
///
/// A grid with a dimension of 0 runs nothing. When a worker thread cannot be started, the
/// workers that did start run its blocks.
#[unsafe(no_mangle)]
unsafe extern "C" fn __rust_offload_cpu_launch(
    row: RowFn,
    args: *const c_void,
    kernel: *const c_char,
    flags: u32,
) {
    // SAFETY: the launching program wrote its record on this thread before calling the
    // runtime, which calls the kernel, and so this function, on the same thread.
    let (blocks, threads, dynamic_shared) = unsafe {
        let launch = &raw const __rust_offload_launch;
        ((*launch).blocks, (*launch).threads, (*launch).dynamic_shared as usize)
    };
    let block_count = blocks.iter().map(|&b| u64::from(b)).product::<u64>();
    if block_count == 0 || threads.contains(&0) {
        return;
    }
    install_signal_handlers();
    let next_block = AtomicU64::new(0);
    let syncs = flags & KERNEL_SYNCS != 0;
    let grid =
        Grid { row, args, kernel, blocks, threads, block_count, next_block, syncs, dynamic_shared };
    let workers = worker_limit().min(block_count).min(MAX_WORKERS as u64) as usize;
    let mut started = [0 as PthreadT; MAX_WORKERS];
    let mut started_count = 0;
    for handle in &mut started[..workers - 1] {
        let arg = &raw const grid as *mut c_void;
        // SAFETY: default attributes; `grid` outlives the thread, which is joined below.
        if unsafe { pthread_create(handle, ptr::null(), worker, arg) } != 0 {
            break;
        }
        started_count += 1;
    }
    let signal_stack = AltSignalStack::install();
    run_blocks(&grid);
    signal_stack.remove();
    for &handle in &started[..started_count] {
        // SAFETY: a thread started above and not joined yet.
        unsafe { pthread_join(handle, ptr::null_mut()) };
    }
    BLOCK.set(Block::OUTSIDE_LAUNCH);
    THREAD_IDX.set([0; 3]);
}
