//! `cargo offload build` turns a Cargo workspace into one executable that embeds a device
//! image per arch (issue: from a Cargo project to a runnable GPU program).
//!
//! The workspace is the CPU device test's (`../offload-cpu-device/ws`: kernels in three library
//! crates, launches in a library and in the program). Built for `gfx90a` and `sm_90`:
//! - the executable embeds exactly one image per arch (`llvm-objdump --offloading`), and each
//!   image, extracted from the executable, defines exactly the merged manifest's kernels
//!   (`<kernel>.kd` symbols of the AMD code object, global functions of the cubin);
//! - its offload entries (one per kernel, `llvm_offload_entries`) name those kernels;
//! - on this machine, which has no GPU, the program stops at its first launch with one line
//!   that names the kernel and the reason, and exit status 1;
//! - the device passes take the toolchain's `core` (the device sysroot) and build none, and
//!   their kernels are those of `core` built from source for the project (`--build-std`,
//!   `-Zbuild-std=core`): each kernel's `sm_90` PTX and `gfx90a` ISA is the same;
//! - bad usage gets one clear error: an unknown arch;
//! - a kernel crate outside the workspace (a path dependency) with a generic kernel, launched by
//!   the program and inside the crate, runs on the CPU device with the right results.

//@ only-x86_64
//@ needs-offload

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use run_make_support::offload::{
    cargo_offload, cargo_offload_fails, code_object_kernels, compare_kernels, copy_dir,
    cubin_kernels, cuda_tool, extract_gpu_images, kernel_instructions, llvm_tool, manifest_symbols,
    ptx_kernels,
};
use run_make_support::{cmd, cwd, rfs, serde_json, source_root};

/// `(arch, triple)` of each image `llvm-objdump --offloading` lists in `exe`.
fn embedded_images(exe: &Path) -> Vec<(String, String)> {
    let dump = cmd(llvm_tool("llvm-objdump")).arg("--offloading").arg(exe).run().stdout_utf8();
    let field = |block: &str, key: &str| {
        block
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    dump.split("OFFLOADING IMAGE").skip(1).map(|b| (field(b, "arch"), field(b, "triple"))).collect()
}

/// The registers `ptxas -v` gives each kernel of `ptx` (a file), by name.
fn ptx_registers(ptx: &Path) -> BTreeMap<String, u32> {
    let out = cmd(cuda_tool("ptxas"))
        .args(["-arch=sm_90", "-v", "-c", "-o"])
        .arg(ptx.with_extension("check.o"))
        .arg(ptx)
        .run();
    let log = out.stderr_utf8() + &out.stdout_utf8();
    let mut registers = BTreeMap::new();
    let mut current = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(str::to_string);
        } else if let (Some(kernel), Some(used)) = (&current, line.split("Used ").nth(1)) {
            let count = used.split_whitespace().next().unwrap().parse().unwrap();
            registers.insert(kernel.clone(), count);
        }
    }
    registers
}

