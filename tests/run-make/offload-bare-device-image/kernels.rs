// Kernels spread over modules and helpers, enough code at opt-level 3 for rustc to split the
// crate into several codegen units if the device pass let it. The kernels use nothing of `core`
// that the image would have to define (no panics, no formatting).

#![feature(rustc_attrs)]
#![no_std]

pub mod scale {
    #[inline(never)]
    fn factor(i: usize) -> f32 {
        (i % 7) as f32 * 0.5
    }

    #[rustc_offload_kernel]
    pub fn scale_a(x: *mut [f32; 64]) {
        let x = unsafe { &mut *x };
        for i in 0..64 {
            x[i] *= factor(i);
        }
    }

    #[rustc_offload_kernel]
    pub fn scale_b(x: *mut [f64; 64]) {
        let x = unsafe { &mut *x };
        for i in 0..64 {
            x[i] *= factor(i) as f64;
        }
    }
}

pub mod sums {
    #[inline(never)]
    fn add(a: u32, b: u32) -> u32 {
        a.wrapping_add(b)
    }

    #[rustc_offload_kernel]
    pub fn sum_u32(x: *const [u32; 64], out: *mut u32) {
        let x = unsafe { &*x };
        let mut s = 0u32;
        for i in 0..64 {
            s = add(s, x[i]);
        }
        unsafe { *out = s };
    }

    #[rustc_offload_kernel]
    pub fn sum_u64(x: *const [u64; 64], out: *mut u64) {
        let x = unsafe { &*x };
        let mut s = 0u64;
        for i in 0..64 {
            s = s.wrapping_add(x[i]);
        }
        unsafe { *out = s };
    }
}

pub mod stencil {
    #[rustc_offload_kernel]
    pub fn smooth(x: *const [f32; 64], y: *mut [f32; 64]) {
        let (x, y) = unsafe { (&*x, &mut *y) };
        for i in 1..63 {
            y[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0;
        }
    }

    #[rustc_offload_kernel]
    pub fn copy(x: *const [u8; 256], y: *mut [u8; 256]) {
        unsafe { *y = *x };
    }
}
