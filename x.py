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
env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(cache, "tools-target"),
           OFFLOAD_FORK_PROJECT=here)
env.pop("RUSTUP_TOOLCHAIN", None)
build = subprocess.run([cargo, "build", "--quiet", "--release", "--manifest-path",
                        os.path.join(here, "Cargo.toml"), "-p", "offload-x"], env=env)
if build.returncode != 0:
    sys.exit("error: [CHECK] the harness (src/tools/offload-x) does not build; see above")
tool = os.path.join(cache, "tools-target", "release", "offload-x")
sys.exit(subprocess.run([tool] + sys.argv[1:], env=env).returncode)
