//! The user's own rustc wrapper runs under `cargo offload` (scenario S44 of
//! `src/doc/scenarios.md`), as under plain `cargo build`: `RUSTC_WRAPPER`, or
//! `build.rustc-wrapper` of the workspace's `.cargo/config.toml` (a path relative to the folder
//! above `.cargo`, as cargo reads it). A logging wrapper sees the host pass's compilations of
//! the program, its kernel crate and its build script, the program's with the host pass's
//! offload flags; it sees none of the device pass's. A wrapper whose compilations leave the
//! crates' manifests unwritten (as a caching wrapper's answers from its cache do, while rustc's
//! outputs and messages are all there) has `cargo offload` compile each crate again without
//! it, showing cargo each crate's messages once: the manifests are this build's, and a kernel
//! that the edited program launches for the first time is in the image and computes right.

//@ only-x86_64
//@ needs-offload

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::SystemTime;

use run_make_support::offload::{
    ADD_ONE_KERNEL, ADD_ONE_PRELUDE, add_one_program, cargo_offload_with, write_workspace,
};
use run_make_support::{CompletedProcess, cwd, rfs};

/// Writes each invocation (its arguments) to `$WRAP_LOG`, then runs it.
const LOGGING: &str = "#!/bin/sh\necho \"$*\" >> \"$WRAP_LOG\"\nexec \"$@\"\n";

/// As [`LOGGING`], but has each compilation for the target write its manifest elsewhere, as a
/// cache that answers a compilation does: rustc writes its outputs and prints its messages (the
/// artifact notices that cargo reads once per crate among them), but the crate's manifest is
/// not this compilation's. Link-only compilations, which write no manifest, run as they are.
const ELSEWHERE: &str = "#!/bin/sh
echo \"$*\" >> \"$WRAP_LOG\"
case \"$*\" in *-Zlink-only*) exec \"$@\" ;; esac
for arg do
  shift
  case \"$arg\" in -Zoffload=HostMetadata=*) arg=\"-Zoffload=HostMetadata=$WRAP_LOG.json\" ;; esac
  set -- \"$@\" \"$arg\"
done
exec \"$@\"
";

/// A second kernel, launched only by the last version of the program.
const ADD_TWO_KERNEL: &str = "
#[offload_kernel]
pub fn add_two(y: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < y.len() {
        y[i] += util::STEP;
    }
}
";

/// The last version of the program: it launches `add_two`, which no earlier manifest lists.
const ADD_TWO_PROGRAM: &str = "#![feature(gpu_offload)]

fn main() {
    let mut y = vec![40u32; 256];
    core::offload::offload! {
        kernel = kernels::add_two,
        workgroup_dim = [4, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&mut y[..],),
    }
    let right = y.iter().filter(|v| **v == 42).count();
    println!(\"right={right}\");
}
";

/// Writes `script` to `path`, executable.
fn write_script(path: &Path, script: &str) {
    rfs::write(path, script);
    rfs::set_permissions(path, std::fs::Permissions::from_mode(0o755));
}

/// Runs `cargo offload run` in `ws` with `env`, asserts that the program computed right, and
/// returns the wrapper's log (emptied for the next run).
fn run_logged(ws: &Path, log: &Path, env: &[(&str, &Path)]) -> String {
    let mut env = env.to_vec();
    env.push(("WRAP_LOG", log));
    let run: CompletedProcess = cargo_offload_with(ws, &["run", "--offload-arch=host"], &env);
    assert_eq!(run.stdout_utf8().trim(), "right=256", "{}", run.stderr_utf8());
    let text = rfs::read_to_string(log);
    rfs::remove_file(log);
    text
}

/// The compilations of crate `name` in `log`.
fn compilations<'a>(log: &'a str, name: &str) -> Vec<&'a str> {
    let flag = format!("--crate-name {name} ");
    log.lines().filter(|l| l.contains(&flag)).collect()
}

