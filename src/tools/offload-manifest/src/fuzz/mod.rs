//! `offload-manifest fuzz`: structure-aware mutation of offload manifests, each mutant run
//! through the device pass (`-Zoffload=Device=<mutant>`) of a small crate.
//!
//! The device pass reads a file that other tools (and people) write, so it must answer every
//! input with either an image or a diagnostic that names the manifest: never an internal
//! compiler error, a panic, a hang, a refusal that does not say which file is wrong, or a
//! success that leaves no image. This driver checks that on many mutants of one good manifest.
//!
//! Mutations ([`Mutation`](mutate::Mutation)) work on the JSON tree of the seed manifest (the
//! format is documented in `compiler/rustc_monomorphize/src/offload_manifest.rs`): delete a key,
//! give a value a value of another JSON type, swap two item paths, change the kind of a type tree
//! or of a path component, change a number, change a string, drop or duplicate a kernel, nest a
//! type tree deeply, or truncate the serialized text. Each mutant applies one to three of them,
//! chosen by a `Xoshiro256PlusPlus` generator (upstream's vendored `rand_xoshiro`) seeded from the
//! run's seed and the mutant's index, so mutant `i` of seed `s` is the same on every machine and
//! can be rebuilt alone (`--first i --count 1`).
//!
//! Outcomes ([`Outcome`](device::Outcome)): `accepted` (exit 0 and a non-empty `host.out` that the
//! vendor's tools link, whose kernels are those the mutant names: see below), `dependency` (exit 0
//! without an image, where the mutant names another crate as the one that builds the image and
//! lists the compiled crate in that crate's graph: the compiled crate is then one of its
//! dependencies, which make no image) and `refused` (exit 1 and the manifest's file name in the
//! diagnostics) are what the compiler may do; everything else is a defect, saved with its stderr
//! under `<work>/defects/`.
//!
//! An accepted mutant is right only if its image is: with `--llvm-bin DIR` each accepted image
//! goes through the tools that turn an `amdgcn-amd-amdhsa` image into what the runtime loads
//! (`llvm-offload-binary` to take the bitcode out of `host.out`, then the target's vendor steps
//! of `offload_targets`: `llc -mcpu=gfx90a` for code object v5, `ld.lld -shared
//! --no-undefined`), and the linked code object's kernels (its `.kd`
//! symbols) must be exactly the `symbol`s of the mutant's `kernels` entries: the manifest says
//! which kernels the image holds and what they are called, so a mutation that the device pass
//! accepts may change neither more nor less than that. An image that a tool refuses
//! (`ImageRefused`) or whose kernels differ (`WrongKernels`) is a defect. The report lists the
//! accepted mutants by what their mutations changed in the kernel set: the seed's kernels (the
//! mutation touched nothing the image depends on, say a duplicated entry), fewer (a dropped
//! entry) or other names (a changed `symbol`, which the pass gives the kernel as told).
//!
//! The files: `mutate.rs` makes the mutants, `device.rs` runs one through the device pass and
//! judges it (the vendor check included), `runner.rs` runs many on several threads and writes
//! the report, and `cli.rs` reads the command line and checks the seed first.

mod cli;
mod device;
mod mutate;
mod runner;
#[cfg(test)]
mod tests;

pub use cli::main;
