#!/usr/bin/env python3
"""The device-pass benchmark of the offload fork (`./x.py bench`, issue 4).

Runs inside the fork's trixie sysroot (the harness enters it). In one run, on one machine, it
builds, for each GPU target, the device pass of

  (a) `core` alone (with `compiler_builtins`, which every `no_std` crate links),
  (b) the bundled example (`src/offload-example/lib.rs`) with `core`,
  (c) the kernel suite (`src/offload-bench/suite.rs`) with `core`,
  (d) the same suite in the style rustc 1.95 accepts (`src/offload-bench/suite_195.rs`:
      `#[no_mangle] extern "gpu-kernel"` definitions, host `extern "C"` declarations) with
      `core`,

with four compilers/modes side by side:

  stock  the machine's rustup 1.95.0 rustc (same upstream commit, a PGO-optimised release
         build; RUSTC_BOOTSTRAP=1). It is built without LLVM offload and panics on any
         `-Zoffload=Device`, so it runs the same compilation without `-Zoffload`: codegen of
         every mono root for the GPU target, which is what the base device pass does before
         it wraps the bitcode into an offload image.
  base   our stage-1 rustc, bare `-Zoffload=Device` (every mono root; the same binary as
         `ours`, so base/ours isolates our change from build differences).
  ours   our stage-1 rustc, `-Zoffload=Device=<manifest>`; the manifests come from the host
         metadata pass (`cargo check` with `-Zoffload=HostMetadata=<manifest>`), timed on its
         own.
  floor  our stage-1 rustc, `--emit=metadata` only, on the device target: what any device
         pass pays before codegen (parsing, type checking, MIR building).

and, for (d) only, a fifth column, `base-lto`: base as the offload authors configure it, the
1.95-style suite built as a `cdylib` with `lto = "fat"` and `panic = "abort"` (the standard
crates then emit bitcode only, and LTO keeps what the `#[no_mangle]` kernels reach), in a
workspace of its own (`ws-lto`, package `suite_195_lto`, on a copy of `suite_195.rs`), and
`stock-lto`: the same build by stock's compiler and flags (no `-Zoffload`). Stock has no
`llvm-bitcode-linker` (a rustup component it lacks), so on nvptx its `cdylib` is linked by
`-Clinker=` our stage-1 sysroot's, the program that links base-lto's; its image is the LTO'd
module's bitcode (`--emit=llvm-bc` of the `cdylib`, see `rustc_wrapper.py`).

What users get, for (b), (c) and (d) (not (a): it builds no `core`):

  ours-toolchain  ours (the same manifests) with `--sysroot` the toolchain's device sysroot
                  (`--device-sysroot`, default `offload-device-sysroot` beside the stage-1
                  folder of `--ours`: `<cache>/build/<host>/offload-device-sysroot`), whose
                  `core` is built with `-Zalways-encode-mir` and
                  `-Zcross-crate-inline-threshold=always`, and no `-Zbuild-std`: cargo
                  compiles only the root crates, and the time is theirs.

Each mode is one cold `cargo build --release -j1 -Zbuild-std=core --target T` (ours-toolchain:
without `-Zbuild-std`; the floor: `cargo check`, with every crate's `--emit` cut to metadata)
of a workspace holding the example and the suite with 0, 1,000 and 5,000 unrelated functions
appended (every fifth a generic one with a non-generic caller): the scaling series (stock,
base, ours, floor and ours-toolchain). The three suite packages build one crate,
`suite`, under one `-C metadata`, so that their symbols are the same (cargo warns that their
uplifted `libsuite.rlib` collide; the benchmark reads only what each compilation writes).
Profile: opt-level 3, one codegen unit (the
manifest pass implies one; the others get the same), `-j1` so that no two compilations
overlap. `rustc_wrapper.py`, as `RUSTC_WRAPPER`, gives each root crate its own manifest and
records each rustc's wall time and peak resident memory (`wait4`'s `ru_maxrss`). The time of
(a) is the sum over the `core` graph's crates; of (b), (c) and (d), that plus the root crate's,
in the same run (ours-toolchain: the root crate's alone). Every build runs `--runs` times (modes interleaved within a run); reported:
medians, the ratios stock/ours, base/ours, ours/floor, stock/ours-toolchain and (for (d))
stock-lto/ours-toolchain, peak memory, and what the device bitcode defines in the first run
(functions, bytes, and functions that no kernel reaches, from the IR's call graph), summed over
the crates of the build.

Whether each image links (first run, `links` in `results.json`'s images and summary rows, with
the first undefined symbol where it does not): the root crate's image of stock, base, ours and
ours-toolchain, and the `cdylib`'s of base-lto and stock-lto, through `vendor_check`
(`ld.lld --no-undefined`; `ptxas` and `nvlink`). Ours and ours-toolchain must link (their image
is the whole device program); stock's and base's root modules hold only the root crate's code
(they link when they call nothing that `core`'s module defines), so for them, as for the LTO'd
images, it is information. A `results.json` from before this column has each image's `vendor`
outcome, from which `links` is derived.

Kernel quality (`quality.csv`, columns `target, kernel, metric, base, ours, ours_toolchain`):
each kernel of the example, of the suite (without unrelated functions) and of the 1.95-style
suite, as base, ours and ours-toolchain built it in the first run, and of the realistic corpus
of the complete-image tests (`corpus_images`, built apart from the timed runs); each compiled
by the GPU vendors' tools as
the offload runtime would: nvptx `llc -mcpu=sm_90 -O3` then `ptxas -arch=sm_90 -v` (registers,
spill bytes stores plus loads, stack frame bytes); amdgcn `llc -mcpu=gfx90a -O3` (VGPRs, SGPRs, scratch bytes, and the number of ISA
instructions of the kernel's body). Kernels are matched by item and generic arguments (ours:
the manifest's instance text; base: the kernel's name, where `axpy_f32` stands for
`axpy::<f32>`, see `suite.rs`). Base's root module calls what `core` defines in another module
(an external call the tools cannot see into); ours is the whole image.

The edit loop: after the cold builds of a target, one constant of the suite's `jacobi2d`
kernel is edited (`EDIT`) and the device image rebuilt by a warm `cargo build` (only the
suite's crate recompiles; `core` is built, or the toolchain's), for stock, base, ours and
ours-toolchain; ours and ours-toolchain first rerun the host metadata pass (warm `cargo
check`, only the edited crate, incremental as `cargo offload` runs it), since the manifest
records the kernel's definition. For stock-lto, the same constant of the 1.95-style suite's
`jacobi2d` is edited and its fat-LTO `cdylib` rebuilt (`core` built; the LTO and the link are
in the time). Each run edits `--edits` times per mode (5 by default), in rounds that edit once
for each mode in turn (the run's order of the modes), so that the modes are compared in the
same minutes; every edit writes a value that no earlier edit of the loop wrote. A run's time
of a mode is the median of its edits: a single sub-second compilation on a shared machine
varies by half its time. The sources and the manifest are restored afterwards. Each run also
times a plain cold `cargo check` of the same crates on the host (incremental, as in cargo's
dev profile), against the host metadata pass. The report gives the spread of each mode's time
between runs, (max - min) / min.

After the runs, the edit loop of `cargo offload` against plain `cargo build` of the same
program (`edit_loop.py`, `--runs` rounds; `--edit-loop ROUNDS` measures only it): first build,
host edit, kernel edit and run, in the dev and release profiles, for the CPU device alone and
for `gfx90a,sm_90,host`; `edit_loop.json` and `edit_loop.md`, and with `--update-readme FILE`
the `edit-loop` block of FILE (`src/doc/benchmarks.md`).

Writes `results.json` (everything, per run), `results.csv` (medians), `scaling.csv`,
`quality.csv`, `table.md` (the table that `--update-readme FILE` writes into FILE's `bench`
block: `src/doc/benchmarks.md`) and `results.png` (matplotlib, if installed) into
`--results`.
`--from-json results.json` redoes the reports from a previous run's data. `--allocator ROUNDS`
measures only the allocator lever (`allocator.json`: our rustc on the jemalloc it links against
the same binary on glibc's malloc, see `allocator_lever`).
"""

import argparse
import csv
import datetime
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import edit_loop

MODES = ["stock", "base", "ours", "floor"]
# The GPU targets of the device targets' table (`--device-targets`, see `load_device_targets`):
# {triple: its row}, in the table's order. Filled in by `main`.
TARGETS = {}
# The host triple, from the same table.
HOST = None
SCALING = [0, 1000, 5000]
# Input (d): the suite in the 1.95 style.
SUITE_195 = "suite_195"
# The host harness that both suites take in with `include!`, read beside the including file:
# each copy of a suite that the benchmark builds gets a copy of it beside it.
HOST_HARNESS = "host_harness.rs"


def copy_host_harness(suite, folder):
    """Copies the host harness beside `suite` (a suite's path) into `folder`, which holds a copy
    of that suite."""
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(suite)), HOST_HARNESS), folder)


def log(msg):
    print(f"[BENCH] {msg}", flush=True)


def ir_of_bitcode(bc):
    return subprocess.run(["llvm-dis", bc, "-o", "-"], check=True, capture_output=True, text=True).stdout


def image_bitcode(image, target, scratch):
    """Extracts the `target` bitcode of an offload image (`host.out`)."""
    bc = os.path.join(scratch, "image.bc")
    if os.path.exists(bc):
        os.remove(bc)
    subprocess.run(["llvm-offload-binary", image, f"--image=file={bc},triple={target}"], check=True)
    return bc


