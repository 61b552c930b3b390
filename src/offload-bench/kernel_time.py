#!/usr/bin/env python3
"""Kernel run time on an NVIDIA GPU: base's and ours' nvptx kernels, side by side.

`quality.csv` counts registers and spills; this measures what they are for, the time a kernel
takes on the GPU. Two steps:

  prepare  (here, inside the sysroot, after `./x.py bench`): for each root of `QUALITY_ROOTS`
           (the example and the suite), takes the nvptx images that the benchmark's first run
           wrote for base and ours, and compiles each as LLVM offload's JIT would load it:
           `llvm-link` of the image's bitcode (base: with the `core` and `compiler_builtins`
           images, whose functions base's kernels call), `opt` with `internalize` (every symbol
           but the kernels) and `default<O3>`, `llc -mcpu=sm_90 -O3`, `ptxas -arch=sm_90
           -O3`. Both modes get the same steps. Writes `<root>.<mode>.cubin` and
           `kernels.json` (per kernel: its label, each mode's symbol, its parameters).
           With `KERNEL_TIME_KEEP=1`, the intermediate bitcode and PTX stay in `scratch/`.
  run      (on the GPU machine; needs only Python 3 and the driver's `libcuda.so.1`, through
           ctypes): loads both cubins, runs each kernel once on one thread with the same
           inputs in both modes and compares the outputs byte for byte, then times it with CUDA
           events: per launch configuration, 7 rounds of 100 back-to-back launches, base and ours
           alternating round by round; reports the median time per launch in microseconds and
           base/ours. Exit status 1 if an output differs or a kernel fails to load or run.

Launch configurations: `1x1` (one thread: the kernel's own code path, which is what the
compilers change) and the launch the host code uses (`4x256` for the suite, `16x256` for the
example's `stencil3` and `sum_reduce`). The kernels are written as one serial loop that every thread runs, so the second
configuration measures the same code under memory contention.

Kernel parameters (`kernels.json`): the leading implicit pointer of LLVM offload's kernel ABI
(null here), then one entry per Rust parameter: a device buffer of `count` elements of `type`
(`in`: filled with a fixed pattern; `out`: zeroed; `inout`: both read and written), or a
scalar passed in a 64-bit slot (the low bytes hold the value, as the offload runtime passes
it).
"""

import argparse
import ctypes
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TARGET = "nvptx64-nvidia-cuda"
ARCH = "sm_90"
ROUNDS = 7
LAUNCHES = 100

# Element counts of the kernels' arrays (`suite.rs`: N = 1024, M = 64, TAPS = 16, BINS = 32;
# `src/offload-example/lib.rs`: N = 4096).
SUITE_N, M, TAPS, BINS, EXAMPLE_N = 1024, 64, 16, 32, 4096

# Parameters per kernel label (`bench.kernel_label`), in the Rust order: ("buf", type, count,
# "in" | "out" | "inout") or ("scalar", type, value).
PARAMS = {
    "suite_0": {
        "fir": [("buf", "f32", SUITE_N, "in"), ("buf", "f32", TAPS, "in"), ("buf", "f32", SUITE_N, "out")],
        "stencil5": [("buf", "f32", SUITE_N, "in"), ("buf", "f32", SUITE_N, "out")],
        "jacobi2d": [("buf", "f32", M * M, "in"), ("buf", "f32", M * M, "out")],
        "dot": [("buf", "f32", SUITE_N, "in"), ("buf", "f32", SUITE_N, "in"), ("buf", "f32", 1, "out")],
        "matvec": [("buf", "f32", M * M, "in"), ("buf", "f32", M, "in"), ("buf", "f32", M, "out")],
        "sum_max": [("buf", "f32", SUITE_N, "in"), ("buf", "f32", 2, "out")],
        "histogram": [("buf", "f32", SUITE_N, "in"), ("buf", "u32", BINS, "out")],
        "prefix_sum": [("buf", "u32", SUITE_N, "in"), ("buf", "u32", SUITE_N, "out")],
        "axpy::<f32>": [("scalar", "f32", 1.5), ("buf", "f32", SUITE_N, "in"), ("buf", "f32", SUITE_N, "inout")],
        "axpy::<f64>": [("scalar", "f64", 1.5), ("buf", "f64", SUITE_N, "in"), ("buf", "f64", SUITE_N, "inout")],
        "scale::<f32>": [("buf", "f32", SUITE_N, "inout"), ("scalar", "f32", 0.5)],
        "scale::<i32>": [("buf", "i32", SUITE_N, "inout"), ("scalar", "i32", 3)],
    },
    "offload_example": {
        "saxpy": [("scalar", "f32", 2.0), ("buf", "f32", EXAMPLE_N, "in"), ("buf", "f32", EXAMPLE_N, "inout")],
        "stencil3": [("buf", "f32", EXAMPLE_N, "in"), ("buf", "f32", EXAMPLE_N, "out")],
        "sum_reduce": [("buf", "f32", EXAMPLE_N, "in"), ("buf", "f32", 1, "out")],
    },
}
# The grid and block of the host code's launches (x dimension; y and z are 1), per root, and
# per kernel where it differs (the example's `saxpy` runs on one thread, see its documentation).
HOST_LAUNCH = {"suite_0": (4, 256), "offload_example": (16, 256), "offload_example::saxpy": (1, 1)}

