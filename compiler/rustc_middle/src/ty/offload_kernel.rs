//! Target-independent identity and symbol of GPU offload kernel instances.
//!
//! Offload compiles one crate graph twice, for the host and for a GPU target, and the two
//! compilations must agree on each kernel instance: the host metadata pass records it in the
//! manifest, the device pass instantiates it, and the host pass launches it by its symbol. The
//! usual identities do not survive the change of target: `CrateNum` and `DefId` are session
//! indices, and `StableCrateId` (hence every `DefPathHash`) depends on `-C metadata`, which
//! cargo sets per target. So a kernel instance is identified by what does not change:
//!
//! - its item, as a [`ItemPath`]: the crate's *name* and [source fingerprint](crate_source)
//!   and the item's disambiguated def path (each component's `DefPathData` kind, name and
//!   disambiguator). The device pass recomputes the `DefPathHash` from it under the
//!   `StableCrateId` of its own session ([`ItemPath::resolve`]), which finds the same item as
//!   long as the item's def path is the same on both targets (it is, unless `cfg` removes a
//!   same-named sibling that shifts a disambiguator; the device pass's manifest check of the
//!   kernel's definition then reports the kernel as stale instead of taking another item);
//! - its generic arguments, as [`KernelTy`] trees: primitives, references, raw pointers,
//!   arrays, slices, tuples, and ADTs named by `ItemPath`. Lifetimes are erased. Other kinds
//!   (const generics, closures, `dyn`) are refused with a diagnostic by the callers.
//!
//! The symbol (query `offload_kernel_symbol`, provided by `rustc_symbol_mangling::offload`) is
//! derived from that identity and the kernel's [definition fingerprint](kernel_definition), never
//! from a `StableCrateId`, so the device pass defines and the host pass launches the same name even
//! when the two passes see different `-C metadata`: `_offload_kernel_<item name>_<16 hex digits>`,
//! the digits being the 64-bit `StableHasher` hash of the identity's [`Display`](fmt::Display)
//! text, the source fingerprint of every crate it names and the definition fingerprint.
//! `StableHasher` is the compiler's platform-independent hasher, so the host and the GPU target
//! compute the same digits; two versions of one crate in one graph give their kernels two symbols,
//! and an edited kernel gets a new one, which an image built before the edit does not define.
//!
//! # Which crate
//!
//! A graph may hold two crates of one name (two versions of a package, under renamed
//! dependencies), so the name alone does not say which crate a path belongs to. The obvious
//! tie-breakers do not survive the change of target: the `StableCrateId` hashes `-C metadata`,
//! and cargo's `-C metadata` hashes the target and the flags. What both passes share is the
//! source they compile, so a crate is also named by its [source fingerprint](crate_source): the
//! content hash of its crate root file (`SourceFile::src_hash`, which rustc computes for every
//! file it reads and keeps in crate metadata, so it is known for upstream crates too). It is
//! independent of the target, of `-C metadata` and of where the source lives (the host and
//! the device pass must hash sources with the same algorithm: the default, MD5 on every
//! target but MSVC's, or the same `-Zsrc-hash-algorithm`); it differs between two versions of
//! a crate unless their crate root files are identical, a graph that the passes refuse for the
//! kernels of such a crate ([`ItemPath::source_crates`]). `core` built by `-Zbuild-std` for the
//! device and the sysroot's `core` of the host share it, as they come from the same source.
//! Incremental compilation does not track file contents, so the fingerprint is a query that
//! runs in every session (`offload_crate_source`).

use std::fmt;

use rustc_data_structures::stable_hasher::StableHasher;
use rustc_hashes::Hash64;
use rustc_hir::def::DefKind;
use rustc_hir::def_id::{CrateNum, DefId, LOCAL_CRATE};
use rustc_hir::definitions::{DefKey, DefPathData, DisambiguatedDefPathData};
use rustc_macros::Diagnostic;
use rustc_span::{Span, Symbol};

use crate::ty::{self, GenericArgKind, Instance, Ty, TyCtxt};

