//! The offload manifest: the JSON file that `rustc -Zoffload=HostMetadata=PATH` writes and that
//! `-Zoffload=Device=PATH` reads, as the fork's tools read, check, merge and write it.
//!
//! The compiler defines the format: the module documentation of
//! `compiler/rustc_monomorphize/src/offload_manifest.rs` and its codec
//! (`offload_manifest/codec.rs`: `manifest_json` with `path_json`, `ty_json`, `args_json` and
//! `layouts_json`); `src/doc/offload-manifest.md`
//! describes it for users. The types here mirror format [`FORMAT_VERSION`] field by field and
//! key by key, because a manifest that a tool reads and writes again (the merged manifest of
//! `cargo offload`) goes back to the compiler's device pass, which must read what the host
//! metadata pass wrote. Like the compiler's reader, they ignore keys they do not know.
//!
//! - [`read`] and [`parse`]: a manifest of this format, or an [`Error`] that names the file and
//!   says what is wrong with it; [`read_exact`] also refuses what these types would not keep.
//! - [`merge`]: the union of the manifests of several root crates.
//! - [`to_string_pretty`]: a manifest as text laid out as the compiler lays it out.
//! - [`keys`] and [`GENERIC_ARG_TAGS`]: the format's names, for tools that work on the JSON
//!   tree itself (the fuzzer, which must also write what is not a valid manifest).

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The value of the `magic` key of every manifest.
pub const MAGIC: &str = "rustc-offload-manifest";

/// The format version that these types describe and that [`read`] accepts (`format_version`).
/// It must equal `FORMAT_VERSION` in `compiler/rustc_monomorphize/src/offload_manifest.rs`: the
/// compiler refuses any other, and so do the tools.
pub const FORMAT_VERSION: u64 = 5;

/// The keys of the manifest's JSON objects, for code that works on the JSON tree (the types
/// below name the same keys in their `serde` attributes).
pub mod keys {
    /// Top level: [`MAGIC`](crate::MAGIC).
    pub const MAGIC: &str = "magic";
    /// Top level: [`FORMAT_VERSION`](crate::FORMAT_VERSION).
    pub const FORMAT_VERSION: &str = "format_version";
    /// Top level: the identity of the compiler that wrote the manifest.
    pub const RUSTC_COMMIT: &str = "rustc_commit";
    /// Top level: the crate whose graph the manifest covers. In an item path: the item's crate.
    pub const CRATE: &str = "crate";
    /// Top level: the names of the crates of the graph.
    pub const CRATE_GRAPH: &str = "crate_graph";
    /// Top level: the kernel entries.
    pub const KERNELS: &str = "kernels";
    /// Kernel entry: the instance as text.
    pub const KERNEL: &str = "kernel";
    /// Kernel entry: the kernel's item path.
    pub const ITEM: &str = "item";
    /// Kernel entry: the instance's generic arguments.
    pub const ARGS: &str = "args";
    /// Kernel entry of a kernel declared in an `extern` block: its link name.
    pub const LINK_NAME: &str = "link_name";
    /// Kernel entry of a kernel declared in an `extern` block: the crates whose host build
    /// removed an item of its link name by `cfg`.
    pub const DEFINED_IN: &str = "defined_in";
    /// Kernel entry: the symbol that the device image gives the kernel.
    pub const SYMBOL: &str = "symbol";
    /// Kernel entry: the fingerprint of the kernel's definition.
    pub const DEFINITION: &str = "definition";
    /// Kernel entry: the layouts of the kernel's parameters.
    pub const PARAMS: &str = "params";
    /// Kernel entry: the crates whose code launches the kernel.
    pub const LAUNCHED_BY: &str = "launched_by";
    /// Item path: the source fingerprint of the item's crate.
    pub const CRATE_SOURCE: &str = "crate_source";
    /// Item path: the path components.
    pub const PATH: &str = "path";
    /// Parameter layout: the size in bytes.
    pub const SIZE: &str = "size";
    /// Parameter layout: the ABI alignment in bytes.
    pub const ALIGN: &str = "align";
}

