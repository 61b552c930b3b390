// The kernel of `edit.rs`.

#[rustc_offload_kernel]
pub fn scale(x: *mut [f32; 4]) {
    for v in unsafe { &mut *x }.iter_mut() {
        *v *= 2.0;
    }
}
