//! `cargo-offload --cc ARGS`: the C compiler driver through which rustc links (`-C linker`) in an
//! installed toolchain (`./x.py dist`), so that every program, build scripts included, is
//! linked by the toolchain's own `ld.lld` against its own C runtime files and C library, never
//! by the machine's `cc`, and starts with the toolchain's loader and libraries on any machine
//! where the toolchain is installed.
//!
//! rustc gives a linker of the `gcc` flavor the arguments of GCC's driver. [`ld_args`] maps the
//! ones rustc passes on x86-64 Linux onto `ld.lld` and adds what GCC's driver adds around them
//! (its `startfile`, `endfile` and `link` specs, `gcc -dumpspecs`): the start files
//! (`Scrt1.o crti.o crtbeginS.o` for a position-independent executable), the end files
//! (`crtendS.o crtn.o`), the dynamic loader and the folder of the libraries. It adds the folder as
//! the rpath (`DT_RPATH`, which the loader also applies to the libraries' own dependencies),
//! so that a program finds the toolchain's C library before the machine's. An argument it does
//! not know is an error that names it.
//!
//! The layout, which `./x.py dist` writes: this program is
//! `<toolchain>/lib/offload/bin/cargo-offload`; the loader, the libraries and the C runtime
//! files are in `<toolchain>/lib/offload/lib`; `ld.lld` is
//! `<toolchain>/lib/offload/llvm-bin/ld.lld`, a script that starts it with that loader.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::util::{Context, Failure, Result, fail};

/// What GCC's driver would link: its `-shared`, `-pie`, `-no-pie`, `-static` and
/// `-static-pie`. GCC's driver on Debian builds position-independent executables by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    Pie,
    NoPie,
    Shared,
    Static,
    StaticPie,
}

/// The arguments of `ld.lld` for the driver arguments `args`, with the loader, C runtime files
/// and libraries of the folder `lib`. `@FILE` arguments (rustc writes one when a command line
/// is too long: one argument per line, `\` escaping) are read with `read`. Fails for an
/// argument that the driver does not know, one without its value, or an unreadable `@FILE`.
fn ld_args(
    args: &[String],
    lib: &Path,
    read: &impl Fn(&str) -> Result<String>,
) -> Result<Vec<String>> {
    Ok(Driver::parse(args, read)?.ld_args(lib))
}

/// What the driver arguments ask for, as [`Driver::parse`] reads them.
struct Driver {
    /// What to link.
    output: Output,
    /// Whether the C runtime's start files are linked (no `-nostartfiles`, `-nostdlib`).
    start_files: bool,
    /// Whether `libc` and `libgcc` are linked (no `-nodefaultlibs`, `-nostdlib`).
    default_libs: bool,
    /// The arguments passed on to `ld.lld`, in their order.
    passed: Vec<String>,
}

impl Driver {
    /// Reads the driver arguments `args` (see [`ld_args`]).
    fn parse(args: &[String], read: &impl Fn(&str) -> Result<String>) -> Result<Driver> {
        let mut output = Output::Pie;
        let (mut start_files, mut default_libs) = (true, true);
        let mut passed = Vec::new();
        let mut pending: Vec<String> = args.iter().rev().cloned().collect();
        while let Some(arg) = pending.pop() {
            let mut value = |flag: &str| {
                pending.pop().ok_or_else(|| Failure::new(format!("`{flag}` needs a value")))
            };
            match arg.as_str() {
                "-o" | "-L" => {
                    let v = value(&arg)?;
                    passed.extend([arg, v]);
                }
                "-l" => {
                    let v = value(&arg)?;
                    passed.push(format!("-l{v}"));
                }
                "-Xlinker" => passed.push(value(&arg)?),
                "-shared" => output = Output::Shared,
                "-pie" => output = Output::Pie,
                "-no-pie" => output = Output::NoPie,
                "-static" => output = Output::Static,
                "-static-pie" => output = Output::StaticPie,
                "-nostartfiles" => start_files = false,
                "-nodefaultlibs" => default_libs = false,
                "-nostdlib" => (start_files, default_libs) = (false, false),
                // The target and the linker are this driver's own.
                "-m64" | "-fuse-ld=lld" => {}
                _ if arg.starts_with("-B") => {}
                "-z" | "-u" | "-T" => {
                    let v = value(&arg)?;
                    passed.extend([arg, v]);
                }
                "-rdynamic" => passed.push("--export-dynamic".into()),
                "-s" => passed.push("--strip-all".into()),
                _ if arg.starts_with("-Wl,") => passed.extend(
                    arg["-Wl,".len()..].split(',').filter(|a| !a.is_empty()).map(String::from),
                ),
                _ if arg.starts_with("-L") || arg.starts_with("-l") => passed.push(arg),
                _ if arg.starts_with('@') => {
                    let text = read(&arg[1..])?;
                    pending.extend(response_file_args(&text).into_iter().rev());
                }
                _ if arg.starts_with('-') => {
                    return fail(format!(
                        "the toolchain's linker driver does not know the argument `{arg}` (it \
                         links with `ld.lld` what rustc passes on x86-64 Linux)"
                    ));
                }
                _ => passed.push(arg),
            }
        }
        Ok(Driver { output, start_files, default_libs, passed })
    }

