//! Kernels from a registry crate (issue 42, scenario S26): `regkern` (`regkern/`) is packed with
//! `cargo package` into a local registry (cargo's `local-registry` source, which replaces the
//! default registry in the `.cargo/config.toml` of the test's folder), and the program `app`
//! (`app/`) depends on it by version, with its feature `extra`. `cargo offload run --offline`
//! on the CPU device builds `regkern`'s kernels into the image: a generic kernel launched by
//! the program at two types, a kernel that `regkern` launches itself and one of its feature;
//! the program prints the results the host computes. The image crate depends on `regkern` by
//! its registry and the host build's version and features. Built for `gfx90a` and `sm_90` too,
//! where the vendors' tools check the images and each defines the manifest's kernels.
//!
//! A registry crate that defines a kernel but needs `std` on every target (`stdkern/`) runs on
//! the CPU device and builds for `sm_90`, whose device sysroots have a `std` (the kernel reaches
//! nothing of `std`'s platform layer).

//@ only-x86_64
//@ needs-offload

use std::path::Path;

use run_make_support::offload::{
    cargo_offload_fails_with, cargo_offload_with, code_object_kernels, copy_dir, cubin_kernels,
    extract_gpu_images, manifest_symbols, package_manifest, stage0_cargo,
};
use run_make_support::{cmd, cwd, rfs, serde_json, source_root};

/// Packs the package in `package` (`NAME-VERSION.crate`, by `cargo package`) into the local
/// registry `registry`: the `.crate` file beside `index/`, and its index entry with the
/// package's `features` (a JSON object) and the file's SHA-256. Returns nothing; panics when a
/// step fails.
fn publish(package: &Path, name: &str, version: &str, features: &str, registry: &Path) {
    let home = cwd().join("cargo-home");
    cmd(stage0_cargo())
        .args(["package", "--offline", "--no-verify", "--allow-dirty"])
        .current_dir(package)
        .env("CARGO_HOME", &home)
        .run();
    let file = format!("{name}-{version}.crate");
    let packed = package.join("target/package").join(&file);
    rfs::create_dir_all(registry);
    rfs::copy(&packed, registry.join(&file));
    let sum = cmd("sha256sum").arg(registry.join(&file)).run().stdout_utf8();
    let sum = sum.split_whitespace().next().unwrap().to_string();
    // The index's layout for names of four or more characters: `ab/cd/abcd...`.
    let dir = registry.join("index").join(&name[..2]).join(&name[2..4]);
    rfs::create_dir_all(&dir);
    rfs::write(
        dir.join(name),
        format!(
            "{{\"name\":\"{name}\",\"vers\":\"{version}\",\"deps\":[],\"cksum\":\"{sum}\",\
             \"features\":{features},\"yanked\":false}}\n"
        ),
    );
}

/// The values of the line `name: v0 v1 ...` of `stdout`.
fn line(stdout: &str, name: &str) -> Vec<String> {
    let prefix = format!("{name}: ");
    let values = stdout.lines().find_map(|l| l.strip_prefix(&prefix));
    let values = values.unwrap_or_else(|| panic!("no `{name}` line in:\n{stdout}"));
    values.split_whitespace().map(str::to_string).collect()
}

/// `values` as the program prints them.
fn printed<T: ToString>(values: impl Iterator<Item = T>) -> Vec<String> {
    values.map(|v| v.to_string()).collect()
}

