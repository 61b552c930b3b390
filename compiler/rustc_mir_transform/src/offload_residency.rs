//! Keeps the data of offload launches on the device while the launching function cannot touch
//! it, so that a loop of launches over the same slices copies each slice in once and back once.
//!
//! A launch maps each slice argument: it copies the slice to the device before the kernel runs
//! and, for a slice the kernel may write, back after it. In a loop of launches most of these
//! copies are redundant: between two launches the host code often does not read or write the
//! data at all (`mem::swap` of two `Vec`s swaps their headers only). This pass lets the runtime
//! keep such data on the device between launches of one function body, and makes sure that
//! the host never sees a stale copy:
//!
//! - before each launch it calls `core::offload::residency::arm`, which lets that launch (and
//!   only that one) keep its mapped data on the device in the calling thread's table of kept
//!   regions, instead of releasing it at the launch's end;
//! - at every point where kept data might be observed, it calls
//!   `core::offload::residency::flush`, which copies back every kept region the kernels may
//!   have written and releases them all. Such a point is every block that the analysis below
//!   cannot prove *transparent*, reached from a launch without a flush in between: a call of
//!   any function but a few of `core`'s and `alloc`'s that read no launch data, a read or write
//!   through a pointer, a read, write or `StorageDead` of a local whose memory a launch may
//!   map, a drop, a return, and every unwinding edge (a panic between two launches copies back
//!   before its cleanup runs).
//!
//! Since every function flushes before it returns and before it calls anything it cannot see
//! through, kept data never outlives the function body that launched it, nor crosses a call
//! into code that might look at it: launches in helper functions, panics, other threads (which
//! can reach the data only through a call or a pointer) and reallocations (a call) all see the
//! host's data as the plain mapping leaves it. The runtime side (what "keep" and "flush" do
//! with OpenMP's present table and its reference counts) is in `library/core/src/offload/
//! residency.rs`; the launch code that the host pass generates asks the armed table before
//! each launch's own mappers (`rustc_codegen_llvm::builder::gpu_offload`).
//!
//! Which memory a launch may map is found by tracing the pointers of the launch's argument
//! tuple back through the body: a borrow of a local maps that local's memory; a pointer
//! returned by `Vec`'s `deref` or `index` points to the heap; a parameter points outside the
//! frame. A pointer whose origin cannot be traced makes every local whose address is taken
//! count as mapped.
//!
//! The pass runs in the offload host pass only (`-Zoffload=Host=<image>` for an ELF host),
//! before inlining, so that the calls it trusts are still calls.

use rustc_hir::LangItem;
use rustc_index::IndexVec;
use rustc_index::bit_set::DenseBitSet;
use rustc_middle::mir::visit::{
    MutatingUseContext, NonMutatingUseContext, NonUseContext, PlaceContext, Visitor,
};
use rustc_middle::mir::*;
use rustc_middle::ty::{self, GenericArgsRef, Ty, TyCtxt, TypeVisitableExt};
use rustc_session::Session;
use rustc_session::config::Offload;
use rustc_span::def_id::DefId;
use rustc_span::{Span, sym};
use rustc_target::spec::BinaryFormat;

pub(super) struct OffloadResidency;

/// How many definitions [`Facts::origin`] follows back from a launch's pointer.
const ORIGIN_DEPTH: u32 = 16;
/// How many reborrows deep [`Facts::escaped`] follows a borrow.
const REBORROW_DEPTH: u32 = 8;
/// How many calls deep [`Facts::touches_no_memory`] looks into a callee.
const CALLEE_DEPTH: u32 = 3;

impl<'tcx> crate::MirPass<'tcx> for OffloadResidency {
    fn is_enabled(&self, sess: &Session) -> bool {
        !sess.target.is_like_gpu
            && sess.target.binary_format == BinaryFormat::Elf
            && sess.opts.unstable_opts.offload.iter().any(|o| matches!(o, Offload::Host(_)))
    }

    fn run_pass(&self, tcx: TyCtxt<'tcx>, body: &mut Body<'tcx>) {
        let launches: Vec<BasicBlock> = body
            .basic_blocks
            .iter_enumerated()
            .filter(|(_, data)| launch_call(tcx, data.terminator()).is_some())
            .map(|(bb, _)| bb)
            .collect();
        // Keeping pays only where one run of the body can reach a second launch: two launch
        // calls, or one in a loop. A body with one launch outside loops keeps its MIR (and its
        // size, which decides whether it is inlined across crates).
        let reaches_another_launch = match launches[..] {
            [] => false,
            [launch] => on_cycle(body, launch),
            _ => true,
        };
        if !reaches_another_launch {
            return;
        }
        // A `core` without the runtime side (an older one, or one built for another target)
        // keeps the plain mapping.
        let Some(runtime) = Runtime::find(tcx) else { return };
        let facts = Facts::gather(tcx, body, &launches);
        let kinds: IndexVec<BasicBlock, BlockKind> =
            body.basic_blocks.iter().map(|data| facts.block_kind(data)).collect();
        let pending = pending_at_entry(body, &kinds);
        insert_runtime_calls(tcx, body, runtime, &kinds, &pending);
    }

