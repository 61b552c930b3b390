//! Worker threads kept from one launch to the next, so that a launch of several blocks starts
//! and joins no thread (about 40 us each on Linux), as OpenMP runtimes and Kokkos keep theirs.
//!
//! The first launch that can use more than one worker starts the pool: `limit - 1` threads,
//! where `limit` is [`worker_limit`], which live as long as the program and sleep in the kernel
//! (a futex wait, no spinning) between launches. A launch publishes its [`Grid`], opens itself
//! in [`STATE`] and wakes as many workers as it can use; the launching thread runs blocks too.
//! A worker that wakes joins the launch while it is open and has room, runs blocks until none
//! is left, and leaves. When the launching thread finds no block left, it closes the launch
//! and waits only for the workers that joined: a worker that wakes after that finds the launch
//! closed and sleeps again. So a launch never waits for a thread to be scheduled, and a launch
//! whose blocks the launching thread ran alone costs one wake-up call more than a launch of
//! one block.
//!
//! The pool's threads outlive every launch, and so must the image whose code they run: the
//! offload runtime unloads its images when the program ends (LLVM's `DynamicLibrary` closes
//! them at exit), which would unmap the code of a worker that is still being woken from the
//! last launch. So the first launch pins the image (`dlopen` of its own file with
//! `RTLD_NODELETE | RTLD_NOLOAD`) before it starts the threads; where that fails, launches do
//! without the pool.
//!
//! The threads start with the scheduling settings of the thread that launched first (its CPU
//! affinity, policy and signal mask), and keep them. A child process made by `fork` has no
//! pool threads: its launches start their own, as below.
//!
//! One launch at a time uses the pool (each image has its own). A launch on another host
//! thread meanwhile starts and joins workers of its own, as the runner did before it had a
//! pool, so that launches of several host threads still run at the same time; so does every
//! launch when `RUST_OFFLOAD_CPU_POOL` is `0` (read at the first launch), on targets other than
//! x86-64 and AArch64 Linux, and when no worker thread could be started.

use super::*;
use crate::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU8, AtomicU32};

/// The launch that the pool works on, in one word so that joining is one compare-and-swap:
/// bits 0-11 the workers that joined it and have not left, bits 12-23 the workers it asks
/// for, bit 24 whether it is open (workers may join), bits 25-31 its number, modulo 128,
/// which keeps a worker from joining the launch it has just left. The futex that workers and
/// the launching thread sleep on.
static STATE: AtomicU32 = AtomicU32::new(0);
const ACTIVE: u32 = 0xfff;
const WANTED_SHIFT: u32 = 12;
const OPEN: u32 = 1 << 24;
const NUMBER_SHIFT: u32 = 25;

/// The grid of the open launch; set before it opens, valid until its last worker leaves.
static GRID: AtomicPtr<Grid> = AtomicPtr::new(ptr::null_mut());
/// Held by the thread whose launch uses the pool.
static BUSY: AtomicBool = AtomicBool::new(false);
/// The pool's threads, [`NOT_STARTED`] before the first launch that wants them.
static THREADS: AtomicU32 = AtomicU32::new(NOT_STARTED);
/// The process that started them: a child made by `fork` has none of them.
static POOL_PID: AtomicI32 = AtomicI32::new(0);
const NOT_STARTED: u32 = u32::MAX;
/// `RUST_OFFLOAD_CPU_POOL`: 0 unread, [`POOL_ON`] or [`POOL_OFF`].
static POOL_SETTING: AtomicU8 = AtomicU8::new(0);
const POOL_ON: u8 = 1;
const POOL_OFF: u8 = 2;

/// Futex bitsets: workers wait for a launch to open, the launching thread for its workers
/// to leave; each wake-up reaches only its own side.
const WORKERS: u32 = 1;
const LAUNCHER: u32 = 2;

