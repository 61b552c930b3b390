//! The device passes of archs of distinct targets share one cargo run, and each arch still gets
//! its own flags (scenario S36 of `src/doc/scenarios.md`). `--offload-arch=gfx90a,gfx942,sm_90,
//! host` runs two: `gfx90a, sm_90, host` into `offload/device`, and `gfx942`, of a target already
//! in that run, into `offload/device-gfx942`. Each image's code is compiled for its own GPU
//! (`-Ctarget-cpu`, which `cargo-offload` adds as `RUSTC_WRAPPER`: the bitcode's `target-cpu`),
//! each code object is its GPU's, and the program runs right on the CPU device. Then `gfx942`
//! alone builds into `offload/device`, whose `amdgcn` folder was built for `gfx90a`: cargo's
//! fingerprints do not see the wrapper's flags, so that target's crates are built again (and
//! only those), for `gfx942`, and `offload/images` keeps only its image; back to `gfx90a`
//! likewise, and once more finds everything fresh.
//! A kernel crate that fails to compile for two targets shows both targets' errors and fails the
//! run with an error that names those two archs (rustc's errors do not say which target they are
//! from).

//@ only-x86_64
//@ needs-offload

use std::path::Path;

use run_make_support::offload::{
    ADD_ONE_KERNEL, ADD_ONE_PRELUDE, add_one_program, cargo_offload, cargo_offload_fails, image_ir,
    llvm_tool, write_workspace,
};
use run_make_support::{cmd, cwd, rfs};

/// The GPU that the amdgcn code object `file` was built for, as `llvm-readobj` names its
/// `e_flags` machine (`EF_AMDGPU_MACH_AMDGCN_GFX90A`, say).
fn amdgpu_mach(file: &Path) -> String {
    let headers =
        cmd(llvm_tool("llvm-readobj")).arg("--file-headers").arg(file).run().stdout_utf8();
    let mach = headers.split_whitespace().find(|w| w.starts_with("EF_AMDGPU_MACH_AMDGCN_"));
    mach.unwrap_or_else(|| panic!("no machine in the headers of {}:\n{headers}", file.display()))
        .to_string()
}

/// The `-Ctarget-cpu` that the device pass gave the code of the amdgcn image `host_out` (the
/// vendor step names the GPU again, so a code object's own machine would not show a pass that
/// compiled for another), asserted to be one.
fn ir_cpu(host_out: &Path) -> String {
    let ir = image_ir(host_out, "amdgcn-amd-amdhsa");
    let mut cpus: Vec<&str> =
        ir.split("\"target-cpu\"=\"").skip(1).filter_map(|rest| rest.split('"').next()).collect();
    cpus.sort();
    cpus.dedup();
    assert_eq!(cpus.len(), 1, "{}: target CPUs {cpus:?}", host_out.display());
    cpus[0].to_string()
}

/// The crates that the device passes' cargo run compiled, as it printed them in `stderr`: the
/// lines from the first device pass's line to the first image's.
fn compiled(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .skip_while(|l| !l.starts_with("[cargo offload] device pass"))
        .take_while(|l| !l.starts_with("[cargo offload] image "))
        .filter_map(|l| l.trim_start().strip_prefix("Compiling "))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect()
}