/// The modification time of the one manifest of the crate `app` (not of its seal).
fn app_manifest_time(ws: &Path) -> SystemTime {
    let manifests = ws.join("target/offload/manifests");
    let app: Vec<_> = rfs::read_dir(&manifests)
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("app-") && name.ends_with(".json")
        })
        .collect();
    assert_eq!(app.len(), 1, "manifests of `app`: {app:?}");
    rfs::metadata(&app[0]).modified().unwrap()
}

fn main() {
    let ws = cwd().join("ws");
    let kernels = format!("{ADD_ONE_PRELUDE}{ADD_ONE_KERNEL}{ADD_TWO_KERNEL}");
    let app = add_one_program("println!(\"right={right}\");");
    write_workspace(
        &ws,
        &[
            // A library that a library depends on: cargo starts `kernels` once it has read the
            // artifact notice of `util`'s metadata, and must not read it twice.
            ("util", "", "lib.rs", "#![no_std]\n\npub const STEP: u32 = 2;\n"),
            ("kernels", "util = { path = \"../util\" }\n", "lib.rs", &kernels),
            ("app", "kernels = { path = \"../kernels\" }\n", "main.rs", &app),
        ],
    );
    rfs::write(ws.join("app/build.rs"), "fn main() {}\n");
    let (log, logging, elsewhere) =
        (cwd().join("wrap.log"), cwd().join("log.sh"), cwd().join("elsewhere.sh"));
    write_script(&logging, LOGGING);
    write_script(&elsewhere, ELSEWHERE);

    // `RUSTC_WRAPPER`: the host pass's compilations, the build script's too, go through it.
    let text = run_logged(&ws, &log, &[("RUSTC_WRAPPER", &logging)]);
    let app_lines = compilations(&text, "app");
    assert!(!app_lines.is_empty(), "the wrapper never compiled `app`:\n{text}");
    assert!(app_lines.iter().all(|l| l.contains("-Zoffload=HostMetadata=")), "{text}");
    assert!(!compilations(&text, "kernels").is_empty(), "no `kernels`:\n{text}");
    assert!(!compilations(&text, "build_script_build").is_empty(), "no build script:\n{text}");
    assert!(!text.contains("-Zoffload=Device"), "a device pass ran the wrapper:\n{text}");

    // `build.rustc-wrapper`, a path relative to the folder above `.cargo`.
    rfs::create_dir_all(ws.join(".cargo"));
    rfs::create_dir_all(ws.join("tools"));
    write_script(&ws.join("tools/log.sh"), LOGGING);
    rfs::write(ws.join(".cargo/config.toml"), "[build]\nrustc-wrapper = \"tools/log.sh\"\n");
    rfs::write(ws.join("app/src/main.rs"), format!("{app}\n// edited\n"));
    let text = run_logged(&ws, &log, &[]);
    assert!(!compilations(&text, "app").is_empty(), "the configured wrapper never ran:\n{text}");

    // A wrapper whose compilations leave the manifests unwritten, as answers from a cache do:
    // `cargo offload` compiles each crate again without it (cargo sees each crate's messages
    // once), so the manifests are this build's and list the kernel that the program now
    // launches.
    rfs::remove_file(ws.join(".cargo/config.toml"));
    let before = app_manifest_time(&ws);
    rfs::write(ws.join("util/src/lib.rs"), "#![no_std]\n\npub const STEP: u32 = 1 + 1;\n");
    rfs::write(ws.join("kernels/src/lib.rs"), format!("{kernels}\n// edited\n"));
    rfs::write(ws.join("app/src/main.rs"), ADD_TWO_PROGRAM);
    let text = run_logged(&ws, &log, &[("RUSTC_WRAPPER", &elsewhere)]);
    for name in ["app", "kernels", "util"] {
        assert!(!compilations(&text, name).is_empty(), "the wrapper never ran `{name}`:\n{text}");
    }
    assert!(app_manifest_time(&ws) > before, "`app`'s manifest is not this build's");
}
