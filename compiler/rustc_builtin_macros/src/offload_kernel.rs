//! `#[core::offload::offload_kernel]`: upstream's name for an offload kernel, which marks the
//! function `#[rustc_offload_kernel]` (rustc 1.95's attribute).
//!
//! The manifest-driven offload pipeline defines a kernel once, for the host and for every
//! device, so the attribute adds nothing but the marker: no host wrapper, no `cfg`'d device
//! copy. It applies to a non-associated function item (also one declared inside a block) and
//! takes no arguments; on anything else (a statement, an expression, a closure, a method,
//! another item) it is an error at the attribute.

use rustc_ast::{self as ast, ItemKind, StmtKind};
use rustc_expand::base::{Annotatable, ExtCtxt};
use rustc_span::{Span, Symbol, sym};

use crate::util::check_builtin_macro_attribute;

/// The attribute's name, which `core::offload` declares with `#[rustc_builtin_macro]`.
pub(crate) const NAME: &str = "offload_kernel";

/// Expands `#[offload_kernel]` on `item` (`span` is the attribute's): the item with
/// `#[rustc_offload_kernel]` added, or the item unchanged after an error.
pub(crate) fn expand(
    ecx: &mut ExtCtxt<'_>,
    span: Span,
    meta_item: &ast::MetaItem,
    mut item: Annotatable,
) -> Vec<Annotatable> {
    check_builtin_macro_attribute(ecx, meta_item, Symbol::intern(NAME));
    let function = match &mut item {
        Annotatable::Item(item) if matches!(item.kind, ItemKind::Fn(_)) => Some(&mut item.attrs),
        Annotatable::Stmt(stmt) => match &mut stmt.kind {
            StmtKind::Item(item) if matches!(item.kind, ItemKind::Fn(_)) => Some(&mut item.attrs),
            _ => None,
        },
        _ => None,
    };
    let Some(attrs) = function else {
        let mut err = ecx.dcx().struct_span_err(
            span,
            "the `#[offload_kernel]` attribute may only be used on a non-associated function",
        );
        // A method or an associated function: the runtime launches a kernel by its symbol,
        // with the launch's arguments only, so it must be a free function.
        if let Annotatable::AssocItem(assoc, _) = &item
            && let ast::AssocItemKind::Fn(function) = &assoc.kind
        {
            err.help(if function.sig.decl.has_self() {
                "move the kernel out of the `impl` or trait into a free function, and pass the \
                 data it uses of `self` (slices, scalars) as its parameters"
            } else {
                "move the kernel out of the `impl` or trait into a free function"
            });
        }
        err.emit();
        return vec![item];
    };
    // The marker is internal (`rustc_attrs`); the span of this expansion carries the
    // `allow_internal_unstable(rustc_attrs)` of `core::offload::offload_kernel`.
    attrs.push(ecx.attr_word(sym::rustc_offload_kernel, ecx.with_def_site_ctxt(span)));
    vec![item]
}
