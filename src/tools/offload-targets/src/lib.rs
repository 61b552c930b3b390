//! The device targets of the offload fork, in one table ([`TARGETS`]): for each device kind
//! (LLVM offload's CPU device, AMD GPUs, NVIDIA GPUs) its rustc target triple, how
//! `--offload-arch` names one of its devices, the arch the fork builds and tests for, the flags
//! a device pass gets, whether `./x.py build` puts its `core` into the stage-1 GPU sysroot, and
//! the vendor tools that turn a device pass's bitcode into what the offload runtime loads.
//!
//! Every tool of the fork reads it: `cargo offload` (its `--offload-arch` values and image
//! builder), the harness `offload-x` (the bootstrap targets, the GPU sysroot, the main job, the
//! fuzzer's device pass), `offload-manifest fuzz` (the vendor check of accepted images) and the
//! benchmark `src/offload-bench/bench.py`, which reads the table as JSON ([`to_json`]) from a
//! file that `./x.py bench` writes.
//!
//! The crate has no dependencies: the harness workspace builds before upstream's vendored
//! crates exist, and the JSON is written by hand.
//!
//! The crate also owns the compiler's identity as the tools' caches see it ([`identity`]).
//!
//! Where the facts come from:
//! - The triples are rustc's targets of the GPUs (`amdgcn-amd-amdhsa`, `nvptx64-nvidia-cuda`)
//!   and the machine's own target for the CPU device, which LLVM's offload runtime runs in the
//!   host process (its `generic-64bit` plugin).
//! - The arch names are clang's `--offload-arch` spellings: AMD's `gfxNNN` processor names and
//!   NVIDIA's `sm_NN` compute capabilities, which are also the targets' `-Ctarget-cpu` values
//!   (LLVM's `-mcpu`); `host` is LLVM offload's name of the CPU device.
//! - The vendor steps build an image as the runtime's plugins load it: for AMD GPUs a code
//!   object (code object v5, `--amdhsa-code-object-version=5`) that is an ELF shared object
//!   with nothing undefined (`ld.lld -shared --no-undefined`), whose kernels are their `.kd`
//!   kernel descriptors; for NVIDIA GPUs the PTX that `llc` writes, assembled by `ptxas -c` into
//!   a relocatable cubin and linked by `nvlink`, which reports every undefined function or
//!   global; for the CPU device an ELF shared object (position-independent code), which the
//!   runtime loads with `dlopen` beside the program's C library.

use std::fmt;
use std::fmt::Write as _;

pub mod identity;

/// The host triple the fork is built for and runs on (x86-64 Linux). The CPU device's target in
/// the table; `cargo offload` takes the machine's own triple instead ([`Device::triple_on`]).
pub const HOST_TRIPLE: &str = "x86_64-unknown-linux-gnu";

/// What kind of device a target's devices are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// LLVM offload's CPU device: the host's own CPU.
    Cpu,
    /// AMD GPUs (`amdgcn-amd-amdhsa`).
    Amdgcn,
    /// NVIDIA GPUs (`nvptx64-nvidia-cuda`).
    Nvptx,
}

impl Kind {
    /// The kind's name in the JSON text: `host`, `amdgcn`, `nvptx`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Cpu => "host",
            Kind::Amdgcn => "amdgcn",
            Kind::Nvptx => "nvptx",
        }
    }
}

/// What may follow the prefix of a [`Naming::Prefix`] arch name (at least one character).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rest {
    /// ASCII letters and digits: `90a` of `gfx90a`.
    Alphanumeric,
    /// ASCII digits: `90` of `sm_90`.
    Digits,
}

/// How `--offload-arch` names the devices of a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// Exactly this name: `host`.
    Exact(&'static str),
    /// `prefix` followed by one or more characters of `rest`: `gfx` + alphanumerics, `sm_` +
    /// digits.
    Prefix { prefix: &'static str, rest: Rest },
}

impl Naming {
    /// Whether `name` names a device of this target.
    pub fn matches(self, name: &str) -> bool {
        match self {
            Naming::Exact(exact) => name == exact,
            Naming::Prefix { prefix, rest } => name.strip_prefix(prefix).is_some_and(|tail| {
                !tail.is_empty()
                    && tail.chars().all(|c| match rest {
                        Rest::Alphanumeric => c.is_ascii_alphanumeric(),
                        Rest::Digits => c.is_ascii_digit(),
                    })
            }),
        }
    }
}

/// A file of the vendor steps; each tool that runs them names the files as it likes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The device bitcode taken out of the device pass's image (`{input}`).
    Input,
    /// The assembly `llc` writes, for a target assembled by another tool: PTX (`{assembly}`).
    Assembly,
    /// The relocatable object: `llc`'s, or `ptxas`'s relocatable cubin (`{object}`).
    Object,
    /// What the runtime loads: a shared object, a code object or a linked cubin (`{loadable}`).
    Loadable,
}

