#![feature(gpu_offload)]

/// Plus seven by `scale_all`.
#[derive(Clone, Copy, Debug)]
struct Plus(i32);

impl kernels::Scale for Plus {
    fn scale(self) -> Self {
        Plus(self.0 + 7)
    }
}

fn main() {
    let mut y = vec![pixels::Twice(1.5); 1000];
    pixels::double(&mut y);
    let doubled = y.iter().filter(|t| t.0 == 3.0).count();
    println!("doubled {doubled} of {}", y.len());
    let mut z: Vec<Plus> = (0..300).map(Plus).collect();
    core::offload::offload! {
        kernel = kernels::scale_all::<Plus>,
        workgroup_dim = [5, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&mut z[..],),
    }
    let added = z.iter().enumerate().filter(|(i, p)| p.0 == *i as i32 + 7).count();
    println!("added {added} of {}", z.len());
}