/// The tags that open a generic argument's array (its first element): those of the type kinds
/// of [`Ty`], in the order the compiler's documentation lists them, then `lifetime`
/// ([`GenericArg::Lifetime`]).
pub const GENERIC_ARG_TAGS: [&str; 12] = [
    "bool", "char", "str", "never", "num", "adt", "ref", "ptr", "array", "slice", "tuple",
    "lifetime",
];

/// A manifest of format [`FORMAT_VERSION`]:
///
/// ```json
/// {"magic": "rustc-offload-manifest", "format_version": 5, "rustc_commit": "<compiler>",
///  "crate": "<crate>", "crate_graph": ["<crate names, sorted>"], "kernels": [<Kernel>]}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MAGIC`] in every manifest that [`read`] accepts.
    pub magic: String,
    /// [`FORMAT_VERSION`] in every manifest that [`read`] accepts.
    pub format_version: u64,
    /// The identity of the compiler build that wrote it (`<upstream commit>+fork.<fingerprint>`);
    /// the device pass refuses a manifest of another build.
    pub rustc_commit: String,
    /// The crate of the host metadata pass that wrote it; the device pass of this crate builds
    /// the image, and every other crate's device pass roots nothing.
    #[serde(rename = "crate")]
    pub krate: String,
    /// The names of every crate of the graph of [`Manifest::krate`] (sorted by the compiler).
    pub crate_graph: Vec<String>,
    /// The launched kernel instances (sorted by the compiler by their text).
    pub kernels: Vec<Kernel>,
}

/// One launched kernel instance. A kernel defined for both targets is named by `item`, `args`
/// and `definition` and has no `link_name`; a kernel in the 1.95 style (declared in an `extern`
/// block on the host, defined `#[no_mangle]` for the GPU) is named by `link_name` alone. An
/// absent optional field is absent from the JSON too, as the compiler writes it.
///
/// ```json
/// {"kernel": "demo::scale::<f32>",
///  "item": {"crate": "demo", "crate_source": "0123456789abcdef",
///           "path": [["ValueNs", "scale", 0]]},
///  "args": [["num", "f32"]], "symbol": "_offload_kernel_scale_0123456789abcdef",
///  "definition": "fedcba9876543210", "params": [{"size": 4, "align": 4}],
///  "launched_by": ["demo"]}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kernel {
    /// The instance as text (`demo::scale::<f32>`, or `extern <link name>`); for people, the
    /// device pass does not parse it.
    pub kernel: String,
    /// The kernel's item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<ItemPath>,
    /// The instance's generic arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<GenericArg>>,
    /// The link name of a kernel declared in an `extern` block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_name: Option<String>,
    /// For a kernel declared in an `extern` block, the names of the crates of the graph whose
    /// host build removed an item of its link name by `cfg` (sorted): where the kernel's device
    /// definition is, unless a whole module around it was removed (then it is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defined_in: Option<Vec<String>>,
    /// The kernel's symbol in the device image, which the device pass recomputes and checks.
    pub symbol: String,
    /// The fingerprint of the kernel's definition (which item in which file content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// Each parameter's layout as the host laid it out.
    pub params: Vec<ParamLayout>,
    /// The names of the crates whose code launches the kernel (sorted by the compiler).
    pub launched_by: Vec<String>,
}

impl Kernel {
    /// The crate that defines the kernel: its item's; `None` for a declared kernel, which
    /// some crate of the graph defines under its link name.
    pub fn defining_crate(&self) -> Option<&str> {
        self.item.as_ref().map(|item| item.krate.as_str())
    }
}

/// An item (a kernel, or an ADT in a type argument), named by its crate and its disambiguated
/// def path: `{"crate": "demo", "crate_source": "0123456789abcdef", "path": [<component>]}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemPath {
    /// The crate's name.
    #[serde(rename = "crate")]
    pub krate: String,
    /// The crate's source fingerprint (16 hex digits), which tells two crates of one name apart.
    pub crate_source: String,
    /// The def path from the crate root.
    pub path: Vec<PathComponent>,
}

