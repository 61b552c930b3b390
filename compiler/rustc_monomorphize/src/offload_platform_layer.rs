//! Kernels that reach `std`'s platform layer on a GPU, in the manifest-driven offload device
//! pass.
//!
//! A program that uses `std` (a one-file program whose kernels sit beside `main`) compiles
//! for a GPU target against a `std` whose platform layer, the module `std::sys`, cannot work
//! there: upstream's `unsupported` platform, whose files, clock and output do nothing or fail
//! at run time, thread-locals and locks of a single thread (a GPU runs thousands at once), and
//! an allocator that always fails. The kernels themselves usually reach none of it: `core`'s
//! items, which `std` re-exports, have a device form, and so do those float methods of `std`
//! that compile to the GPU's own instructions (`sqrt`, `mul_add`, `abs`; not those that call
//! the C library's `libm`); on these targets `std`'s panic handler only traps. A kernel that
//! does reach the layer (`println!`, a `Vec`, `Instant::now`, a `Mutex`) would fail or do
//! nothing in silence on the GPU, so the device pass refuses it, also where `std`'s optimized
//! MIR inlined the layer's item into one of its own. The error names the kernel, the item
//! that the kernel's own code called, and the chain of mono items from the kernel to the
//! layer.
//!
//! `std` marks the module with the diagnostic item `offload_gpu_platform_layer` on the GPU
//! targets only (`library/std/src/lib.rs`). Other targets have no such item, so the CPU
//! device, whose `std` is the host's own, is not checked.

use std::collections::VecDeque;

use rustc_data_structures::fx::FxHashMap;
use rustc_hir::def_id::DefId;
use rustc_middle::middle::codegen_fn_attrs::CodegenFnAttrFlags;
use rustc_middle::mir::mono::MonoItem;
use rustc_middle::ty::print::with_no_trimmed_paths;
use rustc_middle::ty::{Instance, InstanceKind, TyCtxt};
use rustc_span::Symbol;

use crate::collector::UsageMap;
use crate::errors;

/// The name under which `std` marks its platform layer on the GPU targets. A diagnostic item
/// rather than a lang item or an attribute of its own: the mark is a lookup of one module by
/// name, needs no weak-item machinery, and keeps the symbol table of `rustc_span` unpatched;
/// nothing but this check reads it.
const PLATFORM_LAYER: &str = "offload_gpu_platform_layer";

/// The items of a chain that the error prints from each end before it elides the middle.
const SHOWN_AT_EACH_END: usize = 4;

/// Reports each kernel among `items` (the device pass's mono items) that reaches an item of
/// `std`'s platform layer through `usage_map`, with the shortest chain of uses from the
/// kernel to the first such item (breadth first). An item reaches the layer when it is one of
/// the layer's items or when the MIR inliner put one of them into its body (`std`'s optimized
/// MIR inlines most of the layer: `Instant::now`, `Mutex::lock`), so that nothing the GPU
/// would run in silence escapes. One error per kernel, in symbol order.
pub(crate) fn check_platform_layer_unreached<'tcx>(
    tcx: TyCtxt<'tcx>,
    items: &[MonoItem<'tcx>],
    usage_map: &UsageMap<'tcx>,
) {
    let Some(layer) = tcx.get_diagnostic_item(Symbol::intern(PLATFORM_LAYER)) else { return };
    let layer_item_in = |item: &MonoItem<'tcx>| layer_item_in(tcx, layer, item);
    for kernel in kernels_by_symbol(tcx, items) {
        let successors =
            |item: MonoItem<'tcx>| usage_map.used_map.get(&item).into_iter().flatten().copied();
        let Some((chain, inlined)) =
            shortest_chain(MonoItem::Fn(kernel), successors, &layer_item_in)
        else {
            continue;
        };
        // Definitions, not instances: the generic arguments of `std`'s internals (closures
        // within closures) would hide the path. The calls inlined into the last item end the
        // path.
        let mut path: Vec<(DefId, bool)> =
            chain.iter().filter_map(item_def_id).map(|def_id| (def_id, false)).collect();
        if path.last().map(|&(def_id, _)| vec![def_id]) != Some(inlined.clone()) {
            path.extend(inlined.iter().map(|&def_id| (def_id, true)));
        }
        // The item that the user's code called: the one after the last of the user's crate.
        let last_local = path.iter().rposition(|(def_id, _)| def_id.is_local());
        let entry = path[last_local.map_or(path.len() - 1, |i| (i + 1).min(path.len() - 1))].0;
        tcx.dcx().emit_err(errors::OffloadKernelReachesPlatformLayer {
            span: tcx.def_span(kernel.def_id()),
            kernel: kernel.to_string(),
            item: with_no_trimmed_paths!(tcx.def_path_str(entry)),
            target: tcx.sess.target.llvm_target.to_string(),
            chain: shown_chain(tcx, &path),
        });
    }
}

