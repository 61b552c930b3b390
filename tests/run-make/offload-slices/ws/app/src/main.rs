//! Launches the slice kernels of `kern` and compares each result with the same computation on
//! the host. The saxpy's length comes from the command line (default 1000). Prints
//! `name: mismatches checksum` per result, the checksum being the sum of `(i + 1) * value`.

#![feature(core_intrinsics, gpu_offload)]
#![allow(internal_features)]

use core::intrinsics::offload;
use core::offload::{Preload, PreloadMut, offload, offload_sync};

use kern::{add_one, block_sums, double_raw, fill, overlapping, saxpy, scale16, smooth, views};

fn checksum(values: impl Iterator<Item = u64>) -> u64 {
    values.enumerate().fold(0u64, |sum, (i, v)| sum.wrapping_add((i as u64 + 1).wrapping_mul(v)))
}

fn report<T: PartialEq + Copy>(name: &str, got: &[T], expected: &[T], as_u64: impl Fn(T) -> u64) {
    assert_eq!(got.len(), expected.len(), "{name}: length");
    let mismatches = got.iter().zip(expected).filter(|(g, e)| g != e).count();
    println!("{name}: {mismatches} {}", checksum(got.iter().map(|&v| as_u64(v))));
}

fn blocks(n: usize) -> [u32; 3] {
    [n.div_ceil(256).max(1) as u32, 1, 1]
}

