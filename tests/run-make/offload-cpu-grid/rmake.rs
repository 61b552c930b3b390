//! The CPU device runs every work item of a launch's grid, and `core::offload` tells each where
//! it is, on the CPU device as on both GPU targets (issue: the CPU device runs the whole grid).
//!
//! `ws/` launches kernels written one work item per element, as GPU kernels are: a
//! bounds-checked saxpy over 1,000,000 elements with 1,000,192 work items, a 2-D grid over a
//! 300 x 200 array whose last row and column of blocks stick out, and a 3-D grid, each work
//! item writing a mix of its thread index, block index, block and grid dimensions. Built with
//! `cargo offload --offload-arch=host` and run: the program compares each result with the same
//! computation as a plain loop (mismatches) and prints a checksum, which this test recomputes
//! on its own. The bundled example's first saxpy, whose every work item loops over the whole
//! array, launched over 4 blocks of 64 threads gives a wrong result: once per work item with
//! one worker thread (`RUST_OFFLOAD_CPU_WORKERS=1`), racing otherwise. A work item that panics
//! stops the program with the panic's location and message, as a host panic gives them, in a
//! line that names the kernel by its Rust path and the work item, in the release and the dev
//! profile; the program still ends by the trap's signal: the kernel crate defines no panic
//! handler, and the one that the device pass supplies reports the panic and traps. The other
//! lines about a work item name the kernel by its Rust path too.
//!
//! Threads of a block cooperate (`core::offload::sync_threads` and `block_shared!`): a block
//! sum (1000 blocks of 256 threads, a tree reduction with a barrier per step) and a tiled
//! 128 x 128 matrix multiply (16 x 16 tiles in block-shared memory, two barriers per tile)
//! match the host, with the default workers and with one, and so does the block sum in the
//! dynamic block-shared memory that `core::offload::launch` gives it, and so do eight block
//! sums that eight host threads launch at once (each its own input, static and dynamic
//! block-shared memory in turn: the launch record and the shared memory are each thread's). A
//! kernel whose thread 0 returns before a barrier that the block's other threads wait at stops
//! the program with a line that names the kernel and the block, by `SIGABRT`. A work item that
//! overflows its stack (a kernel with barriers, whose work items run on stacks of their own)
//! or writes to an unmapped address stops the program with a line that names it and the
//! cause, by `SIGSEGV`, with one worker and with four, and the overflow also when launched
//! from a thread that has no alternate signal stack, for which the runner maps one.
//!
//! Launches of several blocks share them with the runner's pool of worker threads, which stay
//! from one launch to the next: over 20 launches with 4 workers, the blocks that the launching
//! thread did not run ran on at most 3 other threads (each block notes the OS thread that ran
//! it); with `RUST_OFFLOAD_CPU_POOL=0`, on more.
//!
//! Each index function of `core::offload` has a kernel that raises an atomic to the largest
//! value any work item saw over blocks `[2, 3, 4]` of threads `[5, 6, 7]`: the CPU device's
//! values are checked, on sm_90 each of these kernels reads exactly its function's special
//! register (`%tid.x` for `thread_idx_x`, ..., `%nctaid.z` for `grid_dim_z`), and on gfx90a
//! its work-item ID bits, workgroup ID register or implicit kernel argument (code object v5's
//! `hidden_block_count_*` and `hidden_group_size_*`, at their offsets).
//!
//! Built for `gfx90a,sm_90` the same kernels pass the vendor tools (`cargo offload` links each
//! image with `ld.lld --no-undefined`, or `ptxas` and `nvlink`), and a kernel written with
//! `core::offload` has the same PTX and ISA as the same kernel written with `core::arch`. The
//! cooperating kernels use each GPU's barrier and block-shared memory: `bar.sync 0` and the
//! `.shared` state space on sm_90, `s_barrier` and the local data share on gfx90a.

//@ only-x86_64
//@ needs-offload

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use run_make_support::offload::{
    cargo_offload, copy_dir, kernel_instructions, llvm_tool, ptx_kernels, reports,
};
use run_make_support::{cmd, cwd, rfs};

