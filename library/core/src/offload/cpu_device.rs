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
//! of a pool that the first launch of several blocks starts and later launches reuse ([`pool`]),
//! where `n` is the number of online CPUs, or the value of the environment variable
//! `RUST_OFFLOAD_CPU_WORKERS` (a positive integer) when set, and never more than the grid's
//! blocks; both are read at the first launch and kept. Each worker takes the
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
//! ([`__rust_offload_cpu_panic`](signals::__rust_offload_cpu_panic)). The handler is installed
//! at the first launch and runs on an alternate signal stack (each worker thread gets one, and
//! the launching thread one for the launch if it has none), so that a work item that overflowed
//! its stack is named too; a signal outside any work item goes to the handler that was there
//! before. All of this is in [`signals`].
//!
//! **Barriers.** A kernel that reaches [`sync_threads`] (the device pass tells the runner, see
//! [`KERNEL_SYNCS`]) runs each block's threads as fibers on the worker's thread ([`fibers`]), each
//! work item on its own stack ([`FIBER_STACK`](fibers::FIBER_STACK), with a guard page): a work
//! item that calls `sync_threads` switches back to the block's scheduler, which runs the block's
//! other work items up to the barrier and then releases them all, round after round, until every
//! work item has ended. A block whose work items do not all reach a barrier (some ended while
//! others wait) stops the program with a line that names the kernel and the block: stricter than
//! the GPUs, where threads that have exited are no longer waited for. The switch saves and restores
//! the callee-saved general registers in a few instructions (x86-64 only); the SSE and x87 control
//! words are the worker's, shared by the block's work items. A work item's stack is smaller than a
//! thread's; overflowing it hits its guard page, and the line names the work item and the stack's
//! size. Block-shared memory (`core::offload::block_shared!`) is a thread-local of the image, so
//! each worker's block, whose fibers all run on the worker's thread, has its own.
//!
//! This module is built only into the `core` of the CPU device (`--cfg offload_device`), which
//! the device pass instantiates from MIR into each image; no other `core` has it.

use crate::cell::Cell;
use crate::ffi::{CStr, c_char, c_int, c_long, c_void};
use crate::ptr;
use crate::sync::atomic::{AtomicU64, Ordering};

mod fibers;
mod pool;
mod signals;

use fibers::Fibers;
pub(super) use fibers::sync_threads;
use signals::{AltSignalStack, SigAction, SignalStack, install_signal_handlers, stop_with};

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
    fn pthread_detach(thread: PthreadT) -> c_int;
    fn getpid() -> c_int;
    fn dladdr(address: *const c_void, info: *mut pool::DlInfo) -> c_int;
    fn dlopen(file: *const c_char, flags: c_int) -> *mut c_void;
    fn syscall(number: c_long, ...) -> c_long;
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

/// The dynamic block-shared memory of the block that the calling thread runs (a worker's, for
/// each block it runs), null when the launch asks for none.
#[thread_local]
static DYNAMIC_SHARED: Cell<*mut u8> = Cell::new(ptr::null_mut());

/// `core::offload::dynamic_shared_memory` on the CPU device.
pub(super) fn dynamic_shared_memory() -> *mut u8 {
    DYNAMIC_SHARED.get()
}

unsafe extern "C" fn worker(grid: *mut c_void) -> *mut c_void {
    // A new thread has no alternate signal stack.
    let signal_stack = AltSignalStack::install();
    // SAFETY: `__rust_offload_cpu_launch` joins every worker before its `Grid` goes away.
    run_blocks(unsafe { &*(grid as *const Grid) });
    signal_stack.remove();
    ptr::null_mut()
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
/// workers that did start run its blocks (see [`pool`] for where the workers come from).
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
    let signal_stack = AltSignalStack::install();
    if workers == 1 {
        run_blocks(&grid);
    } else if !pool::run(&grid, workers - 1) {
        run_with_own_workers(&grid, workers - 1);
    }
    signal_stack.remove();
    BLOCK.set(Block::OUTSIDE_LAUNCH);
    THREAD_IDX.set([0; 3]);
}

/// Runs the blocks of `grid` on the calling thread and up to `helpers` threads started for it,
/// joined before it returns: the way of a launch that the pool does not take (see [`pool`]).
fn run_with_own_workers(grid: &Grid, helpers: usize) {
    let mut started = [0 as PthreadT; MAX_WORKERS];
    let mut started_count = 0;
    for handle in &mut started[..helpers] {
        let arg = ptr::from_ref(grid).cast_mut().cast::<c_void>();
        // SAFETY: default attributes; `grid` outlives the thread, which is joined below.
        if unsafe { pthread_create(handle, ptr::null(), worker, arg) } != 0 {
            break;
        }
        started_count += 1;
    }
    run_blocks(grid);
    for &handle in &started[..started_count] {
        // SAFETY: a thread started above and not joined yet.
        unsafe { pthread_join(handle, ptr::null_mut()) };
    }
}