impl Role {
    /// The role's placeholder name in the JSON text, without the braces.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Assembly => "assembly",
            Role::Object => "object",
            Role::Loadable => "loadable",
        }
    }
}

/// One argument of a vendor step or of a device pass's flags. In the JSON text each is a
/// string: itself, `<prefix>{arch}`, `{opt}` or `{<role>}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// This text.
    Lit(&'static str),
    /// This prefix followed by the arch name: `-mcpu=` gives `-mcpu=gfx90a`.
    Arch(&'static str),
    /// The optimization level the caller gives `llc` (`-O3`), or no argument at all.
    Opt,
    /// The path of one of the step's files.
    File(Role),
}

impl Arg {
    /// The argument for `arch`, `opt` and the `files`; `None` for [`Arg::Opt`] without `opt`.
    pub fn expand(
        self,
        arch: &str,
        opt: Option<&str>,
        files: &dyn Fn(Role) -> String,
    ) -> Option<String> {
        match self {
            Arg::Lit(text) => Some(text.to_string()),
            Arg::Arch(prefix) => Some(format!("{prefix}{arch}")),
            Arg::Opt => opt.map(str::to_string),
            Arg::File(role) => Some(files(role)),
        }
    }

    /// The argument in the JSON text (unquoted).
    pub fn template(self) -> String {
        match self {
            Arg::Lit(text) => text.to_string(),
            Arg::Arch(prefix) => format!("{prefix}{{arch}}"),
            Arg::Opt => "{opt}".to_string(),
            Arg::File(role) => format!("{{{}}}", role.as_str()),
        }
    }
}

/// Where a vendor step's program comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tools {
    /// LLVM's (`llc`, `ld.lld`): the LLVM 22 `bin` folder.
    Llvm,
    /// NVIDIA's (`ptxas`, `nvlink`): the CUDA tools folder.
    Cuda,
}

impl Tools {
    /// The name in the JSON text: `llvm`, `cuda`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tools::Llvm => "llvm",
            Tools::Cuda => "cuda",
        }
    }
}

/// One step of the vendor check: a program and its arguments. A step that exits with an error
/// refused the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Which folder the program comes from.
    pub tools: Tools,
    /// The program's file name: `llc`, `ld.lld`, `ptxas`, `nvlink`.
    pub program: &'static str,
    /// Its arguments.
    pub args: &'static [Arg],
}

impl Step {
    /// The step's arguments for `arch` ([`Arg::expand`]).
    pub fn args_for(
        &self,
        arch: &str,
        opt: Option<&str>,
        files: &dyn Fn(Role) -> String,
    ) -> Vec<String> {
        self.args.iter().filter_map(|arg| arg.expand(arch, opt, files)).collect()
    }
}

/// How the loadable image names its kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelSymbols {
    /// A `<kernel>.kd` kernel descriptor per kernel (AMD code objects; `llvm-nm`).
    Descriptors,
    /// A defined global function per kernel (cubins, the CPU device's shared objects;
    /// `llvm-readelf -s`).
    GlobalFunctions,
}

impl KernelSymbols {
    /// The name in the JSON text: `descriptors`, `global-functions`.
    pub fn as_str(self) -> &'static str {
        match self {
            KernelSymbols::Descriptors => "descriptors",
            KernelSymbols::GlobalFunctions => "global-functions",
        }
    }
}