/// The device passes of `ws` (built for `gfx90a,sm_90`, whose cargo offload printed `stderr`)
/// took the toolchain's `core` and built none; a copy built with `--build-std` gives the same
/// kernels, each with the same instructions and (nvptx, `ptxas -v`) registers.
fn toolchain_core_matches_build_std(ws: &Path, stderr: &str) {
    for (arch, target) in [("gfx90a", "amdgcn-amd-amdhsa"), ("sm_90", "nvptx64-nvidia-cuda")] {
        let line = format!("device pass {arch} ({target}, the toolchain's core)");
        assert!(stderr.contains(&line), "no `{line}` in:\n{stderr}");
        // The archs of two targets share one cargo run, into `target/offload/device`.
        let deps = ws.join(format!("target/offload/device/{target}/release/deps"));
        let built_core: Vec<String> = rfs::read_dir(&deps)
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("libcore-") || name.starts_with("libcompiler_builtins"))
            .collect();
        assert!(built_core.is_empty(), "{arch}: the device pass built {built_core:?}");
    }
    let from_source = cwd().join("ws-build-std");
    copy_dir(&source_root().join("tests/run-make/offload-cpu-device/ws"), &from_source);
    let std_build = cargo_offload(
        &from_source,
        &["build", "--release", "--build-std", "--offload-arch=gfx90a,sm_90"],
    );
    let line = "device pass sm_90 (nvptx64-nvidia-cuda, core built from source)";
    assert!(std_build.stderr_utf8().contains(line), "{}", std_build.stderr_utf8());
    let images = |dir: &Path| dir.join("target/offload/images");
    let objdump = llvm_tool("llvm-objdump");
    let amd = |dir: &Path| kernel_instructions(&objdump, &images(dir).join("gfx90a.so"));
    // Both `core`s mark every function cross-crate inlinable (the toolchain's is built with
    // `-Zcross-crate-inline-threshold=always`, as the device pass compiles `--build-std`'s), so
    // the kernels' MIR inlines the same `core` code and every kernel is the same. Before that
    // flag, `strided_dot` (an iterator chain: `zip`, `step_by`, `enumerate`) differed.
    let amd_differing = compare_kernels("gfx90a", &amd(ws), &amd(&from_source));
    assert!(amd_differing.is_empty(), "gfx90a: kernels that differ {amd_differing:?}");
    let ptx = |dir: &Path| ptx_kernels(&rfs::read_to_string(images(dir).join("sm_90.ptx")));
    let differing = compare_kernels("sm_90", &ptx(ws), &ptx(&from_source));
    assert!(differing.is_empty(), "sm_90: kernels that differ {differing:?}");
    let registers = ptx_registers(&images(ws).join("sm_90.ptx"));
    let source_registers = ptx_registers(&images(&from_source).join("sm_90.ptx"));
    assert_eq!(registers.len(), 20, "{registers:?}");
    assert_eq!(registers, source_registers, "sm_90: `ptxas -v` registers, toolchain's core first");
}

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-cpu-device/ws"), &ws);
    let built = cargo_offload(&ws, &["build", "--release", "--offload-arch=gfx90a,sm_90"]);
    let exe = ws.join("target/offload/host/x86_64-unknown-linux-gnu/release/app");
    assert!(exe.is_file(), "no executable at {}", exe.display());
    toolchain_core_matches_build_std(&ws, &built.stderr_utf8());

    let manifest: serde_json::Value =
        serde_json::from_str(&rfs::read_to_string(ws.join("target/offload/image/manifest.json")))
            .unwrap();
    let kernels = manifest_symbols(&manifest);
    // `kern`: saxpy, scale::<u64>, scale::<f64>, affine, copy_scaled, mixed; `kern2`: add_index;
    // `corpus`: thirteen (`axpy` at two types).
    assert_eq!(kernels.len(), 20, "{kernels:?}");

    // One image per arch, nothing else.
    let mut images = embedded_images(&exe);
    images.sort();
    assert_eq!(
        images,
        [
            ("gfx90a".into(), "amdgcn-amd-amdhsa".into()),
            ("sm_90".into(), "nvptx64-nvidia-cuda".into())
        ],
        "the executable's offloading images"
    );

    // Each image, taken out of the executable, defines exactly the manifest's kernels.
    let (so, cubin) = extract_gpu_images(&exe, &cwd());
    assert_eq!(code_object_kernels(&so), kernels, "kernels of the gfx90a code object");
    let nvidia = cubin_kernels(&cubin);
    assert_eq!(nvidia, kernels, "kernels of the sm_90 cubin");

    // The registration's entries: one per kernel, named by its symbol.
    let names: BTreeSet<String> = cmd(llvm_tool("llvm-readelf"))
        .arg("--string-dump=.llvm.rodata.offloading")
        .arg(&exe)
        .run()
        .stdout_utf8()
        .lines()
        .filter_map(|l| l.split_once("] ").map(|(_, name)| name.trim().to_string()))
        .collect();
    assert_eq!(names, kernels, "the names of the executable's offload entries");
    let sections = cmd(llvm_tool("llvm-readelf")).args(["-S", "-W"]).arg(&exe).run().stdout_utf8();
    let entries = sections
        .lines()
        .find(|l| l.contains(" llvm_offload_entries "))
        .expect("no entries section");
    let size = entries.split_whitespace().skip_while(|f| *f != "PROGBITS").nth(3).unwrap();
    // `__tgt_offload_entry` is 56 bytes.
    assert_eq!(u64::from_str_radix(size, 16).unwrap(), 56 * kernels.len() as u64, "{entries}");

    // No GPU here: the first launch stops the program, naming the kernel and the reason.
    let run = cmd(&exe).env_remove("LD_LIBRARY_PATH").run_fail();
    assert_eq!(run.status().code(), Some(1));
    let saxpy = kernels.iter().find(|k| k.contains("saxpy")).unwrap();
    assert_eq!(
        run.stderr_utf8().trim(),
        format!(
            "error: the offload launch of kernel `{saxpy}` failed: no offload device of this \
             machine runs any of the program's images (no GPU of the architectures it was built \
             for; LIBOMPTARGET_INFO=-1 shows the runtime's log)"
        )
    );
    assert!(!run.stdout_utf8().contains("saxpy:"), "the program went on after the failed launch");

    // Bad usage.
    let unknown = cargo_offload_fails(&ws, &["build", "--offload-arch=gfx90a,cuda"]);
    assert!(
        unknown.stderr_utf8().contains("error: [cargo offload] unknown offload arch `cuda`"),
        "{}",
        unknown.stderr_utf8()
    );
    // A GPU that the arch's pattern admits but that its target lacks: refused before any pass
    // (rustc would only warn, crate by crate, and `llc` would fail on the image).
    for (arch, target) in [("gfx9999", "amdgcn-amd-amdhsa"), ("sm_9", "nvptx64-nvidia-cuda")] {
        let arg = format!("--offload-arch=host,{arch}");
        let stderr = cargo_offload_fails(&ws, &["build", arg.as_str()]).stderr_utf8();
        let line = format!(
            "error: [cargo offload] unknown offload arch `{arch}`: `{target}` has no processor \
             `{arch}`"
        );
        assert!(stderr.contains(&line) && !stderr.contains("host pass"), "{stderr}");
    }
    outside_kernel_crate();
}