    fn is_required(&self) -> bool {
        false
    }
}

/// The two functions of `core::offload::residency` that the pass calls, each instantiated for
/// `()` (they are generic only so that `core` itself holds no copy that names the runtime).
#[derive(Clone, Copy)]
struct Runtime {
    arm: DefId,
    flush: DefId,
}

impl Runtime {
    fn find(tcx: TyCtxt<'_>) -> Option<Runtime> {
        let items = &tcx.all_diagnostic_items(()).name_to_id;
        let find = |name: &str| {
            items.iter().find(|(item, _)| item.as_str() == name).map(|(_, &def_id)| def_id)
        };
        Some(Runtime {
            arm: find("offload_residency_arm")?,
            flush: find("offload_residency_flush")?,
        })
    }
}

/// For a launch call (`core::offload::launch`, `launch_on_device` or 1.95's
/// `core::intrinsics::offload`), its argument tuple (the last argument).
fn launch_call<'a, 'tcx>(
    tcx: TyCtxt<'tcx>,
    terminator: &'a Terminator<'tcx>,
) -> Option<&'a Operand<'tcx>> {
    let TerminatorKind::Call { func, args, .. } = &terminator.kind else { return None };
    let (callee, _) = func.const_fn_def()?;
    let is_intrinsic = tcx.intrinsic(callee).is_some_and(|i| i.name == sym::offload);
    let is_launch = tcx
        .get_diagnostic_name(callee)
        .is_some_and(|name| matches!(name.as_str(), "offload_launch" | "offload_launch_on_device"));
    if is_intrinsic || is_launch { args.last().map(|arg| &arg.node) } else { None }
}

/// What a block does, for the flush: whether it may observe kept data (then a flush must come
/// first wherever data may be kept on entry), and whether it ends in a launch (which keeps its
/// data).
#[derive(Clone, Copy)]
struct BlockKind {
    opaque: bool,
    launch: bool,
}

/// Where a pointer in the body may point.
#[derive(Clone, Copy, PartialEq)]
enum Origin {
    /// Into this local's own memory (a borrow of it, without a dereference).
    Local(Local),
    /// Never into this frame's locals: the heap of a `Vec`, the caller's memory, a static.
    Outside,
    /// Not traced.
    Unknown,
}

/// What a callee of `core` or `alloc` reads, among the calls that the analysis trusts.
#[derive(Clone, Copy)]
enum CalleeReads {
    /// No memory: it takes values and computes with them, or computes a pointer from a pointer
    /// (slice indexing, `len`).
    Nothing,
    /// The memory behind its reference arguments and nothing else: a `Vec`'s header, a
    /// `Range`, the two sides of `mem::swap`. Each reference must point to a local that no
    /// launch maps.
    BehindReferences,
}

/// What the analysis knows of the body: each local's single definition (if it has exactly
/// one), and the locals whose memory a launch may map.
struct Facts<'a, 'tcx> {
    tcx: TyCtxt<'tcx>,
    body: &'a Body<'tcx>,
    definitions: IndexVec<Local, Definition<'a, 'tcx>>,
    mapped: DenseBitSet<Local>,
}

/// How a local gets its value: never, by one assignment or call (whose right-hand side tells
/// what it holds), or several times (or through its address), which tells nothing.
#[derive(Clone, Copy)]
enum Definition<'a, 'tcx> {
    None,
    Assign(&'a Rvalue<'tcx>),
    Call(&'a Terminator<'tcx>),
    Several,
}

