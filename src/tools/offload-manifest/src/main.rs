//! `offload-manifest PATH`: prints the offload manifest at PATH as text.
//!
//! The format is the one `rustc -Zoffload=HostMetadata=PATH` writes, documented in
//! `compiler/rustc_monomorphize/src/offload_manifest.rs` and `src/doc/offload-manifest.md`.
//! Output: a header line, then one line per kernel instance:
//!
//! ```text
//! manifest of crate `demo` (format 5, rustc 59807616e1fa...), 2 kernels
//! demo::scale::<f32>  symbol=_offload_kernel_scale_0123456789abcdef  launched-by=demo
//! ```
//!
//! Exit status 1, with one line on stderr, when the file is missing or is not a manifest of the
//! format that `offload-manifest-format` reads (the compiler's).
//!
//! `offload-manifest check PATH...` reads each manifest with
//! `offload_manifest_format::read_exact`: exit status 1, naming the file and the first place,
//! when a manifest holds what the tools' types would not keep (the run-make tests run it on the
//! manifests the compiler writes). It prints one line per file:
//! `PATH: format 5, 2 kernels, read and written again unchanged`.
//!
//! `offload-manifest fuzz ...` runs mutated manifests through the device pass (see [`fuzz`]).

mod error;
mod fuzz;

use std::process::ExitCode;

use offload_manifest_format::Manifest;

/// `manifest` as text: the header line, then one line per kernel instance.
fn render(manifest: &Manifest) -> String {
    let kernels = &manifest.kernels;
    let mut out = format!(
        "manifest of crate `{}` (format {}, rustc {}), {} kernel{}\n",
        manifest.krate,
        manifest.format_version,
        manifest.rustc_commit,
        kernels.len(),
        if kernels.len() == 1 { "" } else { "s" }
    );
    for kernel in kernels {
        out.push_str(&format!(
            "{}  symbol={}  launched-by={}\n",
            kernel.kernel,
            kernel.symbol,
            kernel.launched_by.join(",")
        ));
    }
    out
}

/// `offload-manifest check PATH...` (see the module documentation).
fn check(paths: &[String]) -> ExitCode {
    if paths.is_empty() {
        eprintln!("usage: offload-manifest check PATH...");
        return ExitCode::from(2);
    }
    for path in paths {
        match offload_manifest_format::read_exact(path) {
            Ok(manifest) => println!(
                "{path}: format {}, {} kernel{}, read and written again unchanged",
                manifest.format_version,
                manifest.kernels.len(),
                if manifest.kernels.len() == 1 { "" } else { "s" }
            ),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("fuzz") {
        return match fuzz::main(&args[2..]) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("error: offload-manifest fuzz: {e}");
                ExitCode::from(2)
            }
        };
    }
    if args.get(1).map(String::as_str) == Some("check") {
        return check(&args[2..]);
    }
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: offload-manifest PATH");
        return ExitCode::from(2);
    };
    // The error names the file and what is wrong with it.
    match offload_manifest_format::read(&path) {
        Ok(manifest) => {
            print!("{}", render(&manifest));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use offload_manifest_format::parse;

    use super::render;

    #[test]
    fn prints_one_line_per_kernel() {
        let text = r#"{"crate":"demo","crate_graph":["core","demo"],"format_version":5,
            "kernels":[{"args":[["num","f32"]],"definition":"fedcba9876543210",
            "item":{"crate":"demo","crate_source":"0123456789abcdef",
                "path":[["ValueNs","scale",0]]},
            "kernel":"demo::scale::<f32>","launched_by":["demo"],"params":[],
            "symbol":"_offload_kernel_scale_00"}],
            "magic":"rustc-offload-manifest","rustc_commit":"abc"}"#;
        assert_eq!(
            render(&parse(text.as_bytes(), "demo.json").unwrap()),
            "manifest of crate `demo` (format 5, rustc abc), 1 kernel\n\
             demo::scale::<f32>  symbol=_offload_kernel_scale_00  launched-by=demo\n"
        );
    }

    #[test]
    fn refuses_what_is_not_a_manifest() {
        let error = |text: &str| parse(text.as_bytes(), "x.json").unwrap_err().to_string();
        assert!(error("{}").contains("magic"));
        assert!(error("{\"magic\":").contains("not an offload manifest"));
        assert!(error("{}").contains("x.json"));
    }
}