const N: usize = 1_000_000;
const W: usize = 300;
const H: usize = 200;
const D3: [usize; 3] = [20, 12, 10];
const INDEX_N: usize = 64 * 64 * 2;
const M: usize = 1024;
const SUM_N: usize = 256 * 1000;
const MM: usize = 128;

/// The same mix as `grid::mix`, written again here.
fn mix(place: [u32; 12]) -> u32 {
    let mut h = 17u32;
    for v in place {
        h = h.wrapping_mul(31).wrapping_add(v);
    }
    h
}

/// What a work item at `xyz` of a launch of `threads` per block over `blocks` writes.
fn place_value(xyz: [usize; 3], threads: [u32; 3], blocks: [u32; 3]) -> u32 {
    let mut place = [0u32; 12];
    for d in 0..3 {
        place[d] = xyz[d] as u32 % threads[d];
        place[3 + d] = xyz[d] as u32 / threads[d];
        place[6 + d] = threads[d];
        place[9 + d] = blocks[d];
    }
    mix(place)
}

fn checksum(values: impl Iterator<Item = u64>) -> u64 {
    let mut sum = 0u64;
    for (i, v) in values.enumerate() {
        sum = sum.wrapping_add((i as u64 + 1).wrapping_mul(v));
    }
    sum
}

/// How many times each of the first elements of the racy saxpy got `a * x`.
fn racy_times(stdout: &str) -> Vec<f64> {
    let line = stdout.lines().find_map(|l| l.strip_prefix("racy_saxpy: ")).expect("no racy line");
    line.split_whitespace().map(|v| v.parse().unwrap()).collect()
}

