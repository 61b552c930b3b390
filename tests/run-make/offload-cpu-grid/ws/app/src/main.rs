//! Launches each kernel of `grid` over a grid of many blocks and threads and prints, per
//! kernel, `name: mismatches checksum`: the elements that differ from the same computation as
//! a plain loop on the host, and a checksum that the test recomputes on its own. The racy
//! saxpy prints `racy_saxpy: k0 k1 ...`, how many times each of its first elements got `a * x`.

#![feature(core_intrinsics, gpu_offload)]
#![allow(internal_features)]

use core::intrinsics::offload;

use grid::{D3, H, INDEX_N, M, MM, N, SUM_BLOCK, SUM_N, TILE, W, mix};

/// Host threads that launch block sums at once.
const HOST_THREADS: usize = 8;

/// `sum((i + 1) * v[i])`, wrapping, in `u64`.
fn checksum(values: impl Iterator<Item = u64>) -> u64 {
    values.enumerate().fold(0u64, |s, (i, v)| s.wrapping_add((i as u64 + 1).wrapping_mul(v)))
}

fn report(name: &str, mismatches: usize, sum: u64) {
    println!("{name}: {mismatches} {sum}");
}

/// A zeroed array of `LEN` elements on the heap.
fn boxed<T: Copy + Default, const LEN: usize>() -> Box<[T; LEN]> {
    vec![T::default(); LEN].into_boxed_slice().try_into().ok().unwrap()
}

/// What `grid_2d` and `grid_3d` write at (x, y, z) of a launch of `threads` per block over
/// `blocks`, computed on the host.
fn expected_place(xyz: [usize; 3], threads: [u32; 3], blocks: [u32; 3]) -> u32 {
    let t = |d: usize| xyz[d] as u32 % threads[d];
    let b = |d: usize| xyz[d] as u32 / threads[d];
    mix([
        t(0),
        t(1),
        t(2),
        b(0),
        b(1),
        b(2),
        threads[0],
        threads[1],
        threads[2],
        blocks[0],
        blocks[1],
        blocks[2],
    ])
}

/// Linux's `stack_t`.
#[repr(C)]
struct SignalStack {
    sp: *mut std::ffi::c_void,
    flags: i32,
    size: usize,
}

unsafe extern "C" {
    fn sigaltstack(stack: *const SignalStack, old: *mut SignalStack) -> i32;
}

/// Runs the launch of `mode`, one whose work items stop the program (each prints a line if its
/// launch returns after all), or the worker pool's launches (`pool`); `false` for any other
/// mode.
fn run_stopping_mode(mode: &str) -> bool {
    match mode {
        "panic" => {
            // Work item 37 (block 2, thread 5) indexes past the end of `out`.
            let mut out = [0u32; 64];
            offload::<_, _, ()>(grid::out_of_bounds, [4, 1, 1], [16, 1, 1], (&mut out, 37u32));
            println!("out_of_bounds: the launch returned");
        }
        "barrier" => {
            // Thread 0 of each block never reaches the barrier.
            let mut out = [0u32; 64];
            offload::<_, _, ()>(grid::barrier_misuse, [2, 1, 1], [32, 1, 1], (&mut out,));
            println!("barrier_misuse: the launch returned");
        }
        "overflow" => overflow(),
        "overflow-bare-thread" => {
            // The same, launched from a thread without an alternate signal stack (Rust's
            // threads have one), so that the runner maps its own for the launch.
            std::thread::spawn(|| {
                let disable = SignalStack { sp: std::ptr::null_mut(), flags: 2, size: 0 };
                // SAFETY: `SS_DISABLE` for the calling thread, which runs no signal handler.
                assert_eq!(unsafe { sigaltstack(&disable, std::ptr::null_mut()) }, 0);
                overflow();
            })
            .join()
            .unwrap();
        }
        "fault" => {
            // Work item 21 (block 2, thread 5) writes through an unmapped address.
            let mut out = [0u32; 64];
            offload::<_, _, ()>(grid::bad_address, [4, 1, 1], [8, 1, 1], (&mut out, 21u32));
            println!("bad_address: the launch returned");
        }
        "pool" => pool(),
        _ => return false,
    }
    true
}

unsafe extern "C" {
    fn gettid() -> i32;
}

/// 20 launches of 64 blocks, each block noting its worker's thread: prints `pool: N`, the
/// number of distinct threads other than the launching one that ran blocks.
fn pool() {
    // SAFETY: `gettid` takes nothing and cannot fail.
    let launcher = unsafe { gettid() };
    let mut helpers = std::collections::BTreeSet::<i32>::new();
    for _ in 0..20 {
        let mut out = [0i32; 64];
        offload::<_, _, ()>(grid::worker_tids, [64, 1, 1], [1, 1, 1], (&mut out,));
        assert!(out.iter().all(|&tid| tid > 0), "a block did not run: {out:?}");
        helpers.extend(out.into_iter().filter(|&tid| tid != launcher));
    }
    println!("pool: {}", helpers.len());
}

