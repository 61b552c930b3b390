//! `./x.py dist`: the toolchain as a folder and a tarball that a user installs without root,
//! wherever the GPU is: untar it anywhere, `rustup toolchain link offload <folder>`, then
//! `cargo +offload offload build|run|test|bundle` and `rustc +offload -Zoffload=...`.
//!
//! The stage-1 compiler and the tools that `cargo offload` runs are Debian trixie programs,
//! built against a newer C library than many machines have (Debian 12 has glibc 2.36, trixie
//! 2.41). So the folder carries trixie's loader and every library they load, and each of them
//! starts through a script that runs that loader as a program with the folder's libraries
//! (`ld-linux-x86-64.so.2 --library-path DIR --argv0 NAME PROGRAM`), as `cargo offload bundle`
//! starts a bundled program: no `chroot`, no namespace, nothing of the machine's C library.
//! The programs it builds, build scripts included, are linked by the toolchain's own linker
//! driver (`cargo-offload --cc`, `src/tools/cargo-offload/src/linker.rs`) with that loader as
//! their interpreter and the folder's libraries as their rpath, so they start the same way.
//!
//! ```text
//! bin/rustc, bin/cargo-offload       scripts: the loader-started compiler (which links with
//!                                    lib/offload/bin/cc), cargo offload with its folders set
//! bin/cargo                          a script: cargo 1.95.0 of the rustup toolchain (it runs
//!                                    anywhere, lib/offload/cargo/bin/cargo) with `bin/` first
//!                                    on `PATH`, so that `cargo +offload offload` finds
//!                                    `cargo-offload` without the user's `PATH`
//! lib/librustc_driver-*.so, lib/rustlib/<target>/lib
//!                                    the compiler's library, the host's std and the GPU
//!                                    targets' core and alloc (for rustc's own passes)
//! lib/offload/bin/                   rustc, cargo-offload, offload-manifest; cc (the linker)
//! lib/offload/lib/                   the loader, the libraries, the C runtime files, the
//!                                    offload runtime (libomptarget, libomp)
//! lib/offload/llvm/, llvm-bin/       LLVM's tools (llc, ld.lld, llvm-offload-binary,
//!                                    llvm-offload-wrapper) and the scripts that start them
//! lib/offload/cuda-bin/              NVIDIA's ptxas and nvlink
//! lib/offload/device-sysroot/        the device sysroot (`crate::device_sysroot`)
//! lib/offload/tools/ldd              the loader's `--list`, for `cargo offload bundle`
//! ```
//!
//! With them, rustup's components: `rustdoc`, clippy, rustfmt, rust-analyzer's proc-macro
//! server and `rust-src`, laid out as `super::components` says.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::{Cache, device_sysroot, gpu_sysroot, offload_tools_bin, stage0_toolchain};
use crate::pins::{HOST, SYSROOT_LLVM_BIN};
use crate::toolchain_lock::{ToolchainLock, Use};
use crate::ui::{Context, Result, Timer, fail, run_captured, say};

const STEP: &str = "DIST";

/// The toolchain's folder name in the tarball.
pub const FOLDER: &str = "rust-offload";

/// LLVM's tools that `cargo offload` runs (`CARGO_OFFLOAD_LLVM_BIN`), as the program each is
/// (`ld.lld` is `lld`, which reads its name).
const LLVM_TOOLS: [(&str, &str); 4] = [
    ("llc", "llc"),
    ("ld.lld", "lld"),
    ("llvm-offload-binary", "llvm-offload-binary"),
    ("llvm-offload-wrapper", "llvm-offload-wrapper"),
];

/// The offload runtime's libraries, which the programs link (`-lomptarget -lomp`), in trixie's
/// LLVM folder, with their link names.
const RUNTIME: [(&str, &str); 2] =
    [("libomptarget.so.22.1", "libomptarget.so"), ("libomp.so.5", "libomp.so")];