/// One component of an item's def path: the `DefPathData` variant's name (`"TypeNs"`,
/// `"ValueNs"`, `"Impl"`, ...), its name if it has one, and its disambiguator.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathComponent {
    pub kind: String,
    pub name: Option<String>,
    pub disambiguator: u32,
}

/// An item, named by its crate's name and source fingerprint and its disambiguated def path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ItemPath {
    pub krate: String,
    /// The crate's [`crate_source`] fingerprint: 16 hex digits.
    pub crate_source: String,
    pub components: Vec<PathComponent>,
}

/// The source fingerprint of crate `cnum`, as 16 hex digits (the `offload_crate_source` query).
/// The same for the crate's compilations for every target and every `-C metadata` (see the
/// module documentation, "Which crate").
pub fn crate_source(tcx: TyCtxt<'_>, cnum: CrateNum) -> String {
    format!("{:016x}", tcx.offload_crate_source(cnum).as_u64())
}

/// The provider of the `offload_crate_source` query: the 64-bit `StableHasher` hash of the
/// content hash (`SourceFile::src_hash`) of crate `cnum`'s root file, the file of the crate
/// root's span.
pub fn offload_crate_source_provider(tcx: TyCtxt<'_>, cnum: CrateNum) -> Hash64 {
    let root = tcx.def_span(cnum.as_def_id());
    let file = tcx.sess.source_map().lookup_source_file(root.lo());
    let mut hasher = StableHasher::new();
    std::hash::Hash::hash(file.src_hash.hash_bytes(), &mut hasher);
    hasher.finish()
}

/// The definition fingerprint of kernel `def_id`, as 16 hex digits (the
/// `offload_kernel_definition` query): the same on every target, and different after any edit
/// of the file that defines the kernel.
pub fn kernel_definition(tcx: TyCtxt<'_>, def_id: DefId) -> String {
    format!("{:016x}", tcx.offload_kernel_definition(def_id).as_u64())
}

/// The provider of the `offload_kernel_definition` query: the 64-bit `StableHasher` hash of,
/// for the item's definition span and for the outermost call site of the macro that expands it
/// (the same span for an item written out), the content hash (`SourceFile::src_hash`) of the
/// file that holds the span and the span's byte range in it. It is the same on every target
/// (the passes read the same files) and changes when such a file is edited, or when the item's
/// path names another item of the same text (a `cfg` that shifts a disambiguator).
pub fn offload_kernel_definition_provider(tcx: TyCtxt<'_>, def_id: DefId) -> Hash64 {
    let span = tcx.def_span(def_id);
    let mut hasher = StableHasher::new();
    for span in [span, span.source_callsite()] {
        let file = tcx.sess.source_map().lookup_source_file(span.lo());
        std::hash::Hash::hash(file.src_hash.hash_bytes(), &mut hasher);
        std::hash::Hash::hash(&file.relative_position(span.lo()).0, &mut hasher);
        std::hash::Hash::hash(&file.relative_position(span.hi()).0, &mut hasher);
    }
    hasher.finish()
}

/// A generic argument of a kernel instance, as a target-independent tree.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelTy {
    Bool,
    Char,
    Str,
    Never,
    /// A primitive number type, by its name (`i32`, `usize`, `f64`, ...).
    Number(String),
    Adt(ItemPath, Vec<KernelArg>),
    Ref {
        mutable: bool,
        ty: Box<KernelTy>,
    },
    Ptr {
        mutable: bool,
        ty: Box<KernelTy>,
    },
    Array(Box<KernelTy>, u64),
    Slice(Box<KernelTy>),
    Tuple(Vec<KernelTy>),
}

/// A generic argument: a type, or an (erased) lifetime.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelArg {
    Type(KernelTy),
    Lifetime,
}

/// A kernel instance: its item and generic arguments.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelIdentity {
    pub item: ItemPath,
    pub args: Vec<KernelArg>,
}

/// Why a kernel instance has no target-independent identity.
#[derive(Clone, Debug)]
pub struct Unsupported(pub String);