/// One device target of the table.
#[derive(Debug, PartialEq, Eq)]
pub struct DeviceTarget {
    /// What kind of device it is.
    pub kind: Kind,
    /// The rustc target of its device passes ([`HOST_TRIPLE`] for the CPU device).
    pub triple: &'static str,
    /// How `--offload-arch` names its devices.
    pub naming: Naming,
    /// The arch the fork builds and tests for (the main job, the example's Cargo program, the
    /// benchmark's vendor check): `gfx90a` (an MI200), `sm_90` (an H100 or H200), `host`.
    pub default_arch: &'static str,
    /// Whether the arch name is the target CPU: the device pass's `-Ctarget-cpu`, `llc -mcpu`,
    /// the `arch=` of the packaged image. `host` is not.
    pub arch_is_cpu: bool,
    /// What a device pass for one of its archs adds to the rustc flags.
    pub pass_flags: &'static [Arg],
    /// The `-Ctarget-cpu` of the fork's own builds of the target's libraries and of the
    /// benchmark's passes, where the target has no default CPU (amdgcn); `None`: the target's
    /// default.
    pub library_cpu: Option<&'static str>,
    /// Whether `./x.py build` builds `core` for it into the stage-1 GPU sysroot (bootstrap's
    /// `--target` list, the saved GPU sysroot), which the manual passes and `--build-std`'s
    /// checks use. The device sysroot's `core`, `alloc` and `std` are built by the harness for
    /// every device target, this one or not.
    pub in_gpu_sysroot: bool,
    /// What the loadable image is, as `cargo offload` reports it: `shared object`, `code
    /// object`, `cubin`.
    pub image_kind: &'static str,
    /// The extension `cargo offload` gives the loadable image: `so`, `cubin`.
    pub loadable_extension: &'static str,
    /// How the loadable image names its kernels.
    pub kernel_symbols: KernelSymbols,
    /// The vendor steps, in order, from the device bitcode ([`Role::Input`]) to the loadable
    /// image ([`Role::Loadable`]).
    pub vendor_steps: &'static [Step],
}

impl DeviceTarget {
    /// The device of its [`default_arch`](DeviceTarget::default_arch).
    pub fn default_device(&'static self) -> Device {
        Device { name: self.default_arch.to_string(), target: self }
    }
}

/// AMD GPUs. amdgcn has no default GPU: the fork's builds of its libraries take gfx90a.
pub const AMDGCN: DeviceTarget = DeviceTarget {
    kind: Kind::Amdgcn,
    triple: "amdgcn-amd-amdhsa",
    naming: Naming::Prefix { prefix: "gfx", rest: Rest::Alphanumeric },
    default_arch: "gfx90a",
    arch_is_cpu: true,
    pass_flags: &[Arg::Arch("-Ctarget-cpu=")],
    library_cpu: Some("gfx90a"),
    in_gpu_sysroot: true,
    image_kind: "code object",
    loadable_extension: "so",
    kernel_symbols: KernelSymbols::Descriptors,
    vendor_steps: &[
        Step {
            tools: Tools::Llvm,
            program: "llc",
            args: &[
                Arg::Opt,
                Arg::Arch("-mcpu="),
                Arg::Lit("--amdhsa-code-object-version=5"),
                Arg::Lit("-filetype=obj"),
                Arg::File(Role::Input),
                Arg::Lit("-o"),
                Arg::File(Role::Object),
            ],
        },
        Step {
            tools: Tools::Llvm,
            program: "ld.lld",
            args: &[
                Arg::Lit("-shared"),
                Arg::Lit("--no-undefined"),
                Arg::File(Role::Object),
                Arg::Lit("-o"),
                Arg::File(Role::Loadable),
            ],
        },
    ],
};

/// NVIDIA GPUs. Their libraries are built for the target's default GPU.
pub const NVPTX: DeviceTarget = DeviceTarget {
    kind: Kind::Nvptx,
    triple: "nvptx64-nvidia-cuda",
    naming: Naming::Prefix { prefix: "sm_", rest: Rest::Digits },
    default_arch: "sm_90",
    arch_is_cpu: true,
    pass_flags: &[Arg::Arch("-Ctarget-cpu=")],
    library_cpu: None,
    in_gpu_sysroot: true,
    image_kind: "cubin",
    loadable_extension: "cubin",
    kernel_symbols: KernelSymbols::GlobalFunctions,
    vendor_steps: &[
        Step {
            tools: Tools::Llvm,
            program: "llc",
            args: &[
                Arg::Opt,
                Arg::Arch("-mcpu="),
                Arg::File(Role::Input),
                Arg::Lit("-o"),
                Arg::File(Role::Assembly),
            ],
        },
        Step {
            tools: Tools::Cuda,
            program: "ptxas",
            args: &[
                Arg::Arch("-arch="),
                Arg::Lit("-c"),
                Arg::File(Role::Assembly),
                Arg::Lit("-o"),
                Arg::File(Role::Object),
            ],
        },
        Step {
            tools: Tools::Cuda,
            program: "nvlink",
            args: &[
                Arg::Arch("-arch="),
                Arg::File(Role::Object),
                Arg::Lit("-o"),
                Arg::File(Role::Loadable),
            ],
        },
    ],
};

