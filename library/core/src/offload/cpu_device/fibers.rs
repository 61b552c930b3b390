//! Blocks whose work items wait at barriers, run as fibers on one worker thread.

use super::*;

/// The most threads of a block that runs with barriers: a GPU's limit.
const MAX_BLOCK_THREADS: usize = 1024;
/// The stack of each work item of a block that runs with barriers, its guard page included.
pub(super) const FIBER_STACK: usize = 256 * 1024;
/// The page size of Linux on x86-64, the size of a stack's guard page.
pub(super) const PAGE: usize = 4096;

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
/// page to the end of the last stack; `[0, 0]` when it runs none. Read by
/// [`on_fatal_signal`](super::signals::on_fatal_signal).
#[thread_local]
pub(super) static FIBER_STACKS: Cell<[usize; 2]> = Cell::new([0; 2]);

/// One worker's memory for the fibers of a block: the [`Fiber`]s, then one stack per thread of
/// the block, each with a guard page below it, mapped once per launch and worker.
pub(super) struct Fibers {
    base: *mut u8,
    len: usize,
    fibers: *mut Fiber,
    count: usize,
}

impl Fibers {
    /// Maps the memory for the blocks of `grid`; stops the program when the block has more
    /// than [`MAX_BLOCK_THREADS`] threads or the memory cannot be mapped.
    pub(super) fn new(grid: &Grid) -> Fibers {
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

    pub(super) fn release(self) {
        FIBER_STACKS.set([0; 2]);
        // SAFETY: the mapping of `new`, which no fiber uses any longer.
        unsafe { munmap(self.base.cast(), self.len) };
    }

    /// Runs the current block (`BLOCK`) of `grid`: every work item as a fiber, round after
    /// round, each round running every work item up to its next barrier or its end.
    pub(super) fn run_block(&self, grid: &Grid) {
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
pub(in crate::offload) fn sync_threads() {
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
