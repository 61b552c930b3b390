//! Helpers of the offload fork's run-make tests (`tests/run-make/offload-*`), imported as
//! `run_make_support::offload::{...}` like the rest of this library. They find the fork's
//! toolchain ([`toolchain`]), run the offload passes by hand ([`passes`]), read what they
//! produce and check device images with the GPU vendors' tools ([`image`]), and run `cargo
//! offload` on test projects ([`cargo`]).
//!
//! The scenarios the tests name (S1, S2, ...) are defined in the fork's `src/doc/scenarios.md`.

pub mod cargo;
pub mod image;
pub mod passes;
pub mod toolchain;

pub use cargo::{
    ADD_ONE_KERNEL, ADD_ONE_PRELUDE, Member, add_one_program, cargo_offload, cargo_offload_fails,
    cargo_offload_fails_with, cargo_offload_with, copies_in_log, copy_dir, package_manifest,
    reports, write_workspace,
};
pub use image::{
    VendorReport, check_manifest_format, code_object_kernels, compare_kernels, cubin_kernels,
    exported_functions, extract_gpu_images, image_bitcode, image_ir, kernel_instructions,
    manifest_symbols, offload_entries, ptx_kernels, undefined_functions, unreached_functions,
    vendor_check, vendor_result,
};
pub use passes::{device_pass, host_metadata_pass, host_pass, manifest_device_pass};
pub use toolchain::{
    cuda_tool, device_sysroot, gpu_sysroot, llvm_tool, offload_tools_bin, project_example,
    report_library, rustc, stage0_cargo,
};