FORMATS = {"f32": "f", "f64": "d", "i32": "i", "u32": "I"}


# ---------------------------------------------------------------------------------------------
# prepare


def prepare(args):
    import bench

    os.makedirs(args.out, exist_ok=True)
    images = os.path.join(args.work, "images", TARGET)
    scratch = os.path.join(args.out, "scratch")
    os.makedirs(scratch, exist_ok=True)
    listing = []
    for root, params in PARAMS.items():
        symbols = {}
        for mode in ("base", "ours"):
            folder = os.path.join(images, mode)
            parts = [os.path.join(folder, f"{root}.host.out")]
            if mode == "base":
                parts += [os.path.join(folder, f"{lib}.host.out") for lib in ("core", "compiler_builtins")]
            bcs = []
            for i, part in enumerate(parts):
                if not os.path.exists(part):
                    sys.exit(f"error: [KERNEL-TIME] no image {part}: run `./x.py bench` first")
                bc = os.path.join(scratch, f"{mode}.{i}.bc")
                shutil.copyfile(bench.image_bitcode(part, TARGET, scratch), bc)
                bcs.append(bc)
            texts = {}
            if mode == "ours":
                with open(os.path.join(args.work, "manifests", f"{root}.json")) as f:
                    texts = {k["symbol"]: k["kernel"] for k in json.load(f)["kernels"]}
            linked = os.path.join(scratch, f"{root}.{mode}.bc")
            run(["llvm-link", *bcs, "-o", linked])
            kernels = [line.split("@", 1)[1].split("(", 1)[0]
                       for line in bench.ir_of_bitcode(bcs[0]).splitlines()
                       if line.startswith("define ptx_kernel ")]
            symbols[mode] = {bench.kernel_label(s, texts.get(s)): s for s in kernels}
            opt = os.path.join(scratch, f"{root}.{mode}.opt.bc")
            run(["opt", f"-internalize-public-api-list={','.join(kernels)}",
                 "-passes=internalize,default<O3>", linked, "-o", opt])
            ptx = os.path.join(scratch, f"{root}.{mode}.ptx")
            run(["llc", f"-mcpu={ARCH}", "-O3", opt, "-o", ptx])
            run([os.path.join(args.cuda_bin, "ptxas"), f"-arch={ARCH}", "-O3", ptx,
                 "-o", os.path.join(args.out, f"{root}.{mode}.cubin")])
        for label, spec in params.items():
            missing = [m for m in ("base", "ours") if label not in symbols[m]]
            if missing:
                sys.exit(f"error: [KERNEL-TIME] {root}: kernel `{label}` is not in {' or '.join(missing)}'s image")
            listing.append(dict(root=root, kernel=label, base=symbols["base"][label],
                                ours=symbols["ours"][label], params=spec,
                                host_launch=HOST_LAUNCH.get(f"{root}::{label}", HOST_LAUNCH[root])))
    with open(os.path.join(args.out, "kernels.json"), "w") as f:
        json.dump(listing, f, indent=1)
    shutil.copyfile(os.path.abspath(__file__), os.path.join(args.out, "kernel_time.py"))
    if not os.environ.get("KERNEL_TIME_KEEP"):
        shutil.rmtree(scratch)
    print(f"[KERNEL-TIME] {len(listing)} kernels, base and ours, in {args.out}")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"error: [KERNEL-TIME] {' '.join(cmd[:1])} failed:\n{r.stderr.strip()}")


# ---------------------------------------------------------------------------------------------
# run