fn data_kind(data: &DefPathData) -> &'static str {
    match data {
        DefPathData::CrateRoot => "CrateRoot",
        DefPathData::Impl => "Impl",
        DefPathData::ForeignMod => "ForeignMod",
        DefPathData::Use => "Use",
        DefPathData::GlobalAsm => "GlobalAsm",
        DefPathData::TypeNs(_) => "TypeNs",
        DefPathData::ValueNs(_) => "ValueNs",
        DefPathData::MacroNs(_) => "MacroNs",
        DefPathData::LifetimeNs(_) => "LifetimeNs",
        DefPathData::Closure => "Closure",
        DefPathData::Ctor => "Ctor",
        DefPathData::AnonConst => "AnonConst",
        DefPathData::LateAnonConst => "LateAnonConst",
        DefPathData::DesugaredAnonymousLifetime => "DesugaredAnonymousLifetime",
        DefPathData::OpaqueTy => "OpaqueTy",
        DefPathData::OpaqueLifetime(_) => "OpaqueLifetime",
        DefPathData::AnonAssocTy(_) => "AnonAssocTy",
        DefPathData::SyntheticCoroutineBody => "SyntheticCoroutineBody",
        DefPathData::NestedStatic => "NestedStatic",
    }
}

impl PathComponent {
    /// The `DefPathData` this component stands for, or None for a kind that cannot name a
    /// kernel or a type argument.
    fn def_path_data(&self) -> Option<DefPathData> {
        let name = || self.name.as_deref().map(Symbol::intern);
        Some(match self.kind.as_str() {
            "Impl" => DefPathData::Impl,
            "ForeignMod" => DefPathData::ForeignMod,
            "TypeNs" => DefPathData::TypeNs(name()?),
            "ValueNs" => DefPathData::ValueNs(name()?),
            "MacroNs" => DefPathData::MacroNs(name()?),
            "Closure" => DefPathData::Closure,
            "Ctor" => DefPathData::Ctor,
            "AnonConst" => DefPathData::AnonConst,
            "OpaqueTy" => DefPathData::OpaqueTy,
            _ => return None,
        })
    }
}

impl ItemPath {
    /// The path of `def_id`.
    pub fn of(tcx: TyCtxt<'_>, def_id: DefId) -> ItemPath {
        let components = tcx
            .def_path(def_id)
            .data
            .iter()
            .map(|d| PathComponent {
                kind: data_kind(&d.data).to_string(),
                name: d.data.get_opt_name().map(|s| s.to_string()),
                disambiguator: d.disambiguator,
            })
            .collect();
        ItemPath {
            krate: tcx.crate_name(def_id.krate).to_string(),
            crate_source: crate_source(tcx, def_id.krate),
            components,
        }
    }

    /// The crates of this session named `self.krate` (more than one where a graph links two
    /// versions of one crate), whatever their source.
    pub fn crates_named<'tcx>(&self, tcx: TyCtxt<'tcx>) -> Vec<CrateNum> {
        std::iter::once(LOCAL_CRATE)
            .chain(tcx.crates(()).iter().copied())
            .filter(|&cnum| tcx.crate_name(cnum).as_str() == self.krate)
            .collect()
    }

    /// The crates of this session that this path's crate name and source fingerprint match:
    /// one, or none when the crate changed; more than one only where the graph holds two
    /// crates of one name with byte-identical root files, which nothing tells apart (the
    /// passes refuse the kernels that name such a crate).
    pub fn source_crates<'tcx>(&self, tcx: TyCtxt<'tcx>) -> Vec<CrateNum> {
        self.crates_named(tcx)
            .into_iter()
            .filter(|&cnum| crate_source(tcx, cnum) == self.crate_source)
            .collect()
    }

    /// The item of this session with this path: the `DefPathHash` is recomputed under the
    /// `StableCrateId` of [its crate](Self::source_crates). None when no crate or more than
    /// one matches, or the crate has no such item.
    pub fn resolve(&self, tcx: TyCtxt<'_>) -> Option<DefId> {
        let data: Vec<DisambiguatedDefPathData> = self
            .components
            .iter()
            .map(|c| {
                Some(DisambiguatedDefPathData {
                    data: c.def_path_data()?,
                    disambiguator: c.disambiguator,
                })
            })
            .collect::<Option<_>>()?;
        let &[cnum] = &self.source_crates(tcx)[..] else { return None };
        let mut hash = tcx.def_path_hash(cnum.as_def_id());
        for d in &data {
            hash = DefKey { parent: None, disambiguated_data: d.clone() }.compute_stable_hash(hash);
        }
        tcx.def_path_hash_to_def_id(hash)
    }
}

