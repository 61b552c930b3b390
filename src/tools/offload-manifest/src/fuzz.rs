//! `offload-manifest fuzz`: structure-aware mutation of offload manifests, each mutant run
//! through the device pass (`-Zoffload=Device=<mutant>`) of a small crate.
//!
//! The device pass reads a file that other tools (and people) write, so it must answer every
//! input with either an image or a diagnostic that names the manifest: never an internal
//! compiler error, a panic, a hang, a refusal that does not say which file is wrong, or a
//! success that leaves no image. This driver checks that on many mutants of one good manifest.
//!
//! Mutations ([`Mutation`]) work on the JSON tree of the seed manifest (the format is documented
//! in `compiler/rustc_monomorphize/src/offload_manifest.rs`): delete a key, give a value a value
//! of another JSON type, swap two item paths, change the kind of a type tree or of a path
//! component, change a number, change a string, drop or duplicate a kernel, nest a type tree
//! deeply, or truncate the serialized text. Each mutant applies one to three of them, chosen by
//! a `Xoshiro256PlusPlus` generator (upstream's vendored `rand_xoshiro`) seeded from the run's
//! seed and the mutant's index, so mutant `i` of seed `s` is the same on every machine and can
//! be rebuilt alone (`--first i --count 1`).
//!
//! Outcomes ([`Outcome`]): `accepted` (exit 0 and a non-empty `host.out` that the vendor's tools
//! link, whose kernels are those the mutant names: see below), `dependency` (exit
//! 0 without an image, where the mutant names another crate as the one that builds the image
//! and lists the compiled crate in that crate's graph: the compiled crate is then one of its
//! dependencies, which make no image) and `refused` (exit 1 and the manifest's file name in the
//! diagnostics) are what the compiler may do; everything else is a defect, saved with its
//! stderr under `<work>/defects/`.
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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use offload_manifest_format::{GENERIC_ARG_TAGS, keys};
use offload_targets::{DeviceTarget, Role};
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

/// One structure-aware change of a manifest's JSON tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mutation {
    /// Removes one key of one object.
    DeleteKey,
    /// Replaces one value with a value of another JSON type.
    WrongType,
    /// Exchanges two item paths (`{"crate": .., "path": [..]}`), or two path components.
    SwapPaths,
    /// Changes the kind tag of a type tree (`["num", ..]` -> `["adt", ..]`) or of a path
    /// component (`"ValueNs"` -> `"TypeNs"`), keeping the rest.
    ChangeKind,
    /// Changes one number: off by one, zero, or a very large value.
    TweakNumber,
    /// Changes one string: another crate or item name, another number type, an empty string.
    TweakString,
    /// Removes one kernel entry.
    DropKernel,
    /// Appends a copy of one kernel entry.
    DuplicateKernel,
    /// Wraps one type tree in many references, pointers, slices or tuples.
    Nest,
    /// Cuts the serialized manifest at a random byte (applied last, alone).
    Truncate,
}

const MUTATIONS: [Mutation; 10] = [
    Mutation::DeleteKey,
    Mutation::WrongType,
    Mutation::SwapPaths,
    Mutation::ChangeKind,
    Mutation::TweakNumber,
    Mutation::TweakString,
    Mutation::DropKernel,
    Mutation::DuplicateKernel,
    Mutation::Nest,
    Mutation::Truncate,
];

/// The tags that open a type tree or a lifetime argument, in the format's order (which the
/// mutants of a seed depend on).
const TYPE_KINDS: [&str; 12] = GENERIC_ARG_TAGS;
const PATH_KINDS: [&str; 10] = [
    "TypeNs",
    "ValueNs",
    "Impl",
    "Closure",
    "Ctor",
    "AnonConst",
    "OpaqueTy",
    "MacroNs",
    "Use",
    "Bogus",
];
const STRINGS: [&str; 12] = [
    "",
    "seed",
    "core",
    "u33",
    "f32",
    "Pair",
    "generic",
    "_",
    "Params",
    "inner",
    "\u{1F980}",
    "a::b",
];

