#!/usr/bin/env python3
"""`RUSTC_WRAPPER` of the device-pass benchmark (see bench.py).

cargo runs `rustc_wrapper.py RUSTC ARGS...` for every rustc invocation. A compilation is
labelled by its package (`$CARGO_PKG_NAME`, which cargo sets; the crate name where it does
not), since the scaling variants of the suite are packages of one crate name. For a crate
compiled for the benchmark's target (`$OFFLOAD_BENCH_TARGET`), the wrapper appends the flags
that `$OFFLOAD_BENCH_FLAGS` (JSON: label -> flags, `"*"` for any other crate) gives it, which is
how each root crate gets its own manifest path; a `-Cmetadata=` among them replaces cargo's
(the scaling variants get one, so that they are the same crate to rustc, and then each its own
folder under cargo's `-C incremental`);
`$OFFLOAD_BENCH_EMIT`, if set, replaces the `--emit` list. It runs rustc and appends one JSON
line to `$OFFLOAD_BENCH_LOG`: `{"crate" (the label), "seconds" (wall), "max_rss_kib" (wait4's
ru_maxrss), "status"}`. Build scripts, host crates and cargo's `--print` probes run unchanged
and unlogged.

After a crate's compilation, and outside the measured time, it keeps what the device code of
that crate is for the image count: the offload image `host.out` that the compilation wrote in
its `--out-dir` (copied to `$OFFLOAD_BENCH_IMAGES/<label>.host.out`), or, with
`$OFFLOAD_BENCH_EMIT_BC` set (the stock compiler, which writes no image), the crate's LLVM
bitcode from a second, unmeasured compilation with `--emit=llvm-bc` (of a fat-LTO `cdylib`, the
module after LTO: rustc writes the bitcode of the module it codegens).
"""

import json
import os
import shutil
import subprocess
import sys
import time


def arg_value(args, flag):
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a[len(flag) + 1:]
    return None


def main():
    rustc, args = sys.argv[1], sys.argv[2:]
    target = os.environ.get("OFFLOAD_BENCH_TARGET")
    crate = arg_value(args, "--crate-name")
    if crate is None or crate == "___" or arg_value(args, "--target") != target:
        os.execv(rustc, [rustc] + args)
    label = os.environ.get("CARGO_PKG_NAME") or crate
    flags = json.loads(os.environ["OFFLOAD_BENCH_FLAGS"])
    extra = flags.get(label, flags.get("*", []))
    if any(f.startswith("-Cmetadata=") for f in extra):
        kept = []
        for a in args:
            if kept and kept[-1] == "-C" and a.startswith("metadata="):
                kept.pop()
            elif kept and kept[-1] == "-C" and a.startswith("incremental="):
                # One crate to rustc is one session folder in cargo's incremental folder: each
                # package gets its own, or their sessions (whose options differ, each with its
                # manifest path) would throw each other's cache away.
                kept.append(os.path.join(a, label))
            elif a.startswith("-Cincremental="):
                kept.append(os.path.join(a, label))
            elif not a.startswith("-Cmetadata="):
                kept.append(a)
        args = kept
    args = args + extra
    emit = os.environ.get("OFFLOAD_BENCH_EMIT")
    if emit:
        # `cargo check -Zbuild-std` still builds the standard crates with `link`; the floor is
        # metadata only, for every crate, so their dependents read the rmeta.
        args = [a for a in args if not a.startswith("--emit")] + [f"--emit={emit}"]
        for i, a in enumerate(args):
            if i > 0 and args[i - 1] == "--extern" and a.endswith(".rlib") and not os.path.exists(a.split("=", 1)[-1]):
                args[i] = a[: -len(".rlib")] + ".rmeta"
    out_dir = arg_value(args, "--out-dir") or "."
    image = os.path.join(out_dir, "host.out")
    # Every device pass writes `host.out` in its output folder: what is there after this
    # compilation is this crate's.
    if os.path.exists(image):
        os.remove(image)

    start = time.perf_counter()
    proc = subprocess.Popen([rustc] + args)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    with open(os.environ["OFFLOAD_BENCH_LOG"], "a") as log:
        log.write(json.dumps(dict(crate=label, seconds=seconds, max_rss_kib=usage.ru_maxrss, status=code)) + "\n")
    if code != 0:
        sys.exit(code)

    images = os.environ.get("OFFLOAD_BENCH_IMAGES")
    if images:
        os.makedirs(images, exist_ok=True)
        if os.path.exists(image):
            shutil.copy(image, os.path.join(images, f"{label}.host.out"))
        if os.environ.get("OFFLOAD_BENCH_EMIT_BC"):
            bc_dir = os.path.join(images, f"{label}.bc.d")
            shutil.rmtree(bc_dir, ignore_errors=True)
            os.makedirs(bc_dir)
            bc_args = [a for a in args if not a.startswith("--emit")]
            i = bc_args.index("--out-dir") if "--out-dir" in bc_args else None
            if i is not None:
                del bc_args[i:i + 2]
            bc_args += ["--emit=llvm-bc", "--out-dir", bc_dir]
            done = subprocess.run([rustc] + bc_args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            bcs = [f for f in os.listdir(bc_dir) if f.endswith(".bc")]
            if done.returncode != 0 or len(bcs) != 1:
                sys.stderr.write(done.stderr.decode(errors="replace"))
                sys.exit(f"error: [BENCH] the bitcode of `{label}` ({len(bcs)} .bc files, status {done.returncode})")
            shutil.move(os.path.join(bc_dir, bcs[0]), os.path.join(images, f"{label}.bc"))
            shutil.rmtree(bc_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