impl KernelTy {
    /// The identity of `ty`, a fully monomorphic type.
    pub fn of<'tcx>(tcx: TyCtxt<'tcx>, ty: Ty<'tcx>) -> Result<KernelTy, Unsupported> {
        Ok(match *ty.kind() {
            ty::Bool => KernelTy::Bool,
            ty::Char => KernelTy::Char,
            ty::Str => KernelTy::Str,
            ty::Never => KernelTy::Never,
            ty::Int(i) => KernelTy::Number(i.name_str().to_string()),
            ty::Uint(u) => KernelTy::Number(u.name_str().to_string()),
            ty::Float(f) => KernelTy::Number(f.name_str().to_string()),
            ty::Adt(def, args) => {
                KernelTy::Adt(ItemPath::of(tcx, def.did()), kernel_args(tcx, args)?)
            }
            ty::Ref(_, inner, m) => {
                KernelTy::Ref { mutable: m.is_mut(), ty: Box::new(KernelTy::of(tcx, inner)?) }
            }
            ty::RawPtr(inner, m) => {
                KernelTy::Ptr { mutable: m.is_mut(), ty: Box::new(KernelTy::of(tcx, inner)?) }
            }
            ty::Array(inner, len) => {
                let Some(len) = len.try_to_target_usize(tcx) else {
                    return Err(Unsupported(format!("array length of `{ty}`")));
                };
                KernelTy::Array(Box::new(KernelTy::of(tcx, inner)?), len)
            }
            ty::Slice(inner) => KernelTy::Slice(Box::new(KernelTy::of(tcx, inner)?)),
            ty::Tuple(tys) => {
                KernelTy::Tuple(tys.iter().map(|t| KernelTy::of(tcx, t)).collect::<Result<_, _>>()?)
            }
            _ => return Err(Unsupported(format!("type `{ty}`"))),
        })
    }

    /// The type of this session that this identity names; None when it names none. Each part
    /// is checked against this session before the type that holds it is built, so a stale tree
    /// never reaches a query as an ill-formed type: an ADT must resolve to a struct, enum or
    /// union whose generic parameters take arguments of these kinds and this number, and whose
    /// bounds these arguments do not provably violate
    /// (`instantiate_and_check_impossible_predicates`; an ambiguous bound passes here and is
    /// checked again when the kernel instance is resolved); the element of an array or slice
    /// must be `Sized`.
    pub fn to_ty<'tcx>(&self, tcx: TyCtxt<'tcx>) -> Option<Ty<'tcx>> {
        let sized = |ty: Ty<'tcx>| ty.is_sized(tcx, ty::TypingEnv::fully_monomorphized());
        Some(match self {
            KernelTy::Bool => tcx.types.bool,
            KernelTy::Char => tcx.types.char,
            KernelTy::Str => tcx.types.str_,
            KernelTy::Never => tcx.types.never,
            KernelTy::Number(name) => match name.as_str() {
                "i8" => tcx.types.i8,
                "i16" => tcx.types.i16,
                "i32" => tcx.types.i32,
                "i64" => tcx.types.i64,
                "i128" => tcx.types.i128,
                "isize" => tcx.types.isize,
                "u8" => tcx.types.u8,
                "u16" => tcx.types.u16,
                "u32" => tcx.types.u32,
                "u64" => tcx.types.u64,
                "u128" => tcx.types.u128,
                "usize" => tcx.types.usize,
                "f16" => tcx.types.f16,
                "f32" => tcx.types.f32,
                "f64" => tcx.types.f64,
                "f128" => tcx.types.f128,
                _ => return None,
            },
            KernelTy::Adt(path, args) => {
                let def_id = path.resolve(tcx)?;
                if !matches!(tcx.def_kind(def_id), DefKind::Struct | DefKind::Enum | DefKind::Union)
                {
                    return None;
                }
                let args = args_to_ty(tcx, args)?;
                // The kinds as well as the count: a stale manifest may name a type where the
                // ADT now has a lifetime parameter, and such an ADT type breaks every query
                // that looks at it (the device pass must report the manifest as stale). The
                // bounds too (`Sized` among them): layout and codegen assume them.
                if !tcx.check_args_compatible(def_id, args)
                    || tcx.instantiate_and_check_impossible_predicates((def_id, args))
                {
                    return None;
                }
                Ty::new_adt(tcx, tcx.adt_def(def_id), args)
            }
            KernelTy::Ref { mutable, ty } => Ty::new_ref(
                tcx,
                tcx.lifetimes.re_erased,
                ty.to_ty(tcx)?,
                if *mutable { ty::Mutability::Mut } else { ty::Mutability::Not },
            ),
            KernelTy::Ptr { mutable, ty } => Ty::new_ptr(
                tcx,
                ty.to_ty(tcx)?,
                if *mutable { ty::Mutability::Mut } else { ty::Mutability::Not },
            ),
            KernelTy::Array(ty, len) => {
                let element = ty.to_ty(tcx)?;
                if !sized(element) {
                    return None;
                }
                Ty::new_array(tcx, element, *len)
            }
            KernelTy::Slice(ty) => {
                let element = ty.to_ty(tcx)?;
                if !sized(element) {
                    return None;
                }
                Ty::new_slice(tcx, element)
            }
            KernelTy::Tuple(tys) => {
                let tys: Vec<Ty<'tcx>> = tys.iter().map(|t| t.to_ty(tcx)).collect::<Option<_>>()?;
                // Every field but the last of a tuple is `Sized`.
                if tys.iter().rev().skip(1).any(|&t| !sized(t)) {
                    return None;
                }
                Ty::new_tup(tcx, &tys)
            }
        })
    }

    /// Every item path in this tree, in pre-order.
    fn item_paths<'a>(&'a self, out: &mut Vec<&'a ItemPath>) {
        match self {
            KernelTy::Adt(path, args) => {
                out.push(path);
                args_item_paths(args, out);
            }
            KernelTy::Ref { ty, .. }
            | KernelTy::Ptr { ty, .. }
            | KernelTy::Array(ty, _)
            | KernelTy::Slice(ty) => ty.item_paths(out),
            KernelTy::Tuple(tys) => tys.iter().for_each(|t| t.item_paths(out)),
            KernelTy::Bool
            | KernelTy::Char
            | KernelTy::Str
            | KernelTy::Never
            | KernelTy::Number(_) => {}
        }
    }
}

