//! Atomic operations of a chosen scope, as GPU kernels use them.
//!
//! Rust's atomics (`core::sync::atomic`) are atomic with every thread of the program, the
//! host's included: on the GPUs they get LLVM's system scope. CUDA's plain atomics (`atomicAdd`,
//! `atomicCAS`) are atomic with the threads of the device only, and its `_block` variants with
//! the threads of the caller's block; a narrower scope needs less of the memory system.
//! [`ScopedAtomic`] gives Rust's atomic integers the operations of `core::sync::atomic` with a
//! [`Scope`] argument:
//!
//! ```ignore (needs a device pass to show the scopes)
//! use core::offload::atomic::{Scope, ScopedAtomic};
//! use core::sync::atomic::{AtomicU32, Ordering};
//!
//! fn count(total: &AtomicU32, x: u32) {
//!     total.fetch_add_scoped(x, Ordering::Relaxed, Scope::Device);
//! }
//! ```
//!
//! What each device does with a scope (measured on the images of the fork's `offload-atomics`
//! test, LLVM 22; `src/doc/cargo-offload.md`, "Atomics"):
//! - `nvptx64`: a compare-exchange gets the scope (`atom.relaxed.gpu.cas`, `.cta` for
//!   `Block`, `.sys` for `System`); LLVM gives read-modify-write operations `atom.<op>` (the
//!   `.gpu` scope) whatever their scope.
//! - `amdgcn`: acquire and release orderings need fewer cache writebacks and invalidations at a
//!   narrower scope, and with `Device` or `Block` scope the data is taken to be in the device's
//!   own memory (where a launch maps its arguments), so that `fetch_max`/`fetch_min` are one
//!   instruction instead of a compare-exchange loop.
//! - the CPU device and the host: every scope is `System` (Rust's plain atomics), since the
//!   CPU device runs a block's threads, and blocks, on several OS threads.
//!
//! A narrower scope is a promise: no thread outside it touches the data during the operation
//! (for `Block`, only the caller's block, as with data in block-shared memory or one slot per
//! block). Breaking it is a data race on a GPU, even though the CPU device cannot show it.

use crate::intrinsics::{
    AtomicOrdering as AO, OffloadAtomicOp as Op, offload_atomic_cxchg, offload_atomic_rmw,
};
use crate::marker::ConstParamTy;
use crate::sync::atomic::Ordering::{self, AcqRel, Acquire, Relaxed, Release, SeqCst};

/// The threads that a scoped atomic operation is atomic and ordered with, as GPU memory models
/// scope their atomics.
///
/// A narrower scope is a promise that no thread outside it touches the data during the
/// operation. Targets without scopes (the host, LLVM offload's CPU device) run every scope as
/// `System`, which keeps every such promise.
#[unstable(feature = "gpu_offload", issue = "none")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ConstParamTy)]
pub enum Scope {
    // The compiler reads these values (`rustc_codegen_llvm`'s `intrinsic.rs`).
    /// The threads of the caller's block: CUDA's `_block` atomics, LLVM's `syncscope("block")`
    /// on `nvptx64` and `syncscope("workgroup")` on `amdgcn`.
    Block = 0,
    /// Every thread of the device that runs the kernel: CUDA's plain atomics,
    /// `syncscope("device")` on `nvptx64` and `syncscope("agent")` on `amdgcn`.
    Device = 1,
    /// Every thread of the program, the host's included: the scope of Rust's plain atomics.
    System = 2,
}

/// The operations of `core::sync::atomic`'s integer types, with a [`Scope`]: each is the
/// method of the same name without `_scoped`, atomic only with the threads of `scope`.
///
/// Implemented for `AtomicI32`, `AtomicU32`, `AtomicI64`, `AtomicU64`, `AtomicIsize` and
/// `AtomicUsize`. A float sum is a [`compare_exchange_scoped`] loop on the float's bits, as
/// with the plain atomics.
///
/// [`compare_exchange_scoped`]: ScopedAtomic::compare_exchange_scoped
#[unstable(feature = "gpu_offload", issue = "none")]
pub trait ScopedAtomic: sealed::Sealed {
    /// The integer type that the atomic holds.
    type Value: Copy;

