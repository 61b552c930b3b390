//! Paths to a silent panic inside functions that return, in the crate that builds the image.
//!
//! [`offload_panic`](crate::offload_panic) replaces the bodies of `core`'s diverging panic
//! functions when the crate graph's panic handler is silent. A function that returns can still
//! build a panic message on the way to one of them: `f32::clamp`'s `assert!` makes the
//! `fmt::Arguments` of its message in `clamp` itself, with `<f32 as Debug>::fmt` as a function
//! pointer, and so reaches all of float formatting (two thirds of the unoptimized LLVM IR of the
//! benchmark's suite after `offload_panic`, `src/doc/measurements.md`), which LLVM optimizes
//! before it finds it dead. Such a body cannot be changed where its MIR enters the graph, as
//! `offload_panic` does: `clamp` is `#[inline]`, and the MIR inliner of a dependency would copy
//! the changed body, decided with that crate's view of the graph, into the dependency's MIR.
//!
//! So the change is made where the MIR is used, by the collector and by codegen, which both
//! take an instance's MIR from [`device_instance_mir`]. Codegen happens only in the crate that
//! builds the image (the other crates of a device pass have no roots), whose graph is the whole
//! graph, and no crate's MIR changes. A block is rewritten to one call of the handler when it
//! can only end in the silent handler (a "doomed" block, see [`doomed_blocks`]) and names a
//! function on the way (a function pointer or a vtable of the message's arguments): what it
//! would do is unobservable, since the handler reads nothing of the message and the block writes
//! no memory that anything else can read first.

use rustc_index::bit_set::DenseBitSet;
use rustc_middle::mir::visit::{PlaceContext, Visitor};
use rustc_middle::mir::{
    BasicBlock, BasicBlockData, Body, CallSource, CastKind, ConstOperand, Local, LocalDecl,
    Location, MentionedItem, NonDivergingIntrinsic, Operand, Place, Rvalue, StatementKind,
    TerminatorKind, UnwindAction,
};
use rustc_middle::ty::adjustment::PointerCoercion;
use rustc_middle::ty::{self, Ty, TyCtxt};
use rustc_span::source_map::Spanned;

use crate::offload_panic::{
    device_pass_with_abort, diverging_core_fn, ends_in_panic_handler, silent_panic_handler,
    zeroed_panic_info,
};

/// The MIR of `instance` that the collector and codegen use: `TyCtxt::instance_mir`'s, except
/// in a manifest-driven device pass with `panic=abort` whose crate graph has a silent panic
/// handler (see [`offload_panic`](crate::offload_panic)). There, each doomed block that names a
/// function is one call of the handler (with a zeroed `PanicInfo`), and the functions that only
/// the rewritten blocks named leave the body's mentioned items. The collector and codegen must
/// both use this function, so that codegen refers to nothing the collector did not collect;
/// the other readers of an instance's MIR (the mono item checks, the size estimate of
/// partitioning, coverage, naked functions) keep `instance_mir`'s, of which this body only
/// lacks blocks that end in a panic.
pub fn device_instance_mir<'tcx>(
    tcx: TyCtxt<'tcx>,
    instance: ty::InstanceKind<'tcx>,
) -> &'tcx Body<'tcx> {
    let body = tcx.instance_mir(instance);
    if !device_pass_with_abort(tcx) {
        return body;
    }
    let Some(handler) = silent_panic_handler(tcx) else { return body };
    let doomed = doomed_blocks(tcx, body);
    let rewritten: Vec<BasicBlock> = body
        .basic_blocks
        .indices()
        .filter(|&block| {
            doomed.contains(block) && names_a_function(block, &body.basic_blocks[block])
        })
        .collect();
    if rewritten.is_empty() {
        return body;
    }
    let Some(info) = zeroed_panic_info(tcx, handler, body.span) else { return body };
    let mut new = body.clone();
    let never = new.local_decls.push(LocalDecl::new(tcx.types.never, body.span));
    for block in rewritten {
        let data = &mut new.basic_blocks_mut()[block];
        data.statements.clear();
        let terminator = data.terminator_mut();
        let span = terminator.source_info.span;
        terminator.kind = TerminatorKind::Call {
            func: Operand::function_handle(tcx, handler, [], span),
            args: [Spanned { node: info.clone(), span }].into(),
            destination: Place::from(never),
            target: None,
            unwind: UnwindAction::Unreachable,
            call_source: CallSource::Misc,
            fn_span: span,
        };
    }
    // The collector walks the mentioned items too (in its "mentioned" mode, for the constants
    // they require). A function that the body named and no longer names was named only by the
    // rewritten blocks: it leaves them. The others stay, among them what the MIR inliner took
    // over from inlined callees (recorded before optimization, so that a constant's error is
    // reported at every opt-level); drops, unsizing casts and closures stay as recorded.
    let (before, after) = (named_functions(body), named_functions(&new));
    if let Some(mentioned) = &mut new.mentioned_items {
        mentioned.retain(|item| match &item.node {
            MentionedItem::Fn(ty) => after.contains(ty) || !before.contains(ty),
            MentionedItem::Drop(_)
            | MentionedItem::UnsizeCast { .. }
            | MentionedItem::Closure(_) => true,
        });
    }
    tcx.arena.alloc(new)
}