impl<'a, 'tcx> Facts<'a, 'tcx> {
    fn gather(tcx: TyCtxt<'tcx>, body: &'a Body<'tcx>, launches: &[BasicBlock]) -> Self {
        let mut definitions = IndexVec::from_elem(Definition::None, &body.local_decls);
        // Each borrow of a local's own memory: the local, and the local that holds the borrow.
        let mut borrows: Vec<(Local, Option<Local>)> = Vec::new();
        // Each reborrow of all of a pointer's pointee (`&mut *p`): the pointer, the new one.
        let mut reborrows: Vec<(Local, Local)> = Vec::new();
        for data in body.basic_blocks.iter() {
            for statement in &data.statements {
                if let StatementKind::Assign(box (place, rvalue)) = &statement.kind {
                    define(&mut definitions, *place, Definition::Assign(rvalue));
                    if let Rvalue::Ref(_, _, borrowed_place) | Rvalue::RawPtr(_, borrowed_place) =
                        rvalue
                        && !borrowed_place.is_indirect()
                    {
                        borrows.push((borrowed_place.local, place.as_local()));
                    }
                    if let Rvalue::Ref(_, _, from) | Rvalue::RawPtr(_, from) = rvalue
                        && from.projection.as_slice() == [ProjectionElem::Deref]
                        && let Some(to) = place.as_local()
                    {
                        reborrows.push((from.local, to));
                    }
                } else {
                    let mut defs = Definitions { definitions: &mut definitions };
                    defs.visit_statement(statement, Location::START);
                }
            }
            let terminator = data.terminator();
            if let TerminatorKind::Call { destination, .. } = &terminator.kind {
                define(&mut definitions, *destination, Definition::Call(terminator));
            } else {
                let mut defs = Definitions { definitions: &mut definitions };
                defs.visit_terminator(terminator, Location::START);
            }
        }
        // A local whose address is taken may be written through that address (`mem::swap` of
        // two pointers re-points both): its one assignment does not tell what it holds.
        for &(borrowed, _) in &borrows {
            definitions[borrowed] = Definition::Several;
        }
        let mut facts = Facts {
            tcx,
            body,
            definitions,
            mapped: DenseBitSet::new_empty(body.local_decls.len()),
        };
        let mut traced = true;
        for &bb in launches {
            let tuple = launch_call(tcx, body.basic_blocks[bb].terminator());
            for origin in facts.launch_origins(tuple) {
                match origin {
                    Origin::Local(local) => {
                        facts.mapped.insert(local);
                    }
                    Origin::Outside => {}
                    Origin::Unknown => traced = false,
                }
            }
        }
        if !traced {
            let escaped = facts.escaped(&borrows, &reborrows);
            facts.mapped.union(&escaped);
        }
        facts
    }

    /// The locals whose address may have reached a pointer that the analysis cannot trace: each
    /// local with a borrow that is used for anything but an argument of a call that reads
    /// behind its references and returns no pointer into them (`Vec`'s methods, `Range`'s
    /// `next`, `mem::swap`). A pointer of unknown origin in a launch may point into these.
    fn escaped(
        &self,
        borrows: &[(Local, Option<Local>)],
        reborrows: &[(Local, Local)],
    ) -> DenseBitSet<Local> {
        let mut uses = Uses { all: IndexVec::from_elem(0, &self.body.local_decls) };
        uses.visit_body(self.body);
        let mut as_argument = IndexVec::from_elem(0u32, &self.body.local_decls);
        for data in self.body.basic_blocks.iter() {
            let TerminatorKind::Call { func, args, .. } = &data.terminator().kind else {
                continue;
            };
            let Some((callee, generics)) = func.const_fn_def() else { continue };
            let Some(CalleeReads::BehindReferences) = callee_reads(self.tcx, callee, generics)
            else {
                continue;
            };
            for arg in args.iter() {
                if let Operand::Move(place) | Operand::Copy(place) = &arg.node
                    && let Some(local) = place.as_local()
                {
                    as_argument[local] += 1;
                }
            }
        }
        // A pointer is confined when each of its uses is such an argument or a reborrow into a
        // confined pointer (the `&mut *iter` of a `for` loop's `next`), at most 8 deep.
        let confined = |holder: Local| {
            let mut frontier = vec![(holder, 0)];
            while let Some((pointer, depth)) = frontier.pop() {
                let into: Vec<Local> =
                    reborrows.iter().filter(|r| r.0 == pointer).map(|r| r.1).collect();
                let defined_once = matches!(self.definitions[pointer], Definition::Assign(_));
                let accounted = as_argument[pointer] + into.len() as u32;
                if depth > REBORROW_DEPTH || !defined_once || uses.all[pointer] != accounted {
                    return false;
                }
                frontier.extend(into.into_iter().map(|next| (next, depth + 1)));
            }
            true
        };
        let mut escaped = DenseBitSet::new_empty(self.body.local_decls.len());
        for &(local, holder) in borrows {
            if !holder.is_some_and(confined) {
                escaped.insert(local);
            }
        }
        escaped
    }