/// A kernel crate outside the workspace: `kern2` leaves it and is a path dependency of `app`
/// (and `corpus`) only. A generic kernel of it, which the program launches at one type and
/// `kern2` itself at another, is added to the copy. `cargo offload run` on the CPU device
/// builds its kernels into the image (the image crate depends on `kern2` by its folder) and
/// the program prints the right results.
fn outside_kernel_crate() {
    let outside = cwd().join("outside");
    copy_dir(&source_root().join("tests/run-make/offload-cpu-device/ws"), &outside);
    rfs::write(
        outside.join("Cargo.toml"),
        "[workspace]\nmembers = [\"kern\", \"app\"]\nexclude = [\"kern2\"]\n",
    );
    let edit = |path: &Path, from: &str, to: &str| {
        let text = rfs::read_to_string(path);
        assert!(text.contains(from), "no `{from}` in {}", path.display());
        rfs::write(path, text.replacen(from, to, 1));
    };
    let kern2 = outside.join("kern2/src/lib.rs");
    edit(&kern2, "#![feature(rustc_attrs)]", "#![feature(rustc_attrs, core_intrinsics)]");
    let mut text = rfs::read_to_string(&kern2);
    text.push_str(
        "\n/// A generic kernel: `x[i] += d`.\n\
         #[rustc_offload_kernel]\n\
         pub fn offset<T: Copy + core::ops::Add<Output = T>>(x: *mut [T; 8], d: T) {\n\
         \x20   for v in unsafe { &mut *x }.iter_mut() {\n\
         \x20       *v = *v + d;\n\
         \x20   }\n\
         }\n\n\
         /// Launches `offset::<u32>` from this crate.\n\
         #[inline(never)]\n\
         pub fn launch_offset_u32(x: &mut [u32; 8], d: u32) {\n\
         \x20   core::intrinsics::offload::<_, _, ()>(offset::<u32>, [1, 1, 1], [1, 1, 1], \
         (x as *mut _, d))\n\
         }\n",
    );
    rfs::write(&kern2, text);
    let main = outside.join("app/src/main.rs");
    edit(&main, "    corpus_run();\n}\n", "    corpus_run();\n    outside_run();\n}\n");
    let mut text = rfs::read_to_string(&main);
    text.push_str(
        "\n/// `kern2`'s generic kernel, launched here and inside `kern2`.\n\
         fn outside_run() {\n\
         \x20   let mut a = [5i64; 8];\n\
         \x20   offload::<_, _, ()>(kern2::offset::<i64>, [1, 1, 1], [1, 1, 1], \
         (&mut a as *mut _, -3i64));\n\
         \x20   show(\"offset_i64\", &a);\n\
         \x20   let mut b: [u32; 8] = core::array::from_fn(|i| i as u32);\n\
         \x20   kern2::launch_offset_u32(&mut b, 40);\n\
         \x20   show(\"offset_u32\", &b);\n\
         }\n",
    );
    rfs::write(&main, text);

    let run = cargo_offload(&outside, &["run", "--release", "--offload-arch=host", "-p", "app"]);
    let stdout = run.stdout_utf8();
    let line = |name: &str| -> Vec<String> {
        let prefix = format!("{name}: ");
        let values = stdout.lines().find_map(|l| l.strip_prefix(&prefix));
        let values = values.unwrap_or_else(|| panic!("no `{name}` line in:\n{stdout}"));
        values.split_whitespace().map(str::to_string).collect()
    };
    let text_of = |values: Vec<u64>| values.into_iter().map(|v| v.to_string()).collect::<Vec<_>>();
    // `kern2`'s kernels: `add_index` (the workspace's own), and the generic `offset`.
    assert_eq!(line("add_index"), text_of((0..32).map(|i| 100 + i).collect()));
    assert_eq!(line("offset_i64"), vec!["2".to_string(); 8]);
    assert_eq!(line("offset_u32"), text_of((0..8).map(|i| 40 + i).collect()));
    // `kern`'s kernels too, launched by the program and inside `kern`.
    assert_eq!(line("scale_u64"), text_of((1..=8).map(|i| i * 10).collect()));
    let saxpy: Vec<f64> = line("saxpy").iter().map(|v| v.parse().unwrap()).collect();
    let want: Vec<f64> = (0..256).map(|i| 3.0 * (i as f64 * 0.5) + (i % 7) as f64).collect();
    assert_eq!(saxpy, want);
    // The image crate depends on `kern2` by its folder, outside the workspace.
    let image = rfs::read_to_string(outside.join("target/offload/image/Cargo.toml"));
    assert!(
        image.lines().any(|l| l.starts_with("kern2 = { package = \"kern2\", path = \"")
            && l.contains("/outside/kern2\"")),
        "no dependency on `kern2` by its folder in:\n{image}"
    );
    let manifest = rfs::read_to_string(outside.join("target/offload/image/manifest.json"));
    for kernel in ["kern2::add_index", "kern2::offset::<i64>", "kern2::offset::<u32>"] {
        assert!(manifest.contains(kernel), "no `{kernel}` in the image's manifest:\n{manifest}");
    }
}
