// A dependency of the corpus: the panic handler, a public static table, a `#[no_mangle]`
// function and a static under a fixed symbol, a trait with two implementations. Its device
// pass builds no image; the root's image instantiates what its kernels reach of it.

#![no_std]

/// Coefficients of [`poly`], read by kernels of the root crate (S12).
pub static COEFFS: [f32; 4] = [0.5, -1.25, 2.0, 0.125];

/// A table under a fixed symbol, which the root reads through an `extern` declaration.
#[unsafe(no_mangle)]
pub static DEVLIB_TABLE: [u32; 8] = [3, 1, 4, 1, 5, 9, 2, 6];

/// Horner's rule over [`COEFFS`].
pub fn poly(x: f32) -> f32 {
    COEFFS.iter().rev().fold(0.0, |acc, c| acc * x + c)
}

/// A function under a fixed symbol, which the root calls through an `extern` declaration.
#[unsafe(no_mangle)]
pub extern "C" fn devlib_saturate(x: f32) -> f32 {
    unit_clamp(x)
}

/// A private helper of a function under a fixed symbol: no other function of this crate
/// reaches it, and the image still needs its MIR.
#[inline(never)]
fn unit_clamp(x: f32) -> f32 {
    x.clamp(0.0, 1.0)
}

pub trait Shape {
    fn area(&self) -> f32;
}

pub struct Circle(pub f32);
pub struct Square(pub f32);

impl Shape for Circle {
    fn area(&self) -> f32 {
        3.14159 * self.0 * self.0
    }
}

impl Shape for Square {
    fn area(&self) -> f32 {
        self.0 * self.0
    }
}

/// The panic handler of the graph: core's panics (bounds checks, `unwrap`, division by zero)
/// end here, so every image whose kernels can panic must define it.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    halt()
}

/// A private helper of the panic handler.
#[inline(never)]
fn halt() -> ! {
    loop {}
}
