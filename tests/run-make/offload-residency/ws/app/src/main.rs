//! Loops of launches written the natural way (a slice per launch, no `Preload`), beside the
//! same loops over `Preload`/`PreloadMut`, and the traps that must keep the plain mapping's
//! results when launches keep their data on the device. Each mode (the first argument) prints
//! `name: mismatches checksum` against the same computation on the host.

#![feature(gpu_offload)]

use std::panic::{AssertUnwindSafe, catch_unwind};

use core::offload::{Preload, PreloadMut, offload};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use kern::{
    Params, add_one, add_one_atomic, add_one_raw, add_ten_atomic, fill_from, saxpy, smooth,
    write_through_const,
};

/// 2^20 `f32`, 4 MiB per buffer, for the loops whose copies the test counts.
const BIG: usize = 1 << 20;
/// The traps' buffers.
const SMALL: usize = 1000;

fn report(name: &str, got: &[f32], expected: &[f32]) {
    assert_eq!(got.len(), expected.len(), "{name}: length");
    let mismatches = got.iter().zip(expected).filter(|(g, e)| g != e).count();
    let checksum = got.iter().map(|&v| v as u64).fold(0u64, |sum, v| sum.wrapping_add(v));
    println!("{name}: {mismatches} {checksum}");
}

fn host_smooth(now: &[f32], next: &mut [f32]) {
    let n = next.len();
    for i in 0..n {
        next[i] =
            if i == 0 || i + 1 == n { now[i] } else { (now[i - 1] + now[i] + now[i + 1]) / 3.0 };
    }
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    match mode.as_str() {
        "jacobi" => jacobi(100),
        "jacobi-preload" => jacobi_preload(100),
        "saxpy" => saxpy_loop(100),
        "saxpy-preload" => saxpy_preload(100),
        "traps" => {
            host_reads();
            host_writes();
            helper();
            panic_between_launches();
            reallocation();
            threads();
            devices();
            overlapping();
            stack_array();
            by_value();
            raw_pointer();
            repointed(&mut vec![0.0f32; SMALL]);
            shared_atomics();
            through_const();
        }
        _ => panic!("unknown mode `{mode}`"),
    }
}

/// The Jacobi loop: a step, then `mem::swap` of the two `Vec`s.
fn jacobi(steps: usize) {
    let start: Vec<f32> = (0..BIG).map(|i| (i % 10) as f32).collect();
    let (mut a, mut b) = (start.clone(), vec![0.0f32; BIG]);
    for _ in 0..steps {
        offload! {
            kernel = smooth,
            workgroup_dim = [BIG.div_ceil(256) as u32, 1, 1],
            thread_dim = [256, 1, 1],
            args = (&a, &mut b),
        }
        std::mem::swap(&mut a, &mut b);
    }
    let (mut x, mut y) = (start, vec![0.0f32; BIG]);
    for _ in 0..steps {
        host_smooth(&x, &mut y);
        std::mem::swap(&mut x, &mut y);
    }
    report("jacobi", &a, &x);
}

/// The same steps with both buffers kept by `PreloadMut`s.
fn jacobi_preload(steps: usize) {
    let start: Vec<f32> = (0..BIG).map(|i| (i % 10) as f32).collect();
    let (mut a, mut b) = (start.clone(), vec![0.0f32; BIG]);
    {
        let mut kept_a = PreloadMut::new(&mut a[..]);
        let mut kept_b = PreloadMut::new(&mut b[..]);
        for step in 0..steps {
            let (now, next) =
                if step % 2 == 0 { (&*kept_a, &mut *kept_b) } else { (&*kept_b, &mut *kept_a) };
            offload! {
                kernel = smooth,
                workgroup_dim = [BIG.div_ceil(256) as u32, 1, 1],
                thread_dim = [256, 1, 1],
                args = (now, next),
            }
        }
    }
    let (mut x, mut y) = (start, vec![0.0f32; BIG]);
    for _ in 0..steps {
        host_smooth(&x, &mut y);
        std::mem::swap(&mut x, &mut y);
    }
    report("jacobi", if steps % 2 == 0 { &a } else { &b }, &x);
}

