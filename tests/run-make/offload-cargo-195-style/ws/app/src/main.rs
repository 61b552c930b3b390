fn main() {
    let mut x: [f64; 64] = core::array::from_fn(|i| i as f64);
    #[cfg(feature = "scale")]
    k195::scale(&mut x, 2.0);
    #[cfg(feature = "sum")]
    println!("sum: {}", k195::sum(&x));
    println!("x: {} {} {}", x[0], x[1], x[63]);
}