fn check_results(stdout: &str) {
    let got = reports(stdout);
    let expect = |name: &str, sum: u64| {
        let (mismatches, got_sum) = got[name];
        assert_eq!(mismatches, 0, "{name}: elements that differ from the host's plain loop");
        assert_eq!(got_sum, sum, "{name}: checksum");
    };
    expect("saxpy", checksum((0..N).map(|i| (i + 1 + i % 7) as u64)));
    let grid_2d = (0..W * H).map(|i| place_value([i % W, i / W, 0], [16, 16, 1], [19, 13, 1]));
    expect("grid_2d", checksum(grid_2d.map(u64::from)));
    let grid_3d = (0..D3[0] * D3[1] * D3[2]).map(|i| {
        let xyz = [i % D3[0], i / D3[0] % D3[1], i / (D3[0] * D3[1])];
        place_value(xyz, [8, 8, 4], [3, 2, 3])
    });
    expect("grid_3d", checksum(grid_3d.map(u64::from)));
    let index = (0..INDEX_N).map(|i| (i % 64 + 1000 * (i / 64 % 64) + 100_000 * (i / 4096)) as u64);
    let index = checksum(index);
    expect("index_portable", index);
    expect("index_arch", index);
    let input: Vec<u32> = (0..SUM_N as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let sums = input.chunks(256).map(|c| c.iter().fold(0u32, |s, &v| s.wrapping_add(v)));
    let sums: Vec<u32> = sums.collect();
    expect("block_sum", checksum(sums.iter().map(|&v| u64::from(v))));
    expect("block_sum_dynamic", checksum(sums.iter().map(|&v| u64::from(v))));
    // Each index function's largest value over blocks [2, 3, 4] of threads [5, 6, 7].
    let indices = stdout.lines().find_map(|l| l.strip_prefix("indices: "));
    assert_eq!(indices, Some("4 5 6 1 2 3 5 6 7 2 3 4"), "index functions (thread, block, dims)");
    // Eight host threads, each its own input (`i + 7919 * k`).
    let threads = (0..8u32).flat_map(|k| {
        let input: Vec<u32> =
            (0..SUM_N as u32).map(|i| (i + k * 7919).wrapping_mul(2_654_435_761)).collect();
        let sums: Vec<u64> = input
            .chunks(256)
            .map(|c| u64::from(c.iter().fold(0u32, |s, &v| s.wrapping_add(v))))
            .collect();
        sums
    });
    expect("threads_block_sum", checksum(threads));
    let c = (0..MM * MM).map(|i| {
        let (row, col) = (i / MM, i % MM);
        let ab = |k: usize| ((row * MM + k) % 7) as f32 * (((k * MM + col) % 5) as f32 - 2.0);
        (0..MM).map(ab).sum::<f32>()
    });
    expect("matmul_tiled", checksum(c.map(|v| v as i64 as u64)));
}

/// `line` without the function numbers of PTX block labels (`$L__BB3_2` is `$L__BB_2`).
fn without_function_numbers(line: &str) -> String {
    let mut parts = line.split("$L__BB");
    let mut out = parts.next().unwrap().to_string();
    for part in parts {
        out.push_str("$L__BB");
        out.push_str(part.trim_start_matches(|c: char| c.is_ascii_digit()));
    }
    out
}

/// Each index function of `core::offload` and the nvptx special register it reads.
const INDEX_REGISTERS: [(&str, &str); 12] = [
    ("thread_idx_x", "%tid.x"),
    ("thread_idx_y", "%tid.y"),
    ("thread_idx_z", "%tid.z"),
    ("block_idx_x", "%ctaid.x"),
    ("block_idx_y", "%ctaid.y"),
    ("block_idx_z", "%ctaid.z"),
    ("block_dim_x", "%ntid.x"),
    ("block_dim_y", "%ntid.y"),
    ("block_dim_z", "%ntid.z"),
    ("grid_dim_x", "%nctaid.x"),
    ("grid_dim_y", "%nctaid.y"),
    ("grid_dim_z", "%nctaid.z"),
];

/// What each index function's kernel (`reads_<function>`, `fn(out: &AtomicU32)`) does on gfx90a
/// to get the value: the work-item IDs are packed into `v0` (x in bits 0-9, y 10-19, z 20-29),
/// the workgroup IDs are the SGPRs after the user SGPRs (`s14`, `s15`, `s16` for these
/// kernels), and the dimensions come from code object v5's implicit kernel arguments, which
/// follow the 16 bytes of explicit ones (`dyn_ptr`, `out`) in the kernel argument segment
/// (`s[8:9]`): `hidden_block_count_{x,y,z}` (u32) at 0x10, 0x14, 0x18 and
/// `hidden_group_size_{x,y,z}` (u16) at 0x1c, 0x1e, 0x20.
const INDEX_ISA: [(&str, &[&str]); 12] = [
    ("thread_idx_x", &["v_and_b32_e32 v0, 0x3ff, v0"]),
    ("thread_idx_y", &["v_bfe_u32 v0, v0, 10, 10"]),
    ("thread_idx_z", &["v_bfe_u32 v0, v0, 20, 10"]),
    ("block_idx_x", &["v_max_u32_e32 v0, s14, v1"]),
    ("block_idx_y", &["v_max_u32_e32 v0, s15, v1"]),
    ("block_idx_z", &["v_max_u32_e32 v0, s16, v1"]),
    ("block_dim_x", &["s_load_dword s4, s[8:9], 0x1c", "s_and_b32 s4, s4, 0xffff"]),
    ("block_dim_y", &["s_load_dword s4, s[8:9], 0x1c", "s_lshr_b32 s4, s4, 16"]),
    ("block_dim_z", &["s_load_dword s4, s[8:9], 0x20", "s_and_b32 s4, s4, 0xffff"]),
    ("grid_dim_x", &["s_load_dword s4, s[8:9], 0x10"]),
    ("grid_dim_y", &["s_load_dword s4, s[8:9], 0x14"]),
    ("grid_dim_z", &["s_load_dword s4, s[8:9], 0x18"]),
];

/// The grid's special registers (`%tid`, `%ctaid`, `%ntid`, `%nctaid`) that PTX `body` reads,
/// sorted, each once.
fn special_registers(body: &str) -> Vec<String> {
    let mut found: Vec<String> = body
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '%' || c == '.'))
        .filter(|token| {
            ["%tid.", "%ctaid.", "%ntid.", "%nctaid."].iter().any(|p| token.starts_with(p))
        })
        .map(String::from)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The kernel of `kernels` whose symbol starts with `_offload_kernel_<name>_`, with its own