    /// Where each pointer of a launch's argument tuple may point. A tuple that is not built
    /// in place (a tuple variable) is not traced.
    fn launch_origins(&self, tuple: Option<&Operand<'tcx>>) -> Vec<Origin> {
        let Some(Operand::Move(tuple) | Operand::Copy(tuple)) = tuple else {
            return vec![Origin::Unknown];
        };
        let Some(local) = tuple.as_local() else { return vec![Origin::Unknown] };
        let Definition::Assign(Rvalue::Aggregate(box AggregateKind::Tuple, elements)) =
            self.definitions[local]
        else {
            return vec![Origin::Unknown];
        };
        elements
            .iter()
            .map(|element| match element {
                Operand::Constant(_) => Origin::Outside,
                Operand::Move(place) | Operand::Copy(place) => {
                    if is_plain_value(place.ty(self.body, self.tcx).ty) {
                        // A number is passed as it is: no memory is mapped. Anything else (a
                        // pointer, or a value of a generic type that may be one) is traced.
                        return Origin::Outside;
                    }
                    match place.as_local() {
                        Some(local) => self.origin(local, 0),
                        None => Origin::Unknown,
                    }
                }
                _ => Origin::Unknown,
            })
            .collect()
    }

    /// Where the pointer in `local` may point, followed through at most [`ORIGIN_DEPTH`]
    /// definitions.
    fn origin(&self, local: Local, depth: u32) -> Origin {
        if depth > ORIGIN_DEPTH {
            return Origin::Unknown;
        }
        let is_parameter = local.index() >= 1 && local.index() <= self.body.arg_count;
        match self.definitions[local] {
            // A parameter is made before this frame's locals exist.
            Definition::None if is_parameter => Origin::Outside,
            Definition::Assign(rvalue) => match rvalue {
                Rvalue::Ref(_, _, place) | Rvalue::RawPtr(_, place) => {
                    self.place_origin(*place, depth)
                }
                Rvalue::Use(operand) | Rvalue::Cast(_, operand, _) => match operand {
                    Operand::Constant(_) => Origin::Outside,
                    Operand::Move(place) | Operand::Copy(place) => match place.as_local() {
                        Some(source) => self.origin(source, depth + 1),
                        None => Origin::Unknown,
                    },
                    _ => Origin::Unknown,
                },
                Rvalue::CopyForDeref(place) => match place.as_local() {
                    Some(source) => self.origin(source, depth + 1),
                    None => Origin::Unknown,
                },
                _ => Origin::Unknown,
            },
            Definition::Call(terminator) => self.call_origin(terminator, depth),
            Definition::None | Definition::Several => Origin::Unknown,
        }
    }

    /// Where a borrow of `place` points: into its local if no dereference comes first, else
    /// where the dereferenced pointer points (one dereference, at the start, is followed).
    fn place_origin(&self, place: Place<'tcx>, depth: u32) -> Origin {
        match place.projection.iter().position(|elem| elem == ProjectionElem::Deref) {
            None => Origin::Local(place.local),
            Some(0) if place.projection[1..].iter().all(|e| *e != ProjectionElem::Deref) => {
                self.origin(place.local, depth + 1)
            }
            Some(_) => Origin::Unknown,
        }
    }

    /// Where the pointer that a trusted call returns points: the heap for what a `Vec`'s or a
    /// `String`'s methods return (their first argument is a reference to the owner), else
    /// where its first argument points (slice indexing, `as_ptr`).
    fn call_origin(&self, terminator: &Terminator<'tcx>, depth: u32) -> Origin {
        let TerminatorKind::Call { func, args, .. } = &terminator.kind else {
            return Origin::Unknown;
        };
        let Some((callee, generics)) = func.const_fn_def() else { return Origin::Unknown };
        let Some(reads) = callee_reads(self.tcx, callee, generics) else { return Origin::Unknown };
        let Some(Operand::Move(first) | Operand::Copy(first)) = args.first().map(|arg| &arg.node)
        else {
            return Origin::Unknown;
        };
        let first_ty = first.ty(self.body, self.tcx).ty;
        match reads {
            CalleeReads::BehindReferences
                if is_heap_owner(self.tcx, first_ty.builtin_deref(true)) =>
            {
                Origin::Outside
            }
            CalleeReads::Nothing if first_ty.is_any_ptr() => match first.as_local() {
                Some(source) => self.origin(source, depth + 1),
                None => Origin::Unknown,
            },
            _ => Origin::Unknown,
        }
    }

    /// Whether a block may observe kept data (see [`BlockKind`]) and whether it ends in a
    /// launch.
    fn block_kind(&self, data: &BasicBlockData<'tcx>) -> BlockKind {
        let launch = launch_call(self.tcx, data.terminator()).is_some();
        let statements_transparent = data.statements.iter().all(|s| self.statement_transparent(s));
        let terminator_transparent = launch || self.terminator_transparent(data.terminator());
        let operands_transparent = self.touches_no_mapped_memory(|v| {
            v.visit_terminator(data.terminator(), Location::START);
        });
        BlockKind {
            opaque: !(statements_transparent && terminator_transparent && operands_transparent),
            launch,
        }
    }