/// One component of a def path: the array `[kind, name, disambiguator]`, the name `null` for a
/// component without one (an `impl`, a closure): `["ValueNs", "scale", 0]`, `["Impl", null, 1]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathComponent {
    /// The kind of definition (`TypeNs`, `ValueNs`, `Impl`, `Closure`, ...).
    pub kind: String,
    /// Its name, if it has one.
    pub name: Option<String>,
    /// Which of the components of one kind and name in one parent it is.
    pub disambiguator: u32,
}

impl Serialize for PathComponent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (&self.kind, &self.name, self.disambiguator).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PathComponent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (kind, name, disambiguator) = Deserialize::deserialize(deserializer)?;
        Ok(PathComponent { kind, name, disambiguator })
    }
}

/// A generic argument of a kernel instance or of an ADT: a type, or `["lifetime"]` (the
/// compiler erases which lifetime).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GenericArg {
    /// `["lifetime"]`.
    Lifetime,
    /// A type tree.
    Type(Ty),
}

/// A type argument: an array whose first element names its kind (one of
/// [`GENERIC_ARG_TAGS`]), as each variant shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    /// `["bool"]`.
    Bool,
    /// `["char"]`.
    Char,
    /// `["str"]`.
    Str,
    /// `["never"]`.
    Never,
    /// `["num", "u32"]`: an integer or float type by its name.
    Num(String),
    /// `["adt", <item path>, [<generic args>]]`.
    Adt(ItemPath, Vec<GenericArg>),
    /// `["ref", <mutable>, <type>]`.
    Ref { mutable: bool, ty: Box<Ty> },
    /// `["ptr", <mutable>, <type>]`.
    Ptr { mutable: bool, ty: Box<Ty> },
    /// `["array", <type>, <length>]`.
    Array(Box<Ty>, u64),
    /// `["slice", <type>]`.
    Slice(Box<Ty>),
    /// `["tuple", [<types>]]`.
    Tuple(Vec<Ty>),
}

impl Serialize for GenericArg {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            GenericArg::Lifetime => ("lifetime",).serialize(serializer),
            GenericArg::Type(ty) => ty.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for GenericArg {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let tree = Value::deserialize(deserializer)?;
        if tree.as_array().and_then(|a| a.first()).and_then(Value::as_str) == Some("lifetime") {
            return match tree.as_array().map(Vec::len) {
                Some(1) => Ok(GenericArg::Lifetime),
                _ => Err(D::Error::custom(format!("`{tree}` is not a generic argument"))),
            };
        }
        ty_from(&tree).map(GenericArg::Type).map_err(D::Error::custom)
    }
}