/// The layer's item that `item` is (`[item]`), or the calls that the MIR inliner put into its
/// body, from the outermost one to an item of the layer (the module `layer` or within it);
/// `None` when it is neither.
fn layer_item_in<'tcx>(
    tcx: TyCtxt<'tcx>,
    layer: DefId,
    item: &MonoItem<'tcx>,
) -> Option<Vec<DefId>> {
    let in_layer = |def_id: DefId| tcx.is_descendant_of(def_id, layer);
    let def_id = item_def_id(item)?;
    if in_layer(def_id) {
        return Some(vec![def_id]);
    }
    let MonoItem::Fn(instance) = *item else { return None };
    if let InstanceKind::Item(def_id) = instance.def
        && !tcx.is_mir_available(def_id)
    {
        return None;
    }
    let scopes = &tcx.instance_mir(instance.def).source_scopes;
    let reached = scopes
        .iter()
        .find(|scope| scope.inlined.is_some_and(|(callee, _)| in_layer(callee.def_id())))?;
    let mut inlined = Vec::new();
    let mut scope = Some(reached);
    while let Some(data) = scope {
        inlined.extend(data.inlined.map(|(callee, _)| callee.def_id()));
        scope = data.inlined_parent_scope.map(|parent| &scopes[parent]);
    }
    inlined.reverse();
    Some(inlined)
}

/// The kernels among `items` (instances with `#[rustc_offload_kernel]`'s codegen flag), in the
/// order of their symbols, so that the errors come in an order that does not depend on hashing.
fn kernels_by_symbol<'tcx>(tcx: TyCtxt<'tcx>, items: &[MonoItem<'tcx>]) -> Vec<Instance<'tcx>> {
    let mut kernels: Vec<_> = items
        .iter()
        .filter_map(|item| match *item {
            MonoItem::Fn(instance)
                if tcx
                    .codegen_instance_attrs(instance.def)
                    .flags
                    .contains(CodegenFnAttrFlags::OFFLOAD_KERNEL) =>
            {
                Some((tcx.symbol_name(instance).name, instance))
            }
            _ => None,
        })
        .collect();
    kernels.sort_by_key(|&(symbol, _)| symbol);
    kernels.into_iter().map(|(_, kernel)| kernel).collect()
}

/// The chain `path` (definitions, each marked when the MIR inliner put it into the one before)
/// as the error prints it: full paths (`std::time::Instant::now`, not the trimmed
/// `Instant::now`), so that each item says whose it is, joined by ` -> `, with the middle
/// elided when more than twice [`SHOWN_AT_EACH_END`] items.
fn shown_chain(tcx: TyCtxt<'_>, path: &[(DefId, bool)]) -> String {
    let names: Vec<String> = path
        .iter()
        .map(|&(def_id, inlined)| {
            let name = with_no_trimmed_paths!(tcx.def_path_str(def_id));
            if inlined { format!("`{name}` (inlined)") } else { format!("`{name}`") }
        })
        .collect();
    if names.len() > 2 * SHOWN_AT_EACH_END {
        let (head, tail) = (&names[..SHOWN_AT_EACH_END], &names[names.len() - SHOWN_AT_EACH_END..]);
        format!("{} -> ... -> {}", head.join(" -> "), tail.join(" -> "))
    } else {
        names.join(" -> ")
    }
}

/// The item's definition: a function's or a static's.
fn item_def_id(item: &MonoItem<'_>) -> Option<DefId> {
    match *item {
        MonoItem::Fn(instance) => Some(instance.def_id()),
        MonoItem::Static(def_id) => Some(def_id),
        MonoItem::GlobalAsm(_) => None,
    }
}

/// The shortest path of `successors` from `root` to a node for which `found` gives a value,
/// both ends included, with that value; breadth first, each node's successors in their
/// order, so the path is the same in every run. `None` when no reachable node is found.
fn shortest_chain<N: Copy + Eq + std::hash::Hash, F, I: Iterator<Item = N>>(
    root: N,
    successors: impl Fn(N) -> I,
    found: &impl Fn(&N) -> Option<F>,
) -> Option<(Vec<N>, F)> {
    let mut parent: FxHashMap<N, Option<N>> = FxHashMap::default();
    parent.insert(root, None);
    let mut queue = VecDeque::from([root]);
    while let Some(node) = queue.pop_front() {
        if let Some(value) = found(&node) {
            let mut chain = vec![node];
            while let Some(&Some(previous)) = parent.get(chain.last().unwrap()) {
                chain.push(previous);
            }
            chain.reverse();
            return Some((chain, value));
        }
        for next in successors(node) {
            if !parent.contains_key(&next) {
                parent.insert(next, Some(node));
                queue.push_back(next);
            }
        }
    }
    None
}