/// The C runtime files and static parts of the C library that a link needs beside the shared
/// libraries (GCC's start and end files, `libgcc`, glibc's static parts), in trixie's folders
/// relative to the sysroot.
const LINK_FILES: [(&str, &[&str]); 2] = [
    (
        "usr/lib/x86_64-linux-gnu",
        &[
            "Scrt1.o",
            "crt1.o",
            "rcrt1.o",
            "crti.o",
            "crtn.o",
            "libc_nonshared.a",
            "libpthread.a",
            "librt.a",
            "libdl.a",
            "libutil.a",
            "libmvec.so.1",
        ],
    ),
    (
        "usr/lib/gcc/x86_64-linux-gnu/14",
        &[
            "crtbegin.o",
            "crtbeginS.o",
            "crtbeginT.o",
            "crtend.o",
            "crtendS.o",
            "libgcc.a",
            "libgcc_eh.a",
        ],
    ),
];

/// The linker scripts that stand for the C library's link names, naming the files of the same
/// folder (trixie's name them by absolute paths in its own root).
const LINK_SCRIPTS: [(&str, &str); 3] = [
    ("libc.so", "GROUP ( libc.so.6 libc_nonshared.a AS_NEEDED ( ld-linux-x86-64.so.2 ) )\n"),
    ("libm.so", "GROUP ( libm.so.6 AS_NEEDED ( libmvec.so.1 ) )\n"),
    ("libgcc_s.so", "GROUP ( libgcc_s.so.1 -lgcc )\n"),
];

/// Builds what is missing and the toolchain's tarball in the build cache (see [`ensure`]),
/// then puts a copy of the tarball in `<project>/dist/`, replacing the one there in one step
/// (a rename): `./x.py` never writes a folder that a user has unpacked and linked. Returns the
/// copy's path.
pub fn run(project: &Path, cache: &Cache) -> Result<PathBuf> {
    let built = ensure(project, cache)?;
    let out = project.join("dist");
    fs::create_dir_all(&out).at(STEP, &out)?;
    let tarball = out.join(tarball_name());
    let partial = out.join(format!(".{}.partial", tarball_name()));
    copy(&built, &partial)?;
    fs::rename(&partial, &tarball).at(STEP, &tarball)?;
    println!("[{STEP}] {} ({} MB)", tarball.display(), size(&tarball).div_ceil(1_000_000));
    println!("[{STEP}] to install it: tar -xJf {} -C DIR", tarball.display());
    println!("[{STEP}]                rustup toolchain link offload DIR/{FOLDER}");
    println!("[{STEP}]                cargo +offload offload run --offload-arch=host");
    Ok(tarball)
}

/// The tarball's file name.
fn tarball_name() -> String {
    format!("{FOLDER}-{HOST}.tar.xz")
}

/// Builds what is missing, then, unless the build cache's `dist/stamp` says that the
/// toolchain is the one it was built from, writes the toolchain folder `<cache>/dist/
/// rust-offload` (stripped of debug information) and its tarball beside it. Returns the
/// tarball's path; prints its size.
pub fn ensure(project: &Path, cache: &Cache) -> Result<PathBuf> {
    crate::stages::build(project, cache)?;
    let components = super::components::ensure(cache)?;
    // Nothing of the toolchain may change while it is copied.
    let _copying = ToolchainLock::take(cache, STEP, Use::Run)?;
    let out = cache.root.join("dist");
    let folder = out.join(FOLDER);
    let tarball = out.join(tarball_name());
    let stamp = out.join("stamp");
    let identity = identity(cache, &components);
    if tarball.exists() && fs::read_to_string(&stamp).ok().as_deref() == Some(identity.as_str()) {
        say(STEP, format!("{} is up to date", tarball.display()));
        return Ok(tarball);
    }
    // The stamp goes first, so that a failure leaves the tarball to be built again.
    let _ = fs::remove_file(&stamp);
    let timer = Timer::start(STEP, format!("the toolchain folder {}", folder.display()));
    let _ = fs::remove_dir_all(&folder);
    let programs = assemble(cache, &folder, &components)?;
    strip(cache, &folder, &programs)?;
    timer.done();
    let timer = Timer::start(STEP, format!("the tarball {}", tarball.display()));
    let _ = fs::remove_file(&tarball);
    let mut tar = Command::new("tar");
    tar.arg("-C")
        .arg(&out)
        .args(["--owner=0", "--group=0", "--numeric-owner", "-cJf"])
        .arg(&tarball)
        .arg(FOLDER)
        .env("XZ_OPT", "-6 -T0");
    run_captured(STEP, &mut tar)?;
    timer.done();
    write(&stamp, &identity, 0o644)?;
    say(
        STEP,
        format!(
            "{} ({} MB; {} MB unpacked)",
            tarball.display(),
            size(&tarball).div_ceil(1_000_000),
            tree_size(&folder).div_ceil(1_000_000)
        ),
    );
    Ok(tarball)
}