impl Serialize for Ty {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Tuples serialize as JSON arrays of their elements: the type tree's own layout.
        match self {
            Ty::Bool => ("bool",).serialize(serializer),
            Ty::Char => ("char",).serialize(serializer),
            Ty::Str => ("str",).serialize(serializer),
            Ty::Never => ("never",).serialize(serializer),
            Ty::Num(name) => ("num", name).serialize(serializer),
            Ty::Adt(path, args) => ("adt", path, args).serialize(serializer),
            Ty::Ref { mutable, ty } => ("ref", mutable, ty).serialize(serializer),
            Ty::Ptr { mutable, ty } => ("ptr", mutable, ty).serialize(serializer),
            Ty::Array(ty, len) => ("array", ty, len).serialize(serializer),
            Ty::Slice(ty) => ("slice", ty).serialize(serializer),
            Ty::Tuple(tys) => ("tuple", tys).serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Ty {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ty_from(&Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

/// Why a JSON value is not a type tree; serde reports it (through `D::Error::custom`) at the
/// place in the manifest where the tree stands.
#[derive(Debug)]
enum TypeTreeError {
    /// The value (as JSON text) has no type kind tag, or not the kind's shape.
    NotAType(String),
    /// A part of the tree (as JSON text) holds an item path, generic arguments or types that
    /// do not deserialize.
    Part(String, serde_json::Error),
}

impl fmt::Display for TypeTreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeTreeError::NotAType(tree) => write!(f, "`{tree}` is not a type tree"),
            TypeTreeError::Part(tree, e) => write!(f, "in `{tree}`: {e}"),
        }
    }
}

/// The type tree `tree`; an array of another length than its kind's is refused too, so that
/// nothing of a manifest is dropped when it is written again.
fn ty_from(tree: &Value) -> Result<Ty, TypeTreeError> {
    let not_a_type = || TypeTreeError::NotAType(tree.to_string());
    let items = tree.as_array().ok_or_else(not_a_type)?;
    let tag = items.first().and_then(Value::as_str).ok_or_else(not_a_type)?;
    let arity = match tag {
        "bool" | "char" | "str" | "never" => 1,
        "num" | "slice" | "tuple" => 2,
        "adt" | "ref" | "ptr" | "array" => 3,
        _ => return Err(not_a_type()),
    };
    if items.len() != arity {
        return Err(not_a_type());
    }
    let typed = |e: serde_json::Error| TypeTreeError::Part(tree.to_string(), e);
    let boxed = |i: usize| ty_from(&items[i]).map(Box::new);
    let mutable = || items[1].as_bool().ok_or_else(not_a_type);
    Ok(match tag {
        "bool" => Ty::Bool,
        "char" => Ty::Char,
        "str" => Ty::Str,
        "never" => Ty::Never,
        "num" => Ty::Num(items[1].as_str().ok_or_else(not_a_type)?.to_string()),
        "adt" => Ty::Adt(
            ItemPath::deserialize(&items[1]).map_err(typed)?,
            Vec::<GenericArg>::deserialize(&items[2]).map_err(typed)?,
        ),
        "ref" => Ty::Ref { mutable: mutable()?, ty: boxed(2)? },
        "ptr" => Ty::Ptr { mutable: mutable()?, ty: boxed(2)? },
        "array" => Ty::Array(boxed(1)?, items[2].as_u64().ok_or_else(not_a_type)?),
        "slice" => Ty::Slice(boxed(1)?),
        _ => Ty::Tuple(Vec::<Ty>::deserialize(&items[1]).map_err(typed)?),
    })
}

/// The layout of one kernel parameter as the host laid it out: `{"size": 8, "align": 8}`, in
/// bytes. The device pass refuses a kernel whose parameters it lays out otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamLayout {
    /// The size in bytes.
    pub size: u64,
    /// The ABI alignment in bytes.
    pub align: u64,
}

/// Why a file is not a manifest that the tools can use; [`Error::path`] names it.
#[derive(Debug)]
pub struct Error {
    /// The manifest's file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub kind: ErrorKind,
}

