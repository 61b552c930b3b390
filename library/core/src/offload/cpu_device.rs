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
//! than the grid's blocks. Each worker takes the next block not yet taken and runs its threads
//! one after another, x fastest (a loop inside the kernel's row function, into which the
//! kernel's body is inlined), then y, then z. The launch returns when every block has run.
//!
//! A work item that ends the program by a signal (`SIGILL` of the trap that a panic handler's
//! `core::intrinsics::abort()` executes, `SIGTRAP`, `SIGABRT`, `SIGFPE`) prints one line
//! first, on standard error, naming the kernel (its symbol), the work item and the launch's
//! grid; the program then ends by the signal as it would have. The handler is installed at the
//! first launch; a signal outside any work item goes to the handler that was there before.
//!
//! This module is built only into the `core` of the CPU device (`--cfg offload_device`), which
//! the device pass instantiates from MIR into each image; no other `core` has it.

use crate::cell::Cell;
use crate::ffi::{CStr, c_char, c_int, c_long, c_void};
use crate::fmt::{self, Write};
use crate::ptr;
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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

/// The kernel (a NUL-terminated symbol) whose work items the calling thread runs; null outside.
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

/// The launching program's record of its current launch, 24 bytes: `blocks` and `threads`
/// as the launch gave them, x, y, z.
#[repr(C)]
struct Launch {
    blocks: [u32; 3],
    threads: [u32; 3],
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
    fn raise(signum: c_int) -> c_int;
    fn write(fd: c_int, buf: *const c_void, count: usize) -> isize;
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

/// The signals that end a work item which traps or aborts: `SIGILL`, `SIGTRAP`, `SIGABRT` and
/// `SIGFPE` (their numbers on Linux).
const FATAL_SIGNALS: [c_int; 4] = [4, 5, 6, 8];

/// The actions that were installed for [`FATAL_SIGNALS`] before ours, which a signal gets
/// back; written once, by [`install_signal_handlers`], before ours is installed.
struct PreviousActions(crate::cell::UnsafeCell<[SigAction; 4]>);

// SAFETY: written only by the thread that wins `HANDLERS_INSTALLED`, before any handler that
// reads it is installed; read-only afterwards.
unsafe impl Sync for PreviousActions {}

static PREVIOUS_ACTIONS: PreviousActions = PreviousActions(crate::cell::UnsafeCell::new(
    [SigAction { handler: 0, mask: [0; 16], flags: 0, restorer: 0 }; 4],
));
static HANDLERS_INSTALLED: AtomicBool = AtomicBool::new(false);

/// A line of at most 512 bytes, built without allocating (in a signal handler).
struct Line {
    bytes: [u8; 512],
    len: usize,
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Names the work item that the signal ended, if the calling thread runs one; then gives the
/// signal the action that was installed before ours (the default action ends the program by
/// the signal; a crash reporter's handler gets it with its own flags) and raises it again.
extern "C" fn on_fatal_signal(signum: c_int) {
    let kernel = RUNNING_KERNEL.get();
    if !kernel.is_null() {
        // SAFETY: the kernel's entry passed its symbol, a NUL-terminated constant.
        let kernel = unsafe { CStr::from_ptr(kernel) }.to_str().unwrap_or("?");
        let (block, [tx, ty, tz]) = (BLOCK.get(), THREAD_IDX.get());
        let [bx, by, bz] = block.block_idx;
        let ([gx, gy, gz], [dx, dy, dz]) = (block.grid_dim, block.block_dim);
        let mut line = Line { bytes: [0; 512], len: 0 };
        let _ = writeln!(
            line,
            "error: the offload kernel `{kernel}` stopped the program on the CPU device in work \
             item block ({bx}, {by}, {bz}) thread ({tx}, {ty}, {tz}) of its launch over blocks \
             [{gx}, {gy}, {gz}] of threads [{dx}, {dy}, {dz}] (signal {signum}: a panic or a trap)"
        );
        // SAFETY: `write` (async-signal-safe) of bytes on this stack.
        unsafe { write(2, line.bytes.as_ptr().cast(), line.len) };
    }
    let slot = FATAL_SIGNALS.iter().position(|&s| s == signum).unwrap_or(0);
    // SAFETY: `PREVIOUS_ACTIONS` is read-only once a handler is installed; `sigaction` and
    // `raise` are async-signal-safe. The raised signal is blocked until this handler returns,
    // then delivered to the previous action (a trap's instruction, executed again, would also
    // reach it).
    unsafe {
        let previous = &(*PREVIOUS_ACTIONS.0.get())[slot];
        sigaction(signum, previous, ptr::null_mut());
        raise(signum);
    }
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
        flags: 0,
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

/// Runs the work items of one row of a block (x = `0..count`, `count` > 0): the kernel on the
/// arguments that the kernel's entry packed, writing each x to `__rust_offload_thread_idx[0]`
/// first (the caller sets y and z). Made by the device pass for each kernel.
type RowFn = unsafe extern "C" fn(args: *const c_void, count: u32);

/// One launch, shared by its workers.
struct Grid {
    row: RowFn,
    args: *const c_void,
    kernel: *const c_char,
    blocks: [u32; 3],
    threads: [u32; 3],
    block_count: u64,
    next_block: AtomicU64,
}

/// Runs blocks of `grid` until none is left to take.
fn run_blocks(grid: &Grid) {
    RUNNING_KERNEL.set(grid.kernel);
    let [blocks_x, blocks_y, _] = grid.blocks.map(u64::from);
    let [threads_x, threads_y, threads_z] = grid.threads;
    loop {
        let block = grid.next_block.fetch_add(1, Ordering::Relaxed);
        if block >= grid.block_count {
            RUNNING_KERNEL.set(ptr::null());
            return;
        }
        // The indices fit in `u32`: each is below a dimension of the grid.
        let block_idx = [
            (block % blocks_x) as u32,
            (block / blocks_x % blocks_y) as u32,
            (block / (blocks_x * blocks_y)) as u32,
        ];
        BLOCK.set(Block { block_idx, block_dim: grid.threads, grid_dim: grid.blocks });
        for z in 0..threads_z {
            for y in 0..threads_y {
                THREAD_IDX.set([0, y, z]);
                // SAFETY: the kernel's entry passed a row function and the arguments it takes,
                // which stay alive until `__rust_offload_cpu_launch` returns; the row writes x
                // into this thread's `THREAD_IDX`.
                unsafe { (grid.row)(grid.args, threads_x) };
            }
        }
    }
}

unsafe extern "C" fn worker(grid: *mut c_void) -> *mut c_void {
    // SAFETY: `__rust_offload_cpu_launch` joins every worker before its `Grid` goes away.
    run_blocks(unsafe { &*(grid as *const Grid) });
    ptr::null_mut()
}

/// The most workers that a launch may use: `RUST_OFFLOAD_CPU_WORKERS`, else the online CPUs.
fn worker_limit() -> u64 {
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
/// `row(args, ..)` once per row of each block, with the indices of this module set for each work
/// item. Called by
/// the entry of each kernel of a CPU device image, which passes its symbol as `kernel` (a C
/// string, named if a work item ends the program); returns when all work items have run.
///
/// A grid with a dimension of 0 runs nothing. When a worker thread cannot be started, the
/// workers that did start run its blocks.
#[unsafe(no_mangle)]
unsafe extern "C" fn __rust_offload_cpu_launch(
    row: RowFn,
    args: *const c_void,
    kernel: *const c_char,
) {
    // SAFETY: the launching program wrote its record on this thread before calling the
    // runtime, which calls the kernel, and so this function, on the same thread.
    let (blocks, threads) = unsafe {
        let launch = &raw const __rust_offload_launch;
        ((*launch).blocks, (*launch).threads)
    };
    let block_count = blocks.iter().map(|&b| u64::from(b)).product::<u64>();
    if block_count == 0 || threads.contains(&0) {
        return;
    }
    install_signal_handlers();
    let next_block = AtomicU64::new(0);
    let grid = Grid { row, args, kernel, blocks, threads, block_count, next_block };
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
    run_blocks(&grid);
    for &handle in &started[..started_count] {
        // SAFETY: a thread started above and not joined yet.
        unsafe { pthread_join(handle, ptr::null_mut()) };
    }
    BLOCK.set(Block::OUTSIDE_LAUNCH);
    THREAD_IDX.set([0; 3]);
}