/// symbol replaced by `K` and block labels without the function's number.
fn kernel(kernels: &BTreeMap<String, Vec<String>>, name: &str) -> Vec<String> {
    let prefix = format!("_offload_kernel_{name}_");
    let (symbol, lines) = kernels
        .iter()
        .find(|(symbol, _)| symbol.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no kernel `{name}` among {:?}", kernels.keys()));
    lines.iter().map(|l| without_function_numbers(&l.replace(symbol.as_str(), "K"))).collect()
}

/// Runs `exe panic`, whose work item 37 (block 2, thread 5) of `grid::out_of_bounds` indexes
/// past the end of its array: the program prints the panic's line (the kernel, the work item,
/// the location) and message, no other line about the work item, and ends by the trap's
/// `SIGILL`, as a trapping panic handler ends it.
fn check_panic_line(exe: &Path) {
    let failed = cmd(exe).arg("panic").run_fail();
    let stderr = failed.stderr_utf8();
    let lines: Vec<&str> = stderr.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("error: the offload kernel `grid::out_of_bounds` panicked "))
        .unwrap_or_else(|| panic!("{}: no panic line naming the kernel: {stderr}", exe.display()));
    let line = lines[at];
    assert!(
        line.contains(
            "on the CPU device in work item block (2, 0, 0) thread (5, 0, 0) of its launch over \
             blocks [4, 1, 1] of threads [16, 1, 1] at "
        ) && line.ends_with("grid/src/lib.rs:142:5:"),
        "{line}"
    );
    assert_eq!(
        lines.get(at + 1).copied(),
        Some("index out of bounds: the len is 64 but the index is 101"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("error: the offload kernel").count(), 1, "{stderr}");
    assert!(!failed.stdout_utf8().contains("the launch returned"));
    assert_eq!(failed.status().signal(), Some(4), "{:?}", failed.status());
}

/// Launches of several blocks share them with worker threads that stay from one launch to the
/// next: over 20 launches with 4 workers, the blocks that the launching thread did not run ran
/// on 3 threads at most, those of the pool. Without the pool (`RUST_OFFLOAD_CPU_POOL=0`) each
/// launch starts threads of its own, so more than 3 ran blocks (the check that this test can
/// tell the two apart).
fn check_pool(exe: &Path) {
    let helpers = |pool: &str| -> usize {
        let run = cmd(exe)
            .arg("pool")
            .env("RUST_OFFLOAD_CPU_WORKERS", "4")
            .env("RUST_OFFLOAD_CPU_POOL", pool)
            .run();
        let stdout = run.stdout_utf8();
        let line = stdout.lines().find_map(|l| l.strip_prefix("pool: ")).expect(&stdout);
        line.parse().unwrap()
    };
    let pooled = helpers("1");
    assert!((1..=3).contains(&pooled), "{pooled} threads besides the launching one ran blocks");
    let own = helpers("0");
    assert!(own > 3, "without the pool, only {own} threads besides the launching one ran blocks");
}

fn main() {
    let ws = cwd().join("ws");
    let run = cargo_offload(&ws, &["run", "--release", "--offload-arch=host"]);
    let stdout = run.stdout_utf8();
    check_results(&stdout);
    // Work items that run at the same time race; each applies the update at least once, and a
    // block's 64 work items run one after another, so no element got `a * x` only once.
    let times = racy_times(&stdout);
    assert!(times.iter().all(|&t| t >= 2.0), "the racy saxpy looked right: {times:?}");

    // One worker: the blocks run one after another, each work item once, with no race.
    let exe = ws.join("target/offload/host/x86_64-unknown-linux-gnu/release/app");
    let one_worker = cmd(&exe).env("RUST_OFFLOAD_CPU_WORKERS", "1").run();
    let stdout = one_worker.stdout_utf8();
    check_results(&stdout);
    assert_eq!(racy_times(&stdout), vec![256.0; 16], "racy saxpy with one worker");

    check_pool(&exe);

    // A work item that panics (an index out of bounds; the crate graph has no panic handler, so
    // the toolchain's reports the panic) stops the program with the panic as a host panic gives
    // it, its location and message, naming the kernel by its Rust path and the work item, in
    // the release profile and in the dev profile.
    check_panic_line(&exe);
    cargo_offload(&ws, &["build", "--offload-arch=host"]);
    check_panic_line(&ws.join("target/offload/host/x86_64-unknown-linux-gnu/debug/app"));

    check_cpu_image_thread_locals(&ws);
    check_barrier_misuse(&exe);
    check_faults(&exe);
    check_gpu_images(&ws);
}

/// The CPU image's block-shared statics are thread-locals, uninitialized (`.tbss`), and every
/// thread-local of the image is local-dynamic or general-dynamic: an image loaded with `dlopen`
/// has no room for kilobytes of initial-exec ones. `ws`: the built workspace.
fn check_cpu_image_thread_locals(ws: &Path) {
    let so = ws.join("target/offload/images/host.so");
    let symbols = cmd(llvm_tool("llvm-readelf")).args(["-s", "-W"]).arg(&so).run().stdout_utf8();
    for name in ["7PARTIAL", "6TILE_A", "6TILE_B"] {
        let line = symbols.lines().find(|l| l.ends_with(name)).unwrap_or_else(|| {
            panic!("the CPU image has no block-shared static `{name}`:\n{symbols}")
        });
        assert!(line.contains(" TLS "), "`{name}` is not a thread-local: {line}");
    }
    let sections = cmd(llvm_tool("llvm-readelf")).args(["-S", "-W"]).arg(&so).run().stdout_utf8();
    assert!(sections.contains(".tbss") && !sections.contains(".offload.block_shared"));
    let relocations = cmd(llvm_tool("llvm-readelf")).arg("-r").arg(&so).run().stdout_utf8();
    assert!(!relocations.contains("R_X86_64_TPOFF"), "initial-exec thread-locals:\n{relocations}");
}

/// Thread 0 of each block returns before the barrier: the program (`exe`) stops, naming the
/// kernel and a block, by `SIGABRT`, and the launch never returns.
fn check_barrier_misuse(exe: &Path) {
    let failed = cmd(&exe).arg("barrier").run_fail();
    let stderr = failed.stderr_utf8();
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error: the offload kernel `grid::barrier_misuse` "))
        .unwrap_or_else(|| panic!("no line naming the kernel on stderr: {stderr}"));
    assert!(
        line.contains(
            "waits at `core::offload::sync_threads` on the CPU device in 31 work items of block ("
        ) && line.contains("but 1 of its 32 work items ended without reaching that barrier"),
        "{line}"
    );
    assert!(!failed.stdout_utf8().contains("the launch returned"));
    assert_eq!(failed.status().signal(), Some(6), "{:?}", failed.status());
}

/// A work item that overflows its stack (in a kernel with barriers, whose work items have stacks
/// of their own) or writes where no memory is: one line that names it and the cause, then the
/// program (`exe`) ends by `SIGSEGV`, as without the line.
fn check_faults(exe: &Path) {
    let overflow_place =
        "block (1, 0, 0) thread (3, 0, 0) of its launch over blocks [2, 1, 1] of threads [8, 1, 1]";
    let overflow_cause = "(signal 11: the work item overflowed its stack, which has 252 KiB on \
                          the CPU device in a kernel with barriers)";
    for (mode, kernel, place, cause) in [
        ("overflow", "deep_stack", overflow_place, overflow_cause),
        ("overflow-bare-thread", "deep_stack", overflow_place, overflow_cause),
        (
            "fault",
            "bad_address",
            "block (2, 0, 0) thread (5, 0, 0) of its launch over blocks [4, 1, 1] of threads \
             [8, 1, 1]",
            "(signal 11: an invalid memory access or a stack overflow)",
        ),
    ] {
        for workers in ["1", "4"] {
            let failed = cmd(&exe).arg(mode).env("RUST_OFFLOAD_CPU_WORKERS", workers).run_fail();
            let stderr = failed.stderr_utf8();
            let prefix = format!("error: the offload kernel `grid::{kernel}` stopped the program");
            let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&prefix)).collect();
            assert_eq!(lines.len(), 1, "{mode}, {workers} workers: {stderr}");
            assert!(lines[0].contains(place) && lines[0].ends_with(cause), "{}", lines[0]);
            assert!(!failed.stdout_utf8().contains("the launch returned"));
            assert_eq!(failed.status().signal(), Some(11), "{mode}: {:?}", failed.status());
        }
    }
}

