//! Data stays on the device across a loop of launches written the natural way (issue 65,
//! scenario S42 of `src/doc/scenarios.md`). `ws/app` runs the two loops, a Jacobi step
//! followed by `mem::swap` of its two `Vec`s and a saxpy over the same `x` and `y`, 100 launches
//! each over 4 MiB buffers, beside the same loops over `Preload`/`PreloadMut`; the host pass's
//! residency pass (`rustc_mir_transform::offload_residency`) lets each natural launch keep its
//! slices on the device until the body could observe them. Counted in the runtime's own copy
//! log (`LIBOMPTARGET_INFO=32`, one line per copy with its size) on the CPU device:
//! - the natural Jacobi loop copies each buffer in once and back once (16 MiB, as the
//!   `PreloadMut` loop does), the saxpy loop `x` and `y` in once and `y` back once (12 MiB);
//!   both within 1.1 times the bytes of their `Preload` versions, with the host's results;
//! - with `RUST_OFFLOAD_RESIDENCY=0` the same program maps every slice at every launch (the
//!   plain mapping: 300 copies, 1200 MiB, as the issue measured), with the same results.
//!
//! The traps (mode `traps`) must give the plain mapping's results; each one is a place where
//! the pass must end the keeping, and reads a stale or lost value if it does not:
//! - `host_reads` reads an element after each launch (a read through the `Vec`'s data pointer:
//!   without the flush before it, it reads the value from before the launches);
//! - `host_writes` writes an element between launches (without the flush the next launch runs
//!   on the device's copy without the write, and the final copy back overwrites it);
//! - `helper` launches from functions, one of which reads the data after its own launch (the
//!   flush before the helper's return and before its read);
//! - `panic` and `panic_in_vec` panic on an index out of bounds right after a launch (of an
//!   array, in the body's own bounds check; of a `Vec`, inside `Index::index`), inside
//!   `catch_unwind`: neither reads launch data, so the keeping lasts until the unwinding, whose
//!   edge flushes (without it the kernel's result never comes back);
//! - `reallocation` grows the `Vec` between launches (it moves) and launches over a new buffer
//!   that may reuse a freed one's address (the flush before `resize` and `drop`);
//! - `threads` runs two launch loops at once over one shared input (each thread's own table);
//! - `devices` alternates devices 0 and 1 over one buffer (a kept region on another device
//!   is copied back before the launch);
//! - `overlapping` launches over two overlapping parts of one buffer (a kept region that
//!   overlaps a new one is copied back first);
//! - `stack_array` launches over an array on the stack and writes it directly (the array's
//!   own memory is mapped, so its direct use ends the keeping);
//! - `by_value` passes a struct by value (through the argument tuple's memory) that changes at
//!   every launch (such a parameter is never kept, or the kernel would see the first value);
//! - `raw_pointer` launches through `&raw mut` of an array on the stack and reads the array
//!   after each launch (a raw pointer is traced to the array like a reference);
//! - `repointed` swaps a slice pointer over to an array on the stack before two launches (a
//!   pointer whose address is taken has no known origin, so the array counts as mapped);
//! - `atomics_device` and `atomics_wider` write counters through `&mut` in a loop (kept), then
//!   add through `&[AtomicU32]` on another device, or over a wider part on the same one: a
//!   launch whose data is not kept first brings back the kept regions it overlaps (else the
//!   other device starts from the host's old counters, and the runtime refuses to widen);
//! - `through_const` has a kernel write through a `*const` (nothing comes back), then launches
//!   over the same array through `*mut`: they must start from the host's elements, so a
//!   `*const` is never kept.

//@ only-x86_64
//@ needs-offload

use run_make_support::offload::{cargo_offload, copies_in_log, copy_dir, reports};
use run_make_support::{cmd, cwd, source_root};

const MIB4: u64 = 4 << 20;

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-residency/ws"), &ws);
    cargo_offload(&ws, &["build", "--release", "--offload-arch=host"]);
    let exe = ws.join("target/offload/host/x86_64-unknown-linux-gnu/release/app");
    let run = |mode: &str, residency: &str| {
        let run = cmd(&exe)
            .arg(mode)
            .env("LIBOMPTARGET_INFO", "32")
            .env("RUST_OFFLOAD_RESIDENCY", residency)
            .run();
        let (stdout, stderr) = (run.stdout_utf8(), run.stderr_utf8());
        for (name, (mismatches, _)) in reports(&stdout) {
            assert_eq!(mismatches, 0, "{mode} (residency {residency}): {name} differs:\n{stdout}");
        }
        (stdout, copies_in_log(&stderr))
    };
    // (natural mode, its Preload version, its data moved with residency, and without).
    let loops = [
        (
            "jacobi",
            "jacobi-preload",
            [2 * MIB4, 2, 2 * MIB4, 2],
            [200 * MIB4, 200, 100 * MIB4, 100],
        ),
        ("saxpy", "saxpy-preload", [2 * MIB4, 2, MIB4, 1], [200 * MIB4, 200, 100 * MIB4, 100]),
    ];
    for (natural, preload, kept, plain) in loops {
        let (stdout, moved_natural) = run(natural, "1");
        assert!(reports(&stdout).contains_key(natural), "no result:\n{stdout}");
        assert_eq!(
            moved_natural, kept,
            "{natural}: [bytes in, copies in, bytes back, copies back]"
        );
        let (stdout, moved_preload) = run(preload, "1");
        assert!(reports(&stdout).contains_key(natural), "no result:\n{stdout}");
        let bytes = |m: [u64; 4]| m[0] + m[2];
        assert!(
            bytes(moved_natural) * 10 <= bytes(moved_preload) * 11,
            "{natural}: {moved_natural:?} moved, its Preload version {moved_preload:?}"
        );
        let (_, moved_plain) = run(natural, "0");
        assert_eq!(moved_plain, plain, "{natural} without residency");
    }

    let names = [
        "host_reads",
        "host_writes",
        "helper",
        "panic",
        "panic_in_vec",
        "reallocation",
        "reused",
        "thread0",
        "thread1",
        "devices",
        "overlapping",
        "stack_array",
        "by_value",
        "raw_pointer",
        "repointed",
        "atomics_device",
        "atomics_wider",
        "through_const",
    ];
    for residency in ["1", "0"] {
        let (stdout, _) = run("traps", residency);
        let got = reports(&stdout);
        for name in names {
            assert!(
                got.contains_key(name),
                "no result `{name}` (residency {residency}):\n{stdout}"
            );
        }
    }
}