    /// The arguments of `ld.lld`, with the loader, C runtime files and libraries of `lib`.
    fn ld_args(self, lib: &Path) -> Vec<String> {
        let Driver { output, start_files, default_libs, passed } = self;
        let file = |name: &str| lib.join(name).display().to_string();
        let mut ld: Vec<String> =
            ["-m", "elf_x86_64", "--hash-style=gnu", "--build-id", "--eh-frame-hdr", "-z", "relro"]
                .map(String::from)
                .into();
        // GNU ld keeps a section that a `__start_`/`__stop_` symbol names under `--gc-sections`,
        // and the offload registration object relies on it (`llvm_offload_entries`).
        ld.extend(["-z", "nostart-stop-gc"].map(String::from));
        match output {
            Output::Pie => ld.push("-pie".into()),
            Output::NoPie => {}
            Output::Shared => ld.push("-shared".into()),
            Output::Static => ld.push("-static".into()),
            Output::StaticPie => ld
                .extend(["-static", "-pie", "--no-dynamic-linker", "-z", "text"].map(String::from)),
        }
        let dynamic = matches!(output, Output::Pie | Output::NoPie | Output::Shared);
        if matches!(output, Output::Pie | Output::NoPie) {
            ld.extend(["-dynamic-linker".to_string(), file("ld-linux-x86-64.so.2")]);
        }
        let (begin, end) = match output {
            Output::Pie | Output::Shared | Output::StaticPie => ("crtbeginS.o", "crtendS.o"),
            Output::NoPie => ("crtbegin.o", "crtend.o"),
            Output::Static => ("crtbeginT.o", "crtend.o"),
        };
        if start_files {
            let crt1 = match output {
                Output::Pie => Some("Scrt1.o"),
                Output::NoPie | Output::Static => Some("crt1.o"),
                Output::StaticPie => Some("rcrt1.o"),
                Output::Shared => None,
            };
            ld.extend(crt1.into_iter().chain(["crti.o", begin]).map(file));
        }
        // The caller's folders first, then the toolchain's, as GCC's driver orders them.
        ld.extend(passed);
        ld.extend(["-L".to_string(), lib.display().to_string()]);
        if default_libs {
            if dynamic {
                let libgcc = ["-lgcc", "--push-state", "--as-needed", "-lgcc_s", "--pop-state"];
                ld.extend(libgcc.iter().chain(&["-lc"]).chain(&libgcc).map(|a| a.to_string()));
            } else {
                ld.extend(
                    ["--start-group", "-lgcc", "-lgcc_eh", "-lc", "--end-group"].map(String::from),
                );
            }
        }
        if start_files {
            ld.extend([end, "crtn.o"].map(file));
        }
        if dynamic {
            ld.extend([
                "--disable-new-dtags".to_string(),
                "-rpath".into(),
                lib.display().to_string(),
            ]);
        }
        ld
    }
}

/// The arguments of a response file as rustc writes it for a `gcc`-flavored linker: one per
/// line, with `\` escaping the next character.
fn response_file_args(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| !line.is_empty())
        .map(|line| {
            let mut arg = String::new();
            let mut chars = line.chars();
            while let Some(c) = chars.next() {
                arg.push(if c == '\\' { chars.next().unwrap_or('\\') } else { c });
            }
            arg
        })
        .collect()
}

/// The toolchain folder of this program (`<toolchain>/lib/offload/bin/cargo-offload`).
fn offload_dir() -> Result<PathBuf> {
    let exe =
        std::env::current_exe().context(|| "cannot find the cargo-offload program".to_string())?;
    match exe.parent().and_then(Path::parent) {
        Some(dir) if dir.join("lib/ld-linux-x86-64.so.2").is_file() => Ok(dir.to_path_buf()),
        _ => fail(format!(
            "{} is not in an installed toolchain (`./x.py dist`): `--cc` links with the \
             toolchain's `lib/offload/lib`",
            exe.display()
        )),
    }
}