fn saxpy_expected(steps: usize) -> (Vec<f32>, Vec<f32>) {
    let x: Vec<f32> = (0..BIG).map(|i| (i % 7) as f32).collect();
    let mut y = vec![1.0f32; BIG];
    for _ in 0..steps {
        for i in 0..BIG {
            y[i] = 2.0 * x[i] + y[i];
        }
    }
    (x, y)
}

/// The saxpy loop: the same `x` and `y` in every launch.
fn saxpy_loop(steps: usize) {
    let (x, expected) = saxpy_expected(steps);
    let mut y = vec![1.0f32; BIG];
    for _ in 0..steps {
        offload! {
            kernel = saxpy,
            workgroup_dim = [BIG.div_ceil(256) as u32, 1, 1],
            thread_dim = [256, 1, 1],
            args = (2.0f32, &x, &mut y),
        }
    }
    report("saxpy", &y, &expected);
}

fn saxpy_preload(steps: usize) {
    let (x, expected) = saxpy_expected(steps);
    let mut y = vec![1.0f32; BIG];
    {
        let kept_x = Preload::new(&x[..]);
        let mut kept_y = PreloadMut::new(&mut y[..]);
        for _ in 0..steps {
            offload! {
                kernel = saxpy,
                workgroup_dim = [BIG.div_ceil(256) as u32, 1, 1],
                thread_dim = [256, 1, 1],
                args = (2.0f32, &*kept_x, &mut *kept_y),
            }
        }
    }
    report("saxpy", &y, &expected);
}

/// Launches `add_one` over `values`.
fn launch_add_one(values: &mut [f32]) {
    let n = values.len();
    offload! {
        kernel = add_one,
        workgroup_dim = [n.div_ceil(256) as u32, 1, 1],
        thread_dim = [256, 1, 1],
        args = (values,),
    }
}

/// The host reads an element after each launch: it must see each launch's result.
fn host_reads() {
    let mut v = vec![0.0f32; SMALL];
    let mut seen = Vec::new();
    for _ in 0..10 {
        offload! {
            kernel = add_one,
            workgroup_dim = [SMALL.div_ceil(256) as u32, 1, 1],
            thread_dim = [256, 1, 1],
            args = (&mut v,),
        }
        seen.push(v[5]);
    }
    let expected: Vec<f32> = (1..=10).map(|k| k as f32).collect();
    report("host_reads", &seen, &expected);
}

/// The host writes an element between launches: the next launch must see the write.
fn host_writes() {
    let mut v = vec![0.0f32; SMALL];
    for _ in 0..10 {
        offload! {
            kernel = add_one,
            workgroup_dim = [SMALL.div_ceil(256) as u32, 1, 1],
            thread_dim = [256, 1, 1],
            args = (&mut v,),
        }
        v[7] = 100.0;
    }
    let mut expected = vec![10.0f32; SMALL];
    expected[7] = 100.0;
    report("host_writes", &v, &expected);
}

/// Launches from a helper that reads the data itself after its launch, and from one that
/// does not; the caller reads between the calls.
fn helper() {
    fn launch_and_read(values: &mut [f32]) -> f32 {
        launch_add_one(&mut *values);
        values[0]
    }
    let mut v = vec![0.0f32; SMALL];
    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.push(launch_and_read(&mut v));
        launch_add_one(&mut v);
        seen.push(v[1]);
    }
    let expected: Vec<f32> = (1..=10).map(|k| k as f32).collect();
    report("helper", &seen, &expected);
}