/// What the tarball is built from: the device sysroot's stamp (the compiler, the libraries
/// and their recipe, `crate::device_sysroot`), the build sysroot's stamp (its packages: the
/// loader, the C library and LLVM's tools and runtime come from there), and the name, size
/// and modification time of every other file it copies that the stamps do not cover (the
/// tools that `cargo offload` runs, the report library, NVIDIA's tools, cargo, the GPU
/// targets' libraries, the `components`: [`super::components::ensure`]), and a hash of this
/// file and of `components.rs`, whose code decides the layout.
fn identity(cache: &Cache, components: &[(&str, PathBuf)]) -> String {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let libraries = fs::read_to_string(device_sysroot(cache).join("stamp")).unwrap_or_default();
    let packages = fs::read_to_string(cache.sysroot_stamp()).unwrap_or_default();
    let tools = offload_tools_bin(cache);
    let cuda = crate::cuda::cuda_bin(cache);
    let mut files = vec![
        tools.join("cargo-offload"),
        tools.join("offload-manifest"),
        tools.join("../lib/liboffload_report.so"),
        cuda.join("ptxas"),
        cuda.join("nvlink"),
        stage0_toolchain().join("bin/cargo"),
    ];
    files.extend(components.iter().map(|(_, path)| path.clone()));
    for target in offload_targets::gpu_targets() {
        let lib = gpu_sysroot(cache).join(format!("lib/rustlib/{}/lib", target.triple));
        let mut rlibs: Vec<PathBuf> =
            fs::read_dir(&lib).into_iter().flatten().flatten().map(|e| e.path()).collect();
        rlibs.sort();
        files.extend(rlibs);
    }
    let facts: Vec<String> = files
        .iter()
        .map(|file| {
            let meta = fs::metadata(file).ok();
            let modified = meta.as_ref().and_then(|m| m.modified().ok());
            format!("{} {:?} {modified:?}", file.display(), meta.map(|m| m.len()))
        })
        .collect();
    let mut layout = DefaultHasher::new();
    include_str!("dist.rs").hash(&mut layout);
    include_str!("components.rs").hash(&mut layout);
    format!(
        "{libraries}\npackages:\n{packages}\n{}\nlayout {:016x}\n",
        facts.join("\n"),
        layout.finish()
    )
}

