//! The program's registration: `__tgt_register_lib`, the layouts of the `__tgt_bin_desc` it
//! receives, and the offload binaries around its images (what each image is for).

use std::ffi::{c_char, c_void};

use crate::loader::{next, segment_start, string};
use crate::{Image, state};

/// `__tgt_offload_entry` as LLVM 22's runtime reads it (56 bytes).
#[repr(C)]
pub struct OffloadEntry {
    reserved: u64,
    version: u16,
    kind: u16,
    flags: u32,
    /// For a kernel: its host handle, the `host_ptr` of `__tgt_target_kernel`.
    address: *const c_void,
    symbol_name: *const c_char,
    size: u64,
    data: u64,
    aux_addr: *const c_void,
}

/// `__tgt_device_image`: one image as the registration object lays it out.
#[repr(C)]
pub struct DeviceImage {
    image_start: *const u8,
    image_end: *const u8,
    entries_begin: *const OffloadEntry,
    entries_end: *const OffloadEntry,
}

/// `__tgt_bin_desc`: what a program registers with the runtime.
#[repr(C)]
pub struct BinDesc {
    num_device_images: i32,
    device_images: *const DeviceImage,
    host_entries_begin: *const OffloadEntry,
    host_entries_end: *const OffloadEntry,
}

// The layouts above are LLVM 22's (`llvm/Frontend/Offloading/Utility.h`, `omptarget.h`).
const _: () = assert!(
    size_of::<OffloadEntry>() == 56 && size_of::<DeviceImage>() == 32 && size_of::<BinDesc>() == 32
);

/// The `triple` and `arch` of an offload binary (LLVM's `OffloadBinary`, version 1: a 32-byte
/// header `magic 10 FF 10 AD, u32 version, u64 size, u64 entry offset, u64 entry size`; an entry
/// `u16 image kind, u16 offload kind, u32 flags, u64 string offset, u64 string count, u64 image
/// offset, u64 image size`; the strings a table of `u64 key offset, u64 value offset` pairs,
/// offsets from the header's start, values NUL-terminated), as `triple arch`; `None` when
/// `bytes` is not one.
pub fn offload_binary_target(bytes: &[u8]) -> Option<String> {
    let u64_at = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at.checked_add(8)?)?.try_into().ok()?))
    };
    let c_str_at = |at: usize| -> Option<&str> {
        let rest = bytes.get(at..)?;
        std::str::from_utf8(&rest[..rest.iter().position(|b| *b == 0)?]).ok()
    };
    if bytes.get(..4)? != [0x10, 0xFF, 0x10, 0xAD] {
        return None;
    }
    let entry = usize::try_from(u64_at(16)?).ok()?;
    let strings = usize::try_from(u64_at(entry.checked_add(8)?)?).ok()?;
    let count = usize::try_from(u64_at(entry.checked_add(16)?)?).ok()?;
    let (mut triple, mut arch) = (None, None);
    for i in 0..count.min(64) {
        let pair = strings.checked_add(i.checked_mul(16)?)?;
        let key = c_str_at(usize::try_from(u64_at(pair)?).ok()?)?;
        let value = c_str_at(usize::try_from(u64_at(pair.checked_add(8)?)?).ok()?)?;
        match key {
            "triple" => triple = Some(value),
            "arch" => arch = Some(value),
            _ => {}
        }
    }
    let triple = triple?;
    Some(match arch {
        Some(arch) if !arch.is_empty() => format!("{triple} {arch}"),
        _ => triple.to_string(),
    })
}

/// The image offset and size of an offload binary's first entry (see
/// [`offload_binary_target`] for the layout).
pub fn offload_binary_image(bytes: &[u8]) -> Option<(usize, usize)> {
    let u64_at = |at: usize| -> Option<usize> {
        usize::try_from(u64::from_le_bytes(bytes.get(at..at.checked_add(8)?)?.try_into().ok()?))
            .ok()
    };
    if bytes.get(..4)? != [0x10, 0xFF, 0x10, 0xAD] {
        return None;
    }
    let entry = u64_at(16)?;
    Some((u64_at(entry.checked_add(24)?)?, u64_at(entry.checked_add(32)?)?))
}

/// The runtime's `__tgt_register_lib`, seen first by this library: records the images and
/// kernels of `desc`, then registers them.
///
/// # Safety
/// `desc` is a `__tgt_bin_desc` as LLVM's offload wrapper lays it out, as the runtime's own
/// definition requires.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __tgt_register_lib(desc: *const BinDesc) {
    if !desc.is_null() {
        // SAFETY: the caller's contract: a valid descriptor whose arrays and ranges live as
        // long as the program.
        unsafe { record(&*desc) };
    }
    type Register = unsafe extern "C" fn(*const BinDesc);
    // SAFETY: the runtime's `__tgt_register_lib` has this signature.
    let register: Register = unsafe { std::mem::transmute(next(c"__tgt_register_lib")) };
    // SAFETY: the caller's `desc`, unchanged.
    unsafe { register(desc) }
}