/// A panic right after a launch, inside `catch_unwind`: an index out of bounds of an array
/// (the launching body's own bounds check) or of a `Vec` (inside `Index::index`); neither
/// reads launch data, so the keeping lasts until the unwinding, whose edge copies the kernel's
/// result back before `catch_unwind` returns.
fn panic_between_launches() {
    for in_vec in [false, true] {
        let mut v = vec![0.0f32; SMALL];
        let index = std::hint::black_box(7usize);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            // Locals of the closure's own body, so that the bounds checks read no captured
            // reference (which would end the keeping before them).
            let (index, in_vec) = (index, in_vec);
            let (array, vector) = ([0.0f32; 4], vec![0.0f32; 4]);
            offload! {
                kernel = add_one,
                workgroup_dim = [SMALL.div_ceil(256) as u32, 1, 1],
                thread_dim = [256, 1, 1],
                args = (&mut v,),
            }
            let value = if in_vec { vector[index] } else { array[index] };
            offload! {
                kernel = add_one,
                workgroup_dim = [SMALL.div_ceil(256) as u32, 1, 1],
                thread_dim = [256, 1, 1],
                args = (&mut v,),
            }
            value
        }));
        assert!(outcome.is_err(), "the index was in bounds");
        report(if in_vec { "panic_in_vec" } else { "panic" }, &v, &vec![1.0f32; SMALL]);
    }
}

/// The `Vec` grows (and moves) between launches, and a freed buffer's address is reused by a
/// new one.
fn reallocation() {
    let mut v = vec![0.0f32; SMALL];
    let mut expected = v.clone();
    for step in 0..6 {
        offload! {
            kernel = add_one,
            workgroup_dim = [v.len().div_ceil(256) as u32, 1, 1],
            thread_dim = [256, 1, 1],
            args = (&mut v,),
        }
        expected.iter_mut().for_each(|e| *e += 1.0);
        v.resize(SMALL << step, 0.0);
        expected.resize(SMALL << step, 0.0);
    }
    report("reallocation", &v, &expected);
    drop(v);
    let mut w = vec![5.0f32; SMALL << 5];
    offload! {
        kernel = add_one,
        workgroup_dim = [w.len().div_ceil(256) as u32, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&mut w,),
    }
    offload! {
        kernel = add_one,
        workgroup_dim = [w.len().div_ceil(256) as u32, 1, 1],
        thread_dim = [256, 1, 1],
        args = (&mut w,),
    }
    report("reused", &w, &vec![7.0f32; SMALL << 5]);
}