/// The generator of mutant `index` of the run seeded with `seed`.
fn rng_for(seed: u64, index: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

fn below(rng: &mut Xoshiro256PlusPlus, n: usize) -> usize {
    (rng.next_u64() % n.max(1) as u64) as usize
}

/// A location in a JSON tree: the keys and indices from the root.
type Pointer = Vec<PathStep>;

#[derive(Clone, Debug)]
enum PathStep {
    Key(String),
    Index(usize),
}

/// Every location of `value` (the root included), in document order.
fn locations(value: &Value) -> Vec<Pointer> {
    fn walk(value: &Value, at: &mut Pointer, out: &mut Vec<Pointer>) {
        out.push(at.clone());
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    at.push(PathStep::Key(key.clone()));
                    walk(child, at, out);
                    at.pop();
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    at.push(PathStep::Index(i));
                    walk(child, at, out);
                    at.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut Vec::new(), &mut out);
    out
}

fn get_mut<'a>(value: &'a mut Value, at: &[PathStep]) -> Option<&'a mut Value> {
    let mut v = value;
    for step in at {
        v = match step {
            PathStep::Key(k) => v.as_object_mut()?.get_mut(k)?,
            PathStep::Index(i) => v.as_array_mut()?.get_mut(*i)?,
        };
    }
    Some(v)
}

fn get<'a>(value: &'a Value, at: &[PathStep]) -> Option<&'a Value> {
    let mut v = value;
    for step in at {
        v = match step {
            PathStep::Key(k) => v.as_object()?.get(k)?,
            PathStep::Index(i) => v.as_array()?.get(*i)?,
        };
    }
    Some(v)
}

/// Whether `v` looks like a type tree: an array whose first element is a type kind tag.
fn is_type_tree(v: &Value) -> bool {
    v.as_array()
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .is_some_and(|kind| TYPE_KINDS.contains(&kind))
}

/// Whether `v` is an item path (`{"crate": .., "path": [..]}`).
fn is_item_path(v: &Value) -> bool {
    v.get(keys::CRATE).is_some() && v.get(keys::PATH).is_some_and(Value::is_array)
}

/// Whether `v` is one path component (`[kind, name, disambiguator]`).
fn is_component(v: &Value) -> bool {
    v.as_array().is_some_and(|a| {
        a.len() == 3 && a[0].as_str().is_some_and(|k| PATH_KINDS.contains(&k)) && a[2].is_u64()
    })
}

fn pick<'a>(rng: &mut Xoshiro256PlusPlus, candidates: &'a [Pointer]) -> Option<&'a Pointer> {
    if candidates.is_empty() { None } else { Some(&candidates[below(rng, candidates.len())]) }
}

/// Applies `mutation` to `manifest` in place; false when the tree has nothing it applies to.
/// Each mutation draws from `rng` in a fixed order, so a seed gives the same mutants.
fn apply(mutation: Mutation, manifest: &mut Value, rng: &mut Xoshiro256PlusPlus) -> bool {
    let all = locations(manifest);
    match mutation {
        Mutation::DeleteKey => delete_key(manifest, rng, &all),
        Mutation::WrongType => wrong_type(manifest, rng, &all),
        Mutation::SwapPaths => swap_paths(manifest, rng, &all),
        Mutation::ChangeKind => change_kind(manifest, rng, &all),
        Mutation::TweakNumber => tweak_number(manifest, rng, &all),
        Mutation::TweakString => tweak_string(manifest, rng, &all),
        Mutation::DropKernel => drop_or_duplicate_kernel(manifest, rng, false),
        Mutation::DuplicateKernel => drop_or_duplicate_kernel(manifest, rng, true),
        Mutation::Nest => nest(manifest, rng, &all),
        Mutation::Truncate => false,
    }
}

/// The locations among `all` whose value in `manifest` satisfies `f`.
fn matching(manifest: &Value, all: &[Pointer], f: &dyn Fn(&Value) -> bool) -> Vec<Pointer> {
    all.iter().filter(|p| get(manifest, p).is_some_and(f)).cloned().collect()
}

/// [`Mutation::DeleteKey`]: removes one key of a non-empty object.
fn delete_key(manifest: &mut Value, rng: &mut Xoshiro256PlusPlus, all: &[Pointer]) -> bool {
    let objects = matching(manifest, all, &|v| v.as_object().is_some_and(|m| !m.is_empty()));
    let Some(at) = pick(rng, &objects) else { return false };
    let map = get_mut(manifest, at).and_then(Value::as_object_mut).unwrap();
    let key = map.keys().nth(below(rng, map.len())).unwrap().clone();
    map.remove(&key);
    true
}

