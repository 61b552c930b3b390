//! `offload-manifest PATH`: prints the offload manifest at PATH as text.
//!
//! The format is the one `rustc -Zoffload=HostMetadata=PATH` writes, documented in
//! `compiler/rustc_monomorphize/src/offload_manifest.rs` and `src/doc/offload-manifest.md`.
//! Output: a header line, then one line per kernel instance:
//!
//! ```text
//! manifest of crate `demo` (format 1, rustc 59807616e1fa...), 2 kernels
//! demo::scale::<f32>  symbol=_offload_kernel_scale_0123456789abcdef  launched-by=demo
//! ```
//!
//! Exit status 1, with one line on stderr, when the file is missing or is not a manifest.
//!
//! `offload-manifest fuzz ...` runs mutated manifests through the device pass (see [`fuzz`]).

mod fuzz;

use std::process::ExitCode;

use serde_json::Value;

fn dump(text: &str) -> Result<String, String> {
    let manifest: Value = serde_json::from_str(text).map_err(|e| format!("not a manifest: {e}"))?;
    if manifest.get("magic").and_then(Value::as_str) != Some("rustc-offload-manifest") {
        return Err("not a manifest: the magic field is missing".into());
    }
    let field = |key: &str| {
        manifest.get(key).map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
    };
    let kernels = manifest
        .get("kernels")
        .and_then(Value::as_array)
        .ok_or("not a manifest: no kernel list")?;
    let mut out = format!(
        "manifest of crate `{}` (format {}, rustc {}), {} kernel{}\n",
        field("crate").unwrap_or_default(),
        field("format_version").unwrap_or_default(),
        field("rustc_commit").unwrap_or_default(),
        kernels.len(),
        if kernels.len() == 1 { "" } else { "s" }
    );
    for kernel in kernels {
        let get = |key: &str| kernel.get(key).and_then(Value::as_str).unwrap_or("?");
        let launched_by: Vec<&str> = kernel
            .get("launched_by")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        out.push_str(&format!(
            "{}  symbol={}  launched-by={}\n",
            get("kernel"),
            get("symbol"),
            launched_by.join(",")
        ));
    }
    Ok(out)
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
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: offload-manifest PATH");
        return ExitCode::from(2);
    };
    let result = std::fs::read_to_string(&path).map_err(|e| e.to_string()).and_then(|t| dump(&t));
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::dump;

    #[test]
    fn prints_one_line_per_kernel() {
        let text = r#"{"crate":"demo","crate_graph":["core","demo"],"format_version":1,
            "kernels":[{"args":[["num","f32"]],
            "item":{"crate":"demo","path":[["ValueNs","scale",0]]},
            "kernel":"demo::scale::<f32>","launched_by":["demo"],
            "symbol":"_offload_kernel_scale_00"}],
            "magic":"rustc-offload-manifest","rustc_commit":"abc"}"#;
        assert_eq!(
            dump(text).unwrap(),
            "manifest of crate `demo` (format 1, rustc abc), 1 kernel\n\
             demo::scale::<f32>  symbol=_offload_kernel_scale_00  launched-by=demo\n"
        );
    }

    #[test]
    fn refuses_what_is_not_a_manifest() {
        assert!(dump("{}").unwrap_err().contains("magic"));
        assert!(dump("{\"magic\":").unwrap_err().contains("not a manifest"));
    }
}