/// LLVM offload's CPU device. Every work item reads `core::offload`'s thread-locals: with the
/// initial-exec model each read is one load instead of a call of `__tls_get_addr`. The C
/// library keeps room for a few such thread-locals in a library loaded with `dlopen`, as the
/// runtime loads the image; `core` has 56 bytes of them. The image is linked with
/// `-Bsymbolic-functions`, so that its calls of the functions it defines are bound in the image:
/// the math functions that a host program takes from compiler-builtins rather than the C
/// library (`cbrt`, `cbrtf`, `fdim`, ..., which the device pass defines in the image) must not be
/// taken from the C library that the program has loaded when the runtime loads the image.
pub const CPU: DeviceTarget = DeviceTarget {
    kind: Kind::Cpu,
    triple: HOST_TRIPLE,
    naming: Naming::Exact("host"),
    default_arch: "host",
    arch_is_cpu: false,
    pass_flags: &[Arg::Lit("-Ztls-model=initial-exec")],
    library_cpu: None,
    in_gpu_sysroot: false,
    image_kind: "shared object",
    loadable_extension: "so",
    kernel_symbols: KernelSymbols::GlobalFunctions,
    vendor_steps: &[
        Step {
            tools: Tools::Llvm,
            program: "llc",
            args: &[
                Arg::Opt,
                Arg::Lit("-filetype=obj"),
                Arg::Lit("-relocation-model=pic"),
                Arg::File(Role::Input),
                Arg::Lit("-o"),
                Arg::File(Role::Object),
            ],
        },
        Step {
            tools: Tools::Llvm,
            program: "ld.lld",
            args: &[
                Arg::Lit("-shared"),
                Arg::Lit("-Bsymbolic-functions"),
                Arg::File(Role::Object),
                Arg::Lit("-o"),
                Arg::File(Role::Loadable),
            ],
        },
    ],
};

/// The table, GPUs first: the order of bootstrap's `--target` list, of the example program's
/// archs and of the benchmark's targets.
pub const TARGETS: [&DeviceTarget; 3] = [&AMDGCN, &NVPTX, &CPU];

/// An arch name that no target's [`Naming`] accepts: the error of [`for_arch`]. Its
/// `Display` is the message `cargo offload` reports, which says what an arch may be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownArch {
    /// The name as the user wrote it.
    pub name: String,
}

impl fmt::Display for UnknownArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown offload arch `{}`: expected `host` (the CPU device), `gfxNNN` \
             (an AMD GPU, e.g. gfx90a) or `sm_NN` (an NVIDIA GPU, e.g. sm_90)",
            self.name
        )
    }
}

impl std::error::Error for UnknownArch {}

/// One `--offload-arch` value and its target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// As the user wrote it: `host`, `gfx90a`, `sm_90`.
    pub name: String,
    /// Its target.
    pub target: &'static DeviceTarget,
}

impl Device {
    /// The target CPU (`-Ctarget-cpu`, `llc -mcpu`, the packaged image's `arch=`): the name for
    /// a GPU, `None` for the CPU device.
    pub fn cpu(&self) -> Option<&str> {
        self.target.arch_is_cpu.then_some(self.name.as_str())
    }

    /// The rustc target of its device pass on a machine whose host triple is `host`: the
    /// table's, but `host` itself for the CPU device.
    pub fn triple_on<'a>(&self, host: &'a str) -> &'a str {
        if self.target.kind == Kind::Cpu { host } else { self.target.triple }
    }

    /// What its device pass adds to the rustc flags: `-Ctarget-cpu=gfx90a`, say.
    pub fn pass_flags(&self) -> Vec<String> {
        let no_files = |_: Role| String::new();
        self.target
            .pass_flags
            .iter()
            .filter_map(|a| a.expand(&self.name, None, &no_files))
            .collect()
    }
}

/// The device of `--offload-arch` value `name`; [`UnknownArch`] when no target accepts it.
pub fn for_arch(name: &str) -> Result<Device, UnknownArch> {
    let target = TARGETS.into_iter().find(|t| t.naming.matches(name));
    let target = target.ok_or_else(|| UnknownArch { name: name.to_string() })?;
    Ok(Device { name: name.to_string(), target })
}

/// The targets whose `core` `./x.py build` puts into the stage-1 GPU sysroot, in table order.
pub fn gpu_targets() -> impl Iterator<Item = &'static DeviceTarget> {
    TARGETS.into_iter().filter(|t| t.in_gpu_sysroot)
}