/// Work item 3 of block 1 overflows its stack.
fn overflow() {
    let mut out = [0u64; 64];
    offload::<_, _, ()>(grid::deep_stack, [2, 1, 1], [8, 1, 1], (&mut out, 3u32));
    println!("deep_stack: the launch returned");
}

fn main() {
    if std::env::args().nth(1).is_some_and(|mode| run_stopping_mode(&mode)) {
        return;
    }
    // 1-D: 1,000,000 elements, 3907 blocks of 256 threads (1,000,192 work items).
    let mut x = boxed::<f32, N>();
    let mut y = boxed::<f32, N>();
    for i in 0..N {
        x[i] = i as f32 * 0.5;
        y[i] = 1.0 + (i % 7) as f32;
    }
    let want: Vec<f32> = (0..N).map(|i| 2.0 * x[i] + y[i]).collect();
    offload::<_, _, ()>(grid::saxpy, [3907, 1, 1], [256, 1, 1], (2.0f32, &*x, &mut *y));
    let mismatches = (0..N).filter(|&i| y[i] != want[i]).count();
    report("saxpy", mismatches, checksum(y.iter().map(|&v| v as u64)));

    // 2-D: 300 x 200 in 16 x 16 blocks; the last column and row of blocks stick out.
    let (threads, blocks) = ([16, 16, 1], [19, 13, 1]);
    let mut out = boxed::<u32, { W * H }>();
    offload::<_, _, ()>(grid::grid_2d, blocks, threads, (&mut *out,));
    let mismatches = (0..W * H)
        .filter(|&i| out[i] != expected_place([i % W, i / W, 0], threads, blocks))
        .count();
    report("grid_2d", mismatches, checksum(out.iter().map(|&v| v as u64)));

    // 3-D: 20 x 12 x 10 in 8 x 8 x 4 blocks, 3 x 2 x 3 of them.
    let (threads, blocks) = ([8, 8, 4], [3, 2, 3]);
    let mut out = boxed::<u32, { D3[0] * D3[1] * D3[2] }>();
    offload::<_, _, ()>(grid::grid_3d, blocks, threads, (&mut *out,));
    let mismatches = (0..out.len())
        .filter(|&i| {
            let xyz = [i % D3[0], i / D3[0] % D3[1], i / (D3[0] * D3[1])];
            out[i] != expected_place(xyz, threads, blocks)
        })
        .count();
    report("grid_3d", mismatches, checksum(out.iter().map(|&v| v as u64)));

    // The same indices through `core::offload` and through `core::arch` (host: the same).
    let mut portable = boxed::<u32, INDEX_N>();
    offload::<_, _, ()>(grid::index_portable, [64, 2, 1], [64, 1, 1], (&mut *portable,));
    let mut arch = boxed::<u32, INDEX_N>();
    offload::<_, _, ()>(grid::index_arch, [64, 2, 1], [64, 1, 1], (&mut *arch,));
    for (name, out) in [("index_portable", &portable), ("index_arch", &arch)] {
        let mismatches = (0..INDEX_N)
            .filter(|&i| {
                let (tx, bx, by) = (i % 64, i / 64 % 64, i / 4096);
                out[i] as usize != tx + 1000 * bx + 100_000 * by
            })
            .count();
        report(name, mismatches, checksum(out.iter().map(|&v| v as u64)));
    }

    // A block sum in block-shared memory with a barrier per step: 1000 blocks of 256 threads.
    let input: Box<[u32; SUM_N]> = (0..SUM_N as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect::<Vec<_>>()
        .try_into()
        .unwrap();
    let mut sums = boxed::<u32, { SUM_N / SUM_BLOCK }>();
    offload::<_, _, ()>(
        grid::block_sum,
        [1000, 1, 1],
        [SUM_BLOCK as u32, 1, 1],
        (&*input, &mut *sums),
    );
    let mismatches = (0..SUM_N / SUM_BLOCK)
        .filter(|&b| {
            let block = &input[b * SUM_BLOCK..(b + 1) * SUM_BLOCK];
            sums[b] != block.iter().fold(0u32, |s, &v| s.wrapping_add(v))
        })
        .count();
    report("block_sum", mismatches, checksum(sums.iter().map(|&v| v as u64)));
    // The same in dynamic block-shared memory, 1 KiB per block, given at launch.
    let mut dynamic = boxed::<u32, { SUM_N / SUM_BLOCK }>();
    let threads = [SUM_BLOCK as u32, 1, 1];
    let args = (&*input, &mut *dynamic);
    core::offload::launch::<_, _, ()>(grid::block_sum_dynamic, [1000, 1, 1], threads, 1024, args);
    let mismatches = (0..SUM_N / SUM_BLOCK).filter(|&b| dynamic[b] != sums[b]).count();
    report("block_sum_dynamic", mismatches, checksum(dynamic.iter().map(|&v| v as u64)));

    // Each index function over blocks [2, 3, 4] of threads [5, 6, 7]: the largest value that a
    // work item saw, in the order thread, block index, block dimension, grid dimension.
    macro_rules! largest {
        ($($kernel:ident),*) => {[$({
            let out = core::sync::atomic::AtomicU32::new(0);
            offload::<_, _, ()>(grid::$kernel, [2, 3, 4], [5, 6, 7], (&out,));
            out.into_inner().to_string()
        }),*]};
    }
    let largest = largest!(
        reads_thread_idx_x,
        reads_thread_idx_y,
        reads_thread_idx_z,
        reads_block_idx_x,
        reads_block_idx_y,
        reads_block_idx_z,
        reads_block_dim_x,
        reads_block_dim_y,
        reads_block_dim_z,
        reads_grid_dim_x,
        reads_grid_dim_y,
        reads_grid_dim_z
    );
    println!("indices: {}", largest.join(" "));

    // Eight host threads launch at once, each a block sum over its own input, alternately in
    // static and in dynamic block-shared memory: each launch's grid and shared memory are its
    // own thread's.
    let per_thread: Vec<(usize, Vec<u32>)> = std::thread::scope(|scope| {
        let launches: Vec<_> = (0..HOST_THREADS)
            .map(|k| {
                scope.spawn(move || {
                    let input: Box<[u32; SUM_N]> = (0..SUM_N as u32)
                        .map(|i| (i + k as u32 * 7919).wrapping_mul(2_654_435_761))
                        .collect::<Vec<_>>()
                        .try_into()
                        .unwrap();
                    let mut sums = boxed::<u32, { SUM_N / SUM_BLOCK }>();
                    let (blocks, threads) = ([1000, 1, 1], [SUM_BLOCK as u32, 1, 1]);
                    let args = (&*input, &mut *sums);
                    if k % 2 == 0 {
                        offload::<_, _, ()>(grid::block_sum, blocks, threads, args);
                    } else {
                        let kernel = grid::block_sum_dynamic;
                        core::offload::launch::<_, _, ()>(kernel, blocks, threads, 1024, args);
                    }
                    let mismatches = (0..SUM_N / SUM_BLOCK)
                        .filter(|&b| {
                            let block = &input[b * SUM_BLOCK..(b + 1) * SUM_BLOCK];
                            sums[b] != block.iter().fold(0u32, |s, &v| s.wrapping_add(v))
                        })
                        .count();
                    (mismatches, sums.to_vec())
                })
            })
            .collect();
        launches.into_iter().map(|launch| launch.join().unwrap()).collect()
    });
    let mismatches = per_thread.iter().map(|(m, _)| m).sum();
    let all = per_thread.iter().flat_map(|(_, sums)| sums.iter().map(|&v| v as u64));
    report("threads_block_sum", mismatches, checksum(all));

    // A tiled matrix multiply, two barriers per tile: 128 x 128 in 16 x 16 blocks. The
    // elements are small integers, so every sum is exact in any order.
    let a: Box<[f32; MM * MM]> =
        (0..MM * MM).map(|i| (i % 7) as f32).collect::<Vec<_>>().try_into().unwrap();
    let b: Box<[f32; MM * MM]> =
        (0..MM * MM).map(|i| (i % 5) as f32 - 2.0).collect::<Vec<_>>().try_into().unwrap();
    let mut c = boxed::<f32, { MM * MM }>();
    let blocks = [(MM / TILE) as u32, (MM / TILE) as u32, 1];
    offload::<_, _, ()>(
        grid::matmul_tiled,
        blocks,
        [TILE as u32, TILE as u32, 1],
        (&*a, &*b, &mut *c),
    );
    let mismatches = (0..MM * MM)
        .filter(|&i| {
            let (row, col) = (i / MM, i % MM);
            c[i] != (0..MM).map(|k| a[row * MM + k] * b[k * MM + col]).sum::<f32>()
        })
        .count();
    report("matmul_tiled", mismatches, checksum(c.iter().map(|&v| v as i64 as u64)));

    // The racy saxpy over 4 blocks of 64 threads: every work item adds `a * x` to all of `y`.
    let xs: Box<[f32; M]> = Box::new(std::array::from_fn(|i| (i % 5 + 1) as f32));
    let mut ys = Box::new([0.0f32; M]);
    offload::<_, _, ()>(grid::racy_saxpy, [4, 1, 1], [64, 1, 1], (1.0f32, &*xs, &mut *ys));
    let times: Vec<String> = (0..16).map(|i| (ys[i] / xs[i]).to_string()).collect();
    println!("racy_saxpy: {}", times.join(" "));
}