fn main() {
    let ws = cwd().join("ws");
    let kernels = format!("{ADD_ONE_PRELUDE}{ADD_ONE_KERNEL}");
    let app = add_one_program("println!(\"right={right}\");");
    write_workspace(
        &ws,
        &[
            ("kernels", "", "lib.rs", &kernels),
            ("app", "kernels = { path = \"../kernels\" }\n", "main.rs", &app),
        ],
    );
    let images = ws.join("target/offload/images");

    let all = cargo_offload(&ws, &["run", "--offload-arch=gfx90a,gfx942,sm_90,host"]);
    let stderr = all.stderr_utf8();
    assert_eq!(all.stdout_utf8().trim(), "right=256", "{stderr}");
    for line in [
        "device pass gfx90a (amdgcn-amd-amdhsa, the toolchain's core)",
        "device pass sm_90 (nvptx64-nvidia-cuda, the toolchain's core)",
        "device pass host (x86_64-unknown-linux-gnu, the toolchain's core)",
        "device passes gfx90a, sm_90, host (one cargo run): done",
        "device pass gfx942 (amdgcn-amd-amdhsa, the toolchain's core): done",
    ] {
        assert!(stderr.contains(&format!("[cargo offload] {line}")), "no `{line}` in:\n{stderr}");
    }
    let device = ws.join("target/offload/device");
    for target in ["amdgcn-amd-amdhsa", "nvptx64-nvidia-cuda", "x86_64-unknown-linux-gnu"] {
        let image = device.join(target).join("debug/deps/host.out");
        assert!(image.is_file(), "the shared run built no image for {target}:\n{stderr}");
    }
    let own = ws.join("target/offload/device-gfx942/amdgcn-amd-amdhsa/debug/deps/host.out");
    assert!(own.is_file(), "gfx942 built no image of its own:\n{stderr}");
    let shared_amd = device.join("amdgcn-amd-amdhsa/debug/deps/host.out");
    assert_eq!(ir_cpu(&shared_amd), "gfx90a");
    assert_eq!(ir_cpu(&own), "gfx942");
    assert_eq!(amdgpu_mach(&images.join("gfx90a.so")), "EF_AMDGPU_MACH_AMDGCN_GFX90A");
    assert_eq!(amdgpu_mach(&images.join("gfx942.so")), "EF_AMDGPU_MACH_AMDGCN_GFX942");

    // `offload/device` holds amdgcn built for gfx90a: gfx942 alone builds it again.
    let alone = cargo_offload(&ws, &["build", "--offload-arch=gfx942"]);
    let stderr = alone.stderr_utf8();
    assert_eq!(compiled(&stderr), ["kernels", "offload-image"], "gfx942 alone:\n{stderr}");
    assert_eq!(ir_cpu(&shared_amd), "gfx942");
    assert_eq!(amdgpu_mach(&images.join("gfx942.so")), "EF_AMDGPU_MACH_AMDGCN_GFX942");
    // `offload/images` holds the last build's images only.
    for other in ["gfx90a.so", "sm_90.cubin", "sm_90.ptx", "host.so"] {
        assert!(!images.join(other).exists(), "{other} is left from an earlier build");
    }

    // Back to gfx90a: amdgcn is built again, the other two targets are fresh.
    let back = cargo_offload(&ws, &["run", "--offload-arch=gfx90a,sm_90,host"]);
    let stderr = back.stderr_utf8();
    assert_eq!(back.stdout_utf8().trim(), "right=256", "{stderr}");
    assert_eq!(compiled(&stderr), ["kernels", "offload-image"], "back to gfx90a:\n{stderr}");
    assert_eq!(ir_cpu(&shared_amd), "gfx90a");
    assert_eq!(amdgpu_mach(&images.join("gfx90a.so")), "EF_AMDGPU_MACH_AMDGCN_GFX90A");

    // Nothing changed: the same archs again compile nothing.
    let again = cargo_offload(&ws, &["build", "--offload-arch=gfx90a,sm_90,host"]);
    let stderr = again.stderr_utf8();
    assert_eq!(compiled(&stderr), Vec::<&str>::new(), "{stderr}");

    // A kernel crate that fails for two of the three targets: the run goes on past the first
    // failure (each arch's error is shown), and the error names those two archs alone.
    let lib = ws.join("kernels/src/lib.rs");
    let two_fail = "#[cfg(target_arch = \"nvptx64\")]\ncompile_error!(\"not for nvptx\");\n\
                    #[cfg(all(offload_device, target_arch = \"x86_64\"))]\n\
                    compile_error!(\"not for the CPU device\");\n";
    rfs::write(&lib, format!("{kernels}{two_fail}"));
    let fails = cargo_offload_fails(&ws, &["build", "--offload-arch=gfx90a,sm_90,host"]);
    let stderr = fails.stderr_utf8();
    let failed = "error: [cargo offload] device pass sm_90 (nvptx64-nvidia-cuda, the toolchain's \
                  core) and device pass host (x86_64-unknown-linux-gnu, the toolchain's core) \
                  failed (cargo's messages are above)";
    assert!(
        stderr.contains("not for nvptx") && stderr.contains("not for the CPU device"),
        "{stderr}"
    );
    assert!(stderr.contains(failed), "{stderr}");
    assert!(
        !stderr.contains("gfx90a (amdgcn-amd-amdhsa, the toolchain's core) failed"),
        "{stderr}"
    );
}