/// The blocks of `body` that can only end in the silent panic handler, doing nothing that
/// anything could observe before: each ends in a call of a function of `core` that can only end
/// in the handler (`ends_in_panic_handler`), in `unreachable`, or goes on (a `goto`, a
/// `switchInt`, an `assert`, whose failure panics too) only to doomed blocks; and its statements
/// write no memory but locals whose address is not taken outside the doomed blocks. A call that
/// returns, a drop, inline assembly or a write through a pointer keeps a block as it is.
///
/// The address rule is a fixpoint: the fewer blocks are doomed, the more locals have their
/// address taken outside them, which can only make fewer blocks doomed.
fn doomed_blocks<'tcx>(tcx: TyCtxt<'tcx>, body: &Body<'tcx>) -> DenseBitSet<BasicBlock> {
    let mut escaped = DenseBitSet::new_empty(body.local_decls.len());
    loop {
        let doomed = doomed_given(tcx, body, &escaped);
        let mut now = DenseBitSet::new_empty(body.local_decls.len());
        for (block, data) in body.basic_blocks.iter_enumerated() {
            if !doomed.contains(block) {
                AddressTaken { locals: &mut now }.visit_basic_block_data(block, data);
            }
        }
        if now == escaped {
            return doomed;
        }
        escaped = now;
    }
}

/// The doomed blocks of `body` when the locals in `escaped` may be read by others.
fn doomed_given<'tcx>(
    tcx: TyCtxt<'tcx>,
    body: &Body<'tcx>,
    escaped: &DenseBitSet<Local>,
) -> DenseBitSet<BasicBlock> {
    let mut doomed = DenseBitSet::new_empty(body.basic_blocks.len());
    let mut changed = true;
    // In postorder a block comes after the blocks it goes on to (but along back edges, which
    // a further round follows): one round decides most bodies. Blocks that the start cannot
    // reach are not codegened and stay out.
    while changed {
        changed = false;
        for &block in body.basic_blocks.reverse_postorder().iter().rev() {
            let data = &body.basic_blocks[block];
            if !doomed.contains(block)
                && only_local_writes(data, escaped)
                && ends_doomed(tcx, &data.terminator().kind, &doomed)
            {
                doomed.insert(block);
                changed = true;
            }
        }
    }
    doomed
}