/// Runs the blocks of `grid` on the calling thread and up to `helpers` (> 0) workers of the
/// pool, and returns true when they have all run; returns false, having run nothing, when the
/// pool is off, taken by another launch, or has no thread.
pub(super) fn run(grid: &Grid, helpers: usize) -> bool {
    if !enabled()
        || BUSY.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err()
    {
        return false;
    }
    let threads = started_threads();
    if threads == 0 {
        BUSY.store(false, Ordering::Release);
        return false;
    }
    // At most `MAX_WORKERS` - 1 threads, which fits in the 12 bits of `ACTIVE`.
    let wanted = (helpers as u32).min(threads);
    let number = (STATE.load(Ordering::Relaxed) >> NUMBER_SHIFT).wrapping_add(1) & 0x7f;
    GRID.store(ptr::from_ref(grid).cast_mut(), Ordering::Relaxed);
    STATE.store(number << NUMBER_SHIFT | OPEN | wanted << WANTED_SHIFT, Ordering::Release);
    futex_wake(&STATE, wanted, WORKERS);
    run_blocks(grid);
    let mut state = STATE.fetch_and(!OPEN, Ordering::AcqRel) & !OPEN;
    while state & ACTIVE != 0 {
        futex_wait(&STATE, state, LAUNCHER);
        state = STATE.load(Ordering::Acquire);
    }
    GRID.store(ptr::null_mut(), Ordering::Relaxed);
    BUSY.store(false, Ordering::Release);
    true
}

/// Whether launches use the pool: not when `RUST_OFFLOAD_CPU_POOL` is `0`, read once.
fn enabled() -> bool {
    if !cfg!(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))) {
        return false;
    }
    match POOL_SETTING.load(Ordering::Relaxed) {
        POOL_ON => true,
        POOL_OFF => false,
        _ => {
            // SAFETY: `getenv` with a NUL-terminated name; the C library keeps the value alive.
            let value = unsafe { getenv(c"RUST_OFFLOAD_CPU_POOL".as_ptr()) };
            // SAFETY: a non-null result of `getenv` is a NUL-terminated string.
            let off = !value.is_null() && unsafe { CStr::from_ptr(value) }.to_bytes() == b"0";
            POOL_SETTING.store(if off { POOL_OFF } else { POOL_ON }, Ordering::Relaxed);
            !off
        }
    }
}

/// The pool's threads, started by the first call (the caller holds [`BUSY`]): [`worker_limit`]
/// - 1 of them, at most [`MAX_WORKERS`] - 1; fewer when the system refuses one; none when the
/// image cannot be pinned, or in a child process made by `fork` after they started.
fn started_threads() -> u32 {
    let threads = THREADS.load(Ordering::Relaxed);
    if threads != NOT_STARTED {
        // SAFETY: `getpid` takes nothing and cannot fail.
        let same_process = unsafe { getpid() } == POOL_PID.load(Ordering::Relaxed);
        return if same_process { threads } else { 0 };
    }
    // SAFETY: as above.
    POOL_PID.store(unsafe { getpid() }, Ordering::Relaxed);
    let wanted = (worker_limit() - 1).min(MAX_WORKERS as u64 - 1);
    let mut started = 0;
    if wanted > 0 && !pin_image() {
        THREADS.store(0, Ordering::Relaxed);
        return 0;
    }
    for _ in 0..wanted {
        let mut handle: PthreadT = 0;
        // SAFETY: default attributes; the thread runs for the rest of the program, on statics.
        if unsafe { pthread_create(&mut handle, ptr::null(), pool_worker, ptr::null_mut()) } != 0 {
            break;
        }
        // SAFETY: a thread started above, never joined.
        unsafe { pthread_detach(handle) };
        started += 1;
    }
    THREADS.store(started, Ordering::Relaxed);
    started
}

/// `Dl_info` of `dladdr`: the file and base address of the object that holds an address, and
/// the nearest symbol (only the file is read).
#[repr(C)]
pub(super) struct DlInfo {
    file: *const c_char,
    _base: *mut c_void,
    _symbol: *const c_char,
    _symbol_address: *mut c_void,
}

