#!/usr/bin/env python3
"""The device-pass benchmark of the offload fork (`./x.py bench`, issue 4).

Runs inside the fork's trixie sysroot (the harness enters it). In one run, on one machine, it
compiles the device pass of

  (a) `core` alone,
  (b) the bundled example (`src/offload-example/lib.rs`) with `core`,
  (c) the kernel suite (`src/offload-bench/suite.rs`) with `core`,

for each GPU target, with four compilers/modes side by side:

  stock  the machine's rustup 1.95.0 rustc (same upstream commit, a PGO-optimised release
         build; RUSTC_BOOTSTRAP=1). It is built without LLVM offload and panics on any
         `-Zoffload=Device`, so it runs the same compilation without `-Zoffload`: codegen of
         every mono root for the GPU target, which is what the base device pass does before
         it wraps the bitcode into an offload image.
  base   our stage-1 rustc, bare `-Zoffload=Device` (every mono root; the same binary as
         `ours`, so base/ours isolates our change from build differences).
  ours   our stage-1 rustc, `-Zoffload=Device=<manifest>`; the manifest comes from the host
         metadata pass (`-Zoffload=HostMetadata=<manifest>`, host target), timed on its own.
  floor  our stage-1 rustc, `--emit=metadata` only, on the device target: what any device
         pass pays before codegen (parsing, type checking, MIR building).

Each crate is compiled as `cargo -Zbuild-std=core` would: `core` from the upstream source
with the mode's flags, then the crate against that `core`. The time of (b) and (c) is the
time of `core` plus the crate's, measured in the same run. Every compilation runs `--runs`
times (modes interleaved within a run); reported: medians, the ratios stock/ours,
base/ours and ours/floor, the peak resident memory of the compiler process (`wait4`'s
`ru_maxrss`), and what the device bitcode defines (functions, bytes, and functions that no
kernel reaches, from the IR's call graph). A scaling series appends 0, 1,000 and 5,000
unrelated functions (every fifth a generic one with a non-generic caller) to the suite.

Writes `results.json` (everything, per run), `results.csv` (medians), `table.md` (the README
table) and `results.png` (matplotlib, if installed) into `--results`.
"""

import argparse
import csv
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

MODES = ["stock", "base", "ours", "floor"]
INPUTS = ["core", "example", "suite"]
TARGETS = {"amdgcn-amd-amdhsa": "gfx90a", "nvptx64-nvidia-cuda": None}
SCALING = [0, 1000, 5000]


def log(msg):
    print(f"[BENCH] {msg}", flush=True)