fn args_item_paths<'a>(args: &'a [KernelArg], out: &mut Vec<&'a ItemPath>) {
    for arg in args {
        if let KernelArg::Type(ty) = arg {
            ty.item_paths(out);
        }
    }
}

fn kernel_args<'tcx>(
    tcx: TyCtxt<'tcx>,
    args: ty::GenericArgsRef<'tcx>,
) -> Result<Vec<KernelArg>, Unsupported> {
    args.iter()
        .map(|arg| match arg.kind() {
            GenericArgKind::Type(ty) => Ok(KernelArg::Type(KernelTy::of(tcx, ty)?)),
            GenericArgKind::Lifetime(_) => Ok(KernelArg::Lifetime),
            GenericArgKind::Const(ct) => Err(Unsupported(format!("const generic argument `{ct}`"))),
        })
        .collect()
}

/// The generic arguments of this session that `args` name; None when one does not resolve.
pub fn args_to_ty<'tcx>(tcx: TyCtxt<'tcx>, args: &[KernelArg]) -> Option<ty::GenericArgsRef<'tcx>> {
    let args: Vec<ty::GenericArg<'tcx>> = args
        .iter()
        .map(|a| match a {
            KernelArg::Type(t) => t.to_ty(tcx).map(Into::into),
            KernelArg::Lifetime => Some(tcx.lifetimes.re_erased.into()),
        })
        .collect::<Option<_>>()?;
    Some(tcx.mk_args(&args))
}

