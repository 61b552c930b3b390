//! The bare device pass (`-Zoffload=Device`, the 1.95 workflow: every mono root, no manifest)
//! writes one image per pass whatever the codegen units asked for: each unit used to write its
//! own image to the same `host.out`, the last one replacing the others, so a crate at `-O`
//! (16 units by default) lost kernels. Checked on the image itself: its bitcode exports every
//! kernel of the crate, and the GPU vendors' tools find exactly those kernels in it.

//@ needs-offload
//@ needs-llvm-components: amdgpu nvptx
//@ only-x86_64

use std::collections::BTreeSet;

use run_make_support::offload::{exported_functions, gpu_sysroot, image_ir, rustc, vendor_check};
use run_make_support::{cwd, rfs};

const KERNELS: &[&str] = &["copy", "scale_a", "scale_b", "smooth", "sum_u32", "sum_u64"];

fn main() {
    for (target, cpu) in [("amdgcn-amd-amdhsa", Some("gfx90a")), ("nvptx64-nvidia-cuda", None)] {
        for units in [None, Some(16)] {
            let dir = cwd().join(format!("{target}-{units:?}"));
            rfs::create_dir_all(&dir);
            let mut device = rustc();
            device
                .input("kernels.rs")
                .crate_type("rlib")
                .edition("2024")
                .target(target)
                .sysroot(gpu_sysroot())
                .opt_level("3")
                .out_dir(&dir)
                .arg("-Zoffload=Device");
            if let Some(units) = units {
                device.codegen_units(units);
            }
            if let Some(cpu) = cpu {
                device.target_cpu(cpu);
            }
            device.run();
            let image = dir.join("host.out");
            let exported = exported_functions(&image_ir(&image, target));
            // Kernel symbols are `_offload_kernel_<name>_<hash>`.
            let kernel_of = |symbol: &String| {
                let rest = symbol.strip_prefix("_offload_kernel_")?;
                Some(rest[..rest.rfind('_')?].to_string())
            };
            let kernels: BTreeSet<String> = exported.iter().filter_map(kernel_of).collect();
            let expected: BTreeSet<String> = KERNELS.iter().map(|k| k.to_string()).collect();
            assert_eq!(kernels, expected, "{target}, codegen units {units:?}: {exported:?}");
            let report = vendor_check(&image, target);
            assert_eq!(report.kernels.len(), KERNELS.len(), "{target}: {:?}", report.kernels);
            println!("{target}, codegen units {units:?}: {} kernels in the image", kernels.len());
        }
    }
}