/// [`Mutation::WrongType`]: replaces a value below the root by one of another JSON type.
fn wrong_type(manifest: &mut Value, rng: &mut Xoshiro256PlusPlus, all: &[Pointer]) -> bool {
    let Some(at) = pick(rng, &all[1..]) else { return false };
    let target = get_mut(manifest, at).unwrap();
    let replacement = match target {
        Value::Null => json!(0),
        Value::Bool(_) => json!("true"),
        Value::Number(_) => json!(["1"]),
        Value::String(_) => json!(7),
        Value::Array(_) => json!({}),
        Value::Object(_) => json!(null),
    };
    *target = replacement;
    true
}

/// [`Mutation::SwapPaths`]: swaps two item paths, or two path components, neither inside the
/// other.
fn swap_paths(manifest: &mut Value, rng: &mut Xoshiro256PlusPlus, all: &[Pointer]) -> bool {
    let mut pool = matching(manifest, all, &is_item_path);
    if pool.len() < 2 || below(rng, 2) == 0 {
        pool = matching(manifest, all, &is_component);
    }
    if pool.len() < 2 {
        return false;
    }
    let a = below(rng, pool.len());
    let mut b = below(rng, pool.len());
    if a == b {
        b = (b + 1) % pool.len();
    }
    // Neither may contain the other (a component inside a swapped path).
    let (pa, pb) = (&pool[a], &pool[b]);
    let prefix = |x: &Pointer, y: &Pointer| {
        x.len() <= y.len() && format!("{:?}", &y[..x.len()]) == format!("{x:?}")
    };
    if prefix(pa, pb) || prefix(pb, pa) {
        return false;
    }
    let va = get(manifest, pa).unwrap().clone();
    let vb = get(manifest, pb).unwrap().clone();
    *get_mut(manifest, pa).unwrap() = vb;
    *get_mut(manifest, pb).unwrap() = va;
    true
}

/// [`Mutation::ChangeKind`]: gives a type tree or a path component another kind tag.
fn change_kind(manifest: &mut Value, rng: &mut Xoshiro256PlusPlus, all: &[Pointer]) -> bool {
    let pool = matching(manifest, all, &|v| is_type_tree(v) || is_component(v));
    let Some(at) = pick(rng, &pool) else { return false };
    let tree = get_mut(manifest, at).and_then(Value::as_array_mut).unwrap();
    let kinds: &[&str] =
        if is_component(&Value::Array(tree.clone())) { &PATH_KINDS } else { &TYPE_KINDS };
    let old = tree[0].as_str().unwrap_or("").to_string();
    let mut new = kinds[below(rng, kinds.len())];
    if new == old {
        new = kinds[(kinds.iter().position(|k| *k == new).unwrap() + 1) % kinds.len()];
    }
    tree[0] = json!(new);
    true
}

/// [`Mutation::TweakNumber`]: moves a number by one, or to 0, `u64::MAX` or -1.
fn tweak_number(manifest: &mut Value, rng: &mut Xoshiro256PlusPlus, all: &[Pointer]) -> bool {
    let pool = matching(manifest, all, &Value::is_number);
    let Some(at) = pick(rng, &pool) else { return false };
    let target = get_mut(manifest, at).unwrap();
    let n = target.as_u64().unwrap_or(0);
    *target = match below(rng, 5) {
        0 => json!(n + 1),
        1 => json!(n.saturating_sub(1)),
        2 => json!(0),
        3 => json!(u64::MAX),
        _ => json!(-1),
    };
    true
}

/// [`Mutation::TweakString`]: replaces a string by one of [`STRINGS`] (another one than it was).
fn tweak_string(manifest: &mut Value, rng: &mut Xoshiro256PlusPlus, all: &[Pointer]) -> bool {
    let pool = matching(manifest, all, &Value::is_string);
    let Some(at) = pick(rng, &pool) else { return false };
    let target = get_mut(manifest, at).unwrap();
    let old = target.as_str().unwrap().to_string();
    let new = STRINGS[below(rng, STRINGS.len())];
    *target = if new == old { json!(format!("{old}x")) } else { json!(new) };
    true
}

/// [`Mutation::DropKernel`], or with `duplicate` [`Mutation::DuplicateKernel`]: removes one
/// kernel entry, or appends a copy of it.
fn drop_or_duplicate_kernel(
    manifest: &mut Value,
    rng: &mut Xoshiro256PlusPlus,
    duplicate: bool,
) -> bool {
    let Some(kernels) = manifest.get_mut(keys::KERNELS).and_then(Value::as_array_mut) else {
        return false;
    };
    if kernels.is_empty() {
        return false;
    }
    let i = below(rng, kernels.len());
    if duplicate {
        let copy = kernels[i].clone();
        kernels.push(copy);
    } else {
        kernels.remove(i);
    }
    true
}