/// What is wrong with a manifest file (see [`Error`]).
#[derive(Debug)]
pub enum ErrorKind {
    /// The file cannot be read (it does not exist, say).
    Read(std::io::Error),
    /// The file is not JSON, or not all of it (an empty or truncated file).
    Json(serde_json::Error),
    /// The file is JSON without a `magic` key: not an offload manifest at all.
    NotAManifest,
    /// The `magic` key holds this (as JSON text), not [`MAGIC`].
    WrongMagic(String),
    /// The `format_version` key holds this (as JSON text, `null` when it is missing), not
    /// [`FORMAT_VERSION`]: a manifest of another compiler build.
    OtherFormat(String),
    /// The manifest has this format's header, but this part of it does not have the format's
    /// shape (a missing key, a value of the wrong type, an incomplete kernel entry).
    Invalid(String),
    /// [`merge`]: the manifest was written by another compiler build than the manifests before
    /// it: its `rustc_commit` (first) is not theirs (second).
    OtherCompiler(String, String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.kind {
            ErrorKind::Read(e) => write!(f, "cannot read {path}: {e}"),
            ErrorKind::Json(e) => write!(f, "{path} is not an offload manifest: {e}"),
            ErrorKind::NotAManifest => {
                write!(f, "{path} is not an offload manifest: it has no `{}` key", keys::MAGIC)
            }
            ErrorKind::WrongMagic(found) => write!(
                f,
                "{path} is not an offload manifest: its `{}` is {found}, not \"{MAGIC}\"",
                keys::MAGIC
            ),
            ErrorKind::OtherFormat(found) => write!(
                f,
                "{path} is an offload manifest of format {found}, but this tool reads format \
                 {FORMAT_VERSION}: it was written by another compiler build"
            ),
            ErrorKind::Invalid(what) => {
                write!(
                    f,
                    "{path} is not a valid offload manifest of format {FORMAT_VERSION}: {what}"
                )
            }
            ErrorKind::OtherCompiler(found, expected) => write!(
                f,
                "{path} was written by another compiler than the other manifests (rustc \
                 {found}, not {expected})"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Read(e) => Some(e),
            ErrorKind::Json(e) => Some(e),
            _ => None,
        }
    }
}

/// The manifest in the file at `path`, which must be a manifest of format [`FORMAT_VERSION`]
/// (see [`parse`]); else an [`Error`] that names `path`.
pub fn read(path: impl AsRef<Path>) -> Result<Manifest, Error> {
    let path = path.as_ref();
    let bytes = std::fs::read(path)
        .map_err(|e| Error { path: path.to_path_buf(), kind: ErrorKind::Read(e) })?;
    parse(&bytes, path)
}

/// The manifest whose text is `text`, read from `path` (which errors name). Checked in this
/// order, each failure its own [`ErrorKind`]: JSON, the `magic` key, the `format_version` key,
/// then the shape of the rest; a kernel entry must name its kernel either by `link_name` or by
/// all of `item`, `args` and `definition`, as the device pass requires. The `rustc_commit` is
/// not checked: only a compiler knows its own (see [`merge`] for manifests that must agree).
pub fn parse(text: &[u8], path: impl AsRef<Path>) -> Result<Manifest, Error> {
    let error = |kind| Error { path: path.as_ref().to_path_buf(), kind };
    // The header first, so that another format is reported as such, not as a shape error.
    let tree: Value = serde_json::from_slice(text).map_err(|e| error(ErrorKind::Json(e)))?;
    match tree.get(keys::MAGIC) {
        None => return Err(error(ErrorKind::NotAManifest)),
        Some(magic) if magic.as_str() != Some(MAGIC) => {
            return Err(error(ErrorKind::WrongMagic(magic.to_string())));
        }
        Some(_) => {}
    }
    let version = tree.get(keys::FORMAT_VERSION).unwrap_or(&Value::Null);
    if version.as_u64() != Some(FORMAT_VERSION) {
        return Err(error(ErrorKind::OtherFormat(version.to_string())));
    }
    // Parsed again from the text (not from `tree`), so that a shape error gives its line.
    let manifest: Manifest =
        serde_json::from_slice(text).map_err(|e| error(ErrorKind::Invalid(e.to_string())))?;
    for kernel in &manifest.kernels {
        let by_identity = kernel.item.is_some() && kernel.args.is_some();
        if kernel.link_name.is_none() && !(by_identity && kernel.definition.is_some()) {
            return Err(error(ErrorKind::Invalid(format!(
                "the entry of kernel `{}` has neither `{}` nor all of `{}`, `{}` and `{}`",
                kernel.kernel,
                keys::LINK_NAME,
                keys::ITEM,
                keys::ARGS,
                keys::DEFINITION
            ))));
        }
    }
    Ok(manifest)
}

/// As [`read`], and the manifest must be exactly what these types describe: written again
/// (`serde_json::to_value`), it equals the file's JSON value. Otherwise the file holds a key or
/// a value that this library would drop or change, an [`ErrorKind::Invalid`] error that names
/// the first place where the two differ (`kernels[0].params`, say). The test that runs the
/// compiler's host metadata pass reads its manifests with this, so that the compiler's writer
/// and these types cannot drift apart unnoticed.
pub fn read_exact(path: impl AsRef<Path>) -> Result<Manifest, Error> {
    let path = path.as_ref();
    let bytes = std::fs::read(path)
        .map_err(|e| Error { path: path.to_path_buf(), kind: ErrorKind::Read(e) })?;
    parse_exact(&bytes, path)
}

/// [`read_exact`] of the text `text`, read from `path` (which errors name).
pub fn parse_exact(text: &[u8], path: impl AsRef<Path>) -> Result<Manifest, Error> {
    let path = path.as_ref();
    let manifest = parse(text, path)?;
    let error = |what: String| Error { path: path.to_path_buf(), kind: ErrorKind::Invalid(what) };
    let tree: Value = serde_json::from_slice(text).map_err(|e| error(e.to_string()))?;
    let written = serde_json::to_value(&manifest).expect("a manifest has only string keys");
    match first_difference(&tree, &written, String::new()) {
        None => Ok(manifest),
        Some(place) => Err(error(format!(
            "reading and writing it again changes `{place}`: the compiler writes what \
             offload-manifest-format does not describe"
        ))),
    }
}

/// The first place (`key.key[index]`, or `(root)`) where `a` and `b` differ, if they do.
fn first_difference(a: &Value, b: &Value, place: String) -> Option<String> {
    let at = |key: &str| if place.is_empty() { key.to_string() } else { format!("{place}.{key}") };
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|key| match (a.get(key), b.get(key)) {
                (Some(x), Some(y)) => first_difference(x, y, at(key)),
                _ => Some(at(key)),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, format!("{place}[{i}]"))),
        _ if a == b => None,
        _ => Some(if place.is_empty() { "(root)".to_string() } else { place }),
    }
}

