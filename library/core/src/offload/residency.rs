//! The offload runtime's data mappers for one region of host memory. Generic callers only:
//! the program that instantiates them links the runtime.

/// OpenMP's map types: copy to the device at the mapping, from it at the last unmapping;
/// neither (`alloc` at a mapping, `release` at an unmapping).
pub(super) const TO: i64 = 0x01;
pub(super) const FROM: i64 = 0x02;
pub(super) const ALLOC: i64 = 0x00;
pub(super) const RELEASE: i64 = 0x00;

/// Calls one of the runtime's mappers (`__tgt_target_data_{begin,end,update}_mapper`)
/// for the `bytes` at `data` on `device`, with `map_type`. Generic, as its callers are, so
/// that only a program that keeps data on a device (and links the runtime) has a copy.
#[inline]
fn call<T>(which: Mapper, data: *mut T, bytes: usize, device: i32, map_type: i64) {
    #[cfg(all(
        target_os = "linux",
        not(offload_device),
        not(any(target_arch = "nvptx64", target_arch = "amdgpu"))
    ))]
    runtime::call(which, data, bytes, device, map_type);
    #[cfg(not(all(
        target_os = "linux",
        not(offload_device),
        not(any(target_arch = "nvptx64", target_arch = "amdgpu"))
    )))]
    let _ = (which, data, bytes, device, map_type);
}

/// The runtime's side of [`call`], on the host of a program that links the runtime.
#[cfg(all(
    target_os = "linux",
    not(offload_device),
    not(any(target_arch = "nvptx64", target_arch = "amdgpu"))
))]
mod runtime {
    use super::Mapper;
    use crate::ffi::{c_int, c_void};
    use crate::ptr;

    /// `(loc, device, count, bases, pointers, sizes, map types, names, mappers)`.
    type MapperFn = unsafe extern "C" fn(
        *const c_void,
        i64,
        i32,
        *mut *mut c_void,
        *mut *mut c_void,
        *mut i64,
        *mut i64,
        *mut *mut c_void,
        *mut *mut c_void,
    );
    /// The runtime's three mappers, which share `MapperFn`'s parameters.
    macro_rules! mappers {
        ($($name:ident),*) => {
            unsafe extern "C" {
                safe fn omp_get_num_devices() -> c_int;
                $(
                    fn $name(
                        loc: *const c_void,
                        device: i64,
                        count: i32,
                        bases: *mut *mut c_void,
                        pointers: *mut *mut c_void,
                        sizes: *mut i64,
                        map_types: *mut i64,
                        names: *mut *mut c_void,
                        mappers: *mut *mut c_void,
                    );
                )*
            }
        };
    }
    mappers!(
        __tgt_target_data_begin_mapper,
        __tgt_target_data_end_mapper,
        __tgt_target_data_update_mapper
    );

    /// [`call`](super::call) on the host: checks `device` against the machine's devices
    /// (a panic that names both) and calls the mapper for one region. Generic for the
    /// same reason.
    #[inline]
    pub(super) fn call<T>(which: Mapper, data: *mut T, bytes: usize, device: i32, map_type: i64) {
        let data = data.cast::<c_void>();
        if device != -1 {
            let count = omp_get_num_devices();
            if !(0..count).contains(&device) {
                panic!(
                    "data for the offload device {device} was asked for, but this machine has \
                     {count} offload device(s), numbered from 0 (-1 is the runtime's default)"
                );
            }
        }
        if bytes == 0 {
            // The runtime keeps nothing for an empty region, and launches copy nothing.
            return;
        }
        let mapper: MapperFn = match which {
            Mapper::Begin => __tgt_target_data_begin_mapper,
            Mapper::End => __tgt_target_data_end_mapper,
            Mapper::Update => __tgt_target_data_update_mapper,
        };
        let mut base = data;
        let mut pointer = data;
        let mut size = bytes as i64;
        let mut map_type = map_type;
        // SAFETY: one region of `bytes` readable (and, for `FROM`, writable) bytes, which
        // the caller borrows for as long as the runtime keeps it.
        unsafe {
            mapper(
                ptr::null(),
                i64::from(device),
                1,
                &mut base,
                &mut pointer,
                &mut size,
                &mut map_type,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
    }
}

#[derive(Clone, Copy)]
enum Mapper {
    Begin,
    End,
    Update,
}

/// Maps the region (`target enter data`): copies it for `TO` unless it is mapped already.
#[inline]
pub(super) fn map<T>(data: *mut T, bytes: usize, device: i32, map_type: i64) {
    call(Mapper::Begin, data, bytes, device, map_type)
}

/// Unmaps the region (`target exit data`): copies it back for `FROM` at its last unmapping.
#[inline]
pub(super) fn unmap<T>(data: *mut T, bytes: usize, device: i32, map_type: i64) {
    call(Mapper::End, data, bytes, device, map_type)
}

/// Copies the device's copy of the region back (`target update from`).
#[inline]
pub(super) fn update_host<T>(data: *mut T, bytes: usize, device: i32) {
    call(Mapper::Update, data, bytes, device, FROM)
}