/// [`Mutation::Nest`]: wraps a type tree in 1 to 200 references, pointers, slices and tuples.
fn nest(manifest: &mut Value, rng: &mut Xoshiro256PlusPlus, all: &[Pointer]) -> bool {
    let pool = matching(manifest, all, &is_type_tree);
    let Some(at) = pick(rng, &pool) else { return false };
    let target = get_mut(manifest, at).unwrap();
    let depth = 1 + below(rng, 200);
    let mut tree = target.take();
    for _ in 0..depth {
        tree = match below(rng, 4) {
            0 => json!(["ref", false, tree]),
            1 => json!(["ptr", true, tree]),
            2 => json!(["slice", tree]),
            _ => json!(["tuple", [tree]]),
        };
    }
    *target = tree;
    true
}

/// Mutant `index` of the run seeded with `seed`: the mutated manifest text and the mutations
/// it applies, in order.
pub fn mutant(seed_manifest: &Value, seed: u64, index: u64) -> (String, Vec<Mutation>) {
    let mut rng = rng_for(seed, index);
    let mut manifest = seed_manifest.clone();
    let mut applied = Vec::new();
    let count = 1 + below(&mut rng, 3);
    while applied.len() < count {
        let mutation = MUTATIONS[below(&mut rng, MUTATIONS.len())];
        if mutation == Mutation::Truncate {
            let text = serde_json::to_string_pretty(&manifest).unwrap();
            let cut = below(&mut rng, text.len());
            applied.push(mutation);
            return (text[..text.floor_char_boundary(cut)].to_string(), applied);
        }
        // Only a change counts: a number tweaked to its own value, or two equal paths
        // swapped, leaves the seed as it was.
        let before = manifest.clone();
        if apply(mutation, &mut manifest, &mut rng) && manifest != before {
            applied.push(mutation);
        }
    }
    (serde_json::to_string_pretty(&manifest).unwrap() + "\n", applied)
}

/// What the device pass did with one mutant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Exit 0 with a non-empty offload image.
    Accepted,
    /// Exit 0 without an image, as a dependency of the crate that the mutant says builds it.
    Dependency,
    /// Exit 1 with diagnostics that name the manifest file.
    Refused,
    /// An internal compiler error or a panic (exit 101, or either in stderr).
    Ice,
    /// Killed by a signal (a stack overflow, an abort).
    Crashed,
    /// Exit 1, but no diagnostic names the manifest.
    RefusedUnnamed,
    /// Exit 0 without an offload image.
    AcceptedWithoutImage,
    /// Still running after the time limit.
    Hung,
    /// Accepted, but a vendor tool refused the image (something undefined, say).
    ImageRefused,
    /// Accepted, but the linked image's kernels are not the mutant's `symbol`s.
    WrongKernels,
}

impl Outcome {
    fn is_defect(self) -> bool {
        !matches!(self, Outcome::Accepted | Outcome::Dependency | Outcome::Refused)
    }
}

/// How the kernels of an accepted mutant's image compare with the seed's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KernelChange {
    /// The seed's kernels, all of them.
    Same,
    /// Some of the seed's kernels, no others.
    Fewer,
    /// Kernels of other names (and maybe some of the seed's).
    Renamed,
}

/// The device target of the images that [`VendorCheck`] links: the device pass that
/// `./x.py fuzz` runs (`amdgcn-amd-amdhsa`, for gfx90a).
const TARGET: &DeviceTarget = &offload_targets::AMDGCN;

/// The tools that check an accepted image, from one LLVM `bin` folder. For
/// `amdgcn-amd-amdhsa` images only ([`TARGET`]), linked for its default arch (gfx90a): the
/// device pass that `./x.py fuzz` runs.
pub struct VendorCheck {
    pub llvm_bin: PathBuf,
}