impl KernelIdentity {
    /// Every item path of this identity: the kernel's, then those of the ADTs in its generic
    /// arguments, in pre-order.
    pub fn item_paths(&self) -> Vec<&ItemPath> {
        let mut paths = vec![&self.item];
        args_item_paths(&self.args, &mut paths);
        paths
    }

    /// The identity of `instance`, a monomorphic instance of a `#[rustc_offload_kernel]` item.
    pub fn of<'tcx>(
        tcx: TyCtxt<'tcx>,
        instance: Instance<'tcx>,
    ) -> Result<KernelIdentity, Unsupported> {
        Ok(KernelIdentity {
            item: ItemPath::of(tcx, instance.def_id()),
            args: kernel_args(tcx, instance.args)?,
        })
    }
}

impl fmt::Display for PathComponent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{name}")?,
            None => write!(f, "{{{}}}", self.kind)?,
        }
        if self.disambiguator != 0 {
            write!(f, "#{}", self.disambiguator)?;
        }
        Ok(())
    }
}

impl fmt::Display for ItemPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.krate)?;
        for c in &self.components {
            write!(f, "::{c}")?;
        }
        Ok(())
    }
}

fn write_args(f: &mut fmt::Formatter<'_>, args: &[KernelArg]) -> fmt::Result {
    let types: Vec<&KernelTy> = args
        .iter()
        .filter_map(|a| if let KernelArg::Type(t) = a { Some(t) } else { None })
        .collect();
    if types.is_empty() {
        return Ok(());
    }
    write!(f, "<")?;
    for (i, t) in types.iter().enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        write!(f, "{t}")?;
    }
    write!(f, ">")
}

impl fmt::Display for KernelTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelTy::Bool => write!(f, "bool"),
            KernelTy::Char => write!(f, "char"),
            KernelTy::Str => write!(f, "str"),
            KernelTy::Never => write!(f, "!"),
            KernelTy::Number(n) => write!(f, "{n}"),
            KernelTy::Adt(path, args) => {
                write!(f, "{path}")?;
                write_args(f, args)
            }
            KernelTy::Ref { mutable, ty } => {
                write!(f, "&{}{ty}", if *mutable { "mut " } else { "" })
            }
            KernelTy::Ptr { mutable, ty } => {
                write!(f, "*{} {ty}", if *mutable { "mut" } else { "const" })
            }
            KernelTy::Array(ty, len) => write!(f, "[{ty}; {len}]"),
            KernelTy::Slice(ty) => write!(f, "[{ty}]"),
            KernelTy::Tuple(tys) => {
                write!(f, "(")?;
                for (i, t) in tys.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{t}")?;
                }
                if tys.len() == 1 {
                    write!(f, ",")?;
                }
                write!(f, ")")
            }
        }
    }
}

impl fmt::Display for KernelIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.item)?;
        if self.args.iter().any(|a| matches!(a, KernelArg::Type(_))) {
            write!(f, "::")?;
            write_args(f, &self.args)?;
        }
        Ok(())
    }
}

/// A launch through `core::intrinsics::offload` of something that is not a kernel. The host
/// metadata pass reports it while collecting launches (`rustc_monomorphize`), for a function
/// item without the attribute too; a host pass reports a launch of anything but a function item
/// while generating it (`rustc_codegen_llvm`).
#[derive(Diagnostic)]
#[diag("`offload` launches `{$launched}`, which is not a `#[rustc_offload_kernel]` function")]
#[help(
    "launch a function item marked `#[rustc_offload_kernel]`, or a kernel declared in an \
     `extern` block; closures, function pointers and other functions cannot run as GPU kernels"
)]
pub struct OffloadLaunchNotAKernel {
    #[primary_span]
    pub span: Span,
    pub launched: String,
}
