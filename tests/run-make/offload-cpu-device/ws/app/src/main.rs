//! Launches every kernel of the test once and prints each result as `name: v0 v1 ...`; the
//! test computes the expected values itself.

#![feature(core_intrinsics)]
#![allow(internal_features)]

use core::intrinsics::offload;

fn show<T: std::fmt::Display>(name: &str, values: &[T]) {
    let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    println!("{name}: {}", values.join(" "));
}

fn main() {
    let one = [1, 1, 1];
    let x: [f32; kern::N] = core::array::from_fn(|i| i as f32 * 0.5);
    let mut y: [f32; kern::N] = core::array::from_fn(|i| (i % 7) as f32);
    kern::launch_saxpy(3.0, &x, &mut y);
    show("saxpy", &y);

    let mut v: [u64; 8] = core::array::from_fn(|i| i as u64 + 1);
    offload::<_, _, ()>(kern::scale::<u64>, one, one, (&mut v as *mut _, 10u64));
    show("scale_u64", &v);
    let mut w: [f64; 8] = core::array::from_fn(|i| i as f64 * 0.25);
    offload::<_, _, ()>(kern::scale::<f64>, one, one, (&mut w as *mut _, -4.0f64));
    show("scale_f64", &w);

    let mut out = [-1.0f32; 8];
    let p = kern::Affine { scale: 2.0, offset: 0.5, count: 6, shift: [3, 0, 0] };
    let taps: [f32; 8] = core::array::from_fn(|i| i as f32 + 1.0);
    offload::<_, _, ()>(kern::affine, one, one, (&mut out as *mut _, p, taps));
    show("affine", &out);

    let src: [i32; 16] = core::array::from_fn(|i| i as i32 - 8);
    let mut dst = [7i32; 16];
    offload::<_, _, ()>(kern::copy_scaled, one, one, (&src as *const _, &mut dst as *mut _, 3i32));
    show("copy_scaled", &dst);
    show("copy_scaled_src", &src);

    let mut m = [0.0f64; 2];
    offload::<_, _, ()>(kern::mixed, one, one, (100i64, 7i32, 200u8, 9.0f64, &mut m as *mut _));
    show("mixed", &m);

    let mut z = [100u32; 32];
    offload::<_, _, ()>(kern2::add_index, one, one, (&mut z as *mut _,));
    show("add_index", &z);

    corpus_run();
}

/// Every kernel of the realistic corpus, on inputs the test knows.
fn corpus_run() {
    use corpus::M;
    let one = [1, 1, 1];
    let x: [f32; M] = core::array::from_fn(|i| i as f32 * 0.125 - 2.0);
    let idx: [u32; M] = core::array::from_fn(|i| ((i * 7) % M) as u32);
    let mut out = [0.0f32; M];
    offload::<_, _, ()>(
        corpus::gather,
        one,
        one,
        (&mut out as *mut _, &x as *const _, &idx as *const _),
    );
    show("gather", &out);

    let mut dot = [0.0f32; 1];
    offload::<_, _, ()>(
        corpus::strided_dot,
        one,
        one,
        (&mut dot as *mut _, &x as *const _, &x as *const _),
    );
    show("strided_dot", &dot);

    let mut a: [u32; M] = core::array::from_fn(|i| 1000 + i as u32 * 13);
    let d: [u32; M] = core::array::from_fn(|i| 1 + (i as u32 % 9));
    offload::<_, _, ()>(corpus::divide, one, one, (&mut a as *mut _, &d as *const _));
    show("divide", &a);

    let mut t: [f32; M] = core::array::from_fn(|i| i as f32 / 64.0);
    let mut bits: [u32; M] = core::array::from_fn(|i| i as u32 * 5);
    offload::<_, _, ()>(corpus::tables, one, one, (&mut t as *mut _, &mut bits as *mut _));
    show("tables_f", &t);
    show("tables_bits", &bits);

    let text = "Gpu kernel 0x1F, \u{e9}t\u{e9}: \u{3bb}=42!";
    let codes: [u32; M] =
        core::array::from_fn(|i| text.chars().nth(i).map_or(0xD800 + i as u32, |c| c as u32));
    let mut class = [9u32; M];
    offload::<_, _, ()>(corpus::classify, one, one, (&codes as *const _, &mut class as *mut _));
    show("classify_codes", &codes);
    show("classify", &class);

    let mut f: [f32; M] = core::array::from_fn(|i| (i as f32 - 32.0) * 0.37);
    offload::<_, _, ()>(corpus::float_math, one, one, (&mut f as *mut _,));
    show("float_math", &f);

    let bins: [std::sync::atomic::AtomicU32; 16] = Default::default();
    let values: [u32; M] = core::array::from_fn(|i| (i * i) as u32);
    offload::<_, _, ()>(
        corpus::histogram,
        one,
        one,
        (
            &bins as *const [std::sync::atomic::AtomicU32; 16]
                as *mut [std::sync::atomic::AtomicU32; 16],
            &values as *const _,
        ),
    );
    show(
        "histogram",
        &bins.iter().map(|b| b.load(std::sync::atomic::Ordering::Relaxed)).collect::<Vec<_>>(),
    );

    let mut aff = [-1.0f32; M];
    let params = corpus::Params { scale: 2.0, offset: 1.0, count: 40 };
    offload::<_, _, ()>(
        corpus::affine,
        one,
        one,
        (&mut aff as *mut _, params, [1.0f32, 2.0, 3.0, 4.0]),
    );
    show("affine_small", &aff);

    let mut yf: [f32; M] = core::array::from_fn(|i| i as f32);
    let xf: [f32; M] = core::array::from_fn(|i| 1.0 - i as f32 * 0.5);
    offload::<_, _, ()>(
        corpus::axpy::<f32>,
        one,
        one,
        (&mut yf as *mut _, &xf as *const _, 2.0f32),
    );
    show("axpy_f32", &yf);
    let mut yu: [u64; M] = core::array::from_fn(|i| i as u64 * 1000);
    let xu: [u64; M] = core::array::from_fn(|i| i as u64 + 7);
    offload::<_, _, ()>(corpus::axpy::<u64>, one, one, (&mut yu as *mut _, &xu as *const _, 3u64));
    show("axpy_u64", &yu);

    let kinds: [u32; M] = core::array::from_fn(|i| (i % 3 == 0) as u32);
    let mut ar = [0.0f32; M];
    offload::<_, _, ()>(corpus::areas, one, one, (&mut ar as *mut _, &kinds as *const _));
    show("areas", &ar);

    let mut ops_x: [f32; M] = core::array::from_fn(|i| i as f32 - 10.0);
    let ops: [u32; M] = core::array::from_fn(|i| i as u32);
    offload::<_, _, ()>(corpus::apply_ops, one, one, (&mut ops_x as *mut _, &ops as *const _));
    show("apply_ops", &ops_x);

    let mut wa: [u64; M] = core::array::from_fn(|i| u64::MAX / 3 - i as u64 * 1_000_003);
    let wb: [u64; M] = core::array::from_fn(|i| 6 + i as u64 * 2);
    offload::<_, _, ()>(corpus::wide, one, one, (&mut wa as *mut _, &wb as *const _));
    show("wide", &wa);
}

#[cfg(test)]
mod tests {
    /// A launch from a test harness (`cargo offload test`).
    #[test]
    fn add_index_on_the_device() {
        let mut z = [1u32; 32];
        core::intrinsics::offload::<_, _, ()>(
            kern2::add_index,
            [1, 1, 1],
            [1, 1, 1],
            (&mut z as *mut _,),
        );
        assert_eq!(z[5], 6, "{z:?}");
    }
}
