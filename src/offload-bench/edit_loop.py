"""The "edit, build, run" benchmark of `cargo offload` (`./x.py bench`, issue 41): what a user
feels, against plain `cargo build` of the same program with the same compiler.

The workspace (written into `<work>/edit-loop`, its registry crates from the tree's vendored
sources, as a user's would come from a registry). Its `.cargo/config.toml` names a directory
source that holds only the crates of its lock file, as `cargo vendor` of the workspace writes
it: a directory source is read whole at every cargo start, and the tree's (790 crates) cost each
start 0.15-0.25 s that a registry's index does not (a no-op `cargo build` of a program with
`regex`, `serde_json`, `libm` and `num-traits`: 0.20-0.32 s against 0.05 s with its 18 crates,
rustup's cargo 1.95, 2 CPUs); `cargo offload` starts cargo once per pass, plain once.

  kernels  a kernel library: one `#[offload_kernel]` saxpy over slices that calls `libm` and
           `num-traits` (registry crates in the kernel crate);
  runner   the program: launches the kernel with `offload!` over 100,000 elements, checks every
           element against the host, and formats its result with `regex` and `serde_json`
           (registry crates on the host);
  plain    the same program with a plain loop instead of the launch, built by `cargo build`.

For each profile (`dev`, `release`) and each set of arches (`host`: the CPU device;
`gfx90a,sm_90,host`), and in each round, in this order, ours and plain one after the other
(who goes first alternates between rounds), so that the two are compared in the same minutes:

  first build   ours: `cargo offload build` into an empty target folder; plain: `cargo build`
                into an empty one of its own;
  host edit     a one-line edit of the program's `main.rs` (a value in its output), then the
                same build again (plain: the same edit of its own `main.rs`);
  kernel edit   a one-line edit of the kernel (an added `+ 0.0 * k` that changes no result),
                then the build (plain builds its `kernels` dependency and itself again);
  run           the built program, on the CPU device (ours) or the host (plain); its output
                must say that no element differs from the host's, or the benchmark stops.

Every edit writes a value that no earlier edit wrote. Reported per profile, arches and step:
the median over the rounds of ours and plain, the spread (max - min) / min, and the ratio; and
the targets of issue 41: a host edit at most 1.3x plain's + 0.3 s, a kernel edit at most
plain's host edit + 1 s per arch, a first build at most 1.3x plain's. Each of ours' device
passes runs the vendor tools on its image (`ld.lld --no-undefined`; `ptxas` + `nvlink`), so a
build that finishes has images the vendors' tools accept.
"""

import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import time

PROFILES = ["dev", "release"]
ARCH_SETS = ["host", "gfx90a,sm_90,host"]
STEPS = ["first build", "host edit", "kernel edit", "run"]

KERNELS = """#![feature(gpu_offload)]
#![no_std]

use core::offload::{block_dim_x, block_idx_x, offload_kernel, thread_idx_x};
use num_traits::Float;

/// The element that the kernel computes, also the host's reference.
pub fn reference(a: f32, x: f32, y: f32) -> f32 {
    a * libm::sqrtf(x) + Float::abs(y) + 0.0 * 0.0
}

#[offload_kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < y.len() {
        y[i] = reference(a, x[i], y[i]);
    }
}
"""

RUNNER = """#![feature(gpu_offload)]

use core::offload::offload;

fn main() {
    let n: usize = 100_000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; n];
    offload! {
        kernel = kernels::saxpy,
        workgroup_dim = [n.div_ceil(256) as u32, 1, 1],
        thread_dim = [256, 1, 1],
        args = (2.0f32, &x[..], &mut y[..]),
    }
    report(n, &y);
}
"""

PLAIN = """fn main() {
    let n: usize = 100_000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; n];
    for i in 0..n {
        y[i] = kernels::reference(2.0, x[i], y[i]);
    }
    report(n, &y);
}
"""

