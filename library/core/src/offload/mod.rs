//! Where a work item of an offload launch is in its grid, on every device that a kernel runs on.
//!
//! A launch (`core::intrinsics::offload(kernel, blocks, threads, args)`) runs `kernel` once per
//! *work item* of a grid: `blocks` blocks (workgroups) in three dimensions, each of `threads`
//! threads in three dimensions. The functions of this module tell a work item where it is:
//! its thread index within its block, its block index within the grid, the block's dimensions
//! (`threads`) and the grid's (`blocks`). Each is an `fn() -> u32` and reads the same on each
//! device, so that one kernel source serves all of them:
//!
//! - `nvptx64-nvidia-cuda`: the special registers that `core::arch::nvptx` reads (`%tid`,
//!   `%ctaid`, `%ntid`, `%nctaid`);
//! - `amdgcn-amd-amdhsa`: the work-item and workgroup ids of `core::arch::amdgpu`, and for the
//!   dimensions, the implicit kernel arguments that the runtime passes to a code object v5
//!   kernel (`hidden_group_size_*` and `hidden_block_count_*`, where clang's HIP headers read
//!   `blockDim` and `gridDim`), which the device pass of the compiler loads for us;
//! - the offload runtime's CPU device (an image for the host's own target): the work item that
//!   the image's grid runner (`cpu_device`) is running on the calling thread.
//!
//! Outside a launch (a kernel called as a plain function on the host) a caller is work item 0
//! of a grid of one block of one thread.
//!
//! The threads of a block cooperate through [`sync_threads`], a barrier, and through memory
//! that each block has for itself ([`block_shared!`], a `static` of type [`BlockShared`]):
//! - on `nvptx64`, `bar.sync 0` (`core::arch::nvptx::_syncthreads`) and the `.shared` state
//!   space;
//! - on `amdgcn`, `s_barrier` between a release and an acquire fence of workgroup scope (as
//!   clang's HIP headers write `__syncthreads`), and the local data share (address space 3);
//! - on the CPU device, a block whose kernel reaches `sync_threads` runs its threads as fibers
//!   that switch at each barrier, and block-shared memory is a thread-local of the worker that
//!   runs the block (see the runner's documentation in `cpu_device`).
//!
//! The compiler's device pass places each `BlockShared` static (in the link section
//! [`BLOCK_SHARED_SECTION`]) in the device's block-shared memory: a `static` of that type
//! elsewhere is an ordinary one. This module is an extension of the fork's: upstream's
//! `core::offload` (feature `gpu_offload`) has neither portable indices nor these.

#[cfg(all(
    offload_device,
    target_thread_local,
    target_os = "linux",
    not(any(target_arch = "nvptx64", target_arch = "amdgpu"))
))]
mod cpu_device;

/// The implicit kernel arguments of an `amdgcn` kernel, loaded by functions that the device
/// pass of the compiler defines (`rustc_codegen_llvm::back::offload_device`), since Rust has
/// no pointer into the constant address space that `llvm.amdgcn.implicitarg.ptr` returns.
#[cfg(target_arch = "amdgpu")]
mod amdgpu {
    unsafe extern "C" {
        /// `hidden_group_size_{x,y,z}` (`dim` 0, 1, 2): the threads per block.
        pub(super) safe fn __rust_offload_amdgpu_group_size(dim: u32) -> u32;
        /// `hidden_block_count_{x,y,z}` (`dim` 0, 1, 2): the blocks of the grid.
        pub(super) safe fn __rust_offload_amdgpu_block_count(dim: u32) -> u32;
        /// A release fence of workgroup scope, `s_barrier`, an acquire fence of workgroup
        /// scope (Rust's fences have no scope).
        pub(super) fn __rust_offload_amdgpu_sync_threads();
    }
}

