// Launches of things that are not kernels (B7), selected by `--cfg`.

#![feature(rustc_attrs, core_intrinsics)]
#![no_std]
#![allow(internal_features)]

pub fn plain(x: *mut [f32; 16]) {
    unsafe { (*x)[0] = 1.0 };
}

#[cfg(closure)]
pub fn launch(x: &mut [f32; 16]) {
    core::intrinsics::offload::<_, _, ()>(
        |p: *mut [f32; 16]| unsafe { (*p)[0] = 1.0 },
        [1, 1, 1],
        [1, 1, 1],
        (x as *mut _,),
    )
}

#[cfg(fn_pointer)]
pub fn launch(x: &mut [f32; 16]) {
    let f: fn(*mut [f32; 16]) = plain;
    core::intrinsics::offload::<_, _, ()>(f, [1, 1, 1], [1, 1, 1], (x as *mut _,))
}

#[cfg(no_attribute)]
pub fn launch(x: &mut [f32; 16]) {
    core::intrinsics::offload::<_, _, ()>(plain, [1, 1, 1], [1, 1, 1], (x as *mut _,))
}