def load_device_targets(path):
    """Reads the device targets' table that `./x.py bench` writes (`offload_targets::to_json`
    of src/tools/offload-targets) and fills in `TARGETS` (its GPU targets: those whose `core`
    `./x.py build` puts into the GPU sysroot) and `HOST`. Exits with an error when the file is
    missing or not such a table."""
    global HOST
    try:
        with open(path) as f:
            table = json.load(f)
        gpus = {t["triple"]: t for t in table["targets"] if t["in_gpu_sysroot"]}
        keys = ("kind", "default_arch", "library_cpu", "pass_flags", "loadable_extension", "vendor_steps")
        for t in gpus.values():
            for key in keys:
                if key not in t:
                    raise KeyError(f"{t['triple']}: {key}")
            for step in t["vendor_steps"]:
                if not {"tools", "program", "args"} <= step.keys():
                    raise KeyError(f"{t['triple']}: a vendor step without tools, program or args")
        host = table["host_triple"]
    except (OSError, ValueError, TypeError, KeyError) as e:
        # json.JSONDecodeError is a ValueError.
        sys.exit(f"error: [BENCH] --device-targets {path}: not the device targets' table of "
                 f"`offload_targets::to_json`: {e!r}")
    TARGETS.clear()
    TARGETS.update(gpus)
    HOST = host


def expand_arg(arg, arch, files):
    """One argument of the table (`pass_flags`, a vendor step's `args`) for `arch` and the step's
    `files` ({role: path}): `{arch}` in it becomes the arch, a whole `{<role>}` the file, and
    `{opt}` (the optimization level, which the benchmark's checks leave to `llc`) nothing."""
    if arg == "{opt}":
        return []
    if arg.startswith("{") and arg.endswith("}") and arg[1:-1] in files:
        return [files[arg[1:-1]]]
    return [arg.replace("{arch}", arch)]


def device_pass_flags(target):
    """The rustc flags of the benchmark's device passes for `target`: the table's `pass_flags`
    (`-Ctarget-cpu=`) for its `library_cpu`, as the GPU sysroot's `core` is built; none where the
    target has a default CPU."""
    cpu = TARGETS[target]["library_cpu"]
    return [a for arg in TARGETS[target]["pass_flags"] for a in expand_arg(arg, cpu, {})] if cpu else []


def vendor_check(bc, target, cuda_bin, scratch):
    """Runs the GPU vendors' tools on an image's bitcode, as the offload runtime would load it:
    the target's vendor steps of the device targets' table for its default arch (the same
    steps as `vendor_check` in src/tools/run-make-support/src/offload/image.rs): amdgcn
    `llc -mcpu=gfx90a` then `ld.lld -shared --no-undefined`; nvptx `llc -mcpu=sm_90`, then
    `ptxas -arch=sm_90 -c` and `nvlink -arch=sm_90` from `cuda_bin`. Returns None when they
    accept it, else the failing tool and its first line of complaint."""
    out = os.path.join(scratch, "vendor")
    t = TARGETS[target]
    ext = t["loadable_extension"]
    # The files' names: a cubin target's object (`ptxas -c`'s) is `vendor.cubin` and its linked
    # image `vendor.linked.cubin`; a shared object's are `vendor.o` and `vendor.so`.
    files = {"input": bc, "assembly": out + ".ptx",
             "object": out + (".o" if ext == "so" else "." + ext),
             "loadable": out + ("." + ext if ext == "so" else ".linked." + ext)}
    steps = []
    for step in t["vendor_steps"]:
        program = step["program"] if step["tools"] == "llvm" else os.path.join(cuda_bin, step["program"])
        steps.append([program] + [a for arg in step["args"] for a in expand_arg(arg, t["default_arch"], files)])
    for step in steps:
        r = subprocess.run(step, capture_output=True, text=True)
        if r.returncode != 0:
            lines = (r.stderr or r.stdout or "no output").strip().splitlines()
            return f"{os.path.basename(step[0])}: {lines[0] if lines else r.returncode}"
    return None


def link_facts(vendor):
    """(links, first undefined symbol) from `vendor_check`'s outcome as recorded (`"accepted"`
    or its complaint): `"yes"`, `"no"` (with the symbol that `ld.lld` or `nvlink` names, if it
    names one), or None when the image was not checked."""
    if vendor is None:
        return None, None
    if vendor == "accepted":
        return "yes", None
    m = re.search(r"undefined symbol: (.+)$|Undefined reference to '([^']+)'", vendor)
    return "no", (m.group(1) or m.group(2)).strip() if m else None


QUALITY_ROOTS = ["offload_example", "suite_0", SUITE_195]
# The realistic corpus of tests/run-make/offload-manifest-complete, in quality.csv only.
CORPUS_ROOT = "corpus"


def comparable(q, mode="ours"):
    """Whether a quality row holds two counts, base's and `mode`'s (`ours`, `ours_toolchain`;
    not an expression LLVM could not evaluate, nor missing)."""
    return isinstance(q["base"], int) and isinstance(q.get(mode), int)
KERNEL_SYMBOL = re.compile(r"^_offload_kernel_(\w+)_[0-9a-f]{16}$")
BASE_INSTANCE = re.compile(r"^(axpy|scale)_(f32|f64|i32|u32|u64)$")


def kernel_label(symbol, manifest_text=None):
    """The item name and generic arguments of a kernel: `fir`, `axpy::<f32>`. Ours: from the
    manifest's instance text (`suite::axpy::<f32>`); base: from the symbol's item name, where the
    suite's non-generic stand-ins `axpy_f32` name `axpy::<f32>`."""
    if manifest_text and not manifest_text.startswith("extern "):
        path, sep, args = manifest_text.partition("::<")
        return path.rsplit("::", 1)[-1] + (f"::<{args}" if sep else "")
    if manifest_text:
        # A 1.95-style kernel, launched by link name: base defines it under the same name.
        name = manifest_text[len("extern "):]
    else:
        m = KERNEL_SYMBOL.match(symbol)
        name = m.group(1) if m else symbol
    inst = BASE_INSTANCE.match(name)
    return f"{inst.group(1)}::<{inst.group(2)}>" if inst else name


