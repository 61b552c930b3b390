//! How the offload runtime's CPU device runs a launch: every work item of its grid.
//!
//! LLVM's offload runtime runs images for the host's own target through its host plugin, which
//! loads an image as a shared object and calls a kernel once, through libffi, with the
//! launch's arguments; it passes on neither the grid nor the block. So the compiler's device
//! pass gives each kernel of such an image an entry that hands its arguments to
//! [`__rust_offload_cpu_launch`], together with a function that runs one work item on them
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
//! one after another, x fastest, then y, then z. The launch returns when every block has run.
//!
//! This module is built only into the `core` of the CPU device (`--cfg offload_device`), which
//! the device pass instantiates from MIR into each image; no other `core` has it.

use crate::cell::Cell;
use crate::ffi::{CStr, c_char, c_int, c_long, c_void};
use crate::ptr;
use crate::sync::atomic::{AtomicU64, Ordering};

/// Where the calling thread is in the launch that it runs.
#[derive(Clone, Copy)]
struct WorkItem {
    thread_idx: [u32; 3],
    block_idx: [u32; 3],
    block_dim: [u32; 3],
    grid_dim: [u32; 3],
}

impl WorkItem {
    /// A thread that runs no launch is work item 0 of one block of one thread.
    const OUTSIDE_LAUNCH: WorkItem =
        WorkItem { thread_idx: [0; 3], block_idx: [0; 3], block_dim: [1; 3], grid_dim: [1; 3] };
}

#[thread_local]
static WORK_ITEM: Cell<WorkItem> = Cell::new(WorkItem::OUTSIDE_LAUNCH);

pub(super) fn thread_idx(dim: usize) -> u32 {
    WORK_ITEM.get().thread_idx[dim]
}

pub(super) fn block_idx(dim: usize) -> u32 {
    WORK_ITEM.get().block_idx[dim]
}

pub(super) fn block_dim(dim: usize) -> u32 {
    WORK_ITEM.get().block_dim[dim]
}

pub(super) fn grid_dim(dim: usize) -> u32 {
    WORK_ITEM.get().grid_dim[dim]
}

/// The launching program's record of its current launch, 24 bytes: `blocks` and `threads`
/// as the launch gave them, x, y, z.
#[repr(C)]
struct Launch {
    blocks: [u32; 3],
    threads: [u32; 3],
}

/// `pthread_t`, an `unsigned long` on Linux.
type PthreadT = usize;

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
        start: extern "C" fn(*mut c_void) -> *mut c_void,
        arg: *mut c_void,
    ) -> c_int;
    fn pthread_join(thread: PthreadT, retval: *mut *mut c_void) -> c_int;
    fn sysconf(name: c_int) -> c_long;
    fn getenv(name: *const c_char) -> *const c_char;
}

/// Runs one work item: the kernel on the arguments that the kernel's entry packed.
type WorkItemFn = unsafe extern "C" fn(args: *const c_void);

/// One launch, shared by its workers.
struct Grid {
    work_item: WorkItemFn,
    args: *const c_void,
    blocks: [u32; 3],
    threads: [u32; 3],
    block_count: u64,
    next_block: AtomicU64,
}

/// Runs blocks of `grid` until none is left to take.
fn run_blocks(grid: &Grid) {
    let [blocks_x, blocks_y, _] = grid.blocks.map(u64::from);
    let [threads_x, threads_y, threads_z] = grid.threads;
    loop {
        let block = grid.next_block.fetch_add(1, Ordering::Relaxed);
        if block >= grid.block_count {
            return;
        }
        // The indices fit in `u32`: each is below a dimension of the grid.
        let block_idx = [
            (block % blocks_x) as u32,
            (block / blocks_x % blocks_y) as u32,
            (block / (blocks_x * blocks_y)) as u32,
        ];
        for z in 0..threads_z {
            for y in 0..threads_y {
                for x in 0..threads_x {
                    WORK_ITEM.set(WorkItem {
                        thread_idx: [x, y, z],
                        block_idx,
                        block_dim: grid.threads,
                        grid_dim: grid.blocks,
                    });
                    // SAFETY: the kernel's entry passed a work item function and the arguments
                    // it takes, which stay alive until `__rust_offload_cpu_launch` returns.
                    unsafe { (grid.work_item)(grid.args) };
                }
            }
        }
    }
}

extern "C" fn worker(grid: *mut c_void) -> *mut c_void {
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
/// `work_item(args)` once per work item, with the indices of this module set for it. Called by
/// the entry of each kernel of a CPU device image; returns when all work items have run.
///
/// A grid with a dimension of 0 runs nothing. When a worker thread cannot be started, the
/// workers that did start run its blocks.
#[unsafe(no_mangle)]
unsafe extern "C" fn __rust_offload_cpu_launch(work_item: WorkItemFn, args: *const c_void) {
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
    let grid =
        Grid { work_item, args, blocks, threads, block_count, next_block: AtomicU64::new(0) };
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
    WORK_ITEM.set(WorkItem::OUTSIDE_LAUNCH);
}
