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

#[unstable(feature = "gpu_offload", issue = "none")]
pub use crate::offload;

#[unstable(feature = "gpu_offload", issue = "none")]
pub mod atomic;

// The device that the code runs on: one backend module per device, each with the same
// functions (`thread_idx`, `block_idx`, `block_dim`, `grid_dim` of a dimension 0 to 2,
// `sync_threads`, `dynamic_shared_memory`), of which this module's functions are the portable
// faces. A new device is a new arm here and a module beside the others.
crate::cfg_select! {
    target_arch = "nvptx64" => {
        mod nvptx;
        use nvptx as device;
    }
    target_arch = "amdgpu" => {
        mod amdgpu;
        use amdgpu as device;
    }
    // LLVM offload's CPU device: the image's `core`, built with `--cfg offload_device`.
    all(offload_device, target_thread_local, target_os = "linux") => {
        mod cpu_device;
        use cpu_device as device;
    }
    _ => {
        mod outside_launch;
        use outside_launch as device;
    }
}

macro_rules! grid_functions {
    ($(
        $(#[$doc:meta])*
        fn $name:ident: $backend:ident($dim:literal);
    )*) => {$(
        $(#[$doc])*
        #[inline]
        #[must_use]
        #[unstable(feature = "gpu_offload", issue = "none")]
        pub fn $name() -> u32 {
            device::$backend($dim)
        }
    )*};
}

grid_functions! {
    /// The x index of the calling thread within its block, `0..block_dim_x()`.
    fn thread_idx_x: thread_idx(0);
    /// The y index of the calling thread within its block, `0..block_dim_y()`.
    fn thread_idx_y: thread_idx(1);
    /// The z index of the calling thread within its block, `0..block_dim_z()`.
    fn thread_idx_z: thread_idx(2);
    /// The x index of the calling thread's block within the grid, `0..grid_dim_x()`.
    fn block_idx_x: block_idx(0);
    /// The y index of the calling thread's block within the grid, `0..grid_dim_y()`.
    fn block_idx_y: block_idx(1);
    /// The z index of the calling thread's block within the grid, `0..grid_dim_z()`.
    fn block_idx_z: block_idx(2);
    /// The threads per block along x: the launch's `threads[0]`.
    fn block_dim_x: block_dim(0);
    /// The threads per block along y: the launch's `threads[1]`.
    fn block_dim_y: block_dim(1);
    /// The threads per block along z: the launch's `threads[2]`.
    fn block_dim_z: block_dim(2);
    /// The blocks of the grid along x: the launch's `blocks[0]`.
    fn grid_dim_x: grid_dim(0);
    /// The blocks of the grid along y: the launch's `blocks[1]`.
    fn grid_dim_y: grid_dim(1);
    /// The blocks of the grid along z: the launch's `blocks[2]`.
    fn grid_dim_z: grid_dim(2);
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
    // The backends' barriers are safe functions that only this one calls: its contract is
    // theirs.
    device::sync_threads()
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
    device::dynamic_shared_memory()
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
#[track_caller]
#[unstable(feature = "gpu_offload", issue = "none")]
#[rustc_diagnostic_item = "offload_launch"]
pub fn launch<F, T: crate::marker::Tuple, R>(
    kernel: F,
    blocks: [u32; 3],
    threads: [u32; 3],
    dynamic_shared: u32,
    args: T,
) -> R {
    launch_on_device(kernel, blocks, threads, dynamic_shared, -1, args)
}

/// [`launch`] on the offload runtime's device number `device` (0 to the runtime's
/// `omp_get_num_devices() - 1`, in the order the runtime lists them), or on the runtime's
/// default device for -1 (what a launch without a device uses: `omp_get_default_device()`,
/// device 0 unless `OMP_DEFAULT_DEVICE` names another). This is what
/// [`offload!`](crate::offload!)'s `device` field gives. The device is chosen and checked on
/// Linux hosts, where the offload runtime runs; elsewhere `device` is ignored.
///
/// # Panics
///
/// When `device` is neither -1 nor the number of a device of this machine: the message names
/// the kernel, the device and how many devices there are, at the caller's location (the
/// `offload!` that names the device).
#[inline]
#[track_caller]
#[unstable(feature = "gpu_offload", issue = "none")]
#[rustc_diagnostic_item = "offload_launch_on_device"]
pub fn launch_on_device<F, T: crate::marker::Tuple, R>(
    kernel: F,
    blocks: [u32; 3],
    threads: [u32; 3],
    dynamic_shared: u32,
    device: i32,
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
            /// The program's launch record (`[blocks; 3], [threads; 3], dynamic_shared, device
            /// + 1`), which the offload host pass defines in every crate that launches a kernel.
            #[thread_local]
            static mut __rust_offload_launch: [u32; 8];
            /// LLVM's offload runtime, which every program that launches a kernel links.
            safe fn omp_get_num_devices() -> crate::ffi::c_int;
        }
        if device != -1 {
            let count = omp_get_num_devices();
            if !(0..count).contains(&device) {
                panic!(
                    "the offload launch of kernel `{}` asks for device {device}, but this machine \
                     has {count} offload device(s), numbered from 0 (-1 is the runtime's default)",
                    crate::any::type_name::<F>()
                );
            }
        }
        let record = (&raw mut __rust_offload_launch).cast::<u32>();
        // SAFETY: the calling thread's own record, which no other code writes during the
        // launch. The launch code reads the device as the stored value minus one, so that a
        // record never written (all zeros) selects the default device.
        unsafe {
            record.add(6).write(dynamic_shared);
            record.add(7).write(device.wrapping_add(1) as u32);
        }
        let result = crate::intrinsics::offload(kernel, blocks, threads, args);
        // SAFETY: as above; later plain launches ask for no dynamic block-shared memory and
        // the default device.
        unsafe {
            record.add(6).write(0);
            record.add(7).write(0);
        }
        result
    }
    #[cfg(not(all(
        target_thread_local,
        target_os = "linux",
        not(offload_device),
        not(any(target_arch = "nvptx64", target_arch = "amdgpu"))
    )))]
    {
        let _ = (dynamic_shared, device);
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

/// Marks a function as an offload kernel: a function that a launch ([`offload!`](crate::offload!),
/// `core::intrinsics::offload`) runs on a device, once per work item of its grid. It is what
/// rustc 1.95's `#[rustc_offload_kernel]` is, under upstream's name: the function stays one
/// definition, compiled for the host and, by the device pass, for each device, and may be
/// generic. A kernel returns `()`; its parameters are numbers, `bool`, `char`, arrays, tuples
/// and structs of them by value, and pointers, references and slices (`&[T]`, `&mut [T]`,
/// `*const [T]`, `*mut [T]`, `&str`) of data without addresses. The attribute takes no
/// arguments and applies to a function item alone: on anything else (a statement, an
/// expression, a closure, another item) it is an error.
///
/// ```ignore (needs an offload build)
/// #![feature(gpu_offload)]
/// use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};
///
/// #[offload_kernel]
/// pub fn scale(x: &mut [f32], factor: f32) {
///     let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
///     if i < x.len() {
///         x[i] *= factor;
///     }
/// }
/// ```
#[unstable(feature = "gpu_offload", issue = "none")]
#[allow_internal_unstable(rustc_attrs)]
#[rustc_builtin_macro]
pub macro offload_kernel($item:item) {
    /* compiler built-in */
}

/// Launches a kernel ([`offload_kernel`]) on an offload device, once per
/// work item of a grid, with named fields in any order:
///
/// - `kernel` (required): the kernel, a function item (`fill::<f32>` for a generic one);
/// - `args` (required): a tuple literal of its arguments, in order (`(x,)` for one argument,
///   `()` for none);
/// - `workgroup_dim`: the grid's blocks (workgroups) in three dimensions, `[u32; 3]`, default
///   `[1, 1, 1]`;
/// - `thread_dim`: the threads of each block in three dimensions, `[u32; 3]`, default
///   `[1, 1, 1]`;
/// - `dyn_cache`: bytes of dynamic block-shared memory for each block, `u32`, default 0
///   ([`dynamic_shared_memory`]);
/// - `device`: the runtime's device number, `i32` (see [`launch_on_device`]), default the
///   runtime's default device; a negative literal is a compile error, and a number that the
///   machine lacks stops the launch with a panic that names the kernel and the number.
///
/// Each field may be given once. A missing `kernel` or `args`, an unknown or repeated field,
/// and `args` that is not a tuple literal are compile errors. The launch returns when the
/// kernel has run and its mutable arguments are back; it is the same launch as
/// `core::intrinsics::offload(kernel, workgroup_dim, thread_dim, args)` (with
/// [`launch_on_device`] for `dyn_cache` and `device`), so both forms mix in one crate.
///
/// ```ignore (needs an offload build)
/// core::offload::offload! {
///     kernel = scale,
///     workgroup_dim = [x.len().div_ceil(256) as u32, 1, 1],
///     thread_dim = [256, 1, 1],
///     args = (&mut x[..], 2.0f32),
/// }
/// ```
#[unstable(feature = "gpu_offload", issue = "none")]
#[allow_internal_unstable(gpu_offload)]
#[macro_export]
macro_rules! offload {
    // The fields are read one by one into six slots, in the order `kernel`, `args`,
    // `workgroup_dim`, `thread_dim`, `dyn_cache`, `device`: `[]` while unset.
    (@field [] $a:tt $w:tt $t:tt $c:tt $d:tt kernel = $value:expr $(, $($rest:tt)*)?) => {
        $crate::offload!(@field [$value] $a $w $t $c $d $($($rest)*)?)
    };
    (@field $k:tt [] $w:tt $t:tt $c:tt $d:tt args = ($single:expr) $(, $($rest:tt)*)?) => {
        $crate::compile_error!(
            "`args` of `offload!` must be a tuple literal: write `(x,)` for one argument"
        )
    };
    (@field $k:tt [] $w:tt $t:tt $c:tt $d:tt args = ($($arg:expr),* $(,)?) $(, $($rest:tt)*)?) => {
        $crate::offload!(@field $k [($($arg,)*)] $w $t $c $d $($($rest)*)?)
    };
    (@field $k:tt [] $w:tt $t:tt $c:tt $d:tt args = $value:expr $(, $($rest:tt)*)?) => {
        $crate::compile_error!(
            "`args` of `offload!` must be a tuple literal of the kernel's arguments, like `(x,)` \
             or `(x, y)`"
        )
    };
    (@field $k:tt $a:tt [] $t:tt $c:tt $d:tt workgroup_dim = $value:expr $(, $($rest:tt)*)?) => {
        $crate::offload!(@field $k $a [$value] $t $c $d $($($rest)*)?)
    };
    (@field $k:tt $a:tt $w:tt [] $c:tt $d:tt thread_dim = $value:expr $(, $($rest:tt)*)?) => {
        $crate::offload!(@field $k $a $w [$value] $c $d $($($rest)*)?)
    };
    (@field $k:tt $a:tt $w:tt $t:tt [] $d:tt dyn_cache = $value:expr $(, $($rest:tt)*)?) => {
        $crate::offload!(@field $k $a $w $t [$value] $d $($($rest)*)?)
    };
    // A negative literal would stand for the runtime's default device (-1) or for no device:
    // refused here, where the field is written.
    (@field $k:tt $a:tt $w:tt $t:tt $c:tt [] device = - $value:literal $(, $($rest:tt)*)?) => {
        $crate::compile_error!(
            "`device` of `offload!` must not be negative: it is a device number, 0 or more; \
             leave `device` out to launch on the runtime's default device"
        )
    };
    (@field $k:tt $a:tt $w:tt $t:tt $c:tt [] device = $value:expr $(, $($rest:tt)*)?) => {
        $crate::offload!(@field $k $a $w $t $c [$value] $($($rest)*)?)
    };
    // A field whose slot is still empty but whose arm above did not match: its value is not
    // followed by `,` or the end.
    (@field [] $a:tt $w:tt $t:tt $c:tt $d:tt kernel = $($rest:tt)*) => {
        $crate::offload!(@no_comma kernel)
    };
    (@field $k:tt [] $w:tt $t:tt $c:tt $d:tt args = $($rest:tt)*) => {
        $crate::offload!(@no_comma args)
    };
    (@field $k:tt $a:tt [] $t:tt $c:tt $d:tt workgroup_dim = $($rest:tt)*) => {
        $crate::offload!(@no_comma workgroup_dim)
    };
    (@field $k:tt $a:tt $w:tt [] $c:tt $d:tt thread_dim = $($rest:tt)*) => {
        $crate::offload!(@no_comma thread_dim)
    };
    (@field $k:tt $a:tt $w:tt $t:tt [] $d:tt dyn_cache = $($rest:tt)*) => {
        $crate::offload!(@no_comma dyn_cache)
    };
    (@field $k:tt $a:tt $w:tt $t:tt $c:tt [] device = $($rest:tt)*) => {
        $crate::offload!(@no_comma device)
    };
    (@no_comma $field:ident) => {
        $crate::compile_error!($crate::concat!(
            "`offload!` expects `,` after the value of `",
            $crate::stringify!($field),
            "` (fields are separated by commas)"
        ))
    };
    (@field $k:tt $a:tt $w:tt $t:tt $c:tt $d:tt
        $field:ident = $($rest:tt)*) => {
        $crate::offload!(@repeated_or_unknown $field)
    };
    (@repeated_or_unknown kernel) => {
        $crate::compile_error!("`offload!` has the field `kernel` more than once")
    };
    (@repeated_or_unknown args) => {
        $crate::compile_error!("`offload!` has the field `args` more than once")
    };
    (@repeated_or_unknown workgroup_dim) => {
        $crate::compile_error!("`offload!` has the field `workgroup_dim` more than once")
    };
    (@repeated_or_unknown thread_dim) => {
        $crate::compile_error!("`offload!` has the field `thread_dim` more than once")
    };
    (@repeated_or_unknown dyn_cache) => {
        $crate::compile_error!("`offload!` has the field `dyn_cache` more than once")
    };
    (@repeated_or_unknown device) => {
        $crate::compile_error!("`offload!` has the field `device` more than once")
    };
    (@repeated_or_unknown $field:ident) => {
        $crate::compile_error!($crate::concat!(
            "`offload!` has no field `",
            $crate::stringify!($field),
            "`; its fields are `kernel`, `args`, `workgroup_dim`, `thread_dim`, `dyn_cache` and \
             `device`"
        ))
    };
    (@field [] $a:tt $w:tt $t:tt $c:tt $d:tt) => {
        $crate::compile_error!("`offload!` needs the field `kernel`: the kernel to launch")
    };
    (@field $k:tt [] $w:tt $t:tt $c:tt $d:tt) => {
        $crate::compile_error!(
            "`offload!` needs the field `args`: a tuple literal of the kernel's arguments (`()` \
             for none)"
        )
    };
    (@field [$kernel:expr] [$args:expr] $w:tt $t:tt $c:tt $d:tt) => {
        $crate::offload::launch_on_device::<_, _, ()>(
            $kernel,
            $crate::offload!(@or $w [1, 1, 1]),
            $crate::offload!(@or $t [1, 1, 1]),
            $crate::offload!(@or $c 0),
            $crate::offload!(@or $d -1),
            $args,
        )
    };
    (@field $k:tt $a:tt $w:tt $t:tt $c:tt $d:tt $($rest:tt)+) => {
        $crate::compile_error!(
            "`offload!` takes fields `name = value`, separated by commas, like `kernel = k, \
             args = (x,)`"
        )
    };
    (@or [] $default:expr) => { $default };
    (@or [$value:expr] $default:expr) => { $value };
    ($($fields:tt)*) => {
        $crate::offload!(@field [] [] [] [] [] [] $($fields)*)
    };
}

/// Data of a slice kept on the offload device across launches, read-only there: the runtime
/// copies the slice to the device once, when the `Preload` is made, and every launch whose
/// arguments include the same slice (the same address and length, or a part of it) while the
/// `Preload` lives finds it there and copies nothing. The device's copy goes away with the
/// `Preload`. Nothing comes back, so the elements must be `Freeze`: a slice of atomics or
/// `Cell`s, which kernels write through `&`, is kept with [`PreloadMut`], and `Preload::new` of
/// one does not compile (the trait bound `Freeze` is not satisfied), where it would lose the
/// kernels' writes. Upstream's `core::offload` names this type too; this one is the fork's,
/// built on the offload runtime's data mappers (`__tgt_target_data_begin_mapper` and
/// `__tgt_target_data_end_mapper`), as OpenMP's `target enter data` / `target exit data` are.
///
/// ```ignore (needs an offload build)
/// let x: Vec<f32> = ...;
/// let kept = core::offload::Preload::new(&x[..]);
/// for _ in 0..100 {
///     offload! { kernel = k, workgroup_dim = [n / 256, 1, 1], args = (&*kept, 2.0f32) }
/// }
/// ```
#[unstable(feature = "gpu_offload", issue = "none")]
#[derive(Debug)]
pub struct Preload<'a, T> {
    data: &'a [T],
    device: i32,
}