/// Records the images and kernels of `desc`.
///
/// # Safety
/// As [`__tgt_register_lib`].
unsafe fn record(desc: &BinDesc) {
    // Read before locking: `enclosing_binary` asks the loader (see `State`).
    let mut images = Vec::new();
    for i in 0..usize::try_from(desc.num_device_images).unwrap_or(0) {
        // SAFETY: `device_images` has `num_device_images` elements.
        let image = unsafe { &*desc.device_images.add(i) };
        let (start, end) = (image.image_start as usize, image.image_end as usize);
        let what = enclosing_binary(start, end).unwrap_or_else(|| "?".to_string());
        images.push((start, end, what));
    }
    let mut kernels = Vec::new();
    let mut entry = desc.host_entries_begin;
    while !entry.is_null() && entry < desc.host_entries_end {
        // SAFETY: the host entries lie between their begin and end.
        let e = unsafe { &*entry };
        kernels.push((e.address as usize, string(e.symbol_name)));
        // SAFETY: still within the same array (or one past its end).
        entry = unsafe { entry.add(1) };
    }
    let mut state = state();
    let registration = state.registrations;
    state.registrations += 1;
    for (start, end, what) in images {
        state.images.push(Image { registration, start, end, what });
    }
    for (handle, name) in kernels {
        state.kernels.insert(handle, (name, registration));
    }
}

/// What the offload binary around the image at `start..end` is for (`triple arch`). LLVM's
/// offload wrapper embeds each whole offload binary (header, string table, image; 8-byte
/// aligned) and registers only the image inside it, so the header lies before `start`: the
/// nearest 8-byte-aligned magic below `start`, taken only if its entry places its image exactly
/// at `start..end`. The search stays within the loaded segment that holds the image (found with
/// `dl_iterate_phdr`), so it reads only mapped memory.
fn enclosing_binary(start: usize, end: usize) -> Option<String> {
    // An offload binary's header and string table take a few hundred bytes: 64 KiB bounds the
    // search where the layout is not the wrapper's.
    let lowest = segment_start(start)?.max(start.saturating_sub(1 << 16));
    let mut at = (start & !7).checked_sub(8)?;
    while at >= lowest {
        // SAFETY: `at..start` lies within the mapped segment that holds the image.
        let head = unsafe { std::slice::from_raw_parts(at as *const u8, 4) };
        if head == [0x10, 0xFF, 0x10, 0xAD] {
            // SAFETY: from the header to the image's end is one mapped segment.
            let bytes =
                unsafe { std::slice::from_raw_parts(at as *const u8, end.checked_sub(at)?) };
            let (offset, size) = offload_binary_image(bytes)?;
            if at + offset == start && offset + size == end - at {
                return offload_binary_target(bytes);
            }
            return None;
        }
        at = at.checked_sub(8)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An offload binary with the given strings, laid out as LLVM writes version 1.
    fn binary(strings: &[(&str, &str)]) -> Vec<u8> {
        let mut out = vec![0x10, 0xFF, 0x10, 0xAD];
        out.extend(1u32.to_le_bytes());
        let table = 32 + 40;
        let text = table + 16 * strings.len();
        let mut text_bytes = Vec::new();
        let mut pairs = Vec::new();
        for (key, value) in strings {
            let key_at = text + text_bytes.len();
            text_bytes.extend(key.as_bytes());
            text_bytes.push(0);
            let value_at = text + text_bytes.len();
            text_bytes.extend(value.as_bytes());
            text_bytes.push(0);
            pairs.push((key_at as u64, value_at as u64));
        }
        let size = (text + text_bytes.len()) as u64;
        for v in [size, 32, 40] {
            out.extend(v.to_le_bytes());
        }
        out.extend(1u16.to_le_bytes());
        out.extend(1u16.to_le_bytes());
        out.extend(0u32.to_le_bytes());
        for v in [table as u64, strings.len() as u64, size, 0] {
            out.extend(v.to_le_bytes());
        }
        for (k, v) in pairs {
            out.extend(k.to_le_bytes());
            out.extend(v.to_le_bytes());
        }
        out.extend(text_bytes);
        out
    }

    #[test]
    fn offload_binaries_name_their_target() {
        let gpu = binary(&[("triple", "nvptx64-nvidia-cuda"), ("arch", "sm_90")]);
        assert_eq!(offload_binary_target(&gpu).as_deref(), Some("nvptx64-nvidia-cuda sm_90"));
        let cpu = binary(&[("arch", ""), ("triple", "x86_64-unknown-linux-gnu")]);
        assert_eq!(offload_binary_target(&cpu).as_deref(), Some("x86_64-unknown-linux-gnu"));
        assert_eq!(offload_binary_target(b"\x7fELF and more bytes than a header"), None);
        assert_eq!(offload_binary_target(&binary(&[("arch", "gfx90a")])), None, "no triple");
        assert_eq!(offload_binary_target(&gpu[..40]), None, "a truncated binary");
        assert_eq!(offload_binary_image(&gpu), Some((gpu.len(), 0)));
    }
}
