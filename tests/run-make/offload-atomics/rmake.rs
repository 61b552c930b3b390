//! Atomics and other interior-mutable data behind `&` come back from the device (issue: nothing
//! lost in silence). `ws/kern` has kernels written as CUDA programs write them, with the atomics
//! behind shared references: a sum with `fetch_add` on 32 and 64 bits (`&AtomicU32`,
//! `&AtomicU64`), a 256-bin histogram over `&[AtomicU32]` (and over `&mut [AtomicU32]`, and
//! kept on the device by a `PreloadMut` for three launches), `fetch_max` on 32 and 64 bits,
//! counters made of `compare_exchange` loops on 32 and 64 bits, a float sum made of a
//! `compare_exchange` loop on an `f32`'s bits, a struct of atomics behind `&`, and a `Cell`
//! that one work item writes. `ws/app` launches each over 2^20 elements (4096 blocks of 256
//! work items, which the CPU device runs on several workers at once) and compares each result
//! with the host's; this test recomputes the sums and the histogram's checksum on its own.
//! Two blocks that wait for each other (a bounded spin) both see the other, so blocks run at
//! the same time, with the default number of workers and with a `RUST_OFFLOAD_CPU_WORKERS`
//! that is not a positive integer (`0`, text, negative: the default); with `1`, one after the
//! other.
//!
//! The runtime's info lines (`LIBOMPTARGET_INFO=32`, one per copy) show which argument comes
//! back: plain data behind `&` (a `[u32; 3]`, 12 bytes) goes to the device only, a struct of
//! atomics behind `&` (16 bytes) to the device and back.
//!
//! The scoped atomics of `core::offload::atomic` (`ScopedAtomic`: device scope, and block scope
//! on one slot per block) give the same results on the CPU device, where every scope is the
//! system's: sums, maxima and minima, `compare_exchange` counters and a float sum, per-block
//! counters, `fetch_or`/`and`/`xor`/`sub`, `swap`, and acquire-release `fetch_add`s.
//!
//! For `gfx90a,sm_90` the same kernels pass the vendor tools (`cargo offload` links each image
//! with `ld.lld --no-undefined`, or `ptxas` and `nvlink`), and each GPU uses its atomic
//! instructions: this test names them (and so the scope that each gets), as
//! `src/doc/cargo-offload.md`'s "Atomics" says, and on gfx90a also what a narrower scope
//! removes (a `compare_exchange` loop, an L2 writeback).

//@ only-x86_64
//@ needs-offload

use std::collections::BTreeMap;

use run_make_support::offload::{
    cargo_offload, copy_dir, kernel_instructions, llvm_tool, ptx_kernels, reports,
};
use run_make_support::{cmd, cwd, rfs};

const N: u64 = 1 << 20;