/// The linker that rustc's `args` choose (`-C linker=X` in any of its spellings; the last one
/// wins, as in rustc), if they name one.
fn chosen_linker(args: &[String]) -> Option<&str> {
    let mut chosen = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let value = match arg.as_str() {
            "-C" | "--codegen" => rest.next().map(String::as_str),
            _ => arg.strip_prefix("-C").or_else(|| arg.strip_prefix("--codegen=")),
        };
        if let Some(linker) = value.and_then(|v| v.strip_prefix("linker=")) {
            chosen = Some(linker);
        }
    }
    chosen
}

/// Where a `-C linker` of the user's comes from, as far as the wrapper can tell from its
/// environment: the variables that cargo reads, else the configuration key.
fn linker_setting(triple: &str) -> String {
    let variable =
        format!("CARGO_TARGET_{}_LINKER", triple.to_uppercase().replace(['-', '.'], "_"));
    let in_flags = |name: &str| std::env::var(name).is_ok_and(|flags| flags.contains("linker="));
    if std::env::var_os(&variable).is_some() {
        format!("the environment variable `{variable}`")
    } else if in_flags("RUSTFLAGS") || in_flags("CARGO_ENCODED_RUSTFLAGS") {
        "`-C linker` in `RUSTFLAGS`".to_string()
    } else {
        format!(
            "`target.{triple}.linker`, or `-C linker` in `build.rustflags` or \
             `target.{triple}.rustflags`, of a `.cargo/config.toml` (or `--config`)"
        )
    }
}

/// Refuses to link the program `program` for `triple` with a linker of the user's when the
/// toolchain is an installed one whose offload runtime (`runtime`, the folder that the
/// program's run path names) comes with its own C library: that linker gives the program the
/// machine's loader, which cannot run beside the toolchain's C library (`symbol lookup error:
/// ... libc.so.6: undefined symbol: __tunable_is_initialized`), so the program could not
/// start. With the toolchain's driver (`<toolchain>/lib/offload/bin/cc`, which rustc of an
/// installed toolchain uses unless told otherwise) the program gets the toolchain's loader,
/// C runtime files and C library together. Inside `./x.py`'s sysroot the runtime uses the
/// machine's C library and any linker does.
pub(crate) fn check_program_linker(
    args: &[String],
    program: &str,
    triple: &str,
    runtime: &Path,
) -> Result<()> {
    let Some(linker) = chosen_linker(args) else { return Ok(()) };
    if !runtime.join("libc.so.6").is_file() {
        return Ok(());
    }
    let Ok(toolchain) = offload_dir() else { return Ok(()) };
    let ours = toolchain.join("bin/cc");
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if same(Path::new(linker), &ours) {
        return Ok(());
    }
    fail(format!(
        "the program `{program}` would be linked by `{linker}`, set by {}: that linker gives it \
         the machine's loader, but the offload runtime it loads ({}) comes with the toolchain's \
         own C library, and the program could not start. Remove that setting (the toolchain \
         links programs with its own driver, {}), or set CARGO_OFFLOAD_RUNTIME_LIB to an \
         offload runtime built for this machine's C library",
        linker_setting(triple),
        runtime.display(),
        ours.display()
    ))
}