# Both programs end with the same check and output (a NaN counts as a difference).
REPORT = """
fn report(n: usize, y: &[f32]) {
    let wrong = (0..n).filter(|&i| y[i] != kernels::reference(2.0, i as f32, 1.0)).count();
    let re = regex::Regex::new(r"^(\\d+) of (\\d+)$").unwrap();
    let line = format!("{wrong} of {n}");
    let caps = re.captures(&line).unwrap();
    println!("{}", serde_json::json!({ "wrong": &caps[1], "n": &caps[2], "edit": 0 }));
}
"""


def package(name, dependencies):
    return (f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2024"\npublish = false\n\n'
            f"[dependencies]\n{dependencies}")


def source_config(vendor):
    """The `.cargo/config.toml` that replaces the registry's crates by the directory source
    `vendor`."""
    return (f'[source.crates-io]\nreplace-with = "vendored"\n\n'
            f'[source.vendored]\ndirectory = "{vendor}"\n')


def write_workspace(ws, vendor):
    """Writes the workspace into `ws` (emptied first), its registry crates replaced by the
    vendored sources in `vendor`."""
    shutil.rmtree(ws, ignore_errors=True)
    for d in ("kernels/src", "runner/src", "plain/src", ".cargo"):
        os.makedirs(os.path.join(ws, d))
    files = {
        ".cargo/config.toml": source_config(vendor),
        "Cargo.toml": '[workspace]\nmembers = ["kernels", "runner", "plain"]\nresolver = "3"\n',
        "kernels/Cargo.toml": package("kernels", 'libm = "0.2"\nnum-traits = { version = "0.2", '
                                      'default-features = false, features = ["libm"] }\n'),
        "kernels/src/lib.rs": KERNELS,
        "runner/Cargo.toml": package("runner", 'kernels = { path = "../kernels" }\nregex = "1"\n'
                                     'serde_json = "1"\n'),
        "runner/src/main.rs": RUNNER + REPORT,
        "plain/Cargo.toml": package("plain", 'kernels = { path = "../kernels" }\nregex = "1"\n'
                                    'serde_json = "1"\n'),
        "plain/src/main.rs": PLAIN + REPORT,
    }
    for name, text in files.items():
        with open(os.path.join(ws, name), "w") as f:
            f.write(text)


def edit(path, pattern, replacement):
    """Replaces the one match of `pattern` in the file `path`."""
    with open(path) as f:
        text = f.read()
    new, count = re.subn(pattern, replacement, text)
    if count != 1:
        raise SystemExit(f"error: [BENCH] edit loop: {pattern!r} matches {count} times in {path}")
    with open(path, "w") as f:
        f.write(new)