/// `RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE` of Linux's C libraries (glibc and musl): the
/// object must be loaded already, and it stays loaded whatever `dlclose` is called later.
const RTLD_LAZY_NOLOAD_NODELETE: c_int = 0x1 | 0x4 | 0x1000;

/// Keeps the image that holds this code loaded until the program ends (see the module's
/// docs); false when the C library cannot name or pin it.
fn pin_image() -> bool {
    let mut info = DlInfo {
        file: ptr::null(),
        _base: ptr::null_mut(),
        _symbol: ptr::null(),
        _symbol_address: ptr::null_mut(),
    };
    // SAFETY: `dladdr` writes `info` for an address of this image's code; `dlopen` with
    // `RTLD_NOLOAD` only looks the file up among the loaded objects. The handle is never
    // closed, on purpose.
    unsafe {
        dladdr(pool_worker as *const c_void, &mut info) != 0
            && !info.file.is_null()
            && !dlopen(info.file, RTLD_LAZY_NOLOAD_NODELETE).is_null()
    }
}

/// A thread of the pool: joins each launch that opens and has room for it, once, and sleeps
/// in between.
extern "C" fn pool_worker(_: *mut c_void) -> *mut c_void {
    // Installed for the thread's life; a new thread has no alternate signal stack.
    let _signal_stack = AltSignalStack::install();
    let mut served = u32::MAX;
    loop {
        let state = STATE.load(Ordering::Acquire);
        let number = state >> NUMBER_SHIFT;
        let room = state & ACTIVE < (state >> WANTED_SHIFT) & ACTIVE;
        if state & OPEN == 0 || number == served || !room {
            futex_wait(&STATE, state, WORKERS);
            continue;
        }
        if STATE
            .compare_exchange_weak(state, state + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        served = number;
        // SAFETY: stored before the launch opened (the store of `STATE` releases it, the swap
        // above acquires it); the launching thread keeps it alive until this worker has left.
        let grid = unsafe { &*GRID.load(Ordering::Relaxed) };
        if grid.next_block.load(Ordering::Relaxed) < grid.block_count {
            run_blocks(grid);
        }
        let left = STATE.fetch_sub(1, Ordering::Release) - 1;
        if left & (ACTIVE | OPEN) == 0 {
            futex_wake(&STATE, 1, LAUNCHER);
        }
    }
}

/// `futex(2)`'s system call number.
#[cfg(target_arch = "x86_64")]
const SYS_FUTEX: c_long = 202;
#[cfg(target_arch = "aarch64")]
const SYS_FUTEX: c_long = 98;
/// None: [`enabled`] keeps the pool off on other targets, so no futex call is made.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const SYS_FUTEX: c_long = -1;
/// `FUTEX_WAIT_BITSET` and `FUTEX_WAKE_BITSET`, each with `FUTEX_PRIVATE_FLAG` (the word is
/// not shared with another process).
const FUTEX_WAIT_BITSET_PRIVATE: c_int = 9 | 128;
const FUTEX_WAKE_BITSET_PRIVATE: c_int = 10 | 128;

/// Sleeps until a wake-up for `bits` while `word` holds `expected` (returns at once when it
/// does not; may return early).
fn futex_wait(word: &AtomicU32, expected: u32, bits: u32) {
    // SAFETY: a futex wait on a live word, without a timeout.
    unsafe {
        syscall(
            SYS_FUTEX,
            word.as_ptr(),
            FUTEX_WAIT_BITSET_PRIVATE,
            expected,
            ptr::null::<c_void>(),
            ptr::null::<u32>(),
            bits,
        )
    };
}

/// Wakes up to `count` threads that wait on `word` for `bits`.
fn futex_wake(word: &AtomicU32, count: u32, bits: u32) {
    // SAFETY: a futex wake-up on a live word.
    unsafe {
        syscall(
            SYS_FUTEX,
            word.as_ptr(),
            FUTEX_WAKE_BITSET_PRIVATE,
            count.min(i32::MAX as u32),
            ptr::null::<c_void>(),
            ptr::null::<u32>(),
            bits,
        )
    };
}