fn main() {
    let ws = cwd().join("ws");
    cargo_offload(&ws, &["build", "--release", "--offload-arch=host"]);
    let exe = ws.join("target/offload/host/x86_64-unknown-linux-gnu/release/app");
    let run = cmd(&exe).run();
    let stdout = run.stdout_utf8();
    let got = reports(&stdout);
    let x: Vec<u64> =
        (0..N as u32).map(|i| u64::from(i.wrapping_mul(2_654_435_761) >> 12)).collect();
    let sum: u64 = x.iter().sum();
    let mut bins = [0u64; 256];
    for v in &x {
        bins[(v % 256) as usize] += 1;
    }
    let bins_checksum: u64 = bins.iter().enumerate().map(|(i, b)| (i as u64 + 1) * b).sum();
    let max = *x.iter().max().unwrap();
    let expected = [
        ("sum32", sum % (1 << 32)),
        ("sum64", sum),
        ("histogram", bins_checksum),
        ("histogram_mut", bins_checksum),
        ("histogram_preload", 3 * bins_checksum),
        ("max32", max),
        ("max64", max << 20),
        ("cas32", N),
        ("cas64", N),
        ("float_sum", (0..N).map(|i| i % 8).sum()),
        ("stats_count", N),
        ("stats_sum", sum),
        ("cell", 42),
        ("scoped_sum32", sum % (1 << 32)),
        ("scoped_sum64", sum),
        ("scoped_max32", max),
        ("scoped_min64", max << 20),
        ("scoped_cas32", N),
        ("scoped_cas64", N),
        ("scoped_float_sum", (0..N).map(|i| i % 8).sum()),
        ("per_block", N),
        ("per_block_cas", N),
        ("scoped_or", x.iter().fold(0, |a, v| a | v)),
        ("scoped_and", x.iter().fold(u64::from(u32::MAX), |a, v| a & v)),
        ("scoped_xor", x.iter().fold(0, |a, v| a ^ v)),
        ("scoped_sub", 0),
        ("scoped_swap", 1),
        ("release_device", N),
        ("release_system", N),
    ];
    for (name, value) in expected {
        let (mismatches, got_value) =
            *got.get(name).unwrap_or_else(|| panic!("no result `{name}` in:\n{stdout}"));
        assert_eq!(mismatches, 0, "{name}: the device's result differs from the host's");
        assert_eq!(got_value, value, "{name}: the device's result");
    }

    // Blocks run at the same time: two blocks that wait for each other both see the other with
    // the default workers (the online CPUs) and with any count but a positive integer, which
    // falls back to the default; with one worker one block runs after the other.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let both = if cpus >= 2 { "meet: 2" } else { "meet: 1" };
    for workers in [None, Some("2"), Some("0"), Some("many"), Some("-3"), Some("1")] {
        let mut meet = cmd(&exe);
        meet.arg("meet");
        if let Some(workers) = workers {
            meet.env("RUST_OFFLOAD_CPU_WORKERS", workers);
        }
        // Two workers meet even on one CPU, which they share in turns.
        let expected = match workers {
            Some("1") => "meet: 1",
            Some("2") => "meet: 2",
            _ => both,
        };
        let printed = meet.run().stdout_utf8();
        assert_eq!(printed.trim(), expected, "RUST_OFFLOAD_CPU_WORKERS={workers:?}, {cpus} CPUs");
    }

    // Which arguments come back: one copy line per direction and argument.
    let run = cmd(&exe).arg("copies").env("LIBOMPTARGET_INFO", "32").run();
    assert_eq!(run.stdout_utf8().trim(), "copies: 2 5");
    let stderr = run.stderr_utf8();
    let copies = |direction: &str, size: u32| {
        let line = format!("Copying data from {direction}");
        let size = format!("Size={size},");
        stderr.lines().filter(|l| l.contains(&line) && l.contains(&size)).count()
    };
    assert_eq!(copies("host to device", 12), 1, "`&[u32; 3]` copied in:\n{stderr}");
    assert_eq!(copies("device to host", 12), 0, "`&[u32; 3]` copied back:\n{stderr}");
    assert_eq!(copies("host to device", 16), 1, "`&Stats` copied in:\n{stderr}");
    assert_eq!(copies("device to host", 16), 1, "`&Stats` copied back:\n{stderr}");

    // The GPU images: `cargo offload` has each pass the vendor tools.
    let gpu = cwd().join("gpu");
    copy_dir(&ws, &gpu);
    cargo_offload(&gpu, &["build", "--release", "--offload-arch=gfx90a,sm_90"]);
    let images = gpu.join("target/offload/images");
    let ptx = ptx_kernels(&rfs::read_to_string(images.join("sm_90.ptx")));
    let isa = kernel_instructions(&llvm_tool("llvm-objdump"), &images.join("gfx90a.so"));
    // Each kernel's atomic instructions, as `src/doc/cargo-offload.md` ("Atomics") gives them:
    // on sm_90 read-modify-write operations take PTX's default scope (`.gpu`, CUDA's device
    // scope) whatever their scope, and `compare_exchange` its scope (`.sys` for Rust's own,
    // `.gpu` for `Scope::Device`, `.cta` for `Scope::Block`). On gfx90a Rust's atomics are of
    // system scope: `fetch_max` becomes a `compare_exchange` loop and an acquire-release
    // ordering writes back L2 (`buffer_wbl2`); with `Scope::Device` `fetch_max`/`fetch_min` are
    // one instruction and the ordering needs no L2 writeback.
    struct Expected {
        kernel: &'static str,
        sm_90: &'static [&'static str],
        gfx90a: &'static [&'static str],
        not_gfx90a: &'static [&'static str],
    }
    let expected = [
        Expected {
            kernel: "sum",
            sm_90: &["atom.global.add.u32", "atom.global.add.u64"],
            gfx90a: &["global_atomic_add ", "global_atomic_add_x2 "],
            not_gfx90a: &[],
        },
        Expected {
            kernel: "histogram",
            sm_90: &["atom.global.add.u32"],
            gfx90a: &["global_atomic_add "],
            not_gfx90a: &[],
        },
        Expected {
            kernel: "max",
            sm_90: &["atom.global.max.u32", "atom.global.max.u64"],
            gfx90a: &["global_atomic_cmpswap ", "global_atomic_cmpswap_x2 "],
            not_gfx90a: &["global_atomic_umax"],
        },
        Expected {
            kernel: "cas_count",
            sm_90: &["atom.relaxed.sys.global.cas.b32", "atom.relaxed.sys.global.cas.b64"],
            gfx90a: &["global_atomic_cmpswap ", "global_atomic_cmpswap_x2 "],
            not_gfx90a: &[],
        },
        Expected {
            kernel: "scoped_sum",
            sm_90: &["atom.global.add.u32", "atom.global.add.u64"],
            gfx90a: &["global_atomic_add ", "global_atomic_add_x2 "],
            not_gfx90a: &[],
        },
        Expected {
            kernel: "scoped_max",
            sm_90: &["atom.global.max.u32", "atom.global.min.s64"],
            gfx90a: &["global_atomic_umax ", "global_atomic_smin_x2 "],
            not_gfx90a: &["global_atomic_cmpswap"],
        },
        Expected {
            kernel: "scoped_cas",
            sm_90: &["atom.relaxed.gpu.global.cas.b32", "atom.relaxed.gpu.global.cas.b64"],
            gfx90a: &["global_atomic_cmpswap ", "global_atomic_cmpswap_x2 "],
            not_gfx90a: &[],
        },
        Expected {
            kernel: "scoped_float_sum",
            sm_90: &["atom.acq_rel.gpu.global.cas.b32"],
            gfx90a: &["global_atomic_cmpswap "],
            not_gfx90a: &["buffer_wbl2"],
        },
        Expected {
            kernel: "per_block",
            sm_90: &["atom.global.add.u32", "atom.relaxed.cta.global.cas.b64"],
            gfx90a: &["global_atomic_add ", "global_atomic_cmpswap_x2 "],
            not_gfx90a: &[],
        },
        Expected {
            kernel: "release_device",
            sm_90: &["atom.global.add.u32"],
            gfx90a: &["global_atomic_add "],
            not_gfx90a: &["buffer_wbl2"],
        },
        Expected {
            kernel: "release_system",
            sm_90: &["atom.global.add.u32"],
            gfx90a: &["global_atomic_add ", "buffer_wbl2"],
            not_gfx90a: &[],
        },
    ];
    for Expected { kernel: name, sm_90, gfx90a, not_gfx90a } in expected {
        let body = kernel(&ptx, name).join("\n");
        for instruction in sm_90 {
            assert!(body.contains(instruction), "sm_90 `{name}` has no `{instruction}`:\n{body}");
        }
        let body = kernel(&isa, name).join("\n");
        for instruction in gfx90a {
            assert!(body.contains(instruction), "gfx90a `{name}` has no `{instruction}`:\n{body}");
        }
        for instruction in not_gfx90a {
            assert!(!body.contains(instruction), "gfx90a `{name}` has `{instruction}`:\n{body}");
        }
    }
}

/// The lines of kernel `name` (its symbol is `_offload_kernel_<name>_<hex hash>`) in `kernels`.
fn kernel<'a>(kernels: &'a BTreeMap<String, Vec<String>>, name: &str) -> &'a [String] {
    let prefix = format!("_offload_kernel_{name}_");
    kernels
        .iter()
        .find(|(symbol, _)| {
            symbol.strip_prefix(&prefix).is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit()))
        })
        .map(|(_, lines)| lines.as_slice())
        .unwrap_or_else(|| panic!("no kernel `{name}` among {:?}", kernels.keys()))
}
