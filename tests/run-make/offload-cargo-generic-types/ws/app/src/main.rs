#![feature(gpu_offload)]

fn main() {
    let mut y = vec![pixels::Twice(1.5); 1000];
    pixels::double(&mut y);
    let doubled = y.iter().filter(|t| t.0 == 3.0).count();
    println!("doubled {doubled} of {}", y.len());
}
