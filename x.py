#!/usr/bin/env python3
"""Entry point of the offload fork's build: builds the harness (src/tools/offload-x) with the
rustup 1.95.0 toolchain and hands it the command line. See `./x.py --help` and README.md."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
rustup_home = os.environ.get("RUSTUP_HOME") or os.path.expanduser("~/.rustup")
toolchain = os.path.join(rustup_home, "toolchains", "1.95.0-x86_64-unknown-linux-gnu")
cargo = os.path.join(toolchain, "bin", "cargo")
if not os.path.exists(cargo):
    sys.exit("error: [CHECK] the rustup toolchain 1.95.0 (stage 0) is missing at %s; "
             "install it with `rustup toolchain install 1.95.0` and rerun" % toolchain)
cache = os.environ.get("OFFLOAD_FORK_CACHE") or os.path.expanduser("~/.cache/offload-fork")
# The stage-0 toolchain first on PATH, for the harness and the cargo it starts outside the
# sysroot: a user without rustup's proxies on PATH has no `rustc` there.
path = os.path.join(toolchain, "bin") + os.pathsep + os.environ.get("PATH", "")
env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(cache, "tools-target"),
           OFFLOAD_FORK_PROJECT=here, PATH=path)
env.pop("RUSTUP_TOOLCHAIN", None)
# The user's flags are for the fork's compiler (`./x.py cargo`), not for building the harness
# with the stable stage-0 toolchain.
build_env = {k: v for k, v in env.items()
             if k not in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "RUSTC_WRAPPER",
                          "RUSTC_WORKSPACE_WRAPPER", "CARGO_BUILD_TARGET", "RUSTC",
                          "CARGO_BUILD_RUSTC_WRAPPER", "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
                          "CARGO_BUILD_RUSTC", "CARGO_BUILD_RUSTFLAGS")}
# In the project's folder: a `.cargo/config.toml` of the caller's workspace is for the fork's
# compiler too.
build = subprocess.run([cargo, "build", "--quiet", "--release", "--manifest-path",
                        os.path.join(here, "Cargo.toml"), "-p", "offload-x"],
                       env=build_env, cwd=here)
if build.returncode != 0:
    sys.exit("error: [CHECK] the harness (src/tools/offload-x) does not build; see above")
tool = os.path.join(cache, "tools-target", "release", "offload-x")
# The harness gets the caller's environment as it was (`./x.py cargo` passes CARGO_* on).
run_env = dict(os.environ, OFFLOAD_FORK_PROJECT=here, PATH=path)
sys.exit(subprocess.run([tool] + sys.argv[1:], env=run_env).returncode)
