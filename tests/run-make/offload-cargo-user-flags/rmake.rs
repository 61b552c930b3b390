//! The user's rustc flags reach the host crates of `cargo offload` as they reach plain `cargo
//! build`'s (scenario S35 of `src/doc/scenarios.md`): `build.rustflags` of the workspace's
//! `.cargo/config.toml`, and `RUSTFLAGS`, which takes its place when set (cargo's order), and a
//! `target.'cfg(all())'` table, for three archs at once. The program prints which of two `cfg`s
//! its host build saw and launches a kernel, whose crate tests `offload_device` without a
//! warning (the host pass's `--check-cfg`, which the user's flags do not replace) and stops the
//! device pass if it sees either `cfg`: the device passes take none of the user's host flags.

//@ only-x86_64
//@ needs-offload

use std::path::Path;

use run_make_support::offload::{
    ADD_ONE_KERNEL, ADD_ONE_PRELUDE, add_one_program, cargo_offload, cargo_offload_with,
    package_manifest, write_workspace,
};
use run_make_support::{CompletedProcess, cwd, rfs};

/// What the kernel crate adds to [`ADD_ONE_KERNEL`].
const KERNELS_OWN: &str = r#"
/// Where this build of the crate runs.
#[cfg(not(offload_device))]
pub const BUILT_FOR: &str = "host";

// The device passes take none of the user's host flags.
#[cfg(all(offload_device, any(from_config, from_env)))]
compile_error!("a device pass took the host's flags");

"#;

/// What the program prints after the launch.
const REPORT: &str = r#"println!(
        "{} config={} env={} right={right}",
        kernels::BUILT_FOR,
        cfg!(from_config),
        cfg!(from_env)
    );"#;

/// The `--check-cfg` of the two `cfg`s, in both places that set one.
const CHECK: &str = "--check-cfg=cfg(from_config,from_env)";

/// Asserts that `run` printed `line` and warned of no unexpected `cfg`.
fn check(run: &CompletedProcess, line: &str) {
    let stderr = run.stderr_utf8();
    assert_eq!(run.stdout_utf8().trim(), line, "{stderr}");
    assert!(!stderr.contains("unexpected `cfg` condition"), "{stderr}");
}

fn main() {
    let ws = cwd().join("ws");
    let kernels = format!("{ADD_ONE_PRELUDE}{KERNELS_OWN}{ADD_ONE_KERNEL}");
    let app = add_one_program(REPORT);
    write_workspace(
        &ws,
        &[
            ("kernels", "", "lib.rs", &kernels),
            ("app", "kernels = { path = \"../kernels\" }\n", "main.rs", &app),
        ],
    );
    // The kernel crate declares the two `cfg`s itself, for its device passes too.
    rfs::write(
        ws.join("kernels/Cargo.toml"),
        format!(
            "{}\n[lints.rust]\nunexpected_cfgs = {{ level = \"warn\", check-cfg = \
             ['cfg(from_config)', 'cfg(from_env)'] }}\n",
            package_manifest("kernels", "")
        ),
    );
    rfs::create_dir_all(ws.join(".cargo"));
    rfs::write(
        ws.join(".cargo/config.toml"),
        format!("[build]\nrustflags = [\"--cfg\", \"from_config\", \"{CHECK}\"]\n"),
    );

    let run = ["run", "--offload-arch=host"];
    check(&cargo_offload(&ws, &run), "host config=true env=false right=256");
    let rustflags = format!("--cfg from_env {CHECK}");
    let with_env = cargo_offload_with(&ws, &run, &[("RUSTFLAGS", Path::new(&rustflags))]);
    check(&with_env, "host config=false env=true right=256");

    // A target table reaches the host build too. The device passes' own flags outweigh it
    // (`CARGO_ENCODED_RUSTFLAGS`), also where the archs of three targets share one cargo run,
    // whose per-target flags cargo's own `target.<triple>.rustflags` cannot carry: cargo joins
    // those with a table like this one.
    rfs::write(
        ws.join(".cargo/config.toml"),
        format!("[target.'cfg(all())']\nrustflags = [\"--cfg\", \"from_config\", \"{CHECK}\"]\n"),
    );
    let three = ["run", "--offload-arch=gfx90a,sm_90,host"];
    check(&cargo_offload(&ws, &three), "host config=true env=false right=256");
}