/// The work item that runs outside any launch: work item 0 of one block of one thread.
#[cfg(not(any(
    target_arch = "nvptx64",
    target_arch = "amdgpu",
    all(offload_device, target_thread_local, target_os = "linux")
)))]
mod outside_launch {
    pub(super) const fn thread_idx(_dim: usize) -> u32 {
        0
    }
    pub(super) const fn block_idx(_dim: usize) -> u32 {
        0
    }
    pub(super) const fn block_dim(_dim: usize) -> u32 {
        1
    }
    pub(super) const fn grid_dim(_dim: usize) -> u32 {
        1
    }
    /// The one thread of its block has nothing to wait for.
    pub(super) const fn sync_threads() {}
    /// Outside a launch there is no block-shared memory.
    pub(super) const fn dynamic_shared_memory() -> *mut u8 {
        crate::ptr::null_mut()
    }
}

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[cfg(all(offload_device, target_thread_local, target_os = "linux"))]
use cpu_device as host;
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[cfg(not(all(offload_device, target_thread_local, target_os = "linux")))]
use outside_launch as host;

macro_rules! grid_functions {
    ($(
        $(#[$doc:meta])*
        fn $name:ident: nvptx $nvptx:ident, amdgpu $amdgpu:expr, host $host:ident($dim:literal);
    )*) => {$(
        $(#[$doc])*
        #[inline]
        #[must_use]
        #[unstable(feature = "gpu_offload", issue = "none")]
        pub fn $name() -> u32 {
            #[cfg(target_arch = "nvptx64")]
            {
                // SAFETY: reads a special register that every thread of a kernel has.
                unsafe { crate::arch::nvptx::$nvptx() }
            }
            #[cfg(target_arch = "amdgpu")]
            {
                $amdgpu
            }
            #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
            {
                host::$host($dim)
            }
        }
    )*};
}

grid_functions! {
    /// The x index of the calling thread within its block, `0..block_dim_x()`.
    fn thread_idx_x: nvptx _thread_idx_x, amdgpu crate::arch::amdgpu::workitem_id_x(),
        host thread_idx(0);
    /// The y index of the calling thread within its block, `0..block_dim_y()`.
    fn thread_idx_y: nvptx _thread_idx_y, amdgpu crate::arch::amdgpu::workitem_id_y(),
        host thread_idx(1);
    /// The z index of the calling thread within its block, `0..block_dim_z()`.
    fn thread_idx_z: nvptx _thread_idx_z, amdgpu crate::arch::amdgpu::workitem_id_z(),
        host thread_idx(2);
    /// The x index of the calling thread's block within the grid, `0..grid_dim_x()`.
    fn block_idx_x: nvptx _block_idx_x, amdgpu crate::arch::amdgpu::workgroup_id_x(),
        host block_idx(0);
    /// The y index of the calling thread's block within the grid, `0..grid_dim_y()`.
    fn block_idx_y: nvptx _block_idx_y, amdgpu crate::arch::amdgpu::workgroup_id_y(),
        host block_idx(1);
    /// The z index of the calling thread's block within the grid, `0..grid_dim_z()`.
    fn block_idx_z: nvptx _block_idx_z, amdgpu crate::arch::amdgpu::workgroup_id_z(),
        host block_idx(2);
    /// The threads per block along x: the launch's `threads[0]`.
    fn block_dim_x: nvptx _block_dim_x, amdgpu amdgpu::__rust_offload_amdgpu_group_size(0),
        host block_dim(0);
    /// The threads per block along y: the launch's `threads[1]`.
    fn block_dim_y: nvptx _block_dim_y, amdgpu amdgpu::__rust_offload_amdgpu_group_size(1),
        host block_dim(1);
    /// The threads per block along z: the launch's `threads[2]`.
    fn block_dim_z: nvptx _block_dim_z, amdgpu amdgpu::__rust_offload_amdgpu_group_size(2),
        host block_dim(2);
    /// The blocks of the grid along x: the launch's `blocks[0]`.
    fn grid_dim_x: nvptx _grid_dim_x, amdgpu amdgpu::__rust_offload_amdgpu_block_count(0),
        host grid_dim(0);
    /// The blocks of the grid along y: the launch's `blocks[1]`.
    fn grid_dim_y: nvptx _grid_dim_y, amdgpu amdgpu::__rust_offload_amdgpu_block_count(1),
        host grid_dim(1);
    /// The blocks of the grid along z: the launch's `blocks[2]`.
    fn grid_dim_z: nvptx _grid_dim_z, amdgpu amdgpu::__rust_offload_amdgpu_block_count(2),
        host grid_dim(2);
}

/// Waits until every thread of the calling thread's block has called `sync_threads` as many
/// times as the calling thread, and makes every write to memory (block-shared memory above all)
/// that a thread of the block made before its call visible to the block's threads after theirs:
/// CUDA's `__syncthreads`. Outside a launch it returns at once.
///
/// # Safety
///
/// Every thread of the block must reach each call (the calls of a block's threads are matched
/// in order, as a GPU matches them): in a branch, all of the block's threads must take it. On
/// a GPU a block whose threads do not all arrive hangs or runs on with undefined results; on
/// the CPU device the program stops with an error that names the kernel and the block. At a
/// grid's ragged edge, keep the barriers outside the bounds check (load a neutral value for
/// an element outside the data instead of skipping the barrier).
#[inline]
#[unstable(feature = "gpu_offload", issue = "none")]
pub unsafe fn sync_threads() {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: the caller's contract is `bar.sync`'s.
        unsafe { crate::arch::nvptx::_syncthreads() }
    }
    #[cfg(target_arch = "amdgpu")]
    {
        // SAFETY: the caller's contract is `s_barrier`'s.
        unsafe { amdgpu::__rust_offload_amdgpu_sync_threads() }
    }
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    {
        host::sync_threads()
    }
}

/// The dynamic block-shared memory of the calling thread's block: as many bytes as the launch
/// asked for with [`launch`] (upstream's `dyn_cache`), aligned to 16 bytes, each block's own
/// and uninitialized when the block starts; what a launch without them returns must not be
/// read or written. On `nvptx64` and `amdgcn` it is the kernel's `extern` block-shared array
/// (CUDA's and HIP's `extern __shared__`), which the device pass declares; on the CPU device a
/// worker's memory for the blocks it runs.
#[inline]
#[must_use]
#[unstable(feature = "gpu_offload", issue = "none")]
pub fn dynamic_shared_memory() -> *mut u8 {
    #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
    {
        unsafe extern "C" {
            /// Defined by the device pass (`rustc_codegen_llvm::back::offload_device`).
            safe fn __rust_offload_dynamic_shared_memory() -> *mut u8;
        }
        __rust_offload_dynamic_shared_memory()
    }
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    {
        host::dynamic_shared_memory()
    }
}

/// Launches `kernel` as `core::intrinsics::offload(kernel, blocks, threads, args)` does, with
/// `dynamic_shared` bytes of dynamic block-shared memory for each block
/// ([`dynamic_shared_memory`]); upstream's `offload!` calls this amount `dyn_cache`. The
/// amount travels in the calling thread's launch record, which the launch code reads into the
/// offload runtime's `DynCGroupMem`; a GPU whose blocks cannot have that much fails the launch
/// (the program stops, naming the kernel). Like the intrinsic it names its result type:
/// `launch::<_, _, ()>(..)`. It compiles for every target, so that a kernel crate's launch
/// helpers need no `cfg`; only the host's launch reads the amount.
#[inline]
#[unstable(feature = "gpu_offload", issue = "none")]
pub fn launch<F, T: crate::marker::Tuple, R>(
    kernel: F,
    blocks: [u32; 3],
    threads: [u32; 3],
    dynamic_shared: u32,
    args: T,
) -> R {
    #[cfg(all(
        target_thread_local,
        target_os = "linux",
        not(offload_device),
        not(any(target_arch = "nvptx64", target_arch = "amdgpu"))
    ))]
    {
        unsafe extern "C" {
            /// The program's launch record (`[blocks; 3], [threads; 3], dynamic_shared`), which
            /// the offload host pass defines in every crate that launches a kernel.
            #[thread_local]
            static mut __rust_offload_launch: [u32; 7];
        }
        // SAFETY: the calling thread's own record, which no other code writes during the
        // launch.
        unsafe { (&raw mut __rust_offload_launch).cast::<u32>().add(6).write(dynamic_shared) };
        let result = crate::intrinsics::offload(kernel, blocks, threads, args);
        // SAFETY: as above; later plain launches ask for none.
        unsafe { (&raw mut __rust_offload_launch).cast::<u32>().add(6).write(0) };
        result
    }
    #[cfg(not(all(
        target_thread_local,
        target_os = "linux",
        not(offload_device),
        not(any(target_arch = "nvptx64", target_arch = "amdgpu"))
    )))]
    {
        let _ = dynamic_shared;
        crate::intrinsics::offload(kernel, blocks, threads, args)
    }
}