def nvptx_quality(bc, cuda_bin, scratch, arch):
    """{entry symbol: {metric: value}} from `llc -mcpu=<arch> -O3` and `ptxas -arch=<arch> -v`
    (`arch`: the table's default, sm_90)."""
    ptx, cubin = os.path.join(scratch, "q.ptx"), os.path.join(scratch, "q.cubin")
    subprocess.run(["llc", f"-mcpu={arch}", "-O3", bc, "-o", ptx], check=True)
    r = subprocess.run([os.path.join(cuda_bin, "ptxas"), f"-arch={arch}", "-O3", "-v", "-c", ptx, "-o", cubin],
                       capture_output=True, text=True, check=True)
    out, current, entries = {}, None, set()
    for line in (r.stderr + r.stdout).splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            entries.add(m.group(1))
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            current = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current:
            out.setdefault(current, {}).update(stack_bytes=int(m.group(1)),
                                               spill_bytes=int(m.group(2)) + int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            out.setdefault(current, {})["registers"] = int(m.group(1))
    return {k: v for k, v in out.items() if k in entries}


def amdgcn_quality(bc, scratch, arch):
    """{kernel symbol: {metric: value}} from `llc -mcpu=<arch> -O3`'s assembly (`arch`: the
    table's default, gfx90a): the `; Kernel
    info:` block LLVM prints after each kernel (VGPRs, SGPRs, scratch bytes; device functions
    get a `; Function info:` block instead and are left out), and the instructions of its body
    (lines that are neither labels, directives nor comments). A count that LLVM can only give
    as an expression (a kernel that calls a function defined elsewhere) is kept as its text,
    and that kernel's instruction count gets ` + callees`: the comparison reports them as not
    comparable."""
    asm = os.path.join(scratch, "q.s")
    subprocess.run(["llc", f"-mcpu={arch}", "-O3", "--amdhsa-code-object-version=5", bc, "-o", asm], check=True)
    out, kernels, current, in_body = {}, set(), None, False
    with open(asm) as f:
        for line in f:
            m = re.match(r"^([\w.$]+):", line)
            if m and not line.startswith("."):
                current, in_body = m.group(1), True
                out.setdefault(current, dict(instructions=0))
                continue
            if in_body and (line.startswith("\t.section") or line.startswith(".Lfunc_end")):
                in_body = False
            if in_body and re.match(r"^\t[a-z_][a-z0-9_]*\b", line):
                out[current]["instructions"] += 1
            if line.startswith("; Kernel info:") and current:
                kernels.add(current)
            for key, metric in (("TotalNumSgprs", "sgprs"), ("NumVgprs", "vgprs"), ("ScratchSize", "scratch_bytes")):
                m = re.match(rf"^; {key}: (.+)$", line)
                if m and current:
                    value = m.group(1).strip()
                    out[current][metric] = int(value) if value.isdigit() else value
    kernels_out = {k: v for k, v in out.items() if k in kernels}
    for metrics in kernels_out.values():
        # A kernel that calls code defined elsewhere: its instructions are only its own body's,
        # not comparable with a kernel that has that code inlined.
        if any(not isinstance(v, int) for v in metrics.values()):
            metrics["instructions"] = f"{metrics['instructions']} + callees"
    return kernels_out


DEFINE = re.compile(r'^define [^@]*@("[^"]+"|[-\w.$]+)\(')
GLOBAL = re.compile(r'^@("[^"]+"|[-\w.$]+) = ')
REF = re.compile(r'@("[^"]+"|[-\w.$]+)')


def ir_graph(ir):
    """The reference graph of textual IR: {symbol: referenced symbols} for every defined
    function, global variable and alias (a global's initializer, a vtable or a table of
    function pointers, refers to functions too), the set of defined functions and the kernels
    (`amdgpu_kernel` / `ptx_kernel` definitions)."""
    graph, functions, kernels, current = {}, set(), set(), None
    for line in ir.splitlines():
        m = DEFINE.match(line)
        if m:
            current = m.group(1)
            functions.add(current)
            # The define line itself may refer to a personality or prefix data.
            graph[current] = set(REF.findall(line[m.end():]))
            if "amdgpu_kernel" in line or "ptx_kernel" in line:
                kernels.add(current)
            continue
        if current is not None:
            if line.startswith("}"):
                current = None
            else:
                graph[current].update(REF.findall(line))
            continue
        g = GLOBAL.match(line)
        if g:
            graph[g.group(1)] = set(REF.findall(line[g.end():]))
    return graph, functions, kernels


def reach(graphs):
    """(defined functions, kernels, defined functions that no kernel reaches) of the union of
    several modules' graphs, references resolved by name across modules (as linking would)."""
    graph, functions, kernels = {}, set(), set()
    for g, f, k in graphs:
        for name, refs in g.items():
            graph.setdefault(name, set()).update(refs)
        functions |= f
        kernels |= k
    reached, stack = set(), list(kernels)
    while stack:
        name = stack.pop()
        if name in reached or name not in graph:
            continue
        reached.add(name)
        stack.extend(graph[name])
    return len(functions), len(kernels), len(functions - reached)


def analyze_ir(ir):
    """(defined functions, kernels, defined functions that no kernel reaches) of one module."""
    return reach([ir_graph(ir)])


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


# The bundled example, input (b).
EXAMPLE = "offload_example"
ROOTS = [EXAMPLE] + [f"suite_{n}" for n in SCALING] + [SUITE_195]
# The offload authors' configuration of base, for input (d): its package and mode; the same
# build by the stock compiler.
LTO_PACKAGE, LTO_MODE, STOCK_LTO_MODE = "suite_195_lto", "base-lto", "stock-lto"
LTO_MODES = [LTO_MODE, STOCK_LTO_MODE]
# Ours with the toolchain's `core` (the device sysroot), no `-Zbuild-std`: what users get.
TOOLCHAIN_MODE = "ours-toolchain"
# The modes whose images the vendor check links, in the table's order.
LINK_MODES = ["stock", "base", "ours", TOOLCHAIN_MODE] + LTO_MODES
# The host metadata pass of ours-toolchain's edit loop, labelled apart from ours'.
HOST_EDIT = {"ours": "host-metadata-edit", TOOLCHAIN_MODE: "host-metadata-toolchain-edit"}


def same_crate(package):
    """The scaling variants are one crate to rustc: crate `suite` (their `[lib]` name) under one
    `-C metadata` (the wrapper drops cargo's), so that only the unrelated functions differ."""
    return ["-Cmetadata=offload-bench-suite"] if package.startswith("suite_") else []
ROWS = [("(a) core", []), ("(b) example + core", ["offload_example"]), ("(c) suite + core", ["suite_0"]),
        ("(d) 1.95-style suite + core", [SUITE_195])]
# The edit loop's edits: one constant of the suite's `jacobi2d` kernel, each time to a value
# of the same length that no earlier edit of the loop wrote (taken in order, one per mode and
# round), so that every compilation of the loop, incremental or not, sees a real edit.
EDIT = ("0.25 * (input[i - 1][j]", [f"0.{n:02d} * (input[i - 1][j]" for n in range(10, 100) if n != 25])
# The most edits per mode and run (`--edits`).
MAX_EDITS = 8
# The modes with an edit loop.
EDIT_MODES = ["stock", "base", "ours", TOOLCHAIN_MODE, STOCK_LTO_MODE]
assert len(EDIT[1]) >= MAX_EDITS * len(EDIT_MODES), "the edit loop needs a value per mode and round"


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        self.rustc = {"stock": args.stock, "base": args.ours, "ours": args.ours, "floor": args.ours,
                      LTO_MODE: args.ours, STOCK_LTO_MODE: args.stock, TOOLCHAIN_MODE: args.ours}
        # The nvptx linker of base-lto (our stage-1 sysroot's), which stock lacks.
        self.bitcode_linker = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.ours))), "lib",
                                           "rustlib", HOST, "bin", "self-contained",
                                           "llvm-bitcode-linker")
        self.samples = []  # one dict per compilation
        self.images = {}  # (target, mode, crate) -> image facts
        self.ws = os.path.join(self.work, "ws")
        self.ws_lto = os.path.join(self.work, "ws-lto")
        self.manifests = os.path.join(self.work, "manifests")

    def prepare_workspace(self):
        """A cargo workspace with one package per root crate: the example and the suite with
        0, 1,000 and 5,000 unrelated functions."""
        os.makedirs(self.manifests, exist_ok=True)
        with open(self.args.suite) as f:
            suite = f.read()
        sources = {"offload_example": self.args.example, SUITE_195: self.args.suite_195}
        for n in SCALING:
            path = os.path.join(self.ws, "src", f"suite_{n}.rs")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(suite + (unrelated_functions(n) if n else ""))
            sources[f"suite_{n}"] = path
        copy_host_harness(self.args.suite, os.path.join(self.ws, "src"))
        with open(os.path.join(self.ws, "Cargo.toml"), "w") as f:
            members = ", ".join(f'"{c}"' for c in ROOTS)
            f.write(f"[workspace]\nmembers = [{members}]\nresolver = \"2\"\n\n"
                    "[profile.release]\nopt-level = 3\ncodegen-units = 1\ndebug = false\nincremental = false\n")
        for crate, path in sources.items():
            d = os.path.join(self.ws, crate)
            os.makedirs(d, exist_ok=True)
            lib = "suite" if same_crate(crate) else crate
            with open(os.path.join(d, "Cargo.toml"), "w") as f:
                f.write(f'[package]\nname = "{crate}"\nversion = "0.0.0"\nedition = "2024"\n\n'
                        f'[lib]\nname = "{lib}"\npath = "{path}"\ncrate-type = ["rlib"]\n')
        # The offload authors' configuration: the 1.95-style suite as a fat-LTO `cdylib`, on a
        # copy of the source (the edit loop edits it).
        d = os.path.join(self.ws_lto, LTO_PACKAGE)
        os.makedirs(d, exist_ok=True)
        os.makedirs(os.path.join(self.ws_lto, "src"), exist_ok=True)
        shutil.copy(self.args.suite_195, self.lto_source())
        copy_host_harness(self.args.suite_195, os.path.dirname(self.lto_source()))
        with open(os.path.join(self.ws_lto, "Cargo.toml"), "w") as f:
            f.write(f"[workspace]\nmembers = [\"{LTO_PACKAGE}\"]\nresolver = \"2\"\n\n"
                    "[profile.release]\nopt-level = 3\ncodegen-units = 1\ndebug = false\nincremental = false\n"
                    "lto = \"fat\"\npanic = \"abort\"\n")
        with open(os.path.join(d, "Cargo.toml"), "w") as f:
            f.write(f'[package]\nname = "{LTO_PACKAGE}"\nversion = "0.0.0"\nedition = "2024"\n\n'
                    f'[lib]\nname = "{SUITE_195}"\npath = "{self.lto_source()}"\ncrate-type = ["cdylib"]\n')

    def lto_source(self):
        return os.path.join(self.ws_lto, "src", f"{SUITE_195}.rs")

    def cargo(self, run_index, target, mode, verb, flags, build_std, images=None, emit_bc=False,
              warm_from=None, label_target=None, rep=None, incremental=False):
        """One cold `cargo VERB` of the workspace, `-j1` so that compilations do not overlap;
        records every logged rustc invocation as a sample (under `label_target` if given; with
        `rep`, the edit loop's edit it belongs to).
        With `warm_from`, a warm one in the target folder of that earlier mode instead. With
        `incremental`, `CARGO_INCREMENTAL=1` (the host checks, as `cargo offload` runs its host
        metadata pass). The fat-LTO modes build their own workspace."""
        target_dir = os.path.join(self.work, "target", warm_from or mode)
        if not warm_from:
            shutil.rmtree(target_dir, ignore_errors=True)
        log_path = os.path.join(self.work, "rustc.log")
        if os.path.exists(log_path):
            os.remove(log_path)
        # Nothing of the caller's environment may change one mode and not another.
        env = {k: v for k, v in os.environ.items()
               if k not in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "RUSTC_WORKSPACE_WRAPPER", "CARGO_INCREMENTAL",
                            "CARGO_BUILD_JOBS", "CARGO_BUILD_RUSTFLAGS", "RUSTDOCFLAGS")
               and not k.startswith(("CARGO_PROFILE_", "CARGO_TARGET_", "OFFLOAD_BENCH_"))}
        env.update(RUSTC_BOOTSTRAP="1", RUSTC=self.rustc.get(warm_from or mode, self.args.ours),
                   RUSTC_WRAPPER=os.path.join(os.path.dirname(os.path.abspath(__file__)), "rustc_wrapper.py"),
                   CARGO_TARGET_DIR=target_dir, OFFLOAD_BENCH_TARGET=target, OFFLOAD_BENCH_LOG=log_path,
                   OFFLOAD_BENCH_FLAGS=json.dumps(flags),
                   # The rustup toolchain has no rust-src component (and rustup's server is out
                   # of reach): both compilers build `core` from upstream's source, ours with our
                   # patches, stock without them (ours uses built-in macros that stock lacks).
                   __CARGO_TESTS_ONLY_SRC_ROOT=self.library_of(warm_from or mode))
        if incremental:
            env["CARGO_INCREMENTAL"] = "1"
        if mode == "floor":
            env["OFFLOAD_BENCH_EMIT"] = "dep-info,metadata"
        if images:
            shutil.rmtree(images, ignore_errors=True)
            env["OFFLOAD_BENCH_IMAGES"] = images
        if emit_bc:
            env["OFFLOAD_BENCH_EMIT_BC"] = "1"
        cmd = [self.args.cargo, verb, "--release", "-j1", "--target", target, "--workspace"]
        if self.rustc.get(warm_from or mode) == self.args.stock and (warm_from or mode) not in LTO_MODES:
            # The example uses the fork's `core::offload` (its index functions), which stock's
            # `core` lacks: stock builds the other inputs, and row (b) has no stock cells.
            cmd += ["--exclude", EXAMPLE]
        if build_std:
            cmd.append("-Zbuild-std=core")
        out_path = os.path.join(self.work, "cargo.log")
        with open(out_path, "wb") as out:
            ws = self.ws_lto if (warm_from or mode) in LTO_MODES else self.ws
            code = subprocess.run(cmd, cwd=ws, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
        if code != 0:
            with open(out_path, "rb") as f:
                sys.stderr.write(f.read().decode(errors="replace")[-8000:])
            sys.exit(f"error: [BENCH] `{' '.join(cmd)}` ({mode}) failed with status {code} (in {ws})")
        # A warm build with nothing to do runs no rustc and writes no log.
        with open(log_path) if os.path.exists(log_path) else open(os.devnull) as f:
            for line in f:
                entry = json.loads(line)
                sample = dict(run=run_index, target=label_target or target, mode=mode, crate=entry["crate"],
                              seconds=entry["seconds"], max_rss_kib=entry["max_rss_kib"])
                if rep is not None:
                    sample["rep"] = rep
                self.samples.append(sample)

    def library_of(self, mode):
        """The `library/` whose `core` `-Zbuild-std` builds for `mode`: upstream's for the stock
        compiler (`--stock-library`), the tree's, with our patches, for ours."""
        if self.rustc.get(mode, self.args.ours) == self.args.stock:
            return self.args.stock_library or os.path.join(self.args.tree, "library")
        return os.path.join(self.args.tree, "library")

    def device_flags(self, target, mode):
        common = ["-Zunstable-options"] + device_pass_flags(target)
        if mode in ("base", LTO_MODE):
            common.append("-Zoffload=Device")
        if mode == TOOLCHAIN_MODE:
            # `core` from the toolchain, as `cargo offload` builds a device pass.
            common += ["--sysroot", self.args.device_sysroot]
        flags = {"*": list(common)}
        nvptx = TARGETS[target]["kind"] == "nvptx"
        if mode == STOCK_LTO_MODE and nvptx and os.path.exists(self.bitcode_linker):
            flags[LTO_PACKAGE] = list(common) + [f"-Clinker={self.bitcode_linker}"]
        for crate in ROOTS:
            flags[crate] = list(common) + same_crate(crate)
            if mode in ("stock", "base"):
                # The suite's generic kernels as non-generic ones (see suite.rs).
                flags[crate] += ["--cfg", "offload_base"]
            if mode in ("ours", TOOLCHAIN_MODE):
                flags[crate].append(f"-Zoffload=Device={os.path.join(self.manifests, crate + '.json')}")
        if mode == "ours":
            # `core` and `compiler_builtins` are in every root's graph: no roots, MIR for all.
            flags["*"].append(f"-Zoffload=Device={os.path.join(self.manifests, 'offload_example.json')}")
        return flags

    def host_metadata_flags(self):
        return {c: ["-Zunstable-options", f"-Zoffload=HostMetadata={os.path.join(self.manifests, c + '.json')}"]
                + same_crate(c) for c in ROOTS}

    def edit_loop(self, r, target, modes):
        """The edit loop of `target`, after the cold builds of every mode of `modes` (those of
        `EDIT_MODES`, in the run's order): `--edits` rounds, each of which edits the kernel
        (`EDIT`; stock-lto: in the 1.95-style suite's copy) once for each mode in turn and
        rebuilds that mode's image warm (`core` is built, or the toolchain's), so that every
        mode's edits fall in the same minutes. For ours and ours-toolchain, the host metadata
        pass of the edited crate (incremental, in one target folder for both) runs first, since
        the manifest records the kernel's definition. Samples `<mode>-edit` (and
        `HOST_EDIT[mode]`, labelled with the device target), with the round as `rep`. The
        sources and the manifest are restored afterwards."""
        host = HOST
        paths = {mode: self.lto_source() if mode == STOCK_LTO_MODE else os.path.join(self.ws, "src", "suite_0.rs")
                 for mode in modes}
        originals = {}
        for path in set(paths.values()):
            with open(path) as f:
                originals[path] = f.read()
            if EDIT[0] not in originals[path]:
                sys.exit(f"error: [BENCH] the edit loop's kernel line `{EDIT[0]}` is not in {path}")
        values = iter(EDIT[1])
        try:
            for rep in range(self.args.edits):
                for mode in modes:
                    with open(paths[mode], "w") as f:
                        f.write(originals[paths[mode]].replace(EDIT[0], next(values), 1))
                    if mode in HOST_EDIT:
                        self.cargo(r, host, HOST_EDIT[mode], "check", self.host_metadata_flags(), build_std=False,
                                   warm_from="host-metadata", label_target=target, rep=rep, incremental=True)
                    self.cargo(r, target, f"{mode}-edit", "build", self.device_flags(target, mode),
                               build_std=(mode != TOOLCHAIN_MODE), emit_bc=(mode == "stock"), warm_from=mode,
                               rep=rep)
        finally:
            for path, original in originals.items():
                with open(path, "w") as f:
                    f.write(original)
        if any(mode in HOST_EDIT for mode in modes):
            # The manifest of the unedited source again, for the builds that follow.
            self.cargo(r, host, "host-metadata-restore", "check", self.host_metadata_flags(), build_std=False,
                       warm_from="host-metadata", incremental=True)

    def run_all(self):
        for target in self.args.targets:
            lib = os.path.join(self.args.device_sysroot, "lib", "rustlib", target, "lib")
            if not os.path.isdir(lib):
                sys.exit(f"error: [BENCH] the device sysroot has no `core` for {target} ({lib} is missing): "
                         "build the toolchain (`./x.py build`) or pass --device-sysroot")
        self.prepare_workspace()
        host = HOST
        for r in range(self.args.runs):
            log(f"run {r + 1} of {self.args.runs}")
            # The host metadata pass writes each root's manifest (`cargo check`, as documented).
            self.cargo(r, host, "host-metadata", "check", self.host_metadata_flags(), build_std=False,
                       incremental=True)
            # The same crates through a plain `cargo check` (incremental, as in cargo's dev
            # profile): what the host metadata pass costs over what a developer runs anyway.
            self.cargo(r, host, "check", "check", {c: same_crate(c) for c in ROOTS}, build_std=False,
                       incremental=True)
            for target in self.args.targets:
                # The order of the modes turns by one each run, so that none is always first.
                modes = MODES + LTO_MODES + [TOOLCHAIN_MODE]
                for mode in modes[r % len(modes):] + modes[:r % len(modes)]:
                    t0 = time.perf_counter()
                    images = os.path.join(self.work, "images", target, mode) if r == 0 and mode != "floor" else None
                    self.cargo(r, target, mode, "check" if mode == "floor" else "build",
                               self.device_flags(target, mode), build_std=(mode != TOOLCHAIN_MODE), images=images,
                               emit_bc=(mode in ("stock", STOCK_LTO_MODE)))
                    if images:
                        self.inspect(target, mode, images)
                    log(f"  {target} {mode}: {time.perf_counter() - t0:.1f} s")
                t0 = time.perf_counter()
                self.edit_loop(r, target, [m for m in modes[r % len(modes):] + modes[:r % len(modes)]
                                           if m in EDIT_MODES])
                log(f"  {target} edit loop: {time.perf_counter() - t0:.1f} s")

    def inspect(self, target, mode, images):
        """What each crate's device code defines (run 0), and what the builds of the table's
        rows define together: the union of their crates' modules, a function of `core`'s module
        that a kernel of the root's module calls counting as reached."""
        crates = {s["crate"] for s in self.samples if s["target"] == target and s["mode"] == mode}
        graphs = {}
        for crate in sorted(crates):
            if mode in ("stock", STOCK_LTO_MODE):
                bc = os.path.join(images, f"{crate}.bc")
            else:
                image = os.path.join(images, f"{crate}.host.out")
                bc = image_bitcode(image, target, images) if os.path.exists(image) else None
            if not bc or not os.path.exists(bc):
                # No image: with a manifest, `core` and its companions codegen nothing.
                if crate in ROOTS + [LTO_PACKAGE] and mode in LINK_MODES:
                    sys.exit(f"error: [BENCH] {target} {mode}: crate `{crate}` left no device code in {images}")
                self.images[(target, mode, crate)] = None
                continue
            graphs[crate] = ir_graph(ir_of_bitcode(bc))
            functions, kernels, unreached = reach([graphs[crate]])
            with open(bc, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            vendor = None
            if crate in ROOTS + [LTO_PACKAGE] and self.args.cuda_bin:
                # Whether the GPU vendors' tools accept (link) the image. Ours must, with either
                # `core`: it is the whole device program. Stock's and base's root modules need
                # not be (their `core` lies in another module), so for them this is information,
                # not a requirement; nor is it for the fat-LTO images, though LTO made them whole.
                vendor = vendor_check(bc, target, self.args.cuda_bin, images) or "accepted"
                log(f"  {target} {mode} {crate}: vendor tools: {vendor}")
                if mode in ("ours", TOOLCHAIN_MODE) and vendor != "accepted":
                    sys.exit(f"error: [BENCH] {target} {mode}: the image of `{crate}` fails the vendor check: {vendor}")
            links, undefined = link_facts(vendor)
            self.images[(target, mode, crate)] = dict(functions=functions, kernels=kernels, unreached=unreached,
                                                      bytes=os.path.getsize(bc), sha256=digest, vendor=vendor,
                                                      links=links, undefined=undefined)
        if mode in LTO_MODES:
            # What fat LTO left in the `cdylib`'s image is the device program; the standard
            # crates' images are the bitcode that LTO read.
            if LTO_PACKAGE in graphs:
                self.images[(target, mode, "row:" + ROWS[-1][0])] = self.images[(target, mode, LTO_PACKAGE)]
            return
        for label, roots in ROWS:
            members = [c for c in self.crates(target, mode, roots) if c in graphs]
            if not members:
                continue
            functions, kernels, unreached = reach([graphs[c] for c in members])
            self.images[(target, mode, "row:" + label)] = dict(
                functions=functions, kernels=kernels, unreached=unreached,
                bytes=sum(self.images[(target, mode, c)]["bytes"] for c in members))

    # Reporting.

    def crates(self, target, mode, roots):
        """The crates of a build of `roots`: the `core` graph (every crate but the roots) and
        the given roots."""
        all_crates = {s["crate"] for s in self.samples if s["target"] == target and s["mode"] == mode}
        if roots and not any(r in all_crates for r in roots):
            # A mode that did not build the row's root (stock and the example) has no cells.
            return []
        return sorted(c for c in all_crates if c not in ROOTS or c in roots)

    def per_run(self, target, mode, crates, key):
        """The per-run total time (or peak RSS) of `crates`, for each run that built them; a run
        that built them several times (the edit loop's edits, `rep`) gives the median of those."""
        per_run = []
        for r in range(self.args.runs):
            reps = {}
            for s in self.samples:
                if s["run"] == r and s["target"] == target and s["mode"] == mode and s["crate"] in crates:
                    reps.setdefault(s.get("rep", 0), []).append(s[key])
            if reps:
                per_run.append(statistics.median(sum(v) if key == "seconds" else max(v) for v in reps.values()))
        return per_run

    def measure(self, target, mode, crates, key):
        """Median over runs of the per-run total time (or peak RSS) of `crates`."""
        per_run = self.per_run(target, mode, crates, key)
        return statistics.median(per_run) if per_run else None

    def spread(self, target, mode, crates):
        """(min, max) over runs of the per-run total time of `crates`, or None."""
        per_run = self.per_run(target, mode, crates, "seconds")
        return (min(per_run), max(per_run)) if per_run else None

    def image_facts(self, target, mode, crates, label):
        row = self.images.get((target, mode, "row:" + label))
        if row:
            return row
        facts = [self.images[(target, mode, c)] for c in crates if self.images.get((target, mode, c))]
        if not facts:
            return None
        return {k: sum(f[k] for f in facts) for k in ["functions", "kernels", "unreached", "bytes"]}

    def summary(self):
        rows = []
        for target in self.args.targets:
            for label, roots in ROWS:
                row = dict(target=target, input=label)
                # Ours-toolchain builds no `core`: for (a) it has no crates, and its cells are empty.
                for mode in MODES + [TOOLCHAIN_MODE]:
                    crates = self.crates(target, mode, roots)
                    row[f"{mode}_crates"] = " ".join(crates)
                    row[f"{mode}_s"] = self.measure(target, mode, crates, "seconds")
                    rss = self.measure(target, mode, crates, "max_rss_kib")
                    row[f"{mode}_rss_mib"] = rss / 1024 if rss is not None else None
                    img = self.image_facts(target, mode, crates, label)
                    if img:
                        row[f"{mode}_functions"] = img["functions"]
                        row[f"{mode}_kernels"] = img["kernels"]
                        # The stock compiler marks no kernel entry points: reachability from
                        # kernels cannot be computed for it.
                        row[f"{mode}_unreached"] = img["unreached"] if mode != "stock" else None
                        row[f"{mode}_bytes"] = img["bytes"]
                # The fat-LTO configurations build only input (d), in a workspace of their own.
                lto_crates = {}
                for mode in LTO_MODES:
                    crates = lto_crates[mode] = self.crates(target, mode, []) if roots == [SUITE_195] else []
                    row[f"{mode}_crates"] = " ".join(crates)
                    row[f"{mode}_s"] = self.measure(target, mode, crates, "seconds") if crates else None
                    rss = self.measure(target, mode, crates, "max_rss_kib") if crates else None
                    row[f"{mode}_rss_mib"] = rss / 1024 if rss is not None else None
                    img = self.images.get((target, mode, "row:" + label)) if crates else None
                    if img:
                        for key in ("functions", "kernels", "unreached", "bytes"):
                            row[f"{mode}_{key}"] = img[key]
                for mode in MODES + LTO_MODES + [TOOLCHAIN_MODE]:
                    row[f"{mode}_spread"] = self.spread(target, mode, lto_crates[mode] if mode in LTO_MODES
                                                        else self.crates(target, mode, roots))
                # Whether the image links: the root crate's, or the `cdylib`'s (see `inspect`).
                for mode in LINK_MODES:
                    crate = (LTO_PACKAGE if roots == [SUITE_195] else None) if mode in LTO_MODES else (
                        roots[0] if roots else None)
                    facts = self.images.get((target, mode, crate)) if crate else None
                    row[f"{mode}_links"], row[f"{mode}_undefined"] = link_facts(facts.get("vendor") if facts else None)
                ratio = lambda a, b: a / b if a is not None and b else None
                row[f"{LTO_MODE}/ours"] = ratio(row[f"{LTO_MODE}_s"], row["ours_s"])
                row["stock/ours"] = ratio(row["stock_s"], row["ours_s"])
                row["base/ours"] = ratio(row["base_s"], row["ours_s"])
                row["ours/floor"] = ratio(row["ours_s"], row["floor_s"])
                toolchain_s = row[f"{TOOLCHAIN_MODE}_s"]
                row[f"stock/{TOOLCHAIN_MODE}"] = ratio(row["stock_s"], toolchain_s)
                row[f"{STOCK_LTO_MODE}/{TOOLCHAIN_MODE}"] = ratio(row[f"{STOCK_LTO_MODE}_s"], toolchain_s)
                rows.append(row)
        scaling = []
        for target in self.args.targets:
            for mode in MODES + [TOOLCHAIN_MODE]:
                t0 = self.measure(target, mode, ["suite_0"], "seconds")
                img0 = self.images.get((target, mode, "suite_0"))
                for n in SCALING:
                    crate = f"suite_{n}"
                    t = self.measure(target, mode, [crate], "seconds")
                    img = self.images.get((target, mode, crate))
                    scaling.append(dict(target=target, mode=mode, unrelated=n, crate_s=t,
                                        delta_s=(t - t0) if t is not None and t0 is not None else None,
                                        functions=img["functions"] if img else None,
                                        delta_functions=(img["functions"] - img0["functions"]) if img and img0 else None,
                                        bytes=img["bytes"] if img else None,
                                        delta_bytes=(img["bytes"] - img0["bytes"]) if img and img0 else None,
                                        same_bitcode=(img.get("sha256") == img0.get("sha256"))
                                        if img and img0 and img.get("sha256") else None))
        host = {c: self.measure(HOST, "host-metadata", [c], "seconds") for c in ROOTS}
        check = {c: self.measure(HOST, "check", [c], "seconds") for c in ROOTS}
        edit = []
        for target in self.args.targets:
            row = dict(target=target)
            for mode in ("stock", "base", "ours", "host-metadata", TOOLCHAIN_MODE, "host-metadata-toolchain",
                         STOCK_LTO_MODE):
                key = f"{mode}-edit"
                crates = sorted({s["crate"] for s in self.samples if s["target"] == target and s["mode"] == key})
                row[f"{mode}_s"] = self.measure(target, key, crates, "seconds") if crates else None
                row[f"{mode}_crates"] = " ".join(crates)
            for mode, host_pass in (("ours", "host-metadata"), (TOOLCHAIN_MODE, "host-metadata-toolchain")):
                if row[f"{mode}_s"] is not None and row[f"{host_pass}_s"] is not None:
                    row[f"{mode}_total_s"] = row[f"{mode}_s"] + row[f"{host_pass}_s"]
            edit.append(row)
        self.host_check, self.edit_rows = check, edit
        return rows, scaling, host

    def corpus_images(self, target):
        """The realistic corpus of the complete-image tests (`corpus.rs` and its dependency
        `devlib.rs`, in `--corpus`), through the host metadata pass and then the device passes
        of base (`--cfg offload_base`: its generic kernel's two instances as non-generic
        kernels), ours and ours-toolchain (`--sysroot` the device sysroot, if it has the
        target), for `target`, as that test builds them: opt-level 3, `core` from our sysroot
        (built with `-Zalways-encode-mir` and `-Zcross-crate-inline-threshold=always`), one codegen
        unit. Not timed. Returns ({mode: image}, manifest). Raises ValueError, naming the
        compilation, if one fails."""
        work = os.path.join(self.work, "corpus", target)
        shutil.rmtree(work, ignore_errors=True)
        host = os.path.join(work, "host")
        os.makedirs(host)
        manifest = os.path.join(work, "corpus.json")
        devlib, corpus = (os.path.join(self.args.corpus, f) for f in ("devlib.rs", "corpus.rs"))

        def rustc(args):
            done = subprocess.run([self.args.ours] + args, env=dict(os.environ, RUSTC_BOOTSTRAP="1"),
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise ValueError(f"corpus: `rustc {' '.join(args)}` failed:\n{done.stderr[-3000:]}")

        common = ["--edition", "2024", "-Zunstable-options"]
        host_pass = common + ["--out-dir", host, "--emit=metadata", f"-Zoffload=HostMetadata={manifest}"]
        rustc(host_pass + ["--crate-type", "rlib", devlib, "-Cmetadata=devlib-host"])
        rustc(host_pass + ["--crate-type", "lib", corpus, "-Cmetadata=corpus-host",
                           "--extern", f"devlib={os.path.join(host, 'libdevlib.rmeta')}"])
        images = {}
        modes = [("base", ["-Zoffload=Device", "--cfg", "offload_base"]), ("ours", [f"-Zoffload=Device={manifest}"])]
        if os.path.isdir(os.path.join(self.args.device_sysroot, "lib", "rustlib", target, "lib")):
            modes.append((TOOLCHAIN_MODE, [f"-Zoffload=Device={manifest}", "--sysroot", self.args.device_sysroot]))
        for mode, flags in modes:
            out = os.path.join(work, mode)
            os.makedirs(out)
            # One codegen unit, as the benchmark's builds: base writes one image per module,
            # and with several the last one written would hold only some of the kernels.
            device = common + ["--target", target, "-Copt-level=3", "-Ccodegen-units=1", "--out-dir", out,
                               "-L", out] + flags + device_pass_flags(target)
            rustc(device + ["--crate-type", "rlib", devlib, "-Cmetadata=devlib-device"])
            # Base writes an image per crate; the root's, written last, holds the kernels.
            rustc(device + ["--crate-type", "lib", corpus, "-Cmetadata=corpus-device",
                            "--extern", f"devlib={os.path.join(out, 'libdevlib.rlib')}"])
            images[mode] = os.path.join(out, "host.out")
        return images, manifest

    def quality(self):
        """Rows `target, kernel, metric, base, ours, ours_toolchain` for each kernel of the
        quality roots that base and ours built (see the module documentation), and of the
        realistic corpus (`corpus_images`); ours_toolchain is empty where it has no image (a
        run before it existed). The roots are left out when the first run's images are gone."""
        rows = []
        quality_modes = ("base", "ours", TOOLCHAIN_MODE)
        for target in self.args.targets:
            sources = [(root, {mode: os.path.join(self.work, "images", target, mode, f"{root}.host.out")
                               for mode in quality_modes}, os.path.join(self.manifests, f"{root}.json"))
                       for root in QUALITY_ROOTS]
            if self.args.corpus:
                try:
                    sources.append((CORPUS_ROOT,) + self.corpus_images(target))
                except ValueError as e:
                    log(f"kernel quality: {target} {CORPUS_ROOT}: left out: {e}")
            for root, mode_images, manifest in sources:
                by_mode = {}
                for mode in quality_modes:
                    image = mode_images.get(mode)
                    if not image or not os.path.exists(image):
                        continue
                    images = os.path.dirname(image)
                    bc = image_bitcode(image, target, images)
                    arch = TARGETS[target]["default_arch"]
                    if TARGETS[target]["kind"] == "nvptx":
                        if not self.args.cuda_bin:
                            break
                        metrics = nvptx_quality(bc, self.args.cuda_bin, images, arch)
                    else:
                        metrics = amdgcn_quality(bc, images, arch)
                    texts = {}
                    if mode != "base":
                        with open(manifest) as f:
                            texts = {k["symbol"]: k["kernel"] for k in json.load(f)["kernels"]}
                    by_mode[mode] = {kernel_label(sym, texts.get(sym)): m for sym, m in metrics.items()}
                if "base" not in by_mode or "ours" not in by_mode:
                    log(f"kernel quality: {target} {root}: no image of base or ours, or no ptxas; left out")
                    continue
                for mode, other in (("base", "ours"), ("ours", "base"), (TOOLCHAIN_MODE, "ours")):
                    missing = sorted(set(by_mode[other]) - set(by_mode.get(mode, by_mode[other])))
                    if missing:
                        log(f"kernel quality: {target} {root}: {mode} has no kernel {', '.join(missing)}")
                toolchain = by_mode.get(TOOLCHAIN_MODE, {})
                for kernel in sorted(set(by_mode["base"]) & set(by_mode["ours"])):
                    base, ours = by_mode["base"][kernel], by_mode["ours"][kernel]
                    for metric in sorted(set(base) & set(ours)):
                        rows.append(dict(target=target, kernel=f"{root}::{kernel}", metric=metric,
                                         base=base[metric], ours=ours[metric],
                                         ours_toolchain=toolchain.get(kernel, {}).get(metric)))
        return rows

    def write(self):
        rows, scaling, host = self.summary()
        out = self.args.results
        os.makedirs(out, exist_ok=True)
        try:
            quality = self.quality()
        except (OSError, subprocess.CalledProcessError, ValueError, KeyError) as e:
            # The timing results stay; the quality report says why it is missing.
            log(f"kernel quality: not measured: {e}")
            quality = []
        if quality:
            with open(os.path.join(out, "quality.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=["target", "kernel", "metric", "base", "ours", "ours_toolchain"])
                w.writeheader()
                w.writerows(quality)
            for mode in ("ours", "ours_toolchain"):
                worse = [q for q in quality if comparable(q, mode) and q[mode] > q["base"]]
                log(f"kernel quality: {len(quality)} rows, {len({(q['target'], q['kernel']) for q in quality})} "
                    f"kernels, {mode} worse than base in {len(worse)}: "
                    + ", ".join(f"{q['target'].split('-')[0]} {q['kernel']} {q['metric']} {q['base']}->{q[mode]}"
                                for q in worse))
        self.quality_rows = quality
        meta = getattr(self, "meta", None) or dict(
            date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            runs=self.args.runs, edits=self.args.edits, cpus=os.cpu_count(),
            # How the edit loop ran (absent in runs before both): one mode's edits after
            # another, or interleaved; the host checks incremental or not.
            edit_loop="interleaved", host_checks_incremental=True,
            stock=subprocess.run([self.args.stock, "-vV"], capture_output=True, text=True).stdout.strip(),
            ours=subprocess.run([self.args.ours, "-vV"], capture_output=True, text=True).stdout.strip(),
            profile="stock: rustup release build (PGO, LTO'd rustc); ours: stage-1 build of config.example.toml "
                    "(optimised, no PGO, debug-assertions off)",
        )
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(dict(meta=meta, summary=rows, scaling=scaling, host_metadata_pass_s=host,
                           plain_check_s=self.host_check, edit_loop=self.edit_rows,
                           images={"|".join(k): v for k, v in self.images.items()}, samples=self.samples),
                      f, indent=1, sort_keys=True)
            f.write("\n")
        with open(os.path.join(out, "results.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
            w.writeheader()
            w.writerows(rows)
        with open(os.path.join(out, "scaling.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in scaling for k in r)))
            w.writeheader()
            w.writerows(scaling)
        table = self.table(rows, scaling, host, meta)
        with open(os.path.join(out, "table.md"), "w") as f:
            f.write(table)
        print(table)
        self.plot(rows, scaling, os.path.join(out, "results.png"))
        log(f"wrote results.json, results.csv, scaling.csv, table.md and results.png in {out}")
        if self.args.update_readme:
            self.update_readme(table)

    def table(self, rows, scaling, host, meta):
        fmt = lambda v, f="{:.2f}": "-" if v is None else f.format(v)
        trio = lambda r, key, modes=("stock", "base", "ours"): " / ".join(fmt(r.get(f"{m}_{key}"), "{}") for m in modes)
        lines = [
            f"Device-pass time, median of {meta['runs']} run{'s' if meta['runs'] != 1 else ''}, "
            f"{meta['cpus']} CPUs, {meta['date']} "
            "(`./x.py bench`): cold `cargo build --release -j1 -Zbuild-std=core` (the floor: `cargo check` "
            "with every crate's `--emit` cut to metadata), opt-level 3, one codegen unit. Seconds of rustc: "
            "(a) is `core` and `compiler_builtins`; (b), (c) and (d) add the root crate. stock = rustup 1.95.0 "
            "(its own PGO-built LLVM) without `-Zoffload`, which it lacks; base = ours (stage 1, Debian's "
            "LLVM 22) with bare `-Zoffload=Device`; ours = `-Zoffload=Device=<manifest>`, which builds no "
            "code for `core` (metadata with every function's optimized MIR; what "
            "the kernels reach is codegened in the root crate), so (a) is not the same work for ours; "
            "floor = ours with `--emit=metadata`; base-lto (input (d) only) = base as the offload authors "
            "configure it: the 1.95-style suite as a `cdylib` with `lto = \"fat\"` and `panic = \"abort\"` "
            "(the standard crates emit bitcode only; its functions and bytes are the LTO'd image's). "
            "stock and base build the suite with `--cfg offload_base` (its four launched generic "
            "instances as non-generic kernels). stock builds upstream's `core` (without the fork's "
            "patches) and not the example, which uses the fork's `core::offload`: (b) has no stock cells. "
            "What users get: ours-toolchain ((b), (c) and (d)) = ours "
            "with `core` from the toolchain's device sysroot (`--sysroot`, built with `-Zalways-encode-mir` and "
            "`-Zcross-crate-inline-threshold=always`) "
            "and no `-Zbuild-std`, so its seconds are the root crate's alone; stock-lto ((d)) = stock "
            "building base-lto's `cdylib` (on nvptx linked by our `llvm-bitcode-linker`, which rustup's "
            "1.95.0 lacks; its functions and bytes are the LTO'd module's). The host metadata pass that "
            "ours and ours-toolchain need is not in these times (below). Device code, first run: functions "
            "defined by the crates' bitcode together, "
            "unreached = reached from no kernel through calls or globals (not computable for stock, "
            "which marks no kernels), bytes of bitcode. links = whether the vendors' tools link the root "
            "crate's image (the `cdylib`'s for base-lto and stock-lto) with no undefined symbol (`ld.lld "
            "--no-undefined`; `ptxas` and `nvlink`); stock's and base's root modules hold only the root "
            "crate's code, and link when they call nothing that `core`'s module defines.",
            "",
            "| target | input | stock s | base s | ours s | floor s | base-lto s | stock/ours | base/ours "
            "| base-lto/ours | ours/floor | peak MiB stock/base/ours/floor | functions stock/base/ours "
            "| unreached base/ours | bitcode bytes stock/base/ours | kernels ours | base-lto functions / bytes "
            "| ours-toolchain s | stock-lto s | stock/ours-toolchain | stock-lto/ours-toolchain "
            "| ours-toolchain functions / bytes | stock-lto functions / bytes "
            "| links stock/base/ours/ours-toolchain/base-lto/stock-lto |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        pair = lambda r, m: "-" if r.get(f"{m}_functions") is None else f"{r[f'{m}_functions']} / {r[f'{m}_bytes']}"
        for r in rows:
            rss = "/".join(fmt(r.get(m + "_rss_mib"), "{:.0f}") for m in MODES)
            links = "/".join(fmt(r.get(f"{m}_links"), "{}") for m in LINK_MODES)
            lines.append(
                f"| {r['target']} | {r['input']} | {fmt(r['stock_s'])} | {fmt(r['base_s'])} | {fmt(r['ours_s'])} "
                f"| {fmt(r['floor_s'])} | {fmt(r.get(f'{LTO_MODE}_s'))} | {fmt(r['stock/ours'])} "
                f"| {fmt(r['base/ours'])} | {fmt(r.get(f'{LTO_MODE}/ours'))} | {fmt(r['ours/floor'])} "
                f"| {rss} | {trio(r, 'functions')} | {trio(r, 'unreached', ('base', 'ours'))} "
                f"| {trio(r, 'bytes')} | {fmt(r.get('ours_kernels'), '{}')} | {pair(r, LTO_MODE)} "
                f"| {fmt(r.get(f'{TOOLCHAIN_MODE}_s'))} | {fmt(r.get(f'{STOCK_LTO_MODE}_s'))} "
                f"| {fmt(r.get(f'stock/{TOOLCHAIN_MODE}'))} | {fmt(r.get(f'{STOCK_LTO_MODE}/{TOOLCHAIN_MODE}'))} "
                f"| {pair(r, TOOLCHAIN_MODE)} | {pair(r, STOCK_LTO_MODE)} | {links} |")
        spread = lambda r, m: "-" if not r.get(f"{m}_spread") else "{:.2f}-{:.2f} ({:.0%})".format(
            r[f"{m}_spread"][0], r[f"{m}_spread"][1], (r[f"{m}_spread"][1] - r[f"{m}_spread"][0]) / r[f"{m}_spread"][0])
        lines += ["", f"Spread between the runs ({meta['runs']}): each mode's fastest and slowest run, seconds, and "
                      "(max - min) / min.", "",
                  "| target | input | stock | base | ours | floor | base-lto | stock-lto | ours-toolchain |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['target']} | {r['input']} | "
                         + " | ".join(spread(r, m) for m in MODES + LTO_MODES + [TOOLCHAIN_MODE]) + " |")
        lines += ["", "Scaling: the suite's crate alone (its `core` unchanged) with 1,000 or 5,000 unrelated "
                      "functions appended, the three variants one crate to rustc (`suite`, one `-C metadata`): "
                      "rustc seconds, functions defined and bitcode bytes (change from +0), and whether the "
                      "bitcode is byte-identical to +0's.", "",
                  "| target | mode | +0 s | +1000 s | +5000 s | +0 functions | +1000 | +5000 | +0 bytes | +1000 | +5000 "
                  "| identical bitcode +1000/+5000 |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for target in self.args.targets:
            for mode in MODES + [TOOLCHAIN_MODE]:
                pts = {s["unrelated"]: s for s in scaling if s["target"] == target and s["mode"] == mode}
                cell = lambda n, key, delta, f: fmt(pts[n][key], f) + (
                    "" if n == 0 or pts[n][delta] is None else " (" + f.replace("{", "{:+").replace("{:+:", "{:+").format(pts[n][delta]) + ")")
                t = " | ".join(cell(n, "crate_s", "delta_s", "{:.2f}") for n in SCALING)
                fn = " | ".join(cell(n, "functions", "delta_functions", "{}") for n in SCALING)
                b = " | ".join(cell(n, "bytes", "delta_bytes", "{}") for n in SCALING)
                same = "/".join({True: "yes", False: "no", None: "-"}[pts[n]["same_bitcode"]] for n in SCALING[1:])
                lines.append(f"| {target} | {mode} | {t} | {fn} | {b} | {same} |")
        check = getattr(self, "host_check", {})
        incremental = " incremental" if meta.get("host_checks_incremental") else ""
        lines += ["", f"Host metadata pass (cold{incremental} `cargo check`, host target, per root crate; ours "
                  "needs it once per change of the host code, not per device target), against a plain cold"
                  f"{incremental} `cargo check` of the same crates: "
                  + ", ".join(f"{k} {fmt(v)} s vs {fmt(check.get(k))} s" for k, v in host.items()), ""]
        edit = getattr(self, "edit_rows", [])
        if edit:
            lines += ["Edit loop: one kernel of the suite edited (a constant of `jacobi2d`), then the device "
                      "image rebuilt with `core` already built (warm `cargo build`, seconds of rustc, the median of "
                      f"{self.args.edits} edits per run, then of the runs); "
                      "ours and ours-toolchain (`core` from the toolchain) also rerun the host metadata pass of "
                      f"the edited crate{' (incremental)' if incremental else ''}, since the manifest records "
                      "the kernel's definition; "
                      + ("the modes' edits interleaved, one of each mode per round; "
                         if meta.get("edit_loop") == "interleaved" else "each mode's edits after its cold build; ")
                      + "stock-lto: the same "
                      "constant of the 1.95-style suite edited, its fat-LTO `cdylib` rebuilt (LTO and link "
                      "included):", "",
                      "| target | stock s | base s | ours s (host metadata + device) | stock/ours | base/ours "
                      "| ours-toolchain s (host metadata + device) | stock-lto s | stock/ours-toolchain "
                      "| stock-lto/ours-toolchain |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            for e in edit:
                total, tc_total = e.get("ours_total_s"), e.get(f"{TOOLCHAIN_MODE}_total_s")
                ratio = lambda a, b=total: fmt(a / b) if a is not None and b else "-"
                lines.append(f"| {e['target']} | {fmt(e['stock_s'])} | {fmt(e['base_s'])} | {fmt(total)} "
                             f"({fmt(e['host-metadata_s'])} + {fmt(e['ours_s'])}) | {ratio(e['stock_s'])} "
                             f"| {ratio(e['base_s'])} | {fmt(tc_total)} ({fmt(e.get('host-metadata-toolchain_s'))} + "
                             f"{fmt(e.get(f'{TOOLCHAIN_MODE}_s'))}) | {fmt(e.get(f'{STOCK_LTO_MODE}_s'))} "
                             f"| {ratio(e['stock_s'], tc_total)} | {ratio(e.get(f'{STOCK_LTO_MODE}_s'), tc_total)} |")
            lines.append("")
        quality = getattr(self, "quality_rows", [])
        if quality:
            lines += ["Kernel quality, first run (`quality.csv`: the kernels of the example, the suite, the "
                      "1.95-style suite and the realistic corpus through the "
                      "vendors' tools; nvptx: `ptxas -v` registers, spill and stack bytes; amdgcn: VGPRs, SGPRs, "
                      "scratch bytes, ISA instructions), rows where ours is below / equal to / above base, and "
                      "the same for ours-toolchain (`core` from the toolchain):", ""]
            for target in self.args.targets:
                rows_t = [q for q in quality if q["target"] == target]
                if not rows_t:
                    continue
                kernels = len({q["kernel"] for q in rows_t})
                parts = []
                for mode in ("ours", "ours_toolchain"):
                    # A run before ours-toolchain existed, or a kernel its image lacks: no value.
                    measured = [q for q in rows_t if q.get(mode) is not None]
                    if not measured:
                        parts.append(f"{mode.replace('_', '-')} -")
                        continue
                    counted = [q for q in measured if comparable(q, mode)]
                    below = sum(q[mode] < q["base"] for q in counted)
                    equal = sum(q[mode] == q["base"] for q in counted)
                    above = [q for q in counted if q[mode] > q["base"]]
                    odd, missing = len(measured) - len(counted), len(rows_t) - len(measured)
                    parts.append(f"{mode.replace('_', '-')} {below} / {equal} / {len(above)}"
                                 + (f", {odd} not comparable (a count LLVM gives as an expression)" if odd else "")
                                 + (f", {missing} without a value" if missing else "")
                                 + ("" if not above else " (" + ", ".join(
                                     f"{q['kernel']} {q['metric']} {q['base']} -> {q[mode]}" for q in above) + ")"))
                lines.append(f"- {target}: {kernels} kernels, {len(rows_t)} rows: " + "; ".join(parts))
            lines.append("")
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
                # No bar where a mode did not build the input (stock and the example).
                heights = [r[f"{mode}_s"] if r[f"{mode}_s"] is not None else float("nan") for r in trows]
                ax.bar(xs, heights, width, label=mode, color=colors[mode])
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
        replace_readme_block(self.args.update_readme, "bench", table)


def replace_readme_block(readme, name, table):
    """Replaces the text between `<!-- NAME:begin -->` and `<!-- NAME:end -->` of `readme` by
    `table`; exits with an error when the file has no such block."""
    with open(readme) as f:
        text = f.read()
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in text or end not in text:
        sys.exit(f"error: [BENCH] {readme} has no `{begin}` ... `{end}` block")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(readme, "w") as f:
        f.write(head + begin + "\n" + table + end + tail)
    log(f"updated the `{name}` table in {readme}")


def glibc_twin(ours, out_dir):
    """A copy of our `rustc` executable that does not load jemalloc: its `DT_NEEDED` entry
    `libjemalloc.so.2` renamed to `libc.so.6` (already needed; the loader loads it once), padded
    with NULs to the same length in the dynamic string table, so that glibc's `malloc` serves the
    process. Everything else is the same binary: `rustc` is a `main` that calls
    `rustc_driver::main`, which lives in `librustc_driver`, found through the copy's `RUNPATH`
    `$ORIGIN/../lib` (a link to our sysroot's `lib`). Returns its path."""
    needed = b"libjemalloc.so.2\0"
    with open(ours, "rb") as f:
        data = f.read()
    if data.count(needed) != 1:
        sys.exit(f"error: [BENCH] --allocator: {ours} does not name libjemalloc.so.2 once (is `rust.jemalloc` on?)")
    twin_root = os.path.join(out_dir, "glibc-twin")
    shutil.rmtree(twin_root, ignore_errors=True)
    os.makedirs(os.path.join(twin_root, "bin"))
    os.symlink(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(ours))), "lib"),
               os.path.join(twin_root, "lib"))
    twin = os.path.join(twin_root, "bin", "rustc")
    with open(twin, "wb") as f:
        f.write(data.replace(needed, b"libc.so.6".ljust(len(needed), b"\0")))
    os.chmod(twin, 0o755)
    return twin


def malloc_provider(rustc):
    """The library that the loader binds `malloc` to when `rustc -vV` runs (`LD_DEBUG`)."""
    probe = subprocess.run([rustc, "-vV"], env=dict(os.environ, LD_DEBUG="bindings"), capture_output=True, text=True)
    if probe.returncode != 0:
        sys.exit(f"error: [BENCH] --allocator: `{rustc} -vV` failed:\n{probe.stderr[-2000:]}")
    bound = {m.group(1) for m in re.finditer(r"to (\S+) \[\d+\]: normal symbol `malloc'", probe.stderr)}
    return ", ".join(sorted(os.path.basename(b) for b in bound))


def allocator_lever(args):
    """The allocator lever: our rustc, which links jemalloc, against its twin that runs on
    glibc's `malloc` (`glibc_twin`: the same binary without the jemalloc it loads). Each round
    compiles `core` of the tree for each target with `--emit=metadata` (the front end), the two
    alternated. Prints the median seconds and the ratio glibc/jemalloc (above 1: jemalloc is
    faster) per target and writes them to `allocator.json` in `--results`."""
    core = os.path.join(args.tree, "library/core/src/lib.rs")
    out_dir = os.path.join(args.work, "allocator")
    os.makedirs(out_dir, exist_ok=True)
    twin = glibc_twin(args.ours, out_dir)
    rustcs = {"jemalloc": args.ours, "glibc": twin}
    # The two must differ exactly in who serves `malloc`.
    providers = {alloc: malloc_provider(rustc) for alloc, rustc in rustcs.items()}
    if "libjemalloc" not in providers["jemalloc"] or "libjemalloc" in providers["glibc"]:
        sys.exit(f"error: [BENCH] --allocator: malloc is served by {providers}, not jemalloc and glibc")
    log(f"malloc served by: {providers}")
    times = {}
    for r in range(args.allocator):
        for target in args.targets:
            for alloc in ("jemalloc", "glibc"):
                cmd = [rustcs[alloc], "--crate-name", "core", "--edition", "2024", "--crate-type", "lib", core,
                       "--target", target, "-Copt-level=3", "-Ccodegen-units=1", "--emit=metadata",
                       "--out-dir", out_dir]
                cmd += device_pass_flags(target)
                start = time.monotonic()
                done = subprocess.run(cmd, env=dict(os.environ, RUSTC_BOOTSTRAP="1"),
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"error: [BENCH] --allocator: core for {target} failed:\n{done.stderr[-2000:]}")
                times.setdefault((target, alloc), []).append(time.monotonic() - start)
                log(f"  allocator round {r + 1}: {target} {alloc}: {times[(target, alloc)][-1]:.2f} s")
    report = []
    for target in args.targets:
        jem = statistics.median(times[(target, "jemalloc")])
        gl = statistics.median(times[(target, "glibc")])
        report.append({"target": target, "jemalloc_s": round(jem, 2), "glibc_s": round(gl, 2),
                       "glibc_over_jemalloc": round(gl / jem, 3), "rounds": args.allocator,
                       "malloc_served_by": providers,
                       "samples": {a: [round(t, 2) for t in times[(target, a)]] for a in ("jemalloc", "glibc")}})
        log(f"{target}: core --emit=metadata, median of {args.allocator}: jemalloc {jem:.2f} s, "
            f"glibc {gl:.2f} s, glibc/jemalloc {gl / jem:.3f}")
    os.makedirs(args.results, exist_ok=True)
    with open(os.path.join(args.results, "allocator.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")


def main():
    # The device targets' table comes first: `--targets` takes its GPU targets.
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--device-targets")
    known, _ = pre.parse_known_args()
    if known.device_targets:
        load_device_targets(known.device_targets)
    elif not {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit("error: [BENCH] --device-targets FILE is required: the device targets' table as JSON, "
                 "which `./x.py bench` writes (`offload_targets::to_json` of src/tools/offload-targets)")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device-targets", metavar="FILE", required=True,
                   help="the device targets' table as JSON (`./x.py bench` writes it): the GPU targets, "
                   "their -Ctarget-cpu and the vendor steps of the image check")
    p.add_argument("--ours", required=True, help="our stage-1 rustc")
    p.add_argument("--stock", required=True, help="the rustup 1.95.0 rustc")
    p.add_argument("--cargo", required=True, help="cargo 1.95.0")
    p.add_argument("--tree", required=True, help="the materialized upstream tree (its library/ is built)")
    p.add_argument("--stock-library", help="upstream's library/ without our patches, where the stock compiler "
                   "builds `core` (default: the tree's)")
    p.add_argument("--example", required=True)
    p.add_argument("--suite", required=True)
    p.add_argument("--suite-195", help="input (d), the 1.95-style suite (default: suite_195.rs beside --suite)")
    p.add_argument("--corpus", help="folder of the realistic corpus (corpus.rs, devlib.rs) for the kernel "
                   "quality (default: tests/run-make/offload-manifest-complete of the project)")
    p.add_argument("--work", required=True, help="scratch folder (emptied)")
    p.add_argument("--results", required=True, help="where results.{json,csv,png} and table.md go")
    p.add_argument("--cuda-bin", help="folder of NVIDIA's ptxas and nvlink, for the vendor check of images")
    p.add_argument("--device-sysroot", help="the toolchain's device sysroot, for ours-toolchain (default: "
                   "offload-device-sysroot beside the stage-1 folder of --ours, as `./x.py build` writes it)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--edits", type=int, default=5, choices=range(1, MAX_EDITS + 1), metavar="N",
                   help=f"edits of the edit loop per run and mode, 1 to {MAX_EDITS} (default 5)")
    p.add_argument("--targets", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    p.add_argument("--update-readme", metavar="README", help="replace the table between the bench markers")
    p.add_argument("--from-json", metavar="RESULTS", help="only redo the reports from this results.json")
    p.add_argument("--reinspect", action="store_true",
                   help="with --from-json: read the first run's device code again from --work")
    p.add_argument("--allocator", type=int, metavar="ROUNDS",
                   help="only measure the allocator lever (jemalloc against glibc), ROUNDS rounds")
    p.add_argument("--offload-tools-bin", help="the folder of the installed `cargo-offload`, for the edit "
                   "loop (`./x.py bench` gives it)")
    p.add_argument("--edit-loop", type=int, metavar="ROUNDS",
                   help="only measure the edit loop of `cargo offload` against plain `cargo build` "
                   "(edit_loop.py), ROUNDS rounds; a full run measures it with --runs rounds")
    args = p.parse_args()
    args.host_triple = HOST
    if not args.suite_195:
        args.suite_195 = os.path.join(os.path.dirname(os.path.abspath(args.suite)), "suite_195.rs")
    if not args.device_sysroot:
        # --ours is `<cache>/build/<host>/stage1/bin/rustc`; the device sysroot is
        # `<cache>/build/<host>/offload-device-sysroot`.
        stage1 = os.path.dirname(os.path.dirname(os.path.abspath(args.ours)))
        args.device_sysroot = os.path.join(os.path.dirname(stage1), "offload-device-sysroot")
    if not args.corpus:
        args.corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "run-make",
                                   "offload-manifest-complete")
    if args.allocator:
        allocator_lever(args)
        return
    if args.edit_loop is not None:
        measure_edit_loop(args, args.edit_loop)
        return
    if args.from_json:
        try:
            with open(args.from_json) as f:
                data = json.load(f)
            if not all(k in data for k in ("meta", "samples", "images")) or "runs" not in data["meta"]:
                raise ValueError("it has no `meta`, `samples` and `images` of a run")
        except (OSError, ValueError, TypeError) as e:
            # json.JSONDecodeError is a ValueError.
            sys.exit(f"error: [BENCH] --from-json {args.from_json}: not the results.json of a benchmark run: {e}")
        args.runs = data["meta"]["runs"]
        # Runs before `--edits` edited once per run and mode.
        args.edits = data["meta"].get("edits", 1)
        args.targets = sorted({s["target"] for s in data["samples"]} - {HOST})
        bench = Bench(args)
        bench.samples = data["samples"]
        bench.images = {tuple(k.split("|")): v for k, v in data["images"].items()}
        bench.meta = data["meta"]
        if args.reinspect:
            for target in args.targets:
                for mode in LINK_MODES:
                    images = os.path.join(args.work, "images", target, mode)
                    if os.path.isdir(images):
                        bench.inspect(target, mode, images)
        bench.write()
        return
    if args.runs < 1:
        sys.exit("error: [BENCH] --runs must be at least 1")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    bench = Bench(args)
    bench.run_all()
    bench.write()
    measure_edit_loop(args, args.runs)


def measure_edit_loop(args, rounds):
    """The edit loop (`edit_loop.py`) in `rounds` rounds, its table written into the `edit-loop`
    block of the file that `--update-readme` names (`src/doc/benchmarks.md`)."""
    if rounds < 1:
        sys.exit("error: [BENCH] --edit-loop must be at least 1")
    if not args.offload_tools_bin:
        sys.exit("error: [BENCH] the edit loop needs --offload-tools-bin (the folder of `cargo-offload`)")
    os.makedirs(args.work, exist_ok=True)
    table = edit_loop.run_edit_loop(args, rounds)
    if args.update_readme:
        replace_readme_block(args.update_readme, "edit-loop", table)


if __name__ == "__main__":
    main()