    /// Whether a statement reads and writes no memory that a launch may have kept.
    fn statement_transparent(&self, statement: &Statement<'tcx>) -> bool {
        match &statement.kind {
            // It reads and writes through its pointer operands.
            StatementKind::Intrinsic(box NonDivergingIntrinsic::CopyNonOverlapping(..)) => false,
            _ => self.touches_no_mapped_memory(|v| v.visit_statement(statement, Location::START)),
        }
    }

    /// Whether a terminator other than a launch is transparent by its kind; its operands and
    /// places are checked apart ([`Facts::touches_no_mapped_memory`]).
    fn terminator_transparent(&self, terminator: &Terminator<'tcx>) -> bool {
        match &terminator.kind {
            TerminatorKind::Goto { .. }
            | TerminatorKind::SwitchInt { .. }
            | TerminatorKind::Assert { .. }
            | TerminatorKind::FalseEdge { .. }
            | TerminatorKind::FalseUnwind { .. }
            | TerminatorKind::Unreachable => true,
            TerminatorKind::Call { func, args, .. } => {
                let Some((callee, generics)) = func.const_fn_def() else { return false };
                match callee_reads(self.tcx, callee, generics) {
                    Some(CalleeReads::Nothing) => true,
                    Some(CalleeReads::BehindReferences) => {
                        args.iter().all(|arg| self.points_to_unmapped_local(&arg.node))
                    }
                    None => self.touches_no_memory(callee, generics, 0),
                }
            }
            _ => false,
        }
    }

    /// For an argument of a call that reads behind its references: a value that is not a
    /// pointer, or a pointer into a local that no launch maps.
    fn points_to_unmapped_local(&self, operand: &Operand<'tcx>) -> bool {
        let (Operand::Move(place) | Operand::Copy(place)) = operand else { return true };
        // The trusted callees dereference their reference arguments only; the others are
        // values (an index, a range of indices).
        if !place.ty(self.body, self.tcx).ty.is_any_ptr() {
            return true;
        }
        match place.as_local().map(|local| self.origin(local, 0)) {
            Some(Origin::Local(local)) => !self.mapped.contains(local),
            _ => false,
        }
    }

    /// Whether a call of `callee` reads and writes no memory but its own locals: its body
    /// (after its own inlining) dereferences no pointer and calls nothing but functions of
    /// which the same holds, at most three calls deep. A helper that computes a launch's grid
    /// from its arguments (`fn blocks(n: usize) -> [u32; 3]`) qualifies. A callee that may call
    /// back into the body being analyzed is not looked at (its MIR may not exist yet).
    fn touches_no_memory(&self, callee: DefId, generics: GenericArgsRef<'tcx>, depth: u32) -> bool {
        let tcx = self.tcx;
        let typing_env = self.body.typing_env(tcx);
        if depth > CALLEE_DEPTH || generics.has_param() {
            return false;
        }
        let Ok(Some(instance)) = ty::Instance::try_resolve(tcx, typing_env, callee, generics)
        else {
            return false;
        };
        let ty::InstanceKind::Item(def_id) = instance.def else { return false };
        if let Some(local) = def_id.as_local() {
            // The call graph of local functions is only safe to walk when the inliner walks it
            // too: then every local body recorded its callees before its MIR was stolen.
            let inlining = crate::pm::should_run_pass(
                tcx,
                &crate::inline::Inline,
                crate::pm::Optimizations::Allowed,
            );
            let Some(caller) = self.body.source.def_id().as_local() else { return false };
            if !inlining {
                return false;
            }
            let Some(cyclic) = tcx.mir_callgraph_cyclic(caller) else { return false };
            if local == caller || cyclic.contains(&local) {
                return false;
            }
        }
        if !tcx.is_mir_available(def_id) || tcx.intrinsic(def_id).is_some() {
            return false;
        }
        let body = tcx.optimized_mir(def_id);
        let statements_free = body.basic_blocks.iter().flat_map(|data| &data.statements).all(|s| {
            !matches!(s.kind, StatementKind::Intrinsic(..))
                && !touches_through_pointer(|v| v.visit_statement(s, Location::START))
        });
        statements_free
            && body.basic_blocks.iter().all(|data| {
                let terminator = data.terminator();
                let kind_free = match &terminator.kind {
                    TerminatorKind::Goto { .. }
                    | TerminatorKind::SwitchInt { .. }
                    | TerminatorKind::Assert { .. }
                    | TerminatorKind::Return
                    | TerminatorKind::Unreachable => true,
                    TerminatorKind::Call { func, .. } => match func.const_fn_def() {
                        Some((inner, inner_generics)) => {
                            let inner_generics = instance
                                .try_instantiate_mir_and_normalize_erasing_regions(
                                    tcx,
                                    typing_env,
                                    ty::EarlyBinder::bind(inner_generics),
                                );
                            inner_generics.is_ok_and(|inner_generics| {
                                self.touches_no_memory(inner, inner_generics, depth + 1)
                            })
                        }
                        None => false,
                    },
                    _ => false,
                };
                kind_free
                    && !touches_through_pointer(|v| v.visit_terminator(terminator, Location::START))
            })
    }