/// The link section of [`BlockShared`] statics, which the compiler's device pass moves into each
/// device's block-shared memory; [`block_shared!`] puts a static there.
#[unstable(feature = "gpu_offload", issue = "none")]
pub const BLOCK_SHARED_SECTION: &str = ".offload.block_shared";

/// Memory that each block of a launch has for itself, shared by the block's threads: a `T`
/// whose contents are undefined when a block starts (the GPUs do not initialize it), written
/// and read through [`get`](Self::get), with [`sync_threads`] between one thread's writes and
/// another's reads. Access elements through the raw pointer (`(*p)[i]`); a reference to the
/// whole `T` (`&mut *p`) held by several threads at once is undefined behaviour. Declare one
/// with [`block_shared!`]; its size counts against the device's block-shared memory (48 KiB
/// for all of a kernel's on most GPUs).
#[unstable(feature = "gpu_offload", issue = "none")]
#[repr(transparent)]
pub struct BlockShared<T>(crate::cell::UnsafeCell<crate::mem::MaybeUninit<T>>);

// SAFETY: the threads of a block share it by design; `get` hands out raw pointers only, whose
// uses the kernel orders with `sync_threads`.
#[unstable(feature = "gpu_offload", issue = "none")]
unsafe impl<T> Sync for BlockShared<T> {}