fn main() {
    let argument = std::env::args().nth(1);
    if argument.as_deref() == Some("bad-device") {
        // A device that the machine lacks: the launch panics, naming the kernel and the number.
        let mut v = vec![0u16; 8];
        offload! { kernel = fill::<u16>, device = 99, args = (&mut v[..], 1u16) };
        unreachable!("the launch on device 99 returned");
    }
    if argument.as_deref() == Some("big-dyn-cache") {
        // More dynamic block-shared memory per block than any GPU has (1 GiB): a launch that
        // fails names the kernel and the amount.
        let values = vec![1u32; 256];
        let mut sums = vec![0u32; 1];
        offload! {
            kernel = block_sums,
            thread_dim = [256, 1, 1],
            dyn_cache = 1 << 30,
            args = (&values[..], &mut sums[..]),
        }
        println!("big-dyn-cache: {}", sums[0]);
        return;
    }
    if argument.as_deref() == Some("devices") {
        // Upstream's way to learn the device numbers, and a launch on the last one.
        let count = core::intrinsics::offload_get_num_devices();
        let mut v = vec![0u16; 300];
        offload! {
            kernel = fill::<u16>,
            workgroup_dim = blocks(v.len()),
            thread_dim = [256, 1, 1],
            device = count - 1,
            args = (&mut v[..], 7u16),
        }
        println!("devices: {count}");
        report("last_device", &v, &[7u16; 300], u64::from);
        return;
    }
    if argument.as_deref() == Some("preload-read-only") {
        preload_read_only();
        return;
    }
    if argument.as_deref() == Some("jacobi-minimum") {
        jacobi_minimum();
        return;
    }
    if let Some(mode @ ("transfers-plain" | "transfers-preload" | "preload-sync")) =
        argument.as_deref()
    {
        kept_on_device(mode);
        return;
    }
    let n: usize = argument.map_or(1000, |n| n.parse().expect("a length"));

    // A saxpy over `n` elements.
    let x: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let mut y: Vec<f32> = (0..n).map(|i| (i + 1) as f32).collect();
    offload::<_, _, ()>(saxpy, blocks(n), [256, 1, 1], (2.0f32, &x[..], &mut y[..]));
    let expected: Vec<f32> = (0..n).map(|i| 2.0 * (i % 7) as f32 + (i + 1) as f32).collect();
    report("saxpy", &y, &expected, |v| v as u64);

    // A sub-slice in the middle of a `Vec`: only its elements change.
    let small: Vec<f32> = (0..100).map(|i| i as f32).collect();
    let mut z = vec![1.0f32; 1000];
    offload::<_, _, ()>(saxpy, [1, 1, 1], [128, 1, 1], (3.0f32, &small[..], &mut z[400..500]));
    let expected: Vec<f32> = (0..1000)
        .map(|i| if (400..500).contains(&i) { 3.0 * (i - 400) as f32 + 1.0 } else { 1.0 })
        .collect();
    report("middle", &z, &expected, |v| v as u64);

    // Empty slices, from a `Vec` and from nothing: the kernel runs and sees none.
    let mut empty: Vec<f32> = Vec::new();
    offload::<_, _, ()>(saxpy, [1, 1, 1], [32, 1, 1], (1.0f32, &[0.0f32; 0][..], &mut empty[..]));
    offload::<_, _, ()>(saxpy, [1, 1, 1], [32, 1, 1], (1.0f32, &x[..0], &mut z[3..3]));
    report("empty", &z, &expected, |v| v as u64);

    // Several slices of one buffer in one launch, and `str`.
    let buffer: Vec<u32> = (1..=64).collect();
    let sum = |s: &[u32]| s.iter().map(|&v| u64::from(v)).sum::<u64>();
    let text = "offload";
    let text_sum: u64 = text.bytes().map(u64::from).sum();
    let cases: [(&str, &[u32], &[u32], &str); 6] = [
        ("halves", &buffer[..24], &buffer[24..], text),
        ("same", &buffer[..], &buffer[..], text),
        ("inside", &buffer[..], &buffer[10..20], text),
        ("part_first", &buffer[10..20], &buffer[..], text),
        ("overlapping", &buffer[..40], &buffer[30..], text),
        ("views_empty", &buffer[..0], &[], ""),
    ];
    for (name, a, b, text) in cases {
        let mut out = [u64::MAX; 8];
        offload::<_, _, ()>(views, [1, 1, 1], [1, 1, 1], (a, b, text, &mut out));
        let text_sum = if text.is_empty() { 0 } else { text_sum };
        let last = b.last().map_or(0, |&v| u64::from(v));
        let expected =
            [a.len() as u64, b.len() as u64, text.len() as u64, sum(a), sum(b), text_sum, 2, last];
        report(name, &out, &expected, |v| v);
    }

    // A generic kernel, instantiated twice.
    let mut halves = vec![0u16; 300];
    offload::<_, _, ()>(fill::<u16>, blocks(300), [256, 1, 1], (&mut halves[..], 7u16));
    report("fill_u16", &halves, &[7u16; 300], u64::from);
    let mut wides = vec![0.0f64; 70];
    offload::<_, _, ()>(fill::<f64>, [2, 1, 1], [64, 1, 1], (&mut wides[..], 2.5f64));
    report("fill_f64", &wides, &[2.5f64; 70], |v| (v * 2.0) as u64);

    // Two raw slices of one buffer that overlap, the mutable one last: the launch maps their
    // union once and brings the written elements back.
    let mut shifted = vec![0.5f32; 100];
    let base = shifted.as_mut_ptr();
    let src = std::ptr::slice_from_raw_parts(base.cast_const(), 99);
    // SAFETY: elements 1 to 99 of `shifted`.
    let dst = std::ptr::slice_from_raw_parts_mut(unsafe { base.add(1) }, 99);
    offload::<_, _, ()>(overlapping, [1, 1, 1], [128, 1, 1], (src, dst));
    let expected: Vec<f32> =
        (0..100).map(|i| if i == 0 { 0.5 } else { 99_000.0 + (i - 1) as f32 }).collect();
    report("overlapping_mut", &shifted, &expected, |v| v as u64);

    // A raw slice pointer.
    let mut raw: Vec<f32> = (0..500).map(|i| i as f32).collect();
    offload::<_, _, ()>(double_raw, blocks(500), [256, 1, 1], (&raw mut raw[..],));
    let expected: Vec<f32> = (0..500).map(|i| 2.0 * i as f32).collect();
    report("double_raw", &raw, &expected, |v| v as u64);

    // Rustc 1.95's form in the same crate and program.
    let mut array = [1.5f32; 16];
    offload::<_, _, ()>(scale16, [1, 1, 1], [16, 1, 1], (&raw mut array, 4.0f32));
    report("scale16", &array, &[6.0f32; 16], |v| v as u64);

    // Upstream's form: `offload!` with every field (dynamic block-shared memory, device 0),
    // fields in another order, and only the two required ones (one block of one thread).
    let values: Vec<u32> = (0..1000).map(|i| i * 3 + 1).collect();
    let mut sums = vec![0u32; 4];
    offload! {
        kernel = block_sums,
        workgroup_dim = [4, 1, 1],
        thread_dim = [256, 1, 1],
        dyn_cache = 256 * 4,
        device = 0,
        args = (&values[..], &mut sums[..]),
    }
    let expected: Vec<u32> = values.chunks(256).map(|c| c.iter().sum()).collect();
    report("offload_macro", &sums, &expected, u64::from);
    let mut singles = vec![0.0f32; 4];
    offload! { args = (&mut singles[..], 3.0f32), thread_dim = [4, 1, 1], kernel = fill::<f32> };
    offload! { kernel = double_raw, args = (&raw mut singles[..2],) };
    report("offload_macro_defaults", &singles, &[6.0, 3.0, 3.0, 3.0], |v| v as u64);
}