    /// `fetch_add`, wrapping on overflow; returns the previous value.
    fn fetch_add_scoped(&self, val: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `fetch_sub`, wrapping on overflow; returns the previous value.
    fn fetch_sub_scoped(&self, val: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `fetch_and`; returns the previous value.
    fn fetch_and_scoped(&self, val: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `fetch_or`; returns the previous value.
    fn fetch_or_scoped(&self, val: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `fetch_xor`; returns the previous value.
    fn fetch_xor_scoped(&self, val: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `fetch_max` (signed or unsigned as the type); returns the previous value.
    fn fetch_max_scoped(&self, val: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `fetch_min` (signed or unsigned as the type); returns the previous value.
    fn fetch_min_scoped(&self, val: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `swap`; returns the previous value.
    fn swap_scoped(&self, val: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `compare_exchange`: stores `new` if the value is `current`; `Ok` with the previous value
    /// if it stored, `Err` with the value it found if not.
    ///
    /// # Panics
    ///
    /// As `compare_exchange`: if `failure` is `Release` or `AcqRel`.
    fn compare_exchange_scoped(
        &self,
        current: Self::Value,
        new: Self::Value,
        success: Ordering,
        failure: Ordering,
        scope: Scope,
    ) -> Result<Self::Value, Self::Value>;
}

mod sealed {
    pub trait Sealed {}
}

/// `offload_atomic_rmw` with the orderings and scopes as values, as `core::sync::atomic` turns
/// its `Ordering` into the intrinsics' const arguments.
///
/// # Safety
///
/// `dst` is valid and aligned for an atomic access of `T`, and only threads of `scope` touch it
/// during the operation.
#[inline(always)]
unsafe fn rmw<T: Copy, const OP: Op>(dst: *mut T, val: T, order: Ordering, scope: Scope) -> T {
    macro_rules! in_scope {
        ($ord:ident) => {
            // SAFETY: the caller's contract.
            unsafe {
                match scope {
                    Scope::Block => {
                        offload_atomic_rmw::<T, OP, { AO::$ord }, { Scope::Block }>(dst, val)
                    }
                    Scope::Device => {
                        offload_atomic_rmw::<T, OP, { AO::$ord }, { Scope::Device }>(dst, val)
                    }
                    Scope::System => {
                        offload_atomic_rmw::<T, OP, { AO::$ord }, { Scope::System }>(dst, val)
                    }
                }
            }
        };
    }
    match order {
        Relaxed => in_scope!(Relaxed),
        Release => in_scope!(Release),
        Acquire => in_scope!(Acquire),
        AcqRel => in_scope!(AcqRel),
        SeqCst => in_scope!(SeqCst),
    }
}

/// `offload_atomic_cxchg` with the orderings and scopes as values; the pairs of orderings are
/// those that `core::sync::atomic`'s `compare_exchange` takes.
///
/// # Safety
///
/// As for [`rmw`].
#[inline(always)]
unsafe fn cxchg<T: Copy>(
    dst: *mut T,
    old: T,
    new: T,
    success: Ordering,
    failure: Ordering,
    scope: Scope,
) -> Result<T, T> {
    macro_rules! in_scope {
        ($succ:ident, $fail:ident) => {
            // SAFETY: the caller's contract.
            unsafe {
                match scope {
                    Scope::Block => {
                        offload_atomic_cxchg::<T, { AO::$succ }, { AO::$fail }, { Scope::Block }>(
                            dst, old, new,
                        )
                    }
                    Scope::Device => {
                        offload_atomic_cxchg::<T, { AO::$succ }, { AO::$fail }, { Scope::Device }>(
                            dst, old, new,
                        )
                    }
                    Scope::System => {
                        offload_atomic_cxchg::<T, { AO::$succ }, { AO::$fail }, { Scope::System }>(
                            dst, old, new,
                        )
                    }
                }
            }
        };
    }
    let (val, ok) = match (success, failure) {
        (Relaxed, Relaxed) => in_scope!(Relaxed, Relaxed),
        (Relaxed, Acquire) => in_scope!(Relaxed, Acquire),
        (Relaxed, SeqCst) => in_scope!(Relaxed, SeqCst),
        (Acquire, Relaxed) => in_scope!(Acquire, Relaxed),
        (Acquire, Acquire) => in_scope!(Acquire, Acquire),
        (Acquire, SeqCst) => in_scope!(Acquire, SeqCst),
        (Release, Relaxed) => in_scope!(Release, Relaxed),
        (Release, Acquire) => in_scope!(Release, Acquire),
        (Release, SeqCst) => in_scope!(Release, SeqCst),
        (AcqRel, Relaxed) => in_scope!(AcqRel, Relaxed),
        (AcqRel, Acquire) => in_scope!(AcqRel, Acquire),
        (AcqRel, SeqCst) => in_scope!(AcqRel, SeqCst),
        (SeqCst, Relaxed) => in_scope!(SeqCst, Relaxed),
        (SeqCst, Acquire) => in_scope!(SeqCst, Acquire),
        (SeqCst, SeqCst) => in_scope!(SeqCst, SeqCst),
        (_, AcqRel) => panic!("there is no such thing as an acquire-release failure ordering"),
        (_, Release) => panic!("there is no such thing as a release failure ordering"),
    };
    if ok { Ok(val) } else { Err(val) }
}

macro_rules! scoped_atomic {
    ($($has:literal $atomic:ident $int:ident $max:ident $min:ident;)*) => {$(
        #[cfg(target_has_atomic = $has)]
        impl sealed::Sealed for crate::sync::atomic::$atomic {}

        #[cfg(target_has_atomic = $has)]
        impl ScopedAtomic for crate::sync::atomic::$atomic {
            type Value = $int;

            #[inline]
            fn fetch_add_scoped(&self, val: $int, order: Ordering, scope: Scope) -> $int {
                // SAFETY: `as_ptr` of an atomic is valid and aligned for atomic accesses; the
                // scope is the caller's promise, and a data race on a GPU if broken, as with a
                // plain atomic that another kernel writes without one.
                unsafe { rmw::<$int, { Op::Add }>(self.as_ptr(), val, order, scope) }
            }
            #[inline]
            fn fetch_sub_scoped(&self, val: $int, order: Ordering, scope: Scope) -> $int {
                // SAFETY: as in `fetch_add_scoped`.
                unsafe { rmw::<$int, { Op::Sub }>(self.as_ptr(), val, order, scope) }
            }
            #[inline]
            fn fetch_and_scoped(&self, val: $int, order: Ordering, scope: Scope) -> $int {
                // SAFETY: as in `fetch_add_scoped`.
                unsafe { rmw::<$int, { Op::And }>(self.as_ptr(), val, order, scope) }
            }
            #[inline]
            fn fetch_or_scoped(&self, val: $int, order: Ordering, scope: Scope) -> $int {
                // SAFETY: as in `fetch_add_scoped`.
                unsafe { rmw::<$int, { Op::Or }>(self.as_ptr(), val, order, scope) }
            }
            #[inline]
            fn fetch_xor_scoped(&self, val: $int, order: Ordering, scope: Scope) -> $int {
                // SAFETY: as in `fetch_add_scoped`.
                unsafe { rmw::<$int, { Op::Xor }>(self.as_ptr(), val, order, scope) }
            }
            #[inline]
            fn fetch_max_scoped(&self, val: $int, order: Ordering, scope: Scope) -> $int {
                // SAFETY: as in `fetch_add_scoped`.
                unsafe { rmw::<$int, { Op::$max }>(self.as_ptr(), val, order, scope) }
            }
            #[inline]
            fn fetch_min_scoped(&self, val: $int, order: Ordering, scope: Scope) -> $int {
                // SAFETY: as in `fetch_add_scoped`.
                unsafe { rmw::<$int, { Op::$min }>(self.as_ptr(), val, order, scope) }
            }
            #[inline]
            fn swap_scoped(&self, val: $int, order: Ordering, scope: Scope) -> $int {
                // SAFETY: as in `fetch_add_scoped`.
                unsafe { rmw::<$int, { Op::Xchg }>(self.as_ptr(), val, order, scope) }
            }
            #[inline]
            fn compare_exchange_scoped(
                &self,
                current: $int,
                new: $int,
                success: Ordering,
                failure: Ordering,
                scope: Scope,
            ) -> Result<$int, $int> {
                // SAFETY: as in `fetch_add_scoped`.
                unsafe { cxchg(self.as_ptr(), current, new, success, failure, scope) }
            }
        }
    )*};
}

scoped_atomic! {
    "32" AtomicI32 i32 Max Min;
    "32" AtomicU32 u32 UMax UMin;
    "64" AtomicI64 i64 Max Min;
    "64" AtomicU64 u64 UMax UMin;
    "ptr" AtomicIsize isize Max Min;
    "ptr" AtomicUsize usize UMax UMin;
}