/// The role of the linker driver (`cargo-offload --cc ARGS`): runs the toolchain's `ld.lld`
/// with [`ld_args`] of `args` and returns its exit status. Fails if the toolchain's folder, a
/// response file or `ld.lld` cannot be found.
pub(crate) fn link(args: &[String]) -> Result<ExitCode> {
    let status = offload_dir().and_then(|dir| {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .context(|| format!("cannot read the response file {path}"))
        };
        let lib = dir.join("lib");
        let ld = ld_args(args, &lib, &read)?;
        let lld = dir.join("llvm-bin/ld.lld");
        Command::new(&lld).args(&ld).status().context_run(lld.display())
    })?;
    Ok(ExitCode::from(status.code().map_or(1, |c| c.clamp(0, 255) as u8)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::strings;

    /// The last `-C linker` wins, in each of rustc's spellings; other codegen options do not
    /// count.
    #[test]
    fn the_chosen_linker_is_the_last_one_named() {
        assert_eq!(chosen_linker(&strings(&["--crate-name", "app", "-C", "opt-level=3"])), None);
        assert_eq!(chosen_linker(&strings(&["-Clinker=/a/cc", "-C", "linker=cc"])), Some("cc"));
        assert_eq!(chosen_linker(&strings(&["--codegen=linker=x", "-Copt-level=1"])), Some("x"));
        assert_eq!(chosen_linker(&strings(&["--codegen", "linker=y"])), Some("y"));
        assert_eq!(chosen_linker(&strings(&["-C", "link-arg=linker=z"])), None);
    }

    /// Without a C library beside the runtime (the sysroot's or a machine's own runtime), or
    /// without a linker named, any linker links.
    #[test]
    fn a_users_linker_is_refused_only_beside_the_toolchains_c_library() {
        let dir = std::env::temp_dir().join(format!("cargo-offload-cc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let user = strings(&["-C", "linker=cc"]);
        let host = "x86_64-unknown-linux-gnu";
        assert!(check_program_linker(&user, "app", host, &dir).is_ok());
        assert!(check_program_linker(&[], "app", host, &dir).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(linker_setting(host).contains("x86_64-unknown-linux-gnu"));
    }

    fn no_file(path: &str) -> Result<String> {
        fail(format!("no {path}"))
    }

    /// The `ld.lld` arguments, or a panic with the failure's message.
    fn linked(args: &[String], lib: &str, read: &impl Fn(&str) -> Result<String>) -> Vec<String> {
        ld_args(args, Path::new(lib), read).unwrap_or_else(|e| panic!("{}", e.0))
    }

    #[test]
    fn rustcs_executable_link_gets_the_toolchains_start_files_loader_and_rpath() {
        let args = strings(&[
            "-m64",
            "/tmp/rustcX/symbols.o",
            "main.o",
            "-Wl,--as-needed",
            "-Wl,-Bstatic",
            "libstd.rlib",
            "-Wl,-Bdynamic",
            "-lgcc_s",
            "-lc",
            "-L",
            "/x/lib",
            "-o",
            "app",
            "-Wl,--gc-sections",
            "-pie",
            "-Wl,-z,relro,-z,now",
            "-nodefaultlibs",
        ]);
        let ld = linked(&args, "/t/lib", &no_file);
        let expected = strings(&[
            "-m",
            "elf_x86_64",
            "--hash-style=gnu",
            "--build-id",
            "--eh-frame-hdr",
            "-z",
            "relro",
            "-z",
            "nostart-stop-gc",
            "-pie",
            "-dynamic-linker",
            "/t/lib/ld-linux-x86-64.so.2",
            "/t/lib/Scrt1.o",
            "/t/lib/crti.o",
            "/t/lib/crtbeginS.o",
            "/tmp/rustcX/symbols.o",
            "main.o",
            "--as-needed",
            "-Bstatic",
            "libstd.rlib",
            "-Bdynamic",
            "-lgcc_s",
            "-lc",
            "-L",
            "/x/lib",
            "-o",
            "app",
            "--gc-sections",
            "-z",
            "relro",
            "-z",
            "now",
            "-L",
            "/t/lib",
            "/t/lib/crtendS.o",
            "/t/lib/crtn.o",
            "--disable-new-dtags",
            "-rpath",
            "/t/lib",
        ]);
        assert_eq!(ld, expected);
    }

    #[test]
    fn a_shared_library_has_no_loader_and_no_crt1() {
        let args = strings(&["-shared", "a.o", "-o", "liba.so", "-nodefaultlibs"]);
        let ld = linked(&args, "/t/lib", &no_file);
        assert!(ld.contains(&"-shared".to_string()));
        assert!(!ld.iter().any(|a| a.contains("ld-linux") || a.ends_with("crt1.o")));
        assert!(ld.contains(&"/t/lib/crtbeginS.o".to_string()));
    }

    #[test]
    fn response_files_are_read_and_unknown_arguments_named() {
        let read = |path: &str| {
            assert_eq!(path, "/tmp/args");
            Ok("a\\ b.o\n-Wl,-soname=x\n".to_string())
        };
        let ld = linked(&strings(&["@/tmp/args", "-nostdlib"]), "/l", &read);
        assert!(ld.contains(&"a b.o".to_string()) && ld.contains(&"-soname=x".to_string()));
        assert!(!ld.iter().any(|a| a.ends_with(".o") && a.starts_with("/l/")));
        let error = ld_args(&strings(&["-flto"]), Path::new("/l"), &no_file).unwrap_err();
        assert!(error.0.contains("does not know the argument `-flto`"), "{}", error.0);
    }
}