/// Data of a slice kept on the offload device across launches, which kernels may write: the
/// runtime copies the slice to the device once, when the `PreloadMut` is made, launches over
/// it (through [`DerefMut`](crate::ops::DerefMut): `&mut *kept`, or a part of it) copy
/// nothing either way, and the device's copy comes back into the slice when the `PreloadMut`
/// is dropped or at [`offload_sync`]. Until then the host's elements are as they were before
/// the launches: read them after `offload_sync`. Writes of the host through `DerefMut` do not
/// reach the device's copy, and the copy back at the drop overwrites them. The runtime keeps
/// the device's copy by the slice's address until the `PreloadMut` is dropped: one leaked with
/// `mem::forget` stays, and later launches over other data at that address would take it for
/// the kept copy (nothing copied in, nothing back). The same holds for [`Preload`].
#[unstable(feature = "gpu_offload", issue = "none")]
#[derive(Debug)]
pub struct PreloadMut<'a, T> {
    data: &'a mut [T],
    device: i32,
}

impl<'a, T> Preload<'a, T> {
    /// Copies `data` to the runtime's default device and keeps it there.
    #[inline]
    #[unstable(feature = "gpu_offload", issue = "none")]
    pub fn new(data: &'a [T]) -> Self
    where
        T: crate::marker::Freeze,
    {
        Self::on_device(data, -1)
    }

    /// Copies `data` to device `device` (as [`launch_on_device`] numbers them; -1 for the
    /// default) and keeps it there.
    ///
    /// # Panics
    ///
    /// When `device` is neither -1 nor the number of a device of this machine.
    #[inline]
    #[unstable(feature = "gpu_offload", issue = "none")]
    pub fn on_device(data: &'a [T], device: i32) -> Self
    where
        T: crate::marker::Freeze,
    {
        residency::map(data.as_ptr().cast_mut(), size_of_val(data), device, residency::TO);
        Preload { data, device }
    }
}

impl<'a, T> PreloadMut<'a, T> {
    /// Copies `data` to the runtime's default device and keeps it there.
    #[inline]
    #[unstable(feature = "gpu_offload", issue = "none")]
    pub fn new(data: &'a mut [T]) -> Self {
        Self::on_device(data, -1)
    }

    /// Copies `data` to device `device` (as [`launch_on_device`] numbers them; -1 for the
    /// default) and keeps it there.
    ///
    /// # Panics
    ///
    /// When `device` is neither -1 nor the number of a device of this machine.
    #[inline]
    #[unstable(feature = "gpu_offload", issue = "none")]
    pub fn on_device(data: &'a mut [T], device: i32) -> Self {
        residency::map(data.as_mut_ptr(), size_of_val(data), device, residency::TO);
        PreloadMut { data, device }
    }

    /// Keeps `data` on the runtime's default device without copying it there (OpenMP's
    /// `map(alloc:)`): for an output that the kernels write before anything reads it, such as
    /// the second buffer of a Jacobi iteration. The copy back at the drop (or at
    /// [`offload_sync`]) is as for [`PreloadMut::new`]; [`PreloadMut::discard`] skips it.
    ///
    /// # Safety
    ///
    /// The device's copy starts with whatever bytes the device's memory held. Each element
    /// must be written on the device before a kernel reads it, and before it comes back into
    /// `data` (at the drop or at `offload_sync`, not at `discard`): an element that comes back
    /// unwritten gives `data` those bytes, which need not be a valid `T`.
    #[inline]
    #[unstable(feature = "gpu_offload", issue = "none")]
    pub unsafe fn without_copy_in(data: &'a mut [T]) -> Self {
        // SAFETY: the caller's promise, passed on.
        unsafe { Self::without_copy_in_on_device(data, -1) }
    }

    /// [`PreloadMut::without_copy_in`] on device `device` (as [`launch_on_device`] numbers
    /// them; -1 for the default).
    ///
    /// # Safety
    ///
    /// As for [`PreloadMut::without_copy_in`].
    ///
    /// # Panics
    ///
    /// When `device` is neither -1 nor the number of a device of this machine.
    #[inline]
    #[unstable(feature = "gpu_offload", issue = "none")]
    pub unsafe fn without_copy_in_on_device(data: &'a mut [T], device: i32) -> Self {
        residency::map(data.as_mut_ptr(), size_of_val(data), device, residency::ALLOC);
        PreloadMut { data, device }
    }

    /// Stops keeping the data on the device without copying the device's copy back (OpenMP's
    /// `map(release:)`): for a temporary that no one reads after the kernels. The slice keeps
    /// the values it had when the `PreloadMut` was made, or at the last [`offload_sync`].
    #[inline]
    #[unstable(feature = "gpu_offload", issue = "none")]
    pub fn discard(self) {
        let kept = crate::mem::ManuallyDrop::new(self);
        let (data, bytes) = (kept.data.as_ptr().cast_mut(), size_of_val(kept.data));
        residency::unmap(data, bytes, kept.device, residency::RELEASE);
    }
}

/// Copies the device's copy of `kept` back into its slice, which stays on the device.
#[inline]
#[unstable(feature = "gpu_offload", issue = "none")]
pub fn offload_sync<T>(kept: &mut PreloadMut<'_, T>) {
    residency::update_host(kept.data.as_mut_ptr(), size_of_val(kept.data), kept.device);
}

#[unstable(feature = "gpu_offload", issue = "none")]
impl<T> crate::ops::Deref for Preload<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.data
    }
}

#[unstable(feature = "gpu_offload", issue = "none")]
impl<T> crate::ops::Deref for PreloadMut<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.data
    }
}

#[unstable(feature = "gpu_offload", issue = "none")]
impl<T> crate::ops::DerefMut for PreloadMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.data
    }
}

#[unstable(feature = "gpu_offload", issue = "none")]
impl<T> Drop for Preload<'_, T> {
    fn drop(&mut self) {
        // Nothing comes back, so the shared data is only read.
        let (data, bytes) = (self.data.as_ptr().cast_mut(), size_of_val(self.data));
        residency::unmap(data, bytes, self.device, residency::RELEASE);
    }
}

#[unstable(feature = "gpu_offload", issue = "none")]
impl<T> Drop for PreloadMut<'_, T> {
    fn drop(&mut self) {
        let (data, bytes) = (self.data.as_mut_ptr(), size_of_val(self.data));
        residency::unmap(data, bytes, self.device, residency::FROM);
    }
}

mod residency;
