//! Kernels that reach `std`'s platform layer on a GPU, in the manifest-driven offload device
//! pass.
//!
//! A program that uses `std` (a one-file program whose kernels sit beside `main`) compiles
//! for a GPU target against a `std` whose platform layer, the module `std::sys`, cannot work
//! there: upstream's `unsupported` platform, whose files, clock and output do nothing or fail
//! at run time, thread-locals and locks of a single thread (a GPU runs thousands at once), and
//! an allocator that always fails. The kernels themselves usually reach none of it: `core`'s
//! items, which `std` re-exports, and `std`'s float methods have a device form, and on these
//! targets `std`'s panic handler only traps. A kernel that does reach it (`println!`, a `Vec`,
//! `Instant::now`, a `Mutex`) would fail or do nothing in silence on the GPU, so the device
//! pass refuses it. The error names the kernel, the item of the platform layer, and the chain
//! of mono items through which the kernel reaches it.
//!
//! `std` marks the module with the diagnostic item `offload_gpu_platform_layer` on the GPU
//! targets only (`library/std/src/lib.rs`). Other targets have no such item, so the CPU
//! device, whose `std` is the host's own, is not checked.

use rustc_data_structures::fx::FxHashMap;
use rustc_hir::def_id::DefId;
use rustc_middle::middle::codegen_fn_attrs::CodegenFnAttrFlags;
use rustc_middle::mir::mono::MonoItem;
use rustc_middle::ty::TyCtxt;
use rustc_span::Symbol;

use crate::collector::UsageMap;
use crate::errors;

/// The name under which `std` marks its platform layer on the GPU targets.
const PLATFORM_LAYER: &str = "offload_gpu_platform_layer";

/// The items of a chain that the error prints before it elides the middle.
const SHOWN_CHAIN: usize = 8;

/// Reports each kernel among `items` (the device pass's mono items) that reaches an item of
/// `std`'s platform layer through `usage_map`, with the shortest chain of uses from the
/// kernel to the first such item (breadth first). One error per kernel, in symbol order.
pub(crate) fn check_platform_layer_unreached<'tcx>(
    tcx: TyCtxt<'tcx>,
    items: &[MonoItem<'tcx>],
    usage_map: &UsageMap<'tcx>,
) {
    let Some(layer) = tcx.get_diagnostic_item(Symbol::intern(PLATFORM_LAYER)) else { return };
    let in_layer = |item: &MonoItem<'tcx>| {
        item_def_id(item).is_some_and(|def_id| tcx.is_descendant_of(def_id, layer))
    };
    let mut kernels: Vec<_> = items
        .iter()
        .filter_map(|item| match *item {
            MonoItem::Fn(instance)
                if tcx
                    .codegen_instance_attrs(instance.def)
                    .flags
                    .contains(CodegenFnAttrFlags::OFFLOAD_KERNEL) =>
            {
                Some((tcx.symbol_name(instance).name, *item))
            }
            _ => None,
        })
        .collect();
    kernels.sort_by_key(|&(symbol, _)| symbol);
    for (_, kernel) in kernels {
        let Some(chain) = shortest_chain(kernel, usage_map, &in_layer) else { continue };
        let MonoItem::Fn(instance) = kernel else { continue };
        // Definitions, not instances: the generic arguments of `std`'s internals (closures
        // within closures) would hide the path.
        let names: Vec<String> = chain
            .iter()
            .filter_map(item_def_id)
            .map(|def_id| format!("`{}`", tcx.def_path_str(def_id)))
            .collect();
        // The item that the user's code called: the first of `std`'s on the chain.
        let entry = chain
            .iter()
            .filter_map(item_def_id)
            .find(|def_id| def_id.krate == layer.krate)
            .unwrap_or(layer);
        let shown = if names.len() > SHOWN_CHAIN {
            let tail = &names[names.len() - SHOWN_CHAIN / 2..];
            format!("{} -> ... -> {}", names[..SHOWN_CHAIN / 2].join(" -> "), tail.join(" -> "))
        } else {
            names.join(" -> ")
        };
        tcx.dcx().emit_err(errors::OffloadKernelReachesPlatformLayer {
            span: tcx.def_span(instance.def_id()),
            kernel: instance.to_string(),
            item: tcx.def_path_str(entry),
            target: tcx.sess.target.llvm_target.to_string(),
            chain: shown,
        });
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

/// The shortest chain of uses from `root` to an item for which `found` holds, both ends
/// included, breadth first over `usage_map` in the order in which each item uses the next.
fn shortest_chain<'tcx>(
    root: MonoItem<'tcx>,
    usage_map: &UsageMap<'tcx>,
    found: &impl Fn(&MonoItem<'tcx>) -> bool,
) -> Option<Vec<MonoItem<'tcx>>> {
    let mut parent: FxHashMap<MonoItem<'tcx>, Option<MonoItem<'tcx>>> = FxHashMap::default();
    parent.insert(root, None);
    let mut queue = std::collections::VecDeque::from([root]);
    while let Some(item) = queue.pop_front() {
        if found(&item) {
            let mut chain = vec![item];
            while let Some(Some(previous)) = parent.get(chain.last().unwrap()) {
                chain.push(*previous);
            }
            chain.reverse();
            return Some(chain);
        }
        for &used in usage_map.used_map.get(&item).into_iter().flatten() {
            if !parent.contains_key(&used) {
                parent.insert(used, Some(item));
                queue.push_back(used);
            }
        }
    }
    None
}