class EditLoop:
    """One run of the edit loop (`rounds` rounds), with the toolchain's paths from `args`."""

    def __init__(self, args, rounds):
        self.args = args
        self.rounds = rounds
        self.ws = os.path.join(args.work, "edit-loop")
        self.samples = []
        self.edits = 0
        env = dict(os.environ)
        for var in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_INCREMENTAL", "CARGO_BUILD_RUSTC_WRAPPER",
                    "RUSTC_WRAPPER", "CARGO_TARGET_DIR", "MAKEFLAGS", "CARGO_MAKEFLAGS"):
            env.pop(var, None)
        stage1_bin = os.path.dirname(os.path.abspath(args.ours))
        env["PATH"] = f"{stage1_bin}:{args.offload_tools_bin}:/usr/lib/llvm-22/bin:/usr/bin:/bin"
        env["RUSTC"] = args.ours
        env["RUSTC_BOOTSTRAP"] = "1"
        env["CARGO_OFFLOAD_DEVICE_SYSROOT"] = args.device_sysroot
        if args.cuda_bin:
            env["CARGO_OFFLOAD_CUDA_BIN"] = args.cuda_bin
        self.env = env

    def target_dir(self, who, profile, archs):
        return os.path.join(self.ws, "target-" + who + "-" + profile + "-" + archs.replace(",", "-"))

    def build(self, who, profile, archs):
        """Builds ours (`cargo offload build`) or plain (`cargo build`); returns the seconds."""
        cmd = [self.args.cargo]
        if who == "ours":
            cmd += ["offload", "build", f"--offload-arch={archs}", "-p", "runner"]
        else:
            cmd += ["build", "-p", "plain"]
        if profile == "release":
            cmd.append("--release")
        env = dict(self.env, CARGO_TARGET_DIR=self.target_dir(who, profile, archs))
        start = time.monotonic()
        done = subprocess.run(cmd, cwd=self.ws, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if done.returncode != 0:
            raise SystemExit(f"error: [BENCH] edit loop: `{' '.join(cmd)}` failed:\n{done.stderr[-4000:]}")
        return seconds

    def program(self, who, profile, archs):
        folder = "debug" if profile == "dev" else "release"
        target = self.target_dir(who, profile, archs)
        if who == "ours":
            return os.path.join(target, "offload", "host", self.args.host_triple, folder, "runner")
        return os.path.join(target, folder, "plain")

    def run_program(self, who, profile, archs):
        """Runs the built program; returns the seconds. Stops the benchmark unless its output
        says that no element differs and shows the last edit."""
        exe = self.program(who, profile, archs)
        start = time.monotonic()
        done = subprocess.run([exe], env=self.env, capture_output=True, text=True)
        seconds = time.monotonic() - start
        try:
            out = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            out = {}
        if done.returncode != 0 or out.get("wrong") != "0" or out.get("edit") != self.edits:
            raise SystemExit(f"error: [BENCH] edit loop: {exe} printed {done.stdout!r} (status "
                             f"{done.returncode}, expected edit {self.edits} and 0 wrong):\n{done.stderr[-2000:]}")
        return seconds

    def record(self, profile, archs, step, who, seconds, round_):
        self.samples.append({"profile": profile, "archs": archs, "step": step, "who": who,
                             "seconds": seconds, "round": round_})
        print(f"[BENCH] edit loop, round {round_ + 1}: {profile} {archs} {step}: {who} {seconds:.2f} s", flush=True)

    def host_edit(self):
        self.edits += 1
        for prog in ("runner", "plain"):
            edit(os.path.join(self.ws, prog, "src/main.rs"), r'"edit": \d+', f'"edit": {self.edits}')

    def kernel_edit(self):
        self.edits += 1
        edit(os.path.join(self.ws, "kernels/src/lib.rs"), r"\+ 0\.0 \* \d+\.0", f"+ 0.0 * {self.edits}.0")
        # The programs print the edit's number, so that the run shows which build it was.
        for prog in ("runner", "plain"):
            edit(os.path.join(self.ws, prog, "src/main.rs"), r'"edit": \d+', f'"edit": {self.edits}')

    def vendor_own_crates(self):
        """Replaces the workspace's directory source (the tree's vendored crates) by one that
        holds only the crates of its lock file, as a registry user's cargo reads only those
        crates' index files. `cargo vendor` ignores the `[source]` table unless told to respect
        it: `--respect-source-config --offline` resolves the lock file from the tree's crates and
        copies them, so the versions are the tree's and nothing is downloaded. (Cargo before
        1.87 could delete a directory source that it vendored from; the stage-0 cargo is
        1.95.)"""
        own = os.path.join(self.ws, "vendor")
        cmd = [self.args.cargo, "vendor", "--quiet", "--respect-source-config", "--offline", own]
        done = subprocess.run(cmd, cwd=self.ws, env=self.env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"error: [BENCH] edit loop: `{' '.join(cmd)}` failed:\n{done.stderr[-4000:]}")
        with open(os.path.join(self.ws, ".cargo/config.toml"), "w") as f:
            f.write(source_config(own))

    def run(self):
        write_workspace(self.ws, os.path.join(self.args.tree, "vendor"))
        self.vendor_own_crates()
        for r in range(self.rounds):
            for profile in PROFILES:
                for archs in ARCH_SETS:
                    self.one_config(profile, archs, r)
        return self.samples

    def one_config(self, profile, archs, r):
        # Who goes first alternates between rounds, so that neither always finds the other's
        # files in the page cache.
        order = ("ours", "plain") if r % 2 == 0 else ("plain", "ours")
        for who in order:
            shutil.rmtree(self.target_dir(who, profile, archs), ignore_errors=True)
            self.record(profile, archs, "first build", who, self.build(who, profile, archs), r)
        # The first build compiled the sources as they are now: a run shows the last edit.
        self.host_edit()
        for who in order:
            self.record(profile, archs, "host edit", who, self.build(who, profile, archs), r)
        self.kernel_edit()
        for who in order:
            self.record(profile, archs, "kernel edit", who, self.build(who, profile, archs), r)
        for who in order:
            self.record(profile, archs, "run", who, self.run_program(who, profile, archs), r)


def summarize(samples):
    """Rows of the table: {(profile, archs, step): {who: (median, spread)}}."""
    rows = {}
    for s in samples:
        rows.setdefault((s["profile"], s["archs"], s["step"]), {}).setdefault(s["who"], []).append(s["seconds"])
    out = {}
    for key, by_who in rows.items():
        out[key] = {who: (statistics.median(v), (max(v) - min(v)) / min(v) if min(v) > 0 else 0.0)
                    for who, v in by_who.items()}
    return out


def target(step, archs, plain_host_edit, plain_step):
    """The issue's bound for ours in `step`, in seconds, or None (the run has none)."""
    if step == "first build":
        return 1.3 * plain_step
    if step == "host edit":
        return 1.3 * plain_step + 0.3
    if step == "kernel edit":
        return plain_host_edit + 1.0 * len(archs.split(","))
    return None


def table(samples, rounds, when):
    """The Markdown table of the edit loop (`src/doc/benchmarks.md` and `edit_loop.md`); `when` says
    when it ran."""
    s = summarize(samples)
    lines = [f"Edit, build, run, {when} (`./x.py bench`, 2 CPUs): `cargo offload build` against plain "
             f"`cargo build` of the same program, medians of {rounds} rounds; spread = (max - min) / min:",
             "",
             "| profile | arches | step | ours (s) | plain (s) | ours/plain | target (s) | met | spread ours / plain |",
             "|---|---|---|---|---|---|---|---|---|"]
    for profile in PROFILES:
        for archs in ARCH_SETS:
            plain_host_edit = s.get((profile, archs, "host edit"), {}).get("plain", (0, 0))[0]
            for step in STEPS:
                row = s.get((profile, archs, step))
                if not row or "ours" not in row or "plain" not in row:
                    continue
                (ours, so), (plain, sp) = row["ours"], row["plain"]
                bound = target(step, archs, plain_host_edit, plain)
                met = "" if bound is None else ("yes" if ours <= bound else "**no**")
                bound_text = "" if bound is None else f"{bound:.2f}"
                lines.append(f"| {profile} | {archs} | {step} | {ours:.2f} | {plain:.2f} | {ours / plain:.2f}x | "
                             f"{bound_text} | {met} | {so:.0%} / {sp:.0%} |")
    return "\n".join(lines) + "\n"


def run_edit_loop(args, rounds):
    """Runs the edit loop; writes `edit_loop.json` and `edit_loop.md` into `--results`; returns
    the table."""
    samples = EditLoop(args, rounds).run()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    os.makedirs(args.results, exist_ok=True)
    with open(os.path.join(args.results, "edit_loop.json"), "w") as f:
        json.dump({"rounds": rounds, "when": when, "samples": samples}, f, indent=1)
        f.write("\n")
    text = table(samples, rounds, when)
    with open(os.path.join(args.results, "edit_loop.md"), "w") as f:
        f.write(text)
    print(text, flush=True)
    return text
