"""What the content seals of `cargo offload` cost (issue 62): an A/B of one workspace built
with the project's `cargo-offload` before the seals (`--base`, a commit without them) and as it
is now, each into its own copy of the workspace, alternating who goes first in each round.

Both run through this checkout's `./x.py cargo`: the base's `cargo-offload` is built from a
worktree of `--base` into a target folder of its own (the harness's shared `tools-target` would
mix the two) and started as the cargo subcommand `offload-base` (a two-line script in the
toolchain's tools folder, removed at the end), so that it is its own `RUSTC_WRAPPER` as the
current one is.

The workspace: a kernel crate (`add`, over a `u32` slice) and a program that launches it and
formats its result with `regex` and `serde_json` (the tree's vendored sources, as the edit-loop
benchmark takes them). Each round, for each version: a no-op `cargo offload build --release
--offload-arch=gfx90a,sm_90,host`, then the same build after a one-line edit of the program.
Prints the median of each step over the rounds, both versions' runs, and the ratio now/before.

    python3 src/offload-bench/seal_cost.py --base 8aef19d --rounds 11

Run outside the sysroot, from the checkout, after `./x.py build`; it writes under
`$TMPDIR/seal-cost` and removes its worktree of the base when done.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("OFFLOAD_FORK_CACHE", os.path.expanduser("~/.cache/offload-fork"))
ARCHS = "--offload-arch=gfx90a,sm_90,host"

KERNELS = """#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};

#[offload_kernel]
pub fn add(y: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < y.len() {
        y[i] += 1;
    }
}
"""

APP = """#![feature(gpu_offload)]

fn main() {
    let mut y = vec![41u32; 256];
    core::offload::offload! {
        kernel = kernels::add,
        workgroup_dim = [4, 1, 1],
        thread_dim = [64, 1, 1],
        args = (&mut y[..],),
    }
    let re = regex::Regex::new(r"4\\d").unwrap();
    let v = serde_json::json!({ "first": y[0], "edit": EDIT });
    println!("{} {}", re.is_match(&y[0].to_string()), v);
}
"""


def write_workspace(ws):
    """The workspace at `ws`, its registry crates from the tree's vendored sources."""
    shutil.rmtree(ws, ignore_errors=True)
    for folder in ["kernels/src", "app/src", ".cargo"]:
        os.makedirs(os.path.join(ws, folder))
    members = '[workspace]\nmembers = ["kernels", "app"]\nresolver = "3"\n'
    package = '[package]\nname = "{}"\nversion = "0.1.0"\nedition = "2024"\n'
    dependencies = '[dependencies]\nkernels = { path = "../kernels" }\nregex = "1"\nserde_json = "1"\n'
    vendor = os.path.join(CACHE, "tree/vendor")
    files = {
        "Cargo.toml": members,
        "kernels/Cargo.toml": package.format("kernels"),
        "kernels/src/lib.rs": KERNELS,
        "app/Cargo.toml": package.format("app") + dependencies,
        ".cargo/config.toml": f'[source.crates-io]\nreplace-with = "v"\n[source.v]\ndirectory = "{vendor}"\n',
    }
    for name, text in files.items():
        with open(os.path.join(ws, name), "w") as f:
            f.write(text)
    edit(ws, 0)


def edit(ws, n):
    """The program with the value `n` in its output: a one-line edit."""
    with open(os.path.join(ws, "app/src/main.rs"), "w") as f:
        f.write(APP.replace("EDIT", str(n)))


def build(subcommand, ws):
    """Seconds of `cargo <subcommand> build` in `ws` through this checkout's `./x.py cargo`."""
    start = time.monotonic()
    cmd = [os.path.join(PROJECT, "x.py"), "cargo", subcommand, "build", "--offline", "--release",
           ARCHS]
    run = subprocess.run(cmd, cwd=ws, capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"{' '.join(cmd)} in {ws} failed:\n{run.stderr[-3000:]}")
    return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="a commit without the seals")
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    work = os.path.join(tempfile.gettempdir(), "seal-cost")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    base = os.path.join(work, "base")
    subprocess.run(["git", "-C", PROJECT, "worktree", "add", "--detach", base, args.base],
                   check=True, capture_output=True)
    tools = os.path.join(CACHE, "build/x86_64-unknown-linux-gnu/offload-tools/bin")
    script = os.path.join(tools, "cargo-offload-base")
    try:
        vendor = os.path.join(CACHE, "tree/vendor")
        subprocess.run(["cargo", "+1.95.0", "build", "--quiet", "--release", "--offline",
                        "--manifest-path", os.path.join(base, "src/tools/cargo-offload/Cargo.toml"),
                        "--config", "source.crates-io.replace-with='vendored'",
                        "--config", f"source.vendored.directory='{vendor}'",
                        "--target-dir", os.path.join(work, "base-target")], check=True)
        binary = os.path.join(work, "cargo-offload-base")
        shutil.copy(os.path.join(work, "base-target/release/cargo-offload"), binary)
        with open(script, "w") as f:
            f.write(f'#!/bin/sh\n# seal_cost.py: the base\'s cargo offload.\nshift\n'
                    f'exec {binary} offload "$@"\n')
        os.chmod(script, 0o755)
        subcommands = {"before": "offload-base", "now": "offload"}
        for version, subcommand in subcommands.items():
            write_workspace(os.path.join(work, f"ws-{version}"))
            build(subcommand, os.path.join(work, f"ws-{version}"))
        steps = ["no-op", "host edit"]
        times = {(v, s): [] for v in subcommands for s in steps}
        for r in range(args.rounds):
            order = list(subcommands) if r % 2 == 0 else list(reversed(list(subcommands)))
            for version in order:
                ws = os.path.join(work, f"ws-{version}")
                times[(version, "no-op")].append(build(subcommands[version], ws))
                edit(ws, r + 1)
                times[(version, "host edit")].append(build(subcommands[version], ws))
        for step in steps:
            before = statistics.median(times[("before", step)])
            now = statistics.median(times[("now", step)])
            runs = {v: [round(t, 2) for t in times[(v, step)]] for v in subcommands}
            print(f"{step}: before {before:.2f} s, now {now:.2f} s (medians of {args.rounds}), "
                  f"now/before {now / before:.3f}; runs {runs}")
        sealed = [os.path.exists(os.path.join(work, f"ws-{v}/target/offload/images/release/"
                                              "host.offload.sha256")) for v in subcommands]
        print(f"seals written: before {sealed[0]}, now {sealed[1]}")
    finally:
        if os.path.exists(script):
            os.remove(script)
        subprocess.run(["git", "-C", PROJECT, "worktree", "remove", "--force", base],
                       capture_output=True)


if __name__ == "__main__":
    main()