impl VendorCheck {
    /// Links the `amdgcn-amd-amdhsa` image `host.out` of `dir` as the runtime would load it
    /// (the target's vendor steps, `offload_targets`) and returns its kernels (the `.kd`
    /// symbols, without the suffix), or the refusing tool's name and output.
    pub fn kernels(&self, dir: &Path) -> Result<std::collections::BTreeSet<String>, String> {
        let run = |tool: &str, args: &[&str]| -> Result<String, String> {
            let out = Command::new(self.llvm_bin.join(tool))
                .args(args)
                .current_dir(dir)
                .output()
                .map_err(|e| format!("cannot run {tool}: {e}"))?;
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() {
                Ok(stdout)
            } else {
                Err(format!(
                    "{tool} refused the image: {stdout}{}",
                    String::from_utf8_lossy(&out.stderr)
                ))
            }
        };
        for file in ["image.bc", "image.o", "image.so"] {
            let _ = std::fs::remove_file(dir.join(file));
        }
        let extract = format!("--image=file=image.bc,triple={}", TARGET.triple);
        run("llvm-offload-binary", &["host.out", &extract])?;
        let file = |role: Role| {
            match role {
                Role::Input => "image.bc",
                Role::Assembly => "image.s",
                Role::Object => "image.o",
                Role::Loadable => "image.so",
            }
            .to_string()
        };
        // The AMD steps are LLVM's only (`llc`, `ld.lld`), all in `llvm_bin`.
        for step in TARGET.vendor_steps {
            let args = step.args_for(TARGET.default_arch, None, &file);
            run(step.program, &args.iter().map(String::as_str).collect::<Vec<_>>())?;
        }
        let symbols = run("llvm-nm", &["image.so"])?;
        Ok(symbols
            .lines()
            .filter_map(|l| l.split_whitespace().last()?.strip_suffix(".kd"))
            .map(str::to_string)
            .collect())
    }
}

/// The `symbol`s of the `kernels` entries of manifest `text` (none when it does not parse).
fn manifest_symbols(text: &str) -> std::collections::BTreeSet<String> {
    let Ok(manifest) = serde_json::from_str::<Value>(text) else { return Default::default() };
    let kernels = manifest.get(keys::KERNELS).and_then(Value::as_array);
    kernels
        .into_iter()
        .flatten()
        .filter_map(|k| k.get(keys::SYMBOL)?.as_str().map(str::to_string))
        .collect()
}

/// How one mutant is compiled: `rustc ARGS -Zoffload=Device=<mutant>` in a directory of its own.
pub struct DevicePass {
    pub rustc: PathBuf,
    pub args: Vec<String>,
    pub limit: Duration,
    /// The name of the compiled crate (the seed manifest's `crate`).
    pub krate: String,
    /// The check of each accepted image, if any.
    pub vendor: Option<VendorCheck>,
}

/// Whether `text` is a manifest that names another crate than `krate` as the one that builds
/// the image and lists `krate` in that crate's graph.
fn names_krate_a_dependency(text: &str, krate: &str) -> bool {
    let Ok(manifest) = serde_json::from_str::<Value>(text) else { return false };
    manifest.get(keys::CRATE).and_then(Value::as_str).is_some_and(|root| root != krate)
        && manifest
            .get(keys::CRATE_GRAPH)
            .and_then(Value::as_array)
            .is_some_and(|graph| graph.iter().any(|c| c.as_str() == Some(krate)))
}

const MUTANT_FILE: &str = "mutant.json";

