#![feature(gpu_offload)]

/// Doubled by `scale_all`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Twice(pub f32);

impl kernels::Scale for Twice {
    fn scale(self) -> Self {
        Twice(self.0 * 2.0)
    }
}

/// `scale_all::<Twice>` over `y`.
pub fn double(y: &mut [Twice]) {
    core::offload::offload! {
        kernel = kernels::scale_all::<Twice>,
        workgroup_dim = [y.len().div_ceil(64) as u32, 1, 1],
        thread_dim = [64, 1, 1],
        args = (y,),
    }
}