def run(cmd, cwd, env):
    """Runs `cmd`; returns (seconds, peak RSS in KiB). Exits with the output on failure."""
    out_path = os.path.join(cwd, "last-command.log")
    with open(out_path, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        with open(out_path, "rb") as f:
            sys.stderr.write(f.read().decode(errors="replace")[-6000:])
        sys.exit(f"error: [BENCH] `{' '.join(cmd)}` failed with status {proc.returncode} (in {cwd})")
    return seconds, usage.ru_maxrss


def ir_of_bitcode(bc):
    return subprocess.run(["llvm-dis", bc, "-o", "-"], check=True, capture_output=True, text=True).stdout


def image_bitcode(image, target, scratch):
    """Extracts the `target` bitcode of an offload image (`host.out`)."""
    bc = os.path.join(scratch, "image.bc")
    if os.path.exists(bc):
        os.remove(bc)
    subprocess.run(["llvm-offload-binary", image, f"--image=file={bc},triple={target}"], check=True)
    return bc


DEFINE = re.compile(r'^define [^@]*@("[^"]+"|[\w.$]+)\(')
REF = re.compile(r'@("[^"]+"|[\w.$]+)')


def analyze_ir(ir):
    """(defined functions, kernels, defined functions that no kernel reaches) of textual IR."""
    bodies, kernels, current = {}, [], None
    for line in ir.splitlines():
        m = DEFINE.match(line)
        if m:
            current = m.group(1)
            bodies[current] = set()
            if "amdgpu_kernel" in line or "ptx_kernel" in line:
                kernels.append(current)
            continue
        if current is not None:
            if line.startswith("}"):
                current = None
            else:
                bodies[current].update(REF.findall(line))
    reached, stack = set(), list(kernels)
    while stack:
        f = stack.pop()
        if f in reached or f not in bodies:
            continue
        reached.add(f)
        stack.extend(bodies[f])
    return len(bodies), len(kernels), len(set(bodies) - reached)


def unrelated_functions(n):
    """Rust source of `n` functions that no kernel uses; every fifth is generic, with a
    non-generic caller so that it is a mono item."""
    out = ["\n/// Generated by bench.py: functions that no kernel reaches.\npub mod unrelated {"]
    for i in range(n):
        if i % 5 == 4:
            out.append(
                f"    pub fn gen_{i}<T: Copy + Into<f64>>(x: &[T]) -> f64 {{\n"
                f"        x.iter().map(|v| (*v).into() * {i}.0).sum()\n    }}\n"
                f"    pub fn use_gen_{i}(x: &[f32]) -> f64 {{\n        gen_{i}(x)\n    }}"
            )
        else:
            out.append(
                f"    pub fn f_{i}(x: &[f32]) -> f32 {{\n"
                f"        x.iter().enumerate().fold(0.0, |acc, (j, v)| acc + v * (j + {i}) as f32)\n    }}"
            )
    out.append("}\n")
    return "\n".join(out)


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        self.env = dict(os.environ, RUSTC_BOOTSTRAP="1")
        self.env.pop("RUSTFLAGS", None)
        self.rustc = {"stock": args.stock, "base": args.ours, "ours": args.ours, "floor": args.ours}
        self.samples = []  # one dict per compilation
        self.images = {}  # (target, mode, input) -> image facts
        self.sources = {}

    def prepare_sources(self):
        src = os.path.join(self.work, "src")
        os.makedirs(src, exist_ok=True)
        with open(self.args.suite) as f:
            suite = f.read()
        self.sources["example"] = ("offload_example", self.args.example)
        for n in SCALING:
            path = os.path.join(src, f"suite_{n}.rs")
            with open(path, "w") as f:
                f.write(suite + (unrelated_functions(n) if n else ""))
            self.sources[f"suite+{n}"] = ("offload_bench_suite", path)

    def host_manifests(self, run_index):
        """Host metadata pass of every crate (host target); returns {input: manifest}."""
        manifests = {}
        for name, (crate, path) in self.sources.items():
            d = os.path.join(self.work, "host", name)
            os.makedirs(d, exist_ok=True)
            manifest = os.path.join(d, "manifest.json")
            cmd = [self.args.ours, path, f"--crate-name={crate}", "--crate-type=rlib", "--edition=2024",
                   "-Copt-level=3", "-Zunstable-options", f"-Zoffload=HostMetadata={manifest}",
                   "--out-dir", d]
            seconds, rss = run(cmd, d, self.env)
            self.samples.append(dict(run=run_index, target="x86_64-unknown-linux-gnu", mode="host-metadata",
                                     input=name, seconds=seconds, max_rss_kib=rss))
            manifests[name] = manifest
        return manifests

    def device_flags(self, mode, target, manifest):
        flags = [f"--target={target}", "-Copt-level=3", "-Ccodegen-units=1", "-Zunstable-options",
                 "--edition=2024", "--crate-type=rlib", "-Cmetadata=bench"]
        if TARGETS[target]:
            flags.append(f"-Ctarget-cpu={TARGETS[target]}")
        if mode == "base":
            flags.append("-Zoffload=Device")
        elif mode == "ours":
            flags.append(f"-Zoffload=Device={manifest}")
        flags.append("--emit=metadata" if mode == "floor" else "--emit=link")
        return flags

    def compile_device(self, run_index, target, mode, name, crate, path, manifest, core_dir):
        d = os.path.join(self.work, "device", target, mode, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        cmd = [self.rustc[mode], path, f"--crate-name={crate}", "--out-dir", d,
               f"--sysroot={os.path.join(self.work, 'empty-sysroot')}"]
        cmd += self.device_flags(mode, target, manifest)
        if crate == "core":
            cmd += ["-Zforce-unstable-if-unmarked"]
        else:
            if mode in ("stock", "base"):
                # The suite's generic kernels as non-generic ones (see suite.rs).
                cmd += ["--cfg", "offload_base"]
            ext = "rmeta" if mode == "floor" else "rlib"
            cmd += ["--extern", f"core={os.path.join(core_dir, 'libcore.' + ext)}", "-L", f"dependency={core_dir}"]
        seconds, rss = run(cmd, d, self.env)
        self.samples.append(dict(run=run_index, target=target, mode=mode, input=name, seconds=seconds,
                                 max_rss_kib=rss))
        if run_index == 0 and mode != "floor":
            self.images[(target, mode, name)] = self.inspect(target, mode, d, cmd)
        return d

    def inspect(self, target, mode, d, cmd):
        """What the device bitcode of one compilation defines."""
        if mode == "stock":
            # No offload image: the crate's own bitcode, from the same command.
            bc_dir = os.path.join(d, "bc")
            os.makedirs(bc_dir)
            bc_cmd = [c for c in cmd if not c.startswith("--emit=")] + ["--emit=llvm-bc"]
            bc_cmd[bc_cmd.index("--out-dir") + 1] = bc_dir
            run(bc_cmd, bc_dir, self.env)
            bcs = [os.path.join(bc_dir, f) for f in os.listdir(bc_dir) if f.endswith(".bc")]
            bc = bcs[0]
        else:
            image = os.path.join(d, "host.out")
            if not os.path.exists(image):
                return dict(functions=0, kernels=0, unreached=0, bytes=0, image=False)
            bc = image_bitcode(image, target, d)
        functions, kernels, unreached = analyze_ir(ir_of_bitcode(bc))
        return dict(functions=functions, kernels=kernels, unreached=unreached, bytes=os.path.getsize(bc),
                    image=mode != "stock")

    def run_all(self):
        os.makedirs(os.path.join(self.work, "empty-sysroot"), exist_ok=True)
        self.prepare_sources()
        for r in range(self.args.runs):
            log(f"run {r + 1} of {self.args.runs}")
            manifests = self.host_manifests(r)
            for target in self.args.targets:
                for mode in MODES:
                    t0 = time.perf_counter()
                    core_dir = self.compile_device(r, target, mode, "core", "core", self.args.core,
                                                   manifests["example"], None)
                    for name, (crate, path) in self.sources.items():
                        self.compile_device(r, target, mode, name, crate, path, manifests[name], core_dir)
                    log(f"  {target} {mode}: {time.perf_counter() - t0:.1f} s")

    # Reporting.

    def median(self, target, mode, name, key="seconds"):
        values = [s[key] for s in self.samples if s["target"] == target and s["mode"] == mode and s["input"] == name]
        return statistics.median(values) if values else None

    def with_core(self, target, mode, name, key="seconds"):
        """Per-run time of `core` + the crate (or the peak RSS of the two), then the median."""
        per_run = []
        for r in range(self.args.runs):
            pick = lambda n: next(s[key] for s in self.samples if s["run"] == r and s["target"] == target
                                  and s["mode"] == mode and s["input"] == n)
            core, crate = pick("core"), pick(name)
            per_run.append(core + crate if key == "seconds" else max(core, crate))
        return statistics.median(per_run)

    def summary(self):
        rows = []
        for target in self.args.targets:
            for label, name in [("(a) core", "core"), ("(b) example + core", "example"),
                                ("(c) suite + core", "suite+0")]:
                row = dict(target=target, input=label)
                for mode in MODES:
                    if name == "core":
                        row[f"{mode}_s"] = self.median(target, mode, "core")
                        row[f"{mode}_rss_mib"] = self.median(target, mode, "core", "max_rss_kib") / 1024
                    else:
                        row[f"{mode}_s"] = self.with_core(target, mode, name)
                        row[f"{mode}_rss_mib"] = self.with_core(target, mode, name, "max_rss_kib") / 1024
                    img = self.images.get((target, mode, name))
                    if img:
                        row[f"{mode}_functions"] = img["functions"]
                        row[f"{mode}_unreached"] = img["unreached"]
                        row[f"{mode}_bytes"] = img["bytes"]
                row["stock/ours"] = row["stock_s"] / row["ours_s"]
                row["base/ours"] = row["base_s"] / row["ours_s"]
                row["ours/floor"] = row["ours_s"] / row["floor_s"]
                rows.append(row)
        scaling = []
        for target in self.args.targets:
            for mode in MODES:
                base_time = self.median(target, mode, "suite+0")
                base_img = self.images.get((target, mode, "suite+0"), {})
                for n in SCALING:
                    name = f"suite+{n}"
                    img = self.images.get((target, mode, name), {})
                    t = self.median(target, mode, name)
                    scaling.append(dict(target=target, mode=mode, unrelated=n, crate_s=t,
                                        delta_s=t - base_time, functions=img.get("functions"),
                                        bytes=img.get("bytes"),
                                        delta_bytes=(img["bytes"] - base_img["bytes"]) if img and base_img else None))
        host = {name: self.median("x86_64-unknown-linux-gnu", "host-metadata", name) for name in self.sources}
        return rows, scaling, host

    def write(self):
        rows, scaling, host = self.summary()
        out = self.args.results
        os.makedirs(out, exist_ok=True)
        meta = dict(
            date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            runs=self.args.runs, cpus=os.cpu_count(),
            stock=subprocess.run([self.args.stock, "-vV"], capture_output=True, text=True).stdout.strip(),
            ours=subprocess.run([self.args.ours, "-vV"], capture_output=True, text=True).stdout.strip(),
            profile="stock: rustup release build (PGO, LTO'd rustc); ours: stage-1 build of config.example.toml "
                    "(optimised, no PGO, debug-assertions off)",
        )
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(dict(meta=meta, summary=rows, scaling=scaling, host_metadata_pass_s=host,
                           images={"|".join(k): v for k, v in self.images.items()}, samples=self.samples),
                      f, indent=1, sort_keys=True)
            f.write("\n")
        with open(os.path.join(out, "results.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        with open(os.path.join(out, "scaling.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(scaling[0].keys()))
            w.writeheader()
            w.writerows(scaling)
        table = self.table(rows, scaling, host, meta)
        with open(os.path.join(out, "table.md"), "w") as f:
            f.write(table)
        print(table)
        self.plot(rows, scaling, os.path.join(out, "results.png"))
        if self.args.update_readme:
            self.update_readme(table)

    def table(self, rows, scaling, host, meta):
        fmt = lambda v: "-" if v is None else f"{v:.2f}"
        lines = [
            f"Device-pass time, median of {meta['runs']} runs, {meta['cpus']} CPUs, {meta['date']} "
            "(`./x.py bench`). Seconds; (b) and (c) include compiling `core` with the same flags, as "
            "`-Zbuild-std=core` does. Functions: defined in the device bitcode (unreached: defined but "
            "reached from no kernel). stock = rustup 1.95.0 without `-Zoffload` (it lacks LLVM offload); "
            "base = ours with bare `-Zoffload=Device`; floor = ours with `--emit=metadata`.",
            "",
            "| target | input | stock s | base s | ours s | floor s | stock/ours | base/ours | ours/floor "
            "| peak MiB stock/base/ours/floor | functions (unreached) stock / base / ours |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            fns = " / ".join(
                f"{r.get(m + '_functions', '-')} ({r.get(m + '_unreached', '-')})" for m in ["stock", "base", "ours"])
            rss = "/".join(f"{r[m + '_rss_mib']:.0f}" for m in MODES)
            lines.append(
                f"| {r['target']} | {r['input']} | {fmt(r['stock_s'])} | {fmt(r['base_s'])} | {fmt(r['ours_s'])} "
                f"| {fmt(r['floor_s'])} | {fmt(r['stock/ours'])} | {fmt(r['base/ours'])} | {fmt(r['ours/floor'])} "
                f"| {rss} | {fns} |")
        lines += ["", "Scaling: the suite's crate alone (its `core` unchanged) with unrelated functions added; "
                      "seconds (change from +0) and device bitcode bytes (change from +0).", "",
                  "| target | mode | +0 s | +1000 s | +5000 s | +0 bytes | +1000 bytes | +5000 bytes |",
                  "|---|---|---|---|---|---|---|---|"]
        for target in self.args.targets:
            for mode in MODES:
                pts = {s["unrelated"]: s for s in scaling if s["target"] == target and s["mode"] == mode}
                t = " | ".join(
                    f"{pts[n]['crate_s']:.2f}" + ("" if n == 0 else f" ({pts[n]['delta_s']:+.2f})") for n in SCALING)
                b = " | ".join(
                    "-" if pts[n]["bytes"] is None else
                    f"{pts[n]['bytes']}" + ("" if n == 0 else f" ({pts[n]['delta_bytes']:+d})") for n in SCALING)
                lines.append(f"| {target} | {mode} | {t} | {b} |")
        lines += ["", "Host metadata pass (host target, once per crate, not part of the device pass): "
                  + ", ".join(f"{k} {v:.2f} s" for k, v in host.items()), ""]
        return "\n".join(lines)

    def plot(self, rows, scaling, path):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            log("matplotlib is not installed in the sysroot: no plot")
            return
        targets = self.args.targets
        fig, axes = plt.subplots(len(targets), 3, figsize=(16, 4.5 * len(targets)), squeeze=False)
        colors = dict(stock="#888888", base="#d62728", ours="#2ca02c", floor="#1f77b4")
        for i, target in enumerate(targets):
            ax = axes[i][0]
            trows = [r for r in rows if r["target"] == target]
            width = 0.2
            for j, mode in enumerate(MODES):
                xs = [k + (j - 1.5) * width for k in range(len(trows))]
                ax.bar(xs, [r[f"{mode}_s"] for r in trows], width, label=mode, color=colors[mode])
            ax.set_xticks(range(len(trows)))
            ax.set_xticklabels([r["input"] for r in trows])
            ax.set_ylabel("device pass, s (median)")
            ax.set_title(f"{target}: device-pass time")
            ax.legend()
            for k, (key, label) in enumerate([("crate_s", "crate time, s"), ("bytes", "device bitcode, bytes")]):
                ax = axes[i][k + 1]
                for mode in MODES:
                    pts = [s for s in scaling if s["target"] == target and s["mode"] == mode and s[key] is not None]
                    if pts:
                        ax.plot([p["unrelated"] for p in pts], [p[key] for p in pts], marker="o", label=mode,
                                color=colors[mode])
                ax.set_xlabel("unrelated functions added to the suite")
                ax.set_ylabel(label)
                ax.set_title(f"{target}: scaling, {label.split(',')[0]}")
                ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        log(f"plot: {path}")

    def update_readme(self, table):
        readme = self.args.update_readme
        with open(readme) as f:
            text = f.read()
        begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
        if begin not in text or end not in text:
            sys.exit(f"error: [BENCH] {readme} has no `{begin}` ... `{end}` block")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        with open(readme, "w") as f:
            f.write(head + begin + "\n" + table + end + tail)
        log(f"updated the table in {readme}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ours", required=True, help="our stage-1 rustc")
    p.add_argument("--stock", required=True, help="the rustup 1.95.0 rustc")
    p.add_argument("--core", required=True, help="library/core/src/lib.rs of the upstream source")
    p.add_argument("--example", required=True)
    p.add_argument("--suite", required=True)
    p.add_argument("--work", required=True, help="scratch folder (emptied)")
    p.add_argument("--results", required=True, help="where results.{json,csv,png} and table.md go")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--targets", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    p.add_argument("--update-readme", metavar="README", help="replace the table between the bench markers")
    args = p.parse_args()
    if args.runs < 1:
        sys.exit("error: [BENCH] --runs must be at least 1")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    bench = Bench(args)
    bench.run_all()
    bench.write()


if __name__ == "__main__":
    main()