/// The target of `triple`, if the table has it.
pub fn by_triple(triple: &str) -> Option<&'static DeviceTarget> {
    TARGETS.into_iter().find(|t| t.triple == triple)
}

/// The default archs of every target, in table order, as `--offload-arch` takes them:
/// `gfx90a,sm_90,host`.
pub fn default_archs() -> String {
    TARGETS.map(|t| t.default_arch).join(",")
}

/// `text` as a JSON string.
fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON array of `items`, each already JSON text.
fn array(items: impl IntoIterator<Item = String>) -> String {
    format!("[{}]", items.into_iter().collect::<Vec<_>>().join(", "))
}

/// A JSON array of the templates of `args`.
fn args_json(args: &[Arg]) -> String {
    array(args.iter().map(|a| quote(&a.template())))
}

/// The table as JSON text, for `src/offload-bench/bench.py`:
///
/// ```text
/// {"host_triple": "x86_64-unknown-linux-gnu",
///  "targets": [{"kind": "amdgcn", "triple": "amdgcn-amd-amdhsa",
///               "naming": {"prefix": "gfx", "rest": "alphanumeric"}  (or {"exact": "host"}),
///               "default_arch": "gfx90a", "arch_is_cpu": true,
///               "pass_flags": ["-Ctarget-cpu={arch}"], "library_cpu": "gfx90a" (or null),
///               "in_gpu_sysroot": true, "image_kind": "code object",
///               "loadable_extension": "so",
///               "kernel_symbols": "descriptors" (or "global-functions"),
///               "vendor_steps": [{"tools": "llvm" (or "cuda"), "program": "llc",
///                                 "args": ["{opt}", "-mcpu={arch}", ..., "{input}", "-o",
///                                          "{object}"]}, ...]}, ...]}
/// ```
///
/// In an argument, `{arch}` stands for the arch name, `{opt}` (a whole argument) for the
/// optimization level or nothing, and `{input}`, `{assembly}`, `{object}`, `{loadable}` (whole
/// arguments) for the files of [`Role`]. No literal argument holds a brace.
pub fn to_json() -> String {
    let targets = TARGETS.map(|t| {
        let naming = match t.naming {
            Naming::Exact(name) => format!("{{\"exact\": {}}}", quote(name)),
            Naming::Prefix { prefix, rest } => {
                let rest = match rest {
                    Rest::Alphanumeric => "alphanumeric",
                    Rest::Digits => "digits",
                };
                format!("{{\"prefix\": {}, \"rest\": {}}}", quote(prefix), quote(rest))
            }
        };
        let steps = t.vendor_steps.iter().map(|s| {
            format!(
                "{{\"tools\": {}, \"program\": {}, \"args\": {}}}",
                quote(s.tools.as_str()),
                quote(s.program),
                args_json(s.args)
            )
        });
        let fields = [
            ("kind", quote(t.kind.as_str())),
            ("triple", quote(t.triple)),
            ("naming", naming),
            ("default_arch", quote(t.default_arch)),
            ("arch_is_cpu", t.arch_is_cpu.to_string()),
            ("pass_flags", args_json(t.pass_flags)),
            ("library_cpu", t.library_cpu.map_or("null".to_string(), quote)),
            ("in_gpu_sysroot", t.in_gpu_sysroot.to_string()),
            ("image_kind", quote(t.image_kind)),
            ("loadable_extension", quote(t.loadable_extension)),
            ("kernel_symbols", quote(t.kernel_symbols.as_str())),
            ("vendor_steps", array(steps)),
        ];
        let fields = fields.map(|(key, value)| format!("{}: {value}", quote(key)));
        format!("{{{}}}", fields.join(", "))
    });
    format!(
        "{{\"host_triple\": {},\n \"targets\": [\n  {}\n ]}}\n",
        quote(HOST_TRIPLE),
        targets.join(",\n  ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archs_map_to_targets() {
        let gfx = for_arch("gfx90a").unwrap();
        assert_eq!((gfx.target.triple, gfx.cpu()), ("amdgcn-amd-amdhsa", Some("gfx90a")));
        assert_eq!(gfx.pass_flags(), ["-Ctarget-cpu=gfx90a"]);
        let sm = for_arch("sm_90").unwrap();
        assert_eq!((sm.target.triple, sm.cpu()), ("nvptx64-nvidia-cuda", Some("sm_90")));
        let host = for_arch("host").unwrap();
        assert_eq!((host.target.kind, host.cpu()), (Kind::Cpu, None));
        assert_eq!(host.triple_on("aarch64-unknown-linux-gnu"), "aarch64-unknown-linux-gnu");
        assert_eq!(sm.triple_on("aarch64-unknown-linux-gnu"), "nvptx64-nvidia-cuda");
        assert_eq!(host.pass_flags(), ["-Ztls-model=initial-exec"]);
        for good in ["gfx1100", "gfx942", "sm_100", "sm_8"] {
            assert!(for_arch(good).is_ok(), "{good} refused");
        }
        for bad in ["sm_", "sm_9a", "gfx", "gfx9-0", "x86-64", "cuda", "Host", ""] {
            assert_eq!(for_arch(bad), Err(UnknownArch { name: bad.to_string() }));
        }
        assert_eq!(
            for_arch("cuda").unwrap_err().to_string(),
            "unknown offload arch `cuda`: expected `host` (the CPU device), `gfxNNN` (an AMD \
             GPU, e.g. gfx90a) or `sm_NN` (an NVIDIA GPU, e.g. sm_90)"
        );
    }

    #[test]
    fn every_target_is_named_by_its_default_arch_and_found_by_its_triple() {
        for target in TARGETS {
            let device = for_arch(target.default_arch).unwrap();
            assert_eq!(device.target, target);
            assert_eq!(target.default_device(), device);
            assert_eq!(by_triple(target.triple), Some(target));
        }
        assert_eq!(by_triple("wasm32-unknown-unknown"), None);
        let gpus: Vec<&str> = gpu_targets().map(|t| t.triple).collect();
        assert_eq!(gpus, ["amdgcn-amd-amdhsa", "nvptx64-nvidia-cuda"]);
        assert_eq!(default_archs(), "gfx90a,sm_90,host");
    }

    #[test]
    fn vendor_steps_go_from_the_bitcode_to_the_loadable_image() {
        let files = |role: Role| format!("f.{}", role.as_str());
        for target in TARGETS {
            let steps = target.vendor_steps;
            let first = steps.first().unwrap().args;
            assert!(first.contains(&Arg::File(Role::Input)), "{:?}", target.kind);
            assert!(
                steps.last().unwrap().args.ends_with(&[Arg::Lit("-o"), Arg::File(Role::Loadable)])
            );
            for step in steps {
                for arg in step.args {
                    if let Arg::Lit(text) = arg {
                        assert!(!text.contains(['{', '}']), "{text}");
                    }
                }
            }
        }
        let llc = AMDGCN.vendor_steps[0].args_for("gfx90a", None, &files);
        assert_eq!(
            llc,
            [
                "-mcpu=gfx90a",
                "--amdhsa-code-object-version=5",
                "-filetype=obj",
                "f.input",
                "-o",
                "f.object"
            ]
        );
        let ptxas = NVPTX.vendor_steps[1].args_for("sm_90", Some("-O3"), &files);
        assert_eq!(ptxas, ["-arch=sm_90", "-c", "f.assembly", "-o", "f.object"]);
        let llc = CPU.vendor_steps[0].args_for("host", Some("-O3"), &files);
        assert_eq!(llc[..2], ["-O3", "-filetype=obj"]);
    }

    #[test]
    fn json_text_holds_the_table() {
        let json = to_json();
        assert!(json.starts_with("{\"host_triple\": \"x86_64-unknown-linux-gnu\",\n"));
        for target in TARGETS {
            assert!(json.contains(&format!("\"triple\": \"{}\"", target.triple)));
        }
        assert!(json.contains("\"naming\": {\"prefix\": \"sm_\", \"rest\": \"digits\"}"));
        assert!(json.contains("\"naming\": {\"exact\": \"host\"}"));
        assert!(json.contains("\"pass_flags\": [\"-Ctarget-cpu={arch}\"]"));
        assert!(json.contains("\"library_cpu\": null"));
        assert!(json.contains(
            "{\"tools\": \"cuda\", \"program\": \"nvlink\", \
             \"args\": [\"-arch={arch}\", \"{object}\", \"-o\", \"{loadable}\"]}"
        ));
        assert_eq!(quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
        // Brackets and braces balance outside strings (no string here holds one but the
        // placeholders, whose braces balance too).
        let depth = json.chars().try_fold(0i32, |d, c| match c {
            '{' | '[' => Some(d + 1),
            '}' | ']' => (d > 0).then(|| d - 1),
            _ => Some(d),
        });
        assert_eq!(depth, Some(0));
    }
}