impl DevicePass {
    /// Runs the device pass on `text` in `dir`; the outcome, the compiler's stderr (with the
    /// vendor tool's complaint after it for [`Outcome::ImageRefused`]) and, for an accepted
    /// mutant whose image was checked, the image's kernels.
    pub fn run(
        &self,
        dir: &Path,
        text: &str,
    ) -> std::io::Result<(Outcome, String, Option<std::collections::BTreeSet<String>>)> {
        let _ = std::fs::remove_file(dir.join("host.out"));
        std::fs::write(dir.join(MUTANT_FILE), text)?;
        let mut child = Command::new(&self.rustc)
            .args(&self.args)
            .arg(format!("-Zoffload=Device={MUTANT_FILE}"))
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child.stderr.take().unwrap();
        let reader =
            std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if start.elapsed() > self.limit {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let stderr = reader.join().unwrap_or_default();
        let outcome = match status {
            None => Outcome::Hung,
            Some(_)
                if stderr.contains("internal compiler error") || stderr.contains("panicked") =>
            {
                Outcome::Ice
            }
            Some(status) => match status.code() {
                None => Outcome::Crashed,
                Some(101) => Outcome::Ice,
                Some(0) => {
                    let image =
                        std::fs::metadata(dir.join("host.out")).map(|m| m.len()).unwrap_or(0);
                    if image > 0 {
                        Outcome::Accepted
                    } else if names_krate_a_dependency(text, &self.krate) {
                        Outcome::Dependency
                    } else {
                        Outcome::AcceptedWithoutImage
                    }
                }
                Some(_) if stderr.contains(MUTANT_FILE) => Outcome::Refused,
                Some(_) => Outcome::RefusedUnnamed,
            },
        };
        let (Outcome::Accepted, Some(vendor)) = (outcome, &self.vendor) else {
            return Ok((outcome, stderr, None));
        };
        Ok(match vendor.kernels(dir) {
            Err(complaint) => (Outcome::ImageRefused, format!("{stderr}{complaint}"), None),
            Ok(kernels) if kernels != manifest_symbols(text) => {
                let message = format!(
                    "{stderr}the image's kernels {kernels:?} are not the manifest's {:?}",
                    manifest_symbols(text)
                );
                (Outcome::WrongKernels, message, Some(kernels))
            }
            Ok(kernels) => (outcome, stderr, Some(kernels)),
        })
    }
}

/// The numbers of a run.
#[derive(Default, Debug)]
pub struct Report {
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Per mutation kind: how many mutants applied it, and the outcomes of those.
    pub by_mutation: BTreeMap<Mutation, BTreeMap<Outcome, u64>>,
    pub defects: Vec<u64>,
    /// The accepted mutants whose image was checked, by how their kernels compare with the
    /// seed's: each mutant's index and mutations.
    pub accepted: BTreeMap<KernelChange, Vec<(u64, Vec<Mutation>)>>,
}

/// Runs mutants `first..first + count` of `seed_manifest` with `seed` through `pass`, on `jobs`
/// threads, each in its own folder under `work`. Defects are saved as
/// `<work>/defects/<index>.json` with `<index>.stderr`.
pub fn run(
    pass: &DevicePass,
    seed_kernels: &std::collections::BTreeSet<String>,
    seed_manifest: &Value,
    seed: u64,
    first: u64,
    count: u64,
    jobs: usize,
    work: &Path,
) -> std::io::Result<Report> {
    let next = AtomicU64::new(first);
    let report = Mutex::new(Report::default());
    let done = AtomicU64::new(0);
    let defects = work.join("defects");
    std::fs::create_dir_all(&defects)?;
    std::thread::scope(|scope| -> std::io::Result<()> {
        let mut workers = Vec::new();
        for job in 0..jobs.max(1) {
            let dir = work.join(format!("job{job}"));
            std::fs::create_dir_all(&dir)?;
            let (next, report, done, defects) = (&next, &report, &done, &defects);
            workers.push(scope.spawn(move || -> std::io::Result<()> {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= first + count {
                        return Ok(());
                    }
                    let (text, mutations) = mutant(seed_manifest, seed, index);
                    let (outcome, stderr, kernels) = pass.run(&dir, &text)?;
                    if outcome.is_defect() {
                        std::fs::write(defects.join(format!("{index}.json")), &text)?;
                        std::fs::write(
                            defects.join(format!("{index}.stderr")),
                            format!("{outcome:?} after {mutations:?}\n{stderr}"),
                        )?;
                    }
                    let mut report = report.lock().unwrap();
                    *report.outcomes.entry(outcome).or_default() += 1;
                    let mut kinds = mutations.clone();
                    kinds.sort();
                    kinds.dedup();
                    for m in kinds {
                        *report.by_mutation.entry(m).or_default().entry(outcome).or_default() += 1;
                    }
                    if outcome.is_defect() {
                        report.defects.push(index);
                    }
                    if let (Outcome::Accepted, Some(kernels)) = (outcome, kernels) {
                        let change = if kernels == *seed_kernels {
                            KernelChange::Same
                        } else if kernels.is_subset(seed_kernels) {
                            KernelChange::Fewer
                        } else {
                            KernelChange::Renamed
                        };
                        report.accepted.entry(change).or_default().push((index, mutations));
                    }
                    let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if finished % 500 == 0 {
                        eprintln!(
                            "fuzz: {finished}/{count} mutants, {} defects",
                            report.defects.len()
                        );
                    }
                }
            }));
        }
        for worker in workers {
            worker.join().unwrap()?;
        }
        Ok(())
    })?;
    let mut report = report.into_inner().unwrap();
    report.defects.sort();
    report.accepted.values_mut().for_each(|mutants| mutants.sort());
    Ok(report)
}