/// Strips the debug information of the toolchain's own programs and libraries, with the
/// sysroot's `llvm-strip` (started by the sysroot's loader), with the component `programs`;
/// symbols stay.
fn strip(cache: &Cache, folder: &Path, programs: &[PathBuf]) -> Result<()> {
    let sysroot = cache.sysroot();
    let offload = folder.join("lib/offload");
    let mut files: Vec<PathBuf> = read_dir(&folder.join("lib"))?
        .into_iter()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".so")))
        .collect();
    for program in ["rustc", "cargo-offload", "offload-manifest"] {
        files.push(offload.join("bin").join(program));
    }
    files.push(offload.join("lib/liboffload_report.so"));
    files.extend(programs.iter().cloned());
    let llvm = sysroot.join(SYSROOT_LLVM_BIN.trim_start_matches('/'));
    let libs = std::env::join_paths([
        sysroot.join("usr/lib/x86_64-linux-gnu"),
        sysroot.join("usr/lib/llvm-22/lib"),
    ])
    .unwrap_or_default();
    let mut strip = Command::new(sysroot.join("lib64/ld-linux-x86-64.so.2"));
    strip.arg("--library-path").arg(libs).arg(llvm.join("llvm-strip")).arg("--strip-debug");
    run_captured(STEP, strip.args(&files))?;
    Ok(())
}

/// The size of the file at `path` in bytes; 0 when it has none.
fn size(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Writes the toolchain into `folder` (see the module's layout), with the `components`
/// ([`super::components::assemble`]); returns the component programs' paths in `folder`.
fn assemble(cache: &Cache, folder: &Path, components: &[(&str, PathBuf)]) -> Result<Vec<PathBuf>> {
    let sysroot = cache.sysroot();
    let stage1 = cache.stage1();
    let offload = folder.join("lib/offload");
    let lib = offload.join("lib");
    // The compiler and its libraries.
    copy(&stage1.join("bin/rustc"), &offload.join("bin/rustc"))?;
    for entry in read_dir(&stage1.join("lib"))? {
        if entry.file_name().to_string_lossy().starts_with("librustc_driver") {
            copy(&entry.path(), &folder.join("lib").join(entry.file_name()))?;
        }
    }
    let host_lib = format!("lib/rustlib/{HOST}/lib");
    let has_std = read_dir(&stage1.join(&host_lib))?.iter().any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        name.starts_with("libstd-") && name.ends_with(".rlib")
    });
    if !has_std {
        return fail(STEP, format!("the stage-1 sysroot has no `std` in {host_lib}"));
    }
    copy_tree(&stage1.join(&host_lib), &folder.join(&host_lib))?;
    for target in offload_targets::gpu_targets() {
        let rel = format!("lib/rustlib/{}/lib", target.triple);
        copy_tree(&gpu_sysroot(cache).join(&rel), &folder.join(&rel))?;
    }
    copy_tree(&device_sysroot(cache), &offload.join("device-sysroot"))?;
    // Cargo and `cargo offload`.
    // Not in `lib/offload/bin`: cargo's rpath (`$ORIGIN/../lib`) would give it trixie's C
    // library under the machine's loader.
    copy(&stage0_toolchain().join("bin/cargo"), &offload.join("cargo/bin/cargo"))?;
    let tools = offload_tools_bin(cache);
    for program in ["cargo-offload", "offload-manifest"] {
        copy(&tools.join(program), &offload.join("bin").join(program))?;
    }
    let report = tools.join("../lib/liboffload_report.so");
    copy(&report, &lib.join("liboffload_report.so"))?;
    // The vendors' tools.
    let llvm_bin = sysroot.join(SYSROOT_LLVM_BIN.trim_start_matches('/'));
    for (_, program) in LLVM_TOOLS {
        copy(&llvm_bin.join(program), &offload.join("llvm").join(program))?;
    }
    let cuda = crate::cuda::cuda_bin(cache);
    for program in ["ptxas", "nvlink"] {
        copy(&cuda.join(program), &offload.join("cuda-bin").join(program))?;
    }
    // The loader and every library that those programs load, the offload runtime and the files
    // of a link.
    let llvm_lib = llvm_bin.join("../lib");
    let programs = super::components::assemble(components, &cache.tree(), folder)?;
    let mut elves: Vec<PathBuf> = vec![stage1.join("bin/rustc"), report];
    elves.extend(components.iter().map(|(_, path)| path.clone()));
    elves.extend(LLVM_TOOLS.iter().map(|(_, program)| llvm_bin.join(program)));
    for (file, link_name) in RUNTIME {
        copy(&llvm_lib.join(file), &lib.join(file))?;
        symlink(file, &lib.join(link_name))?;
        elves.push(llvm_lib.join(file));
    }
    for elf in &elves {
        for (name, path) in libraries(cache, elf)? {
            if !name.starts_with("librustc_driver") && !lib.join(&name).exists() {
                copy(&path, &lib.join(&name))?;
            }
        }
    }
    for (dir, files) in LINK_FILES {
        for file in files {
            copy(&sysroot.join(dir).join(file), &lib.join(file))?;
        }
    }
    for (name, text) in LINK_SCRIPTS {
        write(&lib.join(name), text, 0o644)?;
    }
    write_scripts(folder)?;
    Ok(programs)
}