/// Two threads run launch loops at once, each over its own buffers and one shared input.
fn threads() {
    let x: Vec<f32> = (0..SMALL).map(|i| i as f32).collect();
    let results: Vec<Vec<f32>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|t| {
                let x = &x;
                scope.spawn(move || {
                    let x: &[f32] = x;
                    let mut y = vec![t as f32; SMALL];
                    for _ in 0..20 {
                        offload! {
                            kernel = saxpy,
                            workgroup_dim = [SMALL.div_ceil(256) as u32, 1, 1],
                            thread_dim = [256, 1, 1],
                            args = (1.0f32, x, &mut y),
                        }
                    }
                    y
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    for (t, y) in results.iter().enumerate() {
        let expected: Vec<f32> = x.iter().map(|&xi| t as f32 + 20.0 * xi).collect();
        report(&format!("thread{t}"), y, &expected);
    }
}

/// Launches alternate between two devices over the same buffer.
fn devices() {
    let mut v = vec![0.0f32; SMALL];
    for step in 0..10 {
        offload! {
            kernel = add_one,
            workgroup_dim = [SMALL.div_ceil(256) as u32, 1, 1],
            thread_dim = [256, 1, 1],
            device = step % 2,
            args = (&mut v,),
        }
    }
    report("devices", &v, &vec![10.0f32; SMALL]);
}

/// Launches over overlapping parts of one buffer.
fn overlapping() {
    let mut v = vec![0.0f32; SMALL];
    for _ in 0..5 {
        offload! {
            kernel = add_one,
            workgroup_dim = [SMALL.div_ceil(256) as u32, 1, 1],
            thread_dim = [256, 1, 1],
            args = (&mut v[..SMALL / 2],),
        }
        offload! {
            kernel = add_one,
            workgroup_dim = [SMALL.div_ceil(256) as u32, 1, 1],
            thread_dim = [256, 1, 1],
            args = (&mut v[SMALL / 4..],),
        }
    }
    let expected: Vec<f32> =
        (0..SMALL).map(|i| if i < SMALL / 4 || i >= SMALL / 2 { 5.0 } else { 10.0 }).collect();
    report("overlapping", &v, &expected);
}

/// An array on the stack, written by the host between launches.
fn stack_array() {
    let mut values = [0.0f32; 512];
    for _ in 0..10 {
        offload! {
            kernel = add_one,
            workgroup_dim = [2, 1, 1],
            thread_dim = [256, 1, 1],
            args = (&mut values,),
        }
        values[3] += 1.0;
    }
    let mut expected = [10.0f32; 512];
    expected[3] = 20.0;
    report("stack_array", &values, &expected);
}

/// A parameter passed by value through memory changes at every launch: each launch must see
/// its own (the argument tuple's memory is never kept).
fn by_value() {
    let mut v = vec![0.0f32; SMALL];
    for step in 0..5 {
        let params = Params { values: [step as f32; 8] };
        offload! {
            kernel = fill_from,
            workgroup_dim = [SMALL.div_ceil(256) as u32, 1, 1],
            thread_dim = [256, 1, 1],
            args = (&mut v, params),
        }
    }
    report("by_value", &v, &vec![4.0f32; SMALL]);
}

/// A launch through a raw pointer to an array on the stack, read directly after each launch.
fn raw_pointer() {
    let mut values = [0.0f32; 4];
    let mut seen = Vec::new();
    for _ in 0..3 {
        offload! { kernel = add_one_raw, args = (&raw mut values,) }
        seen.push(values[0]);
    }
    report("raw_pointer", &seen, &[1.0, 2.0, 3.0]);
}

/// A slice pointer re-pointed by `mem::swap` at an array on the stack before the launch; the
/// array is read right after it.
fn repointed(heap: &mut Vec<f32>) {
    let mut values = [0.0f32; 4];
    let mut x: &mut [f32] = &mut heap[..4];
    let mut y: &mut [f32] = &mut values[..];
    std::mem::swap(&mut x, &mut y);
    offload! { kernel = add_one, args = (&mut *x,) }
    offload! { kernel = add_one, args = (&mut *x,) }
    let first = values[0];
    report("repointed", &[first], &[2.0]);
}

fn counters() -> Vec<AtomicU32> {
    (0..64).map(|_| AtomicU32::new(0)).collect()
}

fn totals(counters: &[AtomicU32]) -> Vec<f32> {
    counters.iter().map(|c| c.load(Relaxed) as f32).collect()
}

/// Counters written through `&mut` (kept), then through `&` on another device and, over a
/// wider part, on the same device: the shared launches are not kept, and the kept regions
/// they overlap come back first (else the second device would start from the host's old
/// counters, and the runtime would refuse to widen the kept part).
fn shared_atomics() {
    for (device, wider) in [(1, false), (-1, true)] {
        let mut counters = counters();
        for _ in 0..2 {
            let part = if wider { &mut counters[..32] } else { &mut counters[..] };
            offload! { kernel = add_ten_atomic, thread_dim = [64, 1, 1], args = (part,) }
        }
        offload! { kernel = add_one_atomic, thread_dim = [64, 1, 1], device = device,
        args = (&counters,) }
        let expected: Vec<f32> =
            (0..64).map(|i| if wider && i >= 32 { 1.0 } else { 21.0 }).collect();
        report(
            if wider { "atomics_wider" } else { "atomics_device" },
            &totals(&counters),
            &expected,
        );
    }
}

/// A kernel writes through a `*const` (the launch copies nothing back), then `&mut` launches
/// over the same array: they start from the host's elements, as without keeping.
fn through_const() {
    let mut values = [1.0f32; 8];
    for _ in 0..2 {
        offload! { kernel = write_through_const, args = (&raw const values,) }
        offload! { kernel = add_one_raw, args = (&raw mut values[..4] as *mut [f32; 4],) }
    }
    report("through_const", &values, &[3.0, 3.0, 3.0, 3.0, 1.0, 1.0, 1.0, 1.0]);
}
