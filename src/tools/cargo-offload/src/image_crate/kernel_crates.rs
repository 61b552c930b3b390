//! Which crates a device pass must build for each kernel of the merged manifest: the crate
//! that defines it, the crates of the types in its generic arguments, and, for a kernel
//! declared in an `extern` block, the crates that may define it ([`kernel_crates`]).

use offload_manifest_format::{GenericArg, Kernel, Manifest, Ty};

use crate::util::{Result, fail};
use crate::workspace::{LibrarySource, Workspace};

/// The crates that define `kernel`, an entry of `manifest`: libraries of the workspace or of its
/// dependencies (which the image crate depends on) or programs ([`Workspace::programs`], which
/// build the image themselves). That is the crate that defines it, with the crates that define
/// the types of its generic arguments ([`type_crates`]: `kern::scale::<app_lib::Pixel>` needs
/// `app_lib`, whose type and trait impls the device pass must see); for a kernel declared in an
/// `extern` block (the 1.95 style, named by its link name), the crates of the workspace and its
/// dependencies that the compiler saw remove an item of that name by `cfg` in their host build
/// (the entry's `defined_in`), else the libraries that launch it, else every library of the
/// crate graph that is in the workspace or a path dependency, one of which must define it (the
/// device pass names a link name that none defines). A kernel of a crate name that two
/// dependencies build ([`Workspace::ambiguous`]) is an error that names them.
pub(super) fn kernel_crates(
    ws: &Workspace,
    manifest: &Manifest,
    kernel: &Kernel,
) -> Result<Vec<String>> {
    let text = &kernel.kernel;
    if let Some(krate) = kernel.defining_crate() {
        known_crate(ws, text, krate, Need::Definition)?;
        let mut crates = vec![krate.to_string()];
        for ty_crate in type_crates(kernel.args.as_deref().unwrap_or_default()) {
            // The sysroot's crates are in every device pass's graph already.
            if ty_crate != krate && !matches!(ty_crate, "core" | "alloc" | "std") {
                known_crate(ws, text, ty_crate, Need::TypeArgument)?;
                crates.push(ty_crate.to_string());
            }
        }
        return Ok(crates);
    }
    let known = |c: &&String| ws.libraries.contains_key(*c) || ws.programs.contains_key(*c);
    let defined_in: Vec<String> =
        kernel.defined_in.iter().flatten().filter(known).cloned().collect();
    if !defined_in.is_empty() {
        return Ok(defined_in);
    }
    let launchers = &kernel.launched_by;
    let libraries: Vec<String> =
        launchers.iter().filter(|c| ws.libraries.contains_key(*c)).cloned().collect();
    if !libraries.is_empty() {
        return Ok(libraries);
    }
    // Registry and git crates are left out: most of those in a graph are `std` crates that no
    // kernel needs (`libc`, say), which would not build for a GPU.
    let nearby = |c: &&String| {
        ws.libraries.get(*c).is_some_and(|l| matches!(l.source, LibrarySource::Path(_)))
    };
    let crates: Vec<String> = manifest.crate_graph.iter().filter(nearby).cloned().collect();
    if crates.is_empty() {
        return fail(format!(
            "kernel `{text}` is declared in an `extern` block (the 1.95 style) and no crate of \
             this workspace ({}) defines it: the compiler finds the `#[no_mangle]` definition \
             of `{text}` in a crate whose host build removes that function by `cfg` (for \
             example `#[cfg(offload_device)]` on the function, not on a module around it), or \
             in a library of the crate graph",
            ws.root.display()
        ));
    }
    Ok(crates)
}

/// What a kernel instance needs a crate for ([`known_crate`]).
#[derive(Clone, Copy)]
enum Need {
    /// The crate defines the kernel.
    Definition,
    /// The crate defines a type in the instance's generic arguments.
    TypeArgument,
}

/// Checks that crate `krate`, which kernel `text` needs for `need`, is one that a device pass
/// can build: a library of the workspace or of its dependencies ([`Workspace::libraries`]) or a
/// program of the workspace, and that only one package of the build has a library of that name
/// ([`Workspace::ambiguous`]). Errors name the kernel, the crate and the packages.
fn known_crate(ws: &Workspace, text: &str, krate: &str, need: Need) -> Result<()> {
    let role = match need {
        Need::Definition => "is defined in crate",
        Need::TypeArgument => "has a generic argument of a type of crate",
    };
    if let Some(ids) = ws.ambiguous.get(krate) {
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        return fail(format!(
            "kernel `{text}` {role} `{krate}`, and two or more packages of the build have a \
             library of that name (`{}`): the device passes can build one of them; make the \
             build use one (`cargo tree -i {}` shows who pulls in each)",
            ids.join("`, `"),
            ws.libraries[krate].package
        ));
    }
    if !ws.libraries.contains_key(krate) && !ws.programs.contains_key(krate) {
        return fail(format!(
            "kernel `{text}` {role} `{krate}`, which is neither a crate of this workspace ({}) \
             nor a library that its host build compiled: cargo offload builds the device images \
             from the libraries and programs of the workspace and of its dependencies{}",
            ws.root.display(),
            match need {
                Need::Definition => "",
                Need::TypeArgument => {
                    " (a type defined in a test, a bench or a build script cannot be one)"
                }
            }
        ));
    }
    Ok(())
}