    fn touches_no_mapped_memory(&self, visit: impl FnOnce(&mut Touches<'_>)) -> bool {
        let mut touches = Touches { mapped: &self.mapped, transparent: true };
        visit(&mut touches);
        touches.transparent
    }
}

/// Whether a value of type `ty` holds no address: a number, a `bool` or a `char` (a raw
/// pointer is a scalar too, but it points somewhere).
fn is_plain_value(ty: Ty<'_>) -> bool {
    ty.is_integral() || ty.is_floating_point() || ty.is_bool() || ty.is_char()
}

/// Records `definition` for the local that `place` assigns: its only definition if it had
/// none, else (or for a part of a local) [`Definition::Several`].
fn define<'a, 'tcx>(
    definitions: &mut IndexVec<Local, Definition<'a, 'tcx>>,
    place: Place<'tcx>,
    definition: Definition<'a, 'tcx>,
) {
    let slot = &mut definitions[place.local];
    *slot = match (*slot, place.as_local()) {
        (Definition::None, Some(_)) => definition,
        _ => Definition::Several,
    };
}

/// Counts each local's uses: every mention but its definitions and storage markers.
struct Uses {
    all: IndexVec<Local, u32>,
}

impl<'tcx> Visitor<'tcx> for Uses {
    fn visit_local(&mut self, local: Local, context: PlaceContext, _: Location) {
        let definition = matches!(
            context,
            PlaceContext::MutatingUse(MutatingUseContext::Store | MutatingUseContext::Call)
        );
        if context.is_use() && !definition {
            self.all[local] += 1;
        }
    }
}

/// Marks the locals that statements and terminators other than assignments and calls write
/// (`SetDiscriminant`, inline assembly outputs, ...) as defined several times.
struct Definitions<'d, 'a, 'tcx> {
    definitions: &'d mut IndexVec<Local, Definition<'a, 'tcx>>,
}

impl<'tcx> Visitor<'tcx> for Definitions<'_, '_, 'tcx> {
    fn visit_place(&mut self, place: &Place<'tcx>, context: PlaceContext, _: Location) {
        if let PlaceContext::MutatingUse(use_) = context
            && !matches!(use_, MutatingUseContext::Borrow | MutatingUseContext::RawBorrow)
        {
            self.definitions[place.local] = Definition::Several;
        }
    }
}

/// Whether a statement or terminator reads or writes memory that a launch may have kept on the
/// device: memory behind a pointer, or a mapped local. Taking an address reads nothing but
/// the pointers it goes through.
struct Touches<'m> {
    mapped: &'m DenseBitSet<Local>,
    transparent: bool,
}

impl<'tcx> Visitor<'tcx> for Touches<'_> {
    fn visit_place(&mut self, place: &Place<'tcx>, context: PlaceContext, _: Location) {
        let mapped = |local: Local| self.mapped.contains(local);
        let derefs = place.projection.iter().filter(|e| *e == ProjectionElem::Deref).count();
        let indices_mapped = place.projection.iter().any(|elem| match elem {
            ProjectionElem::Index(index) => mapped(index),
            _ => false,
        });
        let touches = match context {
            PlaceContext::NonUse(NonUseContext::StorageDead) => mapped(place.local),
            PlaceContext::NonUse(_) => false,
            PlaceContext::NonMutatingUse(
                NonMutatingUseContext::SharedBorrow
                | NonMutatingUseContext::FakeBorrow
                | NonMutatingUseContext::RawBorrow,
            )
            | PlaceContext::MutatingUse(
                MutatingUseContext::Borrow | MutatingUseContext::RawBorrow,
            ) => derefs > 1 || (derefs == 1 && mapped(place.local)) || indices_mapped,
            _ => derefs > 0 || mapped(place.local) || indices_mapped,
        };
        if touches {
            self.transparent = false;
        }
    }
}

/// Whether a statement or terminator of a callee's body uses a place through a pointer (any
/// dereference, for any use).
fn touches_through_pointer(visit: impl FnOnce(&mut ThroughPointer)) -> bool {
    let mut through = ThroughPointer(false);
    visit(&mut through);
    through.0
}