#[unstable(feature = "gpu_offload", issue = "none")]
impl<T> crate::fmt::Debug for BlockShared<T> {
    fn fmt(&self, f: &mut crate::fmt::Formatter<'_>) -> crate::fmt::Result {
        // Its contents are undefined until a thread of the block writes them.
        f.debug_struct("BlockShared").finish_non_exhaustive()
    }
}

impl<T> BlockShared<T> {
    /// The block-shared memory of a `static` that [`block_shared!`] declares.
    ///
    /// # Safety
    ///
    /// Only for a `static` in [`BLOCK_SHARED_SECTION`] (what `block_shared!` writes): any other
    /// `static` of this type is one memory for every block of a launch.
    #[inline]
    #[unstable(feature = "gpu_offload", issue = "none")]
    pub const unsafe fn new() -> Self {
        BlockShared(crate::cell::UnsafeCell::new(crate::mem::MaybeUninit::uninit()))
    }

    /// The calling thread's block's `T`.
    #[inline]
    #[unstable(feature = "gpu_offload", issue = "none")]
    pub const fn get(&self) -> *mut T {
        self.0.get().cast()
    }
}

/// Declares `static`s of type [`BlockShared<T>`](BlockShared): memory that each block of a
/// launch has for itself.
///
/// ```ignore (needs a device pass)
/// core::offload::block_shared! {
///     static PARTIAL: [f32; 256];
/// }
/// let partial = PARTIAL.get();
/// ```
#[unstable(feature = "gpu_offload", issue = "none")]
#[allow_internal_unstable(gpu_offload)]
pub macro block_shared($($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty;)*) {$(
    $(#[$attr])*
    #[unsafe(link_section = ".offload.block_shared")]
    $vis static $name: $crate::offload::BlockShared<$ty> =
        // SAFETY: in the section that the device pass places in block-shared memory.
        unsafe { $crate::offload::BlockShared::new() };
)*}