/// The crates of the ADTs in the generic arguments `args` of a kernel instance, at any depth
/// (`Option<lib::Pixel>`, `&[(lib::Pixel, other::Tag)]`), in the order of their first
/// appearance. The manifest names each ADT by its crate (`ItemPath::krate`); the device pass
/// resolves it by its `DefPathHash`, which needs that crate in its graph.
fn type_crates(args: &[GenericArg]) -> Vec<&str> {
    fn walk<'a>(ty: &'a Ty, out: &mut Vec<&'a str>) {
        match ty {
            Ty::Adt(item, args) => {
                if !out.contains(&item.krate.as_str()) {
                    out.push(&item.krate);
                }
                args_of(args, out);
            }
            Ty::Ref { ty, .. } | Ty::Ptr { ty, .. } | Ty::Array(ty, _) | Ty::Slice(ty) => {
                walk(ty, out)
            }
            Ty::Tuple(tys) => tys.iter().for_each(|ty| walk(ty, out)),
            Ty::Bool | Ty::Char | Ty::Str | Ty::Never | Ty::Num(_) => {}
        }
    }
    fn args_of<'a>(args: &'a [GenericArg], out: &mut Vec<&'a str>) {
        for arg in args {
            if let GenericArg::Type(ty) = arg {
                walk(ty, out);
            }
        }
    }
    let mut out = Vec::new();
    args_of(args, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use std::fs;

    use offload_manifest_format::ItemPath;

    use super::super::tests::{kernel, manifest_of, scratch, with_dependencies, workspace};
    use super::*;
    use crate::util::{Failure, strings};

    #[test]
    fn kernels_pick_the_crates_that_define_them() {
        let dir = scratch("kernel-crates");
        let ws = workspace(&["kern", "k195", "host_only"]);
        let manifest = manifest_of("app", &["app", "k195", "host_only", "core"], Vec::new());
        let defined = kernel("kern::k", Some("kern"), &[]);
        assert_eq!(kernel_crates(&ws, &manifest, &defined).ok(), Some(vec!["kern".to_string()]));
        let in_program = kernel("app::k", Some("app"), &[]);
        assert_eq!(kernel_crates(&ws, &manifest, &in_program).ok(), Some(vec!["app".to_string()]));
        let outside = kernel("dep::k", Some("dep"), &[]);
        let Err(Failure(message, 1)) = kernel_crates(&ws, &manifest, &outside) else {
            panic!("a kernel outside the workspace accepted")
        };
        assert!(message.contains("`dep`, which is neither a crate of this workspace"), "{message}");
        // A path dependency outside the workspace defines kernels like a workspace library.
        let ws_deps = with_dependencies(workspace(&["kern", "k195", "host_only"]));
        assert_eq!(
            kernel_crates(&ws_deps, &manifest, &outside).ok(),
            Some(vec!["dep".to_string()])
        );
        let launched_inside = kernel("dep_k", None, &["dep", "app"]);
        assert_eq!(
            kernel_crates(&ws_deps, &manifest, &launched_inside).ok(),
            Some(vec!["dep".to_string()])
        );
        // A registry (or git) dependency's kernel, like a path dependency's.
        let registry = kernel("reg::k", Some("reg"), &["app"]);
        assert_eq!(
            kernel_crates(&ws_deps, &manifest, &registry).ok(),
            Some(vec!["reg".to_string()])
        );
        // A crate name of two packages: an error that names both.
        let twice = kernel("twice::k", Some("twice"), &["app"]);
        let Err(Failure(message, 1)) = kernel_crates(&ws_deps, &manifest, &twice) else {
            panic!("a kernel of an ambiguous crate name accepted")
        };
        assert!(
            message.contains(
                "(`registry+https://r/index#twice@1.0.0`, `registry+https://r/index#twice@2.0.0`)"
            ) && message.contains("`cargo tree -i twice`"),
            "{message}"
        );
        let unknown = kernel("far::k", Some("far"), &["app"]);
        let Err(Failure(message, 1)) = kernel_crates(&ws_deps, &manifest, &unknown) else {
            panic!("a kernel of an unknown crate accepted")
        };
        assert!(message.contains("`far`, which is neither a crate of this workspace"), "{message}");
        // 1.95 style: the crates where the compiler saw the definition removed by `cfg`, else
        // the launching libraries, else the workspace libraries of the graph (not a registry
        // crate).
        let by_lib = kernel("k195_scale", None, &["k195", "app"]);
        assert_eq!(kernel_crates(&ws, &manifest, &by_lib).ok(), Some(vec!["k195".to_string()]));
        let by_program = kernel("k195_scale", None, &["app"]);
        assert_eq!(
            kernel_crates(&ws, &manifest, &by_program).ok(),
            Some(vec!["k195".to_string(), "host_only".to_string()])
        );
        let with_reg = manifest_of("app", &["app", "k195", "reg", "core"], Vec::new());
        assert_eq!(
            kernel_crates(&ws_deps, &with_reg, &by_program).ok(),
            Some(vec!["k195".to_string()])
        );
        let mut by_guide = kernel("g", None, &["guide"]);
        let alone = manifest_of("guide", &["guide", "core"], Vec::new());
        // Without `defined_in` nothing says that the program defines `g`: not its source text.
        let Err(Failure(message, 1)) = kernel_crates(&ws, &alone, &by_guide) else {
            panic!("a 1.95-style kernel without a defining crate accepted")
        };
        assert!(message.contains("no crate of this workspace") && message.contains("`cfg`"));
        by_guide.defined_in = Some(strings(&["guide", "libc"]));
        assert_eq!(kernel_crates(&ws, &alone, &by_guide).ok(), Some(vec!["guide".to_string()]));
        let mut in_lib = kernel("k195_scale", None, &["app"]);
        in_lib.defined_in = Some(strings(&["host_only"]));
        assert_eq!(
            kernel_crates(&ws, &manifest, &in_lib).ok(),
            Some(vec!["host_only".to_string()])
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The ADT `krate::T<args>` as a generic argument.
    fn adt(krate: &str, args: Vec<GenericArg>) -> Ty {
        let item =
            ItemPath { krate: krate.to_string(), crate_source: "0".repeat(16), path: Vec::new() };
        Ty::Adt(item, args)
    }

    #[test]
    fn a_kernels_type_arguments_bring_their_crates() {
        let ws = with_dependencies(workspace(&["kern", "pixels", "tags"]));
        let manifest = manifest_of("app", &["app", "kern", "pixels", "tags", "core"], Vec::new());
        let mut scale = kernel("kern::scale::<...>", Some("kern"), &["pixels"]);
        // `&[(Option<pixels::Pixel<tags::Tag>>, [kern::Own; 2])]`, `u32` and
        // `core::num::Wrapping<f32>`.
        let nested = adt(
            "core",
            vec![GenericArg::Type(adt(
                "pixels",
                vec![GenericArg::Type(adt("tags", vec![GenericArg::Lifetime]))],
            ))],
        );
        let own = Ty::Array(Box::new(adt("kern", Vec::new())), 2);
        let slice = Ty::Slice(Box::new(Ty::Tuple(vec![nested, own])));
        scale.args = Some(vec![
            GenericArg::Type(Ty::Ref { mutable: false, ty: Box::new(slice) }),
            GenericArg::Type(Ty::Num("u32".to_string())),
            GenericArg::Type(adt("core", vec![GenericArg::Type(Ty::Num("f32".to_string()))])),
        ]);
        assert_eq!(
            kernel_crates(&ws, &manifest, &scale).ok(),
            Some(strings(&["kern", "pixels", "tags"])),
            "the kernel's crate, then its arguments' crates, each once, no sysroot crate"
        );
        // A type of a program: the program builds the image (`image_builder`).
        scale.args = Some(vec![GenericArg::Type(Ty::Ptr {
            mutable: true,
            ty: Box::new(adt("app", Vec::new())),
        })]);
        assert_eq!(kernel_crates(&ws, &manifest, &scale).ok(), Some(strings(&["kern", "app"])));
        for (krate, says) in [
            (
                "far",
                "`far`, which is neither a crate of this workspace (/ws) nor a library that \
                     its host build compiled: cargo offload builds the device images from the \
                     libraries and programs of the workspace and of its dependencies (a type \
                     defined in a test, a bench or a build script cannot be one)",
            ),
            ("twice", "`cargo tree -i twice`"),
        ] {
            scale.args = Some(vec![GenericArg::Type(adt(krate, Vec::new()))]);
            let Err(Failure(message, 1)) = kernel_crates(&ws, &manifest, &scale) else {
                panic!("a type argument of crate `{krate}` accepted")
            };
            assert!(
                message.contains("kernel `kern::scale::<...>` has a generic argument of a type")
                    && message.contains(says),
                "{message}"
            );
        }
    }
}