struct ThroughPointer(bool);

impl<'tcx> Visitor<'tcx> for ThroughPointer {
    fn visit_place(&mut self, place: &Place<'tcx>, _: PlaceContext, _: Location) {
        if place.is_indirect() {
            self.0 = true;
        }
    }
}

/// Which calls of `core` and `alloc` the analysis sees through, and what they read. Only the
/// standard library's own functions qualify: their bodies are known not to read launch data.
fn callee_reads<'tcx>(
    tcx: TyCtxt<'tcx>,
    callee: DefId,
    generics: GenericArgsRef<'tcx>,
) -> Option<CalleeReads> {
    let krate = tcx.crate_name(callee.krate);
    if krate != sym::core && krate != sym::alloc {
        return None;
    }
    if tcx.is_diagnostic_item(sym::mem_swap, callee) {
        return Some(CalleeReads::BehindReferences);
    }
    if let Some(trait_) = tcx.trait_of_assoc(callee) {
        let self_ty = generics.type_at(0);
        let indexing = [LangItem::Deref, LangItem::DerefMut, LangItem::Index, LangItem::IndexMut]
            .into_iter()
            .any(|item| tcx.is_lang_item(trait_, item));
        if indexing && matches!(self_ty.kind(), ty::Slice(_) | ty::Str) {
            return Some(CalleeReads::Nothing);
        }
        if indexing && is_heap_owner(tcx, Some(self_ty)) {
            return Some(CalleeReads::BehindReferences);
        }
        let integer_range = match self_ty.kind() {
            ty::Adt(adt, range_args) => {
                (tcx.is_lang_item(adt.did(), LangItem::Range)
                    || tcx.is_lang_item(adt.did(), LangItem::RangeInclusiveStruct))
                    && range_args.type_at(0).is_integral()
            }
            _ => false,
        };
        if integer_range && tcx.is_lang_item(callee, LangItem::IteratorNext) {
            return Some(CalleeReads::BehindReferences);
        }
        if integer_range && tcx.is_lang_item(callee, LangItem::IntoIterIntoIter) {
            return Some(CalleeReads::Nothing);
        }
        return None;
    }
    let impl_ = tcx.inherent_impl_of_assoc(callee)?;
    let self_ty = tcx.type_of(impl_).instantiate_identity();
    let name = tcx.item_name(callee);
    let name = name.as_str();
    let signature = tcx.fn_sig(callee).instantiate_identity().skip_binder();
    let takes_values = signature
        .inputs()
        .iter()
        .all(|ty| ty.is_integral() || ty.is_floating_point() || ty.is_bool());
    if (self_ty.is_integral() || self_ty.is_floating_point()) && takes_values {
        return Some(CalleeReads::Nothing);
    }
    if self_ty.is_slice() && matches!(name, "len" | "is_empty" | "as_ptr" | "as_mut_ptr") {
        return Some(CalleeReads::Nothing);
    }
    let is_vec =
        matches!(self_ty.kind(), ty::Adt(adt, _) if tcx.is_diagnostic_item(sym::Vec, adt.did()));
    let header_only =
        ["len", "is_empty", "capacity", "as_ptr", "as_mut_ptr", "as_slice", "as_mut_slice"];
    (is_vec && header_only.contains(&name)).then_some(CalleeReads::BehindReferences)
}

/// Whether `ty` is a `Vec` or a `String`, whose data is on the heap: a pointer that their
/// `deref`, `index` or `as_ptr` returns never points into a local.
fn is_heap_owner<'tcx>(tcx: TyCtxt<'tcx>, ty: Option<Ty<'tcx>>) -> bool {
    match ty.map(|ty| ty.kind()) {
        // A `Vec` whose allocator is the global one (another may hand out memory of a local).
        Some(ty::Adt(adt, args)) if tcx.is_diagnostic_item(sym::Vec, adt.did()) => {
            match args.types().nth(1).map(|allocator| allocator.kind()) {
                Some(ty::Adt(allocator, _)) => {
                    tcx.is_lang_item(allocator.did(), LangItem::GlobalAlloc)
                }
                _ => false,
            }
        }
        Some(ty::Adt(adt, _)) => tcx.is_diagnostic_item(sym::String, adt.did()),
        _ => false,
    }
}

/// Whether `block` can be reached again from its own successors (it is in a loop).
fn on_cycle(body: &Body<'_>, block: BasicBlock) -> bool {
    let mut seen = DenseBitSet::new_empty(body.basic_blocks.len());
    let mut stack: Vec<BasicBlock> = body.basic_blocks[block].terminator().successors().collect();
    while let Some(next) = stack.pop() {
        if next == block {
            return true;
        }
        if seen.insert(next) {
            stack.extend(body.basic_blocks[next].terminator().successors());
        }
    }
    false
}