/// The start scripts (see the module's layout). Each finds the folder from its own path.
fn write_scripts(folder: &Path) -> Result<()> {
    let offload = folder.join("lib/offload");
    // Started by the loader, with the compiler's library first; linking through the
    // toolchain's driver unless the caller names another linker (a later `-C linker` wins).
    let rustc = "#!/bin/sh\n\
        # rustc of the offload toolchain, started by the toolchain's own loader (./x.py dist).\n\
        d=$(cd \"$(dirname \"$0\")/..\" && pwd -P) || exit 1\n\
        l=\"$d/lib/offload/lib\"\n\
        exec \"$l/ld-linux-x86-64.so.2\" --library-path \"$d/lib:$l\" --argv0 \"$0\" \\\n\
        \x20   \"$d/lib/offload/bin/rustc\" -Clinker=\"$d/lib/offload/bin/cc\" \"$@\"\n";
    write(&folder.join("bin/rustc"), rustc, 0o755)?;
    // The caller's own `CARGO_OFFLOAD_*` folders win.
    let cargo_offload = "#!/bin/sh\n\
        # cargo offload with the offload toolchain's folders (./x.py dist).\n\
        o=$(cd \"$(dirname \"$0\")/../lib/offload\" && pwd -P) || exit 1\n\
        export CARGO_OFFLOAD_DEVICE_SYSROOT=\"${CARGO_OFFLOAD_DEVICE_SYSROOT:-\
        $o/device-sysroot}\"\n\
        export CARGO_OFFLOAD_LLVM_BIN=\"${CARGO_OFFLOAD_LLVM_BIN:-$o/llvm-bin}\"\n\
        export CARGO_OFFLOAD_CUDA_BIN=\"${CARGO_OFFLOAD_CUDA_BIN:-$o/cuda-bin}\"\n\
        export CARGO_OFFLOAD_RUNTIME_LIB=\"${CARGO_OFFLOAD_RUNTIME_LIB:-$o/lib}\"\n\
        PATH=\"$o/tools:$PATH\" exec \"$o/bin/cargo-offload\" \"$@\"\n";
    write(&folder.join("bin/cargo-offload"), cargo_offload, 0o755)?;
    // Cargo finds `cargo-offload` on `PATH` only; rustup's `cargo +offload` starts this script.
    let cargo = "#!/bin/sh\n\
        # cargo of the offload toolchain (./x.py dist): `cargo offload` is bin/cargo-offload.\n\
        d=$(cd \"$(dirname \"$0\")\" && pwd -P) || exit 1\n\
        PATH=\"$d:$PATH\" exec \"$d/../lib/offload/cargo/bin/cargo\" \"$@\"\n";
    write(&folder.join("bin/cargo"), cargo, 0o755)?;
    let cc = "#!/bin/sh\n\
        # The linker driver of the offload toolchain (./x.py dist): cargo-offload --cc.\n\
        exec \"$(dirname \"$0\")/cargo-offload\" --cc \"$@\"\n";
    write(&offload.join("bin/cc"), cc, 0o755)?;
    let ldd = "#!/bin/sh\n\
        # ldd for cargo offload bundle: the toolchain's loader lists what a program loads.\n\
        exec \"$(dirname \"$0\")/../lib/ld-linux-x86-64.so.2\" --list \"$@\"\n";
    write(&offload.join("tools/ldd"), ldd, 0o755)?;
    for (name, program) in LLVM_TOOLS {
        let script = format!(
            "#!/bin/sh\n\
             # LLVM's {name}, started by the offload toolchain's own loader (./x.py dist).\n\
             o=$(cd \"$(dirname \"$0\")/..\" && pwd -P) || exit 1\n\
             exec \"$o/lib/ld-linux-x86-64.so.2\" --library-path \"$o/lib\" --argv0 \"$0\" \
             \"$o/llvm/{program}\" \"$@\"\n"
        );
        write(&offload.join("llvm-bin").join(name), &script, 0o755)?;
    }
    Ok(())
}

