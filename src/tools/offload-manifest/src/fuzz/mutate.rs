//! The mutations of `offload-manifest fuzz`: structure-aware changes of a manifest's JSON tree,
//! and [`mutant`], which draws one to three of them for one mutant of a seed.

use offload_manifest_format::{GENERIC_ARG_TAGS, keys};
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

/// Every mutation kind, in the order that [`mutant`] draws from (which a seed's mutants
/// depend on).
pub(super) const MUTATIONS: [Mutation; 10] = [
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
/// The generator of mutant `index` of the run seeded with `seed`.
pub(super) fn rng_for(seed: u64, index: u64) -> Xoshiro256PlusPlus {
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
pub(super) fn apply(
    mutation: Mutation,
    manifest: &mut Value,
    rng: &mut Xoshiro256PlusPlus,
) -> bool {
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