/// The report as text: totals, then one line per mutation kind.
pub fn render(report: &Report, seed: u64, first: u64, count: u64) -> String {
    let line = |outcomes: &BTreeMap<Outcome, u64>| {
        outcomes.iter().map(|(o, n)| format!("{o:?} {n}")).collect::<Vec<_>>().join(", ")
    };
    let mut out = format!(
        "fuzz: seed {seed}, mutants {first}..{}: {}\n",
        first + count,
        line(&report.outcomes)
    );
    for (mutation, outcomes) in &report.by_mutation {
        out.push_str(&format!("  {mutation:?}: {}\n", line(outcomes)));
    }
    for (change, mutants) in &report.accepted {
        let why = match change {
            KernelChange::Same => "the seed's kernels: nothing the image depends on changed",
            KernelChange::Fewer => "fewer kernels: the mutant lists fewer",
            KernelChange::Renamed => "kernels of other names: the mutant names them so",
        };
        let list: Vec<String> =
            mutants.iter().map(|(index, mutations)| format!("{index} {mutations:?}")).collect();
        out.push_str(&format!(
            "fuzz: accepted, image linked, {why} ({}): {}\n",
            mutants.len(),
            list.join(", ")
        ));
    }
    if report.defects.is_empty() {
        out.push_str("fuzz: no defects\n");
    } else {
        out.push_str(&format!(
            "fuzz: {} defects, mutants {:?}\n",
            report.defects.len(),
            report.defects
        ));
    }
    out
}