/// Whether the statements of `data` write nothing but locals outside `escaped` (and read what
/// they like: a read has no effect that a silent handler could see).
fn only_local_writes(data: &BasicBlockData<'_>, escaped: &DenseBitSet<Local>) -> bool {
    let local_write = |place: &Place<'_>| !place.is_indirect() && !escaped.contains(place.local);
    data.statements.iter().all(|statement| match &statement.kind {
        StatementKind::Assign(assign) => local_write(&assign.0),
        StatementKind::SetDiscriminant { place, .. } => local_write(place),
        StatementKind::Intrinsic(intrinsic) => {
            matches!(**intrinsic, NonDivergingIntrinsic::Assume(_))
        }
        StatementKind::StorageLive(_)
        | StatementKind::StorageDead(_)
        | StatementKind::FakeRead(_)
        | StatementKind::PlaceMention(_)
        | StatementKind::AscribeUserType(..)
        | StatementKind::Coverage(_)
        | StatementKind::ConstEvalCounter
        | StatementKind::Nop
        | StatementKind::BackwardIncompatibleDropHint { .. } => true,
        StatementKind::Retag(..) => false,
    })
}

/// Whether a block with terminator `kind` can only go on to the silent handler.
fn ends_doomed<'tcx>(
    tcx: TyCtxt<'tcx>,
    kind: &TerminatorKind<'tcx>,
    doomed: &DenseBitSet<BasicBlock>,
) -> bool {
    match kind {
        TerminatorKind::Call { func, target: None, .. } => {
            func.const_fn_def().is_some_and(|(callee, _)| {
                diverging_core_fn(tcx, callee) && ends_in_panic_handler(tcx, callee)
            })
        }
        TerminatorKind::Unreachable => true,
        TerminatorKind::Goto { target } | TerminatorKind::Assert { target, .. } => {
            doomed.contains(*target)
        }
        TerminatorKind::SwitchInt { targets, .. } => {
            targets.all_targets().iter().all(|&target| doomed.contains(target))
        }
        _ => false,
    }
}

/// Whether the statements of `data` name a function (a function item as an operand, to be
/// called through a pointer) or make a vtable (an unsizing cast): what a panic message's
/// arguments do, and what the rewrite saves.
fn names_a_function(block: BasicBlock, data: &BasicBlockData<'_>) -> bool {
    struct Names {
        found: bool,
    }
    impl<'tcx> Visitor<'tcx> for Names {
        fn visit_const_operand(&mut self, constant: &ConstOperand<'tcx>, _: Location) {
            self.found |= constant.const_.ty().is_fn();
        }
        fn visit_rvalue(&mut self, rvalue: &Rvalue<'tcx>, location: Location) {
            if let Rvalue::Cast(CastKind::PointerCoercion(PointerCoercion::Unsize, _), ..) = rvalue
            {
                self.found = true;
            }
            self.super_rvalue(rvalue, location);
        }
    }
    let mut names = Names { found: false };
    // The statements only: the terminator's callee is the panic function itself.
    for (statement_index, statement) in data.statements.iter().enumerate() {
        names.visit_statement(statement, Location { block, statement_index });
    }
    names.found
}

/// The function item types that `body` names anywhere (as constants).
fn named_functions<'tcx>(body: &Body<'tcx>) -> Vec<Ty<'tcx>> {
    struct Named<'tcx> {
        types: Vec<Ty<'tcx>>,
    }
    impl<'tcx> Visitor<'tcx> for Named<'tcx> {
        fn visit_const_operand(&mut self, constant: &ConstOperand<'tcx>, _: Location) {
            let ty = constant.const_.ty();
            if ty.is_fn() && !self.types.contains(&ty) {
                self.types.push(ty);
            }
        }
    }
    let mut named = Named { types: Vec::new() };
    named.visit_body(body);
    named.types
}

/// Adds to `locals` the locals whose address a block takes (a reference or a raw pointer to
/// them or to a part of them).
struct AddressTaken<'a> {
    locals: &'a mut DenseBitSet<Local>,
}

impl<'tcx> Visitor<'tcx> for AddressTaken<'_> {
    fn visit_place(&mut self, place: &Place<'tcx>, context: PlaceContext, _: Location) {
        if (context.is_borrow() || context.is_address_of()) && !place.is_indirect() {
            self.locals.insert(place.local);
        }
    }
}