class Cuda:
    """The few CUDA driver API calls this needs, through ctypes (CUDA driver API reference:
    `cuInit`, `cuDevicePrimaryCtxRetain`, `cuModuleLoadData`, `cuLaunchKernel`, events)."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.check("cuInit", 0)
        dev = ctypes.c_int()
        self.check("cuDeviceGet", ctypes.byref(dev), 0)
        name = ctypes.create_string_buffer(256)
        self.check("cuDeviceGetName", name, 256, dev)
        self.name = name.value.decode()
        ctx = ctypes.c_void_p()
        self.check("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        self.check("cuCtxSetCurrent", ctx)
        # The images that loaded modules were made from, kept alive with the context.
        self.images = []

    def check(self, fn, *args):
        r = getattr(self.lib, fn)(*args)
        if r != 0:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorString(r, ctypes.byref(msg))
            raise RuntimeError(f"{fn}: error {r} ({(msg.value or b'?').decode()})")

    def module(self, path):
        with open(path, "rb") as f:
            data = f.read()
        self.images.append(data)
        mod = ctypes.c_void_p()
        self.check("cuModuleLoadData", ctypes.byref(mod), ctypes.c_char_p(data))
        return mod

    def function(self, mod, symbol):
        f = ctypes.c_void_p()
        self.check("cuModuleGetFunction", ctypes.byref(f), mod, symbol.encode())
        return f

    def alloc(self, size):
        p = ctypes.c_uint64()
        self.check("cuMemAlloc_v2", ctypes.byref(p), ctypes.c_size_t(max(size, 4)))
        return p

    def upload(self, ptr, data):
        self.check("cuMemcpyHtoD_v2", ptr, ctypes.c_char_p(data), ctypes.c_size_t(len(data)))

    def download(self, ptr, size):
        buf = ctypes.create_string_buffer(size)
        self.check("cuMemcpyDtoH_v2", buf, ptr, ctypes.c_size_t(size))
        return buf.raw

    def launch(self, f, grid, block, slots):
        params = (ctypes.c_void_p * len(slots))(*[ctypes.addressof(s) for s in slots])
        self.check("cuLaunchKernel", f, grid, 1, 1, block, 1, 1, 0, None, params, None)

    def sync(self):
        self.check("cuCtxSynchronize")

    def event(self):
        e = ctypes.c_void_p()
        self.check("cuEventCreate", ctypes.byref(e), 0)
        return e

    def elapsed_ms(self, start, end):
        ms = ctypes.c_float()
        self.check("cuEventElapsedTime", ctypes.byref(ms), start, end)
        return ms.value


def pattern(ty, count, salt):
    """A fixed input: values in [0, 1) for floats (the histogram's range), small integers."""
    fmt = FORMATS[ty]
    if ty in ("f32", "f64"):
        values = [((i * 37 + salt * 11) % 101) / 101.0 for i in range(count)]
    else:
        values = [(i * 7 + salt) % 13 for i in range(count)]
    return struct.pack(f"<{count}{fmt}", *values)


def scalar_slot(ty, value):
    raw = struct.pack(f"<{FORMATS[ty]}", value)
    return ctypes.c_uint64(int.from_bytes(raw.ljust(8, b"\0"), "little"))


class Case:
    """One kernel of one mode with its device buffers."""

    def __init__(self, cuda, function, params):
        self.cuda, self.function, self.params = cuda, function, params
        self.buffers = []
        for i, p in enumerate(params):
            if p[0] == "buf":
                _, ty, count, _ = p
                size = struct.calcsize(FORMATS[ty]) * count
                self.buffers.append((i, cuda.alloc(size), size, ty, count))

    def reset(self):
        for i, ptr, size, ty, count in self.buffers:
            direction = self.params[i][3]
            self.cuda.upload(ptr, bytes(size) if direction == "out" else pattern(ty, count, i))

    def slots(self):
        slots = [ctypes.c_uint64(0)]
        ptrs = {i: ptr for i, ptr, *_ in self.buffers}
        for i, p in enumerate(self.params):
            slots.append(ctypes.c_uint64(ptrs[i].value) if p[0] == "buf" else scalar_slot(p[1], p[2]))
        return slots

    def outputs(self):
        return [self.cuda.download(ptr, size) for i, ptr, size, *_ in self.buffers if self.params[i][3] != "in"]


def run_all(args):
    folder = args.folder
    with open(os.path.join(folder, "kernels.json")) as f:
        listing = json.load(f)
    cuda = Cuda()
    print(f"[KERNEL-TIME] device: {cuda.name}; {ROUNDS} rounds of {LAUNCHES} launches per kernel, mode and "
          f"configuration; median microseconds per launch")
    modules = {}
    failures = 0
    rows = []
    start, end = cuda.event(), cuda.event()
    print(f"{'kernel':<34} {'launch':>7} {'base us':>9} {'ours us':>9} {'base/ours':>9}  outputs")
    for k in listing:
        cases = {}
        try:
            for mode in ("base", "ours"):
                key = (k["root"], mode)
                if key not in modules:
                    modules[key] = cuda.module(os.path.join(folder, f"{k['root']}.{mode}.cubin"))
                cases[mode] = Case(cuda, cuda.function(modules[key], k[mode]), k["params"])
            results = {}
            for mode, case in cases.items():
                case.reset()
                cuda.launch(case.function, 1, 1, case.slots())
                cuda.sync()
                results[mode] = case.outputs()
            same = results["base"] == results["ours"]
            if not same:
                failures += 1
            grid, block = k["host_launch"]
            for config in sorted({(1, 1), (grid, block)}):
                times = {"base": [], "ours": []}
                slots = {mode: case.slots() for mode, case in cases.items()}
                for mode, case in cases.items():
                    case.reset()
                    for _ in range(3):
                        cuda.launch(case.function, *config, slots[mode])
                cuda.sync()
                for _ in range(ROUNDS):
                    for mode, case in cases.items():
                        cuda.check("cuEventRecord", start, None)
                        for _ in range(LAUNCHES):
                            cuda.launch(case.function, *config, slots[mode])
                        cuda.check("cuEventRecord", end, None)
                        cuda.check("cuEventSynchronize", end)
                        times[mode].append(cuda.elapsed_ms(start, end) * 1000.0 / LAUNCHES)
                base, ours = statistics.median(times["base"]), statistics.median(times["ours"])
                label = f"{k['root']}::{k['kernel']}"
                launch = f"{config[0]}x{config[1]}"
                print(f"{label:<34} {launch:>7} {base:9.2f} {ours:9.2f} {base / ours:9.3f}  "
                      f"{'same' if same else 'DIFFER'}")
                rows.append(dict(kernel=label, launch=launch, base_us=round(base, 3), ours_us=round(ours, 3),
                                 spread_base=round((max(times["base"]) - min(times["base"])) / base, 3),
                                 spread_ours=round((max(times["ours"]) - min(times["ours"])) / ours, 3),
                                 outputs="same" if same else "differ"))
        except RuntimeError as e:
            failures += 1
            print(f"{k['root']}::{k['kernel']}: FAILED: {e}")
    one = [r["base_us"] / r["ours_us"] for r in rows if r["launch"] == "1x1"]
    if one:
        geo = 1.0
        for x in one:
            geo *= x
        geo **= 1.0 / len(one)
        print(f"[KERNEL-TIME] one thread: geometric mean base/ours {geo:.3f} over {len(one)} kernels; "
              f"ours slower than base by more than 5% on: "
              f"{', '.join(r['kernel'] for r in rows if r['launch'] == '1x1' and r['base_us'] / r['ours_us'] < 0.95) or 'none'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=cuda.name, rounds=ROUNDS, launches=LAUNCHES, rows=rows), f, indent=1)
    if failures:
        print(f"[KERNEL-TIME] FAILED: {failures} kernels differ or did not run")
        return 1
    print(f"[KERNEL-TIME] passed: {len(listing)} kernels ran in both modes with the same outputs")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="verb", required=True)
    pp = sub.add_parser("prepare", help="compile base's and ours' nvptx kernels to cubins (here)")
    pp.add_argument("--work", required=True, help="the benchmark's scratch folder (its first run's images)")
    pp.add_argument("--cuda-bin", required=True, help="folder of NVIDIA's ptxas")
    pp.add_argument("--out", required=True, help="folder to write the cubins and kernels.json into")
    pr = sub.add_parser("run", help="run and time the kernels (on the GPU machine)")
    pr.add_argument("folder", help="the folder that `prepare` wrote")
    pr.add_argument("--json", help="also write the results here")
    args = p.parse_args()
    if args.verb == "prepare":
        prepare(args)
        return 0
    return run_all(args)


if __name__ == "__main__":
    sys.exit(main())