/// Parses `fuzz` arguments: `--rustc R --work DIR [--seed N] [--first N] [--count N]
/// [--jobs N] [--limit-secs N] [--llvm-bin DIR] -- <rustc arguments of the device pass>`; the
/// seed manifest is `<work>/seed.json`, written beforehand by the host metadata pass. With
/// `--llvm-bin`, every accepted image is checked by [`VendorCheck`].
pub fn main(args: &[String]) -> Result<bool, String> {
    let mut options: BTreeMap<&str, &str> = BTreeMap::new();
    let mut rest = args.iter();
    let mut rustc_args = Vec::new();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            rustc_args = rest.by_ref().cloned().collect();
            break;
        }
        let Some(name) = arg.strip_prefix("--") else { return Err(format!("unexpected `{arg}`")) };
        let value = rest.next().ok_or(format!("`--{name}` needs a value"))?;
        options.insert(name, value);
    }
    let number = |name: &str, default: u64| -> Result<u64, String> {
        options.get(name).map_or(Ok(default), |v| v.parse().map_err(|e| format!("--{name}: {e}")))
    };
    let rustc = PathBuf::from(options.get("rustc").ok_or("--rustc is required")?);
    let work = PathBuf::from(options.get("work").ok_or("--work is required")?);
    let (seed, first, count) = (number("seed", 1)?, number("first", 0)?, number("count", 200)?);
    let jobs = number("jobs", 2)? as usize;
    let limit = Duration::from_secs(number("limit-secs", 120)?);
    let seed_path = work.join("seed.json");
    let seed_text = std::fs::read_to_string(&seed_path)
        .map_err(|e| format!("cannot read the seed manifest {}: {e}", seed_path.display()))?;
    // The seed must be a valid manifest that the library keeps whole (`parse_exact`), so that
    // its JSON tree, which the mutations work on, is the file's tree: no field the compiler
    // writes is left out of the mutants.
    let parsed = offload_manifest_format::parse_exact(seed_text.as_bytes(), &seed_path)
        .map_err(|e| format!("the seed manifest: {e}"))?;
    let seed_manifest = serde_json::to_value(&parsed).map_err(|e| e.to_string())?;
    let krate = parsed.krate;
    let vendor = options.get("llvm-bin").map(|bin| VendorCheck { llvm_bin: PathBuf::from(bin) });
    let pass = DevicePass { rustc, args: rustc_args, limit, krate, vendor };
    // The unmutated manifest must build an image: otherwise every refusal below proves nothing.
    let baseline = work.join("baseline");
    std::fs::create_dir_all(&baseline).map_err(|e| e.to_string())?;
    let (outcome, stderr, kernels) = pass.run(&baseline, &seed_text).map_err(|e| e.to_string())?;
    if outcome != Outcome::Accepted {
        return Err(format!("the seed manifest itself gives {outcome:?}:\n{stderr}"));
    }
    let seed_kernels = kernels.unwrap_or_default();
    let report = run(&pass, &seed_kernels, &seed_manifest, seed, first, count, jobs, &work)
        .map_err(|e| e.to_string())?;
    print!("{}", render(&report, seed, first, count));
    Ok(report.defects.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed() -> Value {
        json!({
            "magic": offload_manifest_format::MAGIC,
            "format_version": offload_manifest_format::FORMAT_VERSION,
            "crate": "seed",
            "kernels": [
                {"kernel": "seed::generic::<u32>",
                 "item": {"crate": "seed", "path": [["ValueNs", "generic", 0]]},
                 "args": [["num", "u32"]], "symbol": "s", "params": [{"size": 8, "align": 8}]},
                {"kernel": "seed::plain",
                 "item": {"crate": "seed", "path": [["TypeNs", "m", 0], ["ValueNs", "plain", 0]]},
                 "args": [["adt", {"crate": "seed", "path": [["TypeNs", "P", 0]]}, []]],
                 "symbol": "t", "params": []}
            ]
        })
    }

    #[test]
    fn mutants_are_reproducible_and_differ() {
        let seed_text = serde_json::to_string_pretty(&seed()).unwrap() + "\n";
        for i in 0..300 {
            let (a, ma) = mutant(&seed(), 7, i);
            let (b, mb) = mutant(&seed(), 7, i);
            assert_eq!((a.clone(), ma), (b, mb), "mutant {i} is not reproducible");
            assert_ne!(a, seed_text, "mutant {i} equals the seed");
        }
        assert_ne!(mutant(&seed(), 7, 0).0, mutant(&seed(), 8, 0).0);
    }

    #[test]
    fn every_mutation_applies_to_the_seed() {
        for mutation in MUTATIONS {
            if mutation == Mutation::Truncate {
                continue;
            }
            let applied = (0..50).any(|i| {
                let mut v = seed();
                apply(mutation, &mut v, &mut rng_for(3, i)) && v != seed()
            });
            assert!(applied, "{mutation:?} never changed the seed");
        }
    }

    #[test]
    fn change_kind_keeps_the_tree_and_changes_the_tag() {
        let mut v = json!({"args": [["num", "u32"]]});
        assert!(apply(Mutation::ChangeKind, &mut v, &mut rng_for(1, 1)));
        let tag = v["args"][0][0].as_str().unwrap();
        assert_ne!(tag, "num");
        assert_eq!(v["args"][0][1], "u32");
    }

    #[test]
    fn truncation_leaves_an_incomplete_document() {
        let truncated = (0..2000)
            .map(|i| mutant(&seed(), 11, i))
            .find(|(_, m)| m.last() == Some(&Mutation::Truncate))
            .expect("no truncation in 2000 mutants");
        assert!(serde_json::from_str::<Value>(&truncated.0).is_err());
    }

    #[test]
    fn every_mutation_kind_is_drawn() {
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..2000 {
            seen.extend(mutant(&seed(), 5, i).1);
        }
        assert_eq!(seen.len(), MUTATIONS.len(), "drawn: {seen:?}");
    }

    #[test]
    fn a_manifest_of_another_root_makes_the_crate_a_dependency() {
        let root =
            |krate: &str, graph: &[&str]| json!({"crate": krate, "crate_graph": graph}).to_string();
        assert!(names_krate_a_dependency(&root("app", &["app", "seed"]), "seed"));
        assert!(!names_krate_a_dependency(&root("seed", &["seed"]), "seed"));
        assert!(!names_krate_a_dependency(&root("app", &["app", "core"]), "seed"));
        assert!(!names_krate_a_dependency("{\"crate\": \"app\", \"crate_graph\": [\"se", "seed"));
    }

    #[test]
    fn an_accepted_image_must_hold_the_mutants_symbols() {
        let text = serde_json::to_string(&seed()).unwrap();
        let symbols: Vec<String> = manifest_symbols(&text).into_iter().collect();
        assert_eq!(symbols, ["s", "t"]);
        assert!(manifest_symbols("{\"kernels\": [{\"symbol\": \"s\"").is_empty());
    }

    #[test]
    fn nest_wraps_a_type_tree() {
        let mut v = json!({"args": [["num", "u32"]]});
        assert!(apply(Mutation::Nest, &mut v, &mut rng_for(2, 2)));
        let tag = v["args"][0][0].as_str().unwrap();
        assert!(["ref", "ptr", "slice", "tuple"].contains(&tag), "{tag}");
        assert!(v.to_string().contains("[\"num\",\"u32\"]"));
    }
}