fn main() {
    let here = source_root().join("tests/run-make/offload-cargo-registry-kernels");
    let (package, registry, app) =
        (cwd().join("regkern"), cwd().join("registry"), cwd().join("app"));
    copy_dir(&here.join("regkern"), &package);
    publish(&package, "regkern", "0.3.0", "{\"extra\":[]}", &registry);
    copy_dir(&here.join("stdkern"), &cwd().join("stdkern"));
    publish(&cwd().join("stdkern"), "stdkern", "0.1.0", "{}", &registry);
    copy_dir(&here.join("app"), &app);
    // The registry replaces the default one for every project below this folder.
    rfs::create_dir_all(cwd().join(".cargo"));
    rfs::write(
        cwd().join(".cargo/config.toml"),
        format!(
            "[source.crates-io]\nreplace-with = \"test-registry\"\n\n\
             [source.test-registry]\nlocal-registry = \"{}\"\n",
            registry.display()
        ),
    );
    // The test's own cargo home: cargo unpacks the registry's packages there, and a rerun of
    // the test must not find the last run's.
    let home = cwd().join("cargo-home");
    let env = [("CARGO_HOME", home.as_path())];

    let run =
        cargo_offload_with(&app, &["run", "--release", "--offline", "--offload-arch=host"], &env);
    let stdout = run.stdout_utf8();
    let axpb_f32 = (0..300).map(|i| 2.0 * (i as f32 * 0.5) + 1.0);
    assert_eq!(line(&stdout, "axpb_f32"), printed(axpb_f32));
    assert_eq!(line(&stdout, "axpb_i64"), printed((0..100i64).map(|i| -3 * i + 7)));
    assert_eq!(line(&stdout, "add_index"), printed((0..200u32).map(|i| 7 + i)));
    let square = (0..100).map(|i| (i as f64 * 0.25) * (i as f64 * 0.25));
    assert_eq!(line(&stdout, "square"), printed(square));

    // The image crate names `regkern` by its registry, at the version and with the features
    // that the host build resolved.
    let image = rfs::read_to_string(app.join("target/offload/image/Cargo.toml"));
    assert!(
        image
            .lines()
            .any(|l| l.starts_with(
                "regkern = { package = \"regkern\", version = \"=0.3.0\", registry-index = \""
            ) && l.ends_with("default-features = false, features = [\"extra\"] }")),
        "no dependency on the registry's `regkern` in:\n{image}"
    );
    let manifest = rfs::read_to_string(app.join("target/offload/image/manifest.json"));
    for kernel in
        ["regkern::axpb::<f32>", "regkern::axpb::<i64>", "regkern::add_index", "regkern::square"]
    {
        assert!(manifest.contains(kernel), "no `{kernel}` in the image's manifest:\n{manifest}");
    }

    // The GPUs: the vendors' tools accept the images (`cargo offload` runs them), and each
    // defines exactly the manifest's kernels.
    cargo_offload_with(
        &app,
        &["build", "--release", "--offline", "--offload-arch=gfx90a,sm_90"],
        &env,
    );
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let kernels = manifest_symbols(&manifest);
    assert_eq!(kernels.len(), 4, "{kernels:?}");
    let exe = app.join("target/offload/host/x86_64-unknown-linux-gnu/release/app");
    let (so, cubin) = extract_gpu_images(&exe, &cwd());
    assert_eq!(code_object_kernels(&so), kernels, "kernels of the gfx90a code object");
    assert_eq!(cubin_kernels(&cubin), kernels, "kernels of the sm_90 cubin");

    std_only_kernel_crate(&env);
}

/// `stdkern`'s kernel in the program `std-app`: it runs on the CPU device and builds for
/// `sm_90`.
fn std_only_kernel_crate(env: &[(&str, &Path)]) {
    let app = cwd().join("std-app");
    rfs::create_dir_all(app.join("src"));
    rfs::write(app.join("Cargo.toml"), package_manifest("std-app", "stdkern = \"0.1\"\n"));
    rfs::write(
        app.join("src/main.rs"),
        "#![feature(gpu_offload)]\n\
         fn main() {\n\
         \x20   let mut x: Vec<i32> = (0..50).collect();\n\
         \x20   core::offload::offload! {\n\
         \x20       kernel = stdkern::negate,\n\
         \x20       workgroup_dim = [1, 1, 1],\n\
         \x20       thread_dim = [64, 1, 1],\n\
         \x20       args = (&mut x[..],),\n\
         \x20   }\n\
         \x20   println!(\"negate: {} {:?}\", stdkern::label(&x), &x[..3]);\n\
         }\n",
    );
    let run = cargo_offload_with(&app, &["run", "--offline", "--offload-arch=host"], env);
    let stdout = run.stdout_utf8();
    assert!(stdout.contains("negate: 50 values [0, -1, -2]"), "{stdout}");
    let args = ["build", "--offline", "--offload-arch=sm_90"];
    let stderr = cargo_offload_with(&app, &args, env).stderr_utf8();
    assert!(stderr.contains("image sm_90: cubin "), "{stderr}");
}