/// The union of the manifests at `paths`, as the manifest of the crate `krate` (which joins the
/// crate graph): every kernel instance once, by its symbol (which tells apart one path in two
/// versions of one crate; by its text where the symbol is empty), the first entry's fields with
/// the sorted union of the entries' `launched_by`; the sorted union of the crate graphs; the
/// kernels sorted by symbol. The manifests must come from one compiler build (their
/// `rustc_commit` agrees; [`read`] checked magic and format), else the first that differs is an
/// [`ErrorKind::OtherCompiler`] error. Without manifests, the result has no kernels and an empty
/// `rustc_commit`.
pub fn merge(paths: &[impl AsRef<Path>], krate: &str) -> Result<Manifest, Error> {
    let mut kernels: BTreeMap<String, Kernel> = BTreeMap::new();
    let mut graph: BTreeSet<String> = BTreeSet::from([krate.to_string()]);
    let mut commit: Option<String> = None;
    for path in paths {
        let path = path.as_ref();
        let manifest = read(path)?;
        match &commit {
            Some(first) if *first != manifest.rustc_commit => {
                return Err(Error {
                    path: path.to_path_buf(),
                    kind: ErrorKind::OtherCompiler(manifest.rustc_commit, first.clone()),
                });
            }
            Some(_) => {}
            None => commit = Some(manifest.rustc_commit),
        }
        graph.extend(manifest.crate_graph);
        for kernel in manifest.kernels {
            let key = if kernel.symbol.is_empty() {
                kernel.kernel.clone()
            } else {
                kernel.symbol.clone()
            };
            match kernels.entry(key) {
                Entry::Vacant(entry) => {
                    entry.insert(kernel);
                }
                Entry::Occupied(mut entry) => {
                    let merged = entry.get_mut();
                    merged.launched_by.extend(kernel.launched_by);
                    if let Some(crates) = kernel.defined_in {
                        merged.defined_in.get_or_insert_default().extend(crates);
                    }
                }
            }
        }
    }
    let kernels = kernels
        .into_values()
        .map(|mut kernel| {
            kernel.launched_by.sort();
            kernel.launched_by.dedup();
            if let Some(crates) = &mut kernel.defined_in {
                crates.sort();
                crates.dedup();
            }
            kernel
        })
        .collect();
    Ok(Manifest {
        magic: MAGIC.to_string(),
        format_version: FORMAT_VERSION,
        rustc_commit: commit.unwrap_or_default(),
        krate: krate.to_string(),
        crate_graph: graph.into_iter().collect(),
        kernels,
    })
}

/// `manifest` as pretty-printed JSON, laid out as the compiler writes it: through a
/// `serde_json::Value`, whose objects sort their keys, so that the same manifest is the same
/// text whatever the field order of the types here. Without the final newline the compiler adds.
pub fn to_string_pretty(manifest: &Manifest) -> String {
    let tree = serde_json::to_value(manifest).expect("a manifest has only string keys");
    serde_json::to_string_pretty(&tree).expect("a JSON value always serializes")
}

#[cfg(test)]
mod tests;