/// For each block, whether data may be kept on the device when it starts: a forward
/// "may" analysis over every edge, unwinding ones included. A launch keeps data; an opaque
/// block flushes first, so it passes on nothing (unless it ends in a launch).
fn pending_at_entry(
    body: &Body<'_>,
    kinds: &IndexVec<BasicBlock, BlockKind>,
) -> DenseBitSet<BasicBlock> {
    let mut pending = DenseBitSet::new_empty(body.basic_blocks.len());
    let mut changed = true;
    while changed {
        changed = false;
        for (bb, data) in body.basic_blocks.iter_enumerated() {
            let kind = kinds[bb];
            let out = kind.launch || (!kind.opaque && pending.contains(bb));
            if !out {
                continue;
            }
            for successor in data.terminator().successors() {
                changed |= pending.insert(successor);
            }
        }
    }
    pending
}

/// Inserts the runtime calls: an `arm` right before each launch, a `flush` at the start of
/// each opaque block that may start with data kept, and a flush on every unwinding edge that
/// leaves a launch or a transparent block with data kept and had no cleanup of its own.
fn insert_runtime_calls<'tcx>(
    tcx: TyCtxt<'tcx>,
    body: &mut Body<'tcx>,
    runtime: Runtime,
    kinds: &IndexVec<BasicBlock, BlockKind>,
    pending: &DenseBitSet<BasicBlock>,
) {
    let span = body.span;
    let unit = body.local_decls.push(LocalDecl::new(tcx.types.unit, span));
    let mut flush_and_resume = None;
    for (bb, kind) in kinds.iter_enumerated() {
        let keeps = kind.launch || (!kind.opaque && pending.contains(bb));
        if !keeps {
            continue;
        }
        let Some(UnwindAction::Continue) = body.basic_blocks[bb].terminator().unwind().copied()
        else {
            continue;
        };
        let cleanup = *flush_and_resume.get_or_insert_with(|| {
            let resume = body.basic_blocks_mut().push(BasicBlockData::new(
                Some(Terminator {
                    source_info: SourceInfo::outermost(span),
                    kind: TerminatorKind::UnwindResume,
                }),
                true,
            ));
            let call = runtime_call(tcx, runtime.flush, unit, resume, true, span);
            body.basic_blocks_mut().push(BasicBlockData::new(Some(call), true))
        });
        if let Some(unwind) = body.basic_blocks_mut()[bb].terminator_mut().unwind_mut() {
            *unwind = UnwindAction::Cleanup(cleanup);
        }
    }
    for (bb, kind) in kinds.iter_enumerated() {
        if kind.launch {
            let launch = body.basic_blocks[bb].terminator().clone();
            let is_cleanup = body.basic_blocks[bb].is_cleanup;
            let at_launch =
                body.basic_blocks_mut().push(BasicBlockData::new(Some(launch), is_cleanup));
            let arm = runtime_call(tcx, runtime.arm, unit, at_launch, is_cleanup, span);
            *body.basic_blocks_mut()[bb].terminator_mut() = arm;
        }
        if kind.opaque && pending.contains(bb) {
            let is_cleanup = body.basic_blocks[bb].is_cleanup;
            let flush_target = body.basic_blocks.len();
            let call = runtime_call(
                tcx,
                runtime.flush,
                unit,
                BasicBlock::from_usize(flush_target),
                is_cleanup,
                span,
            );
            let original = std::mem::replace(
                &mut body.basic_blocks_mut()[bb],
                BasicBlockData::new(Some(call), is_cleanup),
            );
            body.basic_blocks_mut().push(original);
        }
    }
}

/// A call of `core::offload::residency::{arm, flush}::<()>()` that goes on to `target`. Neither
/// unwinds: a failure of the runtime stops the program.
fn runtime_call<'tcx>(
    tcx: TyCtxt<'tcx>,
    function: DefId,
    unit: Local,
    target: BasicBlock,
    in_cleanup: bool,
    span: Span,
) -> Terminator<'tcx> {
    let reason =
        if in_cleanup { UnwindTerminateReason::InCleanup } else { UnwindTerminateReason::Abi };
    Terminator {
        source_info: SourceInfo::outermost(span),
        kind: TerminatorKind::Call {
            func: Operand::function_handle(tcx, function, [tcx.types.unit.into()], span),
            args: Box::new([]),
            destination: Place::from(unit),
            target: Some(target),
            unwind: UnwindAction::Terminate(reason),
            call_source: CallSource::Misc,
            fn_span: span,
        },
    }
}