/// The libraries that `elf` loads, `(name, file)`, the loader among them, as trixie's loader
/// lists them with the sysroot's and the stage-1 compiler's library folders.
fn libraries(cache: &Cache, elf: &Path) -> Result<Vec<(String, PathBuf)>> {
    let sysroot = cache.sysroot();
    let folders = [
        sysroot.join("usr/lib/x86_64-linux-gnu"),
        sysroot.join("usr/lib/llvm-22/lib"),
        cache.stage1().join("lib"),
    ];
    let joined = std::env::join_paths(&folders).unwrap_or_default();
    let mut list = Command::new(sysroot.join("lib64/ld-linux-x86-64.so.2"));
    list.arg("--library-path").arg(joined).arg("--list").arg(elf);
    let out = run_captured(STEP, &mut list)?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found = Vec::new();
    for line in text.lines().map(str::trim) {
        let (name, path) = match line.split_once(" => ") {
            Some((name, rest)) => (name.to_string(), rest.split_whitespace().next()),
            None => {
                let path = line.split_whitespace().next();
                let name = path.and_then(|p| Path::new(p).file_name());
                (name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), path)
            }
        };
        match path {
            Some(path) if path.starts_with('/') => found.push((name, PathBuf::from(path))),
            _ if line.contains("not found") => {
                return fail(STEP, format!("{} needs {line}", elf.display()));
            }
            _ => {}
        }
    }
    Ok(found)
}

/// The entries of `dir`.
fn read_dir(dir: &Path) -> Result<Vec<fs::DirEntry>> {
    let entries = fs::read_dir(dir).at(STEP, dir)?;
    Ok(entries.flatten().collect())
}

/// Copies the file `from` (its target, for a link) to `to`, making `to`'s folder; keeps the
/// permissions.
pub(crate) fn copy(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).at(STEP, parent)?;
    }
    fs::copy(from, to).at(STEP, from)?;
    Ok(())
}

/// Copies the files under `from` into `to`, folders included.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for entry in read_dir(from)? {
        let path = entry.path();
        if path.is_dir() {
            copy_tree(&path, &to.join(entry.file_name()))?;
        } else {
            copy(&path, &to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Makes `link` a symbolic link to `target` (a name in the same folder).
fn symlink(target: &str, link: &Path) -> Result<()> {
    let _ = fs::remove_file(link);
    std::os::unix::fs::symlink(target, link).at(STEP, link)
}

/// Writes `text` to `path` with the permissions `mode`.
pub(crate) fn write(path: &Path, text: &str, mode: u32) -> Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).at(STEP, parent)?;
    }
    fs::write(path, text)
        .and_then(|()| fs::set_permissions(path, fs::Permissions::from_mode(mode)))
        .at(STEP, path)
}

/// The bytes of the files under `dir`.
fn tree_size(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => tree_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}