/// The GPU images of the same kernels (a copy of `ws`): `cargo offload` has each pass the vendor
/// tools.
fn check_gpu_images(ws: &Path) {
    let gpu = cwd().join("gpu");
    copy_dir(ws, &gpu);
    cargo_offload(&gpu, &["build", "--release", "--offload-arch=gfx90a,sm_90"]);
    let images = gpu.join("target/offload/images");
    let ptx = ptx_kernels(&rfs::read_to_string(images.join("sm_90.ptx")));
    assert_eq!(kernel(&ptx, "index_portable"), kernel(&ptx, "index_arch"), "sm_90 PTX");
    let grid_2d = kernel(&ptx, "grid_2d").join("\n");
    for register in ["%tid.x", "%tid.y", "%ctaid.x", "%ntid.x", "%ntid.z", "%nctaid.x"] {
        assert!(grid_2d.contains(register), "sm_90 `grid_2d` does not read {register}");
    }
    // Each index function reads its own special register, and no other.
    for (function, register) in INDEX_REGISTERS {
        let body = kernel(&ptx, &format!("reads_{function}")).join("\n");
        assert_eq!(special_registers(&body), [register], "sm_90 `{function}`:\n{body}");
    }
    let ptx_text = rfs::read_to_string(images.join("sm_90.ptx"));
    for name in ["block_sum", "block_sum_dynamic", "matmul_tiled"] {
        let body = kernel(&ptx, name).join("\n");
        assert!(body.contains("bar.sync"), "sm_90 `{name}` has no barrier:\n{body}");
        assert!(body.contains("st.shared") && body.contains("ld.shared"), "sm_90 `{name}`");
    }
    assert!(ptx_text.contains(".shared .align 4 .b8"), "no `.shared` arrays in the PTX");
    // The dynamic block-shared memory: an `extern` array that the runtime sizes at launch.
    assert!(
        ptx_text.contains(".extern .shared .align 16 .b8 __rust_offload_dynamic_shared[]"),
        "no dynamic `.shared` array in the PTX"
    );
    let isa = kernel_instructions(&llvm_tool("llvm-objdump"), &images.join("gfx90a.so"));
    assert_eq!(kernel(&isa, "index_portable"), kernel(&isa, "index_arch"), "gfx90a ISA");
    for (function, instructions) in INDEX_ISA {
        let body = kernel(&isa, &format!("reads_{function}"));
        for instruction in instructions {
            assert!(
                body.iter().any(|line| line == instruction),
                "gfx90a `{function}` has no `{instruction}`:\n{}",
                body.join("\n")
            );
        }
    }
    for name in ["block_sum", "block_sum_dynamic", "matmul_tiled"] {
        let body = kernel(&isa, name).join("\n");
        assert!(body.contains("s_barrier"), "gfx90a `{name}` has no barrier:\n{body}");
        assert!(body.contains("ds_write") && body.contains("ds_read"), "gfx90a `{name}`");
    }
}
