// The host harness of the benchmark's kernel suites, which `suite.rs` and `suite_195.rs` take
// into their `host` module with `include!("host_harness.rs")`, so that both launch the same
// kernels with the same shapes and arrays: `run_suite` launches each kernel that the two suites
// name alike, then the generic kernels' instances, which each suite launches its own way (its
// `launch_instances`). The including module brings `offload`, the kernels, and `N`, `M`, `TAPS`
// and `BINS`. `bench.py` copies this file beside the copies of the suites that it builds.

const GRID: [u32; 3] = [4, 1, 1];
const BLOCK: [u32; 3] = [256, 1, 1];

/// The arrays of one run of the suite.
pub struct Buffers {
    pub x: [f32; N],
    pub y: [f32; N],
    pub xd: [f64; N],
    pub yd: [f64; N],
    pub xi: [i32; N],
    pub counts: [u32; N],
    pub prefix: [u32; N],
    pub h: [f32; TAPS],
    pub grid: [[f32; M]; M],
    pub grid_out: [[f32; M]; M],
    pub v: [f32; M],
    pub w: [f32; M],
    pub dot: [f32; 1],
    pub sum_max: [f32; 2],
    pub bins: [u32; BINS],
}

/// Launches the suite's kernels once each.
#[inline(never)]
pub fn run_suite(b: &mut Buffers) {
    offload::<_, _, ()>(fir, GRID, BLOCK, (&b.x as *const _, &b.h as *const _, &mut b.y as *mut _));
    offload::<_, _, ()>(stencil5, GRID, BLOCK, (&b.y as *const _, &mut b.x as *mut _));
    offload::<_, _, ()>(jacobi2d, GRID, BLOCK, (&b.grid as *const _, &mut b.grid_out as *mut _));
    offload::<_, _, ()>(
        dot,
        GRID,
        BLOCK,
        (&b.x as *const _, &b.y as *const _, &mut b.dot as *mut _),
    );
    offload::<_, _, ()>(
        matvec,
        GRID,
        BLOCK,
        (&b.grid as *const _, &b.v as *const _, &mut b.w as *mut _),
    );
    offload::<_, _, ()>(sum_max, GRID, BLOCK, (&b.x as *const _, &mut b.sum_max as *mut _));
    offload::<_, _, ()>(histogram, GRID, BLOCK, (&b.x as *const _, &mut b.bins as *mut _));
    offload::<_, _, ()>(prefix_sum, GRID, BLOCK, (&b.counts as *const _, &mut b.prefix as *mut _));
    launch_instances(b);
}
