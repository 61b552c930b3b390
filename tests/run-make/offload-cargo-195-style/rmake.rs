//! A workspace whose kernels are in the 1.95 style (host `extern "C"` declarations, GPU
//! `#[no_mangle] #[rustc_offload_kernel] extern "gpu-kernel"` definitions, `cfg`'d by
//! `target_os`) builds with `cargo offload` as it is, for `gfx90a` and `sm_90`. Cargo features
//! pick the kernels, and the device passes see the features the host build resolved, so each
//! image holds exactly the launched kernels of that selection (the defined but unlaunched one
//! never): default features, `--features sum`, `--no-default-features --features sum`. One
//! launch passes `*const [f64; 64]` where the kernel takes `&[f64; 64]`, as rustc 1.95 accepts,
//! and the device passes of that kernel give upstream's `improper_gpu_kernel_arg` warning for
//! its reference parameter.
//! Switching back to an earlier selection gives that selection's images again, and a profile
//! of the workspace's own (`--profile fast`) builds. On this machine, without a GPU, the
//! program stops at its first launch naming the kernel.
//! (1.95-style kernels are GPU-only: on the CPU device `target_os` is the host's, which selects
//! the host's declarations.)

//@ only-x86_64
//@ needs-offload

use std::collections::BTreeSet;
use std::path::Path;

use run_make_support::offload::{cargo_offload, code_object_kernels, copy_dir, cubin_kernels};
use run_make_support::{cmd, cwd, source_root};

/// The kernels of the `gfx90a` code object and of the `sm_90` cubin that `cargo offload` made
/// in `ws` (`target/offload/images`).
fn image_kernels(ws: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let images = ws.join("target/offload/images");
    (code_object_kernels(&images.join("gfx90a.so")), cubin_kernels(&images.join("sm_90.cubin")))
}

fn main() {
    let ws = cwd().join("ws");
    copy_dir(&source_root().join("tests/run-make/offload-cargo-195-style/ws"), &ws);
    let selections: [(&[&str], &[&str]); 3] = [
        (&[], &["k195_scale"]),
        (&["--features", "sum"], &["k195_scale", "k195_sum"]),
        (&["--no-default-features", "--features", "sum"], &["k195_sum"]),
    ];
    for (features, kernels) in selections {
        let mut args = vec!["build", "--release", "--offload-arch=gfx90a,sm_90"];
        args.extend(features);
        let built = cargo_offload(&ws, &args);
        let expected: BTreeSet<String> = kernels.iter().map(|k| k.to_string()).collect();
        let (amd, nvidia) = image_kernels(&ws);
        assert_eq!(amd, expected, "gfx90a kernels with {features:?}\n{}", built.stderr_utf8());
        assert_eq!(nvidia, expected, "sm_90 kernels with {features:?}");
        // `k195_sum` takes a reference: upstream's `improper_gpu_kernel_arg` warns in the
        // device passes, as rustc 1.95 does.
        let warning = "warning: passing type `&[f64; 64]` to a function with \"gpu-kernel\" ABI \
                       may have unexpected behavior";
        let stderr = built.stderr_utf8();
        assert_eq!(
            stderr.contains(warning),
            kernels.contains(&"k195_sum"),
            "the `improper_gpu_kernel_arg` warning with {features:?}:\n{stderr}"
        );
    }

    // The default selection again: cargo still has the first build's fingerprints, and the
    // images must be this selection's, not the last build's.
    cargo_offload(&ws, &["build", "--release", "--offload-arch=gfx90a,sm_90"]);
    let scale_only = BTreeSet::from(["k195_scale".to_string()]);
    assert_eq!(
        image_kernels(&ws),
        (scale_only.clone(), scale_only.clone()),
        "back to the defaults"
    );
    // Back and forth between two selections of the program's features (dev profile): cargo
    // keeps a build of the image crate per selection and finds the earlier one fresh, but the
    // image (`host.out`) is the last build's unless `cargo offload` rebuilds it.
    let with_sum = BTreeSet::from(["k195_scale".to_string(), "k195_sum".to_string()]);
    let switches: [(&[&str], &BTreeSet<String>); 3] = [
        (&["-p", "app", "--features", "sum"], &with_sum),
        (&["-p", "app"], &scale_only),
        (&["-p", "app", "--features", "sum"], &with_sum),
    ];
    for (features, expected) in switches {
        let mut args = vec!["build", "--offload-arch=gfx90a,sm_90"];
        args.extend(features);
        cargo_offload(&ws, &args);
        let (amd, nvidia) = image_kernels(&ws);
        assert_eq!((&amd, &nvidia), (expected, expected), "dev profile, {features:?}");
    }

    // A profile of the workspace's own (`--profile fast`) passes through to the host passes.
    cargo_offload(&ws, &["build", "--profile", "fast", "--offload-arch=gfx90a,sm_90"]);
    let fast = ws.join("target/offload/host/x86_64-unknown-linux-gnu/fast/app");
    assert!(fast.is_file(), "no program at {}", fast.display());
    // No GPU here: the launch stops the program, naming `k195_scale`.
    let exe = ws.join("target/offload/host/x86_64-unknown-linux-gnu/release/app");
    let run = cmd(&exe).env_remove("LD_LIBRARY_PATH").run_fail();
    assert_eq!(run.status().code(), Some(1));
    let stderr = run.stderr_utf8();
    assert!(
        stderr.starts_with("error: the offload launch of kernel `k195_scale` failed"),
        "{stderr}"
    );
}