/// 100 launches of `add_one` over one 8 MB buffer (2,000,000 `f32`), the buffer mapped by each
/// launch (`transfers-plain`) or kept on the device by a `PreloadMut` across them
/// (`transfers-preload`, after a launch over an empty sub-slice of it); `preload-sync` reads
/// the results through `offload_sync` while the buffer is still kept. Prints `transfers:
/// <elements that are not 100>`.
fn kept_on_device(mode: &str) {
    const N: usize = 2_000_000;
    let grid = [N.div_ceil(256) as u32, 1, 1];
    let mut data = vec![0.0f32; N];
    if mode == "transfers-plain" {
        for _ in 0..100 {
            offload! {
                kernel = add_one,
                workgroup_dim = grid,
                thread_dim = [256, 1, 1],
                args = (&mut data[..],),
            }
        }
    } else {
        let mut kept = PreloadMut::new(&mut data[..]);
        // An empty sub-slice of the kept buffer maps nothing and leaves the buffer kept.
        offload! { kernel = add_one, args = (&mut kept[5..5],) }
        for _ in 0..100 {
            offload! {
                kernel = add_one,
                workgroup_dim = grid,
                thread_dim = [256, 1, 1],
                args = (&mut *kept,),
            }
        }
        if mode == "preload-sync" {
            // Until `offload_sync`, the host's elements are as they were before the launches.
            let before = kept.iter().filter(|&&v| v != 0.0).count();
            offload_sync(&mut kept);
            let after = kept.iter().filter(|&&v| v != 100.0).count();
            println!("before sync: {before}, after sync: {after}");
        }
    }
    println!("transfers: {}", data.iter().filter(|&&v| v != 100.0).count());
}

/// A `Preload` is read-only: a kernel that writes through a raw pointer into the kept copy
/// (here on device 2, `Preload::on_device`) changes the device's copy only, and nothing comes
/// back when the `Preload` is dropped. Prints `preload-read-only: <elements that changed>
/// <elements the kernel saw doubled>`.
#[allow(offload_shared_for_mutable)]
fn preload_read_only() {
    let data: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let mut seen = vec![0.0f32; 1000];
    {
        let kept = Preload::on_device(&data[..], 2);
        // The kernel takes `*mut [f32]`: the shared slice is passed for it on purpose.
        offload! {
            kernel = double_raw,
            workgroup_dim = [4, 1, 1],
            thread_dim = [256, 1, 1],
            device = 2,
            args = (&*kept,),
        }
        // The device's copy, doubled: read by a copy kernel on the same device.
        offload! {
            kernel = saxpy,
            workgroup_dim = [4, 1, 1],
            thread_dim = [256, 1, 1],
            device = 2,
            args = (1.0f32, &*kept, &mut seen[..]),
        }
    }
    let changed = data.iter().enumerate().filter(|&(i, &v)| v != i as f32).count();
    let doubled = seen.iter().enumerate().filter(|&(i, &v)| v == 2.0 * i as f32).count();
    println!("preload-read-only: {changed} {doubled}");
}

/// Ten Jacobi steps (`smooth`) over two 4 MB buffers (1,000,000 `f32`) kept on the device, at
/// the minimum of data moved: `a` is copied in once (`PreloadMut::new`) and back once (its
/// drop), `b` is made on the device without a copy in (`PreloadMut::without_copy_in`: the first
/// step writes all of it) and dropped without a copy back (`discard`). Prints `jacobi_minimum:
/// mismatches checksum` against the same steps on the host, then `b untouched: true` when the
/// host's `b` kept its values.
fn jacobi_minimum() {
    const N: usize = 1_000_000;
    let grid = [N.div_ceil(256) as u32, 1, 1];
    let start: Vec<f32> = (0..N).map(|i| (i % 10) as f32).collect();
    let mut expected = start.clone();
    let mut next = vec![0.0f32; N];
    for _ in 0..10 {
        for i in 0..N {
            next[i] = if i == 0 || i + 1 == N {
                expected[i]
            } else {
                (expected[i - 1] + expected[i] + expected[i + 1]) / 3.0
            };
        }
        std::mem::swap(&mut expected, &mut next);
    }
    let mut a = start;
    let mut b = vec![-1.0f32; N];
    {
        let mut kept_a = PreloadMut::new(&mut a[..]);
        // SAFETY: the first step writes every element of `b`'s device copy before anything
        // reads it, and `discard` brings nothing back.
        let mut kept_b = unsafe { PreloadMut::without_copy_in(&mut b[..]) };
        for step in 0..10 {
            if step % 2 == 0 {
                offload! {
                    kernel = smooth,
                    workgroup_dim = grid,
                    thread_dim = [256, 1, 1],
                    args = (&*kept_a, &mut *kept_b),
                }
            } else {
                offload! {
                    kernel = smooth,
                    workgroup_dim = grid,
                    thread_dim = [256, 1, 1],
                    args = (&*kept_b, &mut *kept_a),
                }
            }
        }
        kept_b.discard();
    }
    report("jacobi_minimum", &a, &expected, |v| (v * 1000.0) as u64);
    println!("b untouched: {}", b.iter().all(|&v| v == -1.0));
}
