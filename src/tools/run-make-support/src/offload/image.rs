//! What an offload image, a device code object and a host object hold: the kernels of a
//! manifest, of an image's IR and of the code the GPU vendors' tools make from it, the functions
//! the IR defines, exports and leaves undefined, and each kernel's instructions.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::toolchain::{cuda_tool, llvm_tool, offload_tools_bin};
use crate::serde_json::Value;
use crate::{CompletedProcess, cmd, rfs};

/// The `symbol` of every kernel of a manifest (parsed JSON).
pub fn manifest_symbols(manifest: &Value) -> BTreeSet<String> {
    manifest["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["symbol"].as_str().unwrap().to_string())
        .collect()
}

/// Reads each manifest that the compiler wrote with the tools' manifest format
/// (`src/tools/offload-manifest-format`, through the installed `offload-manifest check`), which
/// must keep every key and value of it; panics with the tool's message (the file and the first
/// place the two differ) otherwise, so that the compiler's writer and the tools' types cannot
/// drift apart.
pub fn check_manifest_format(manifests: &[&Path]) {
    let out = cmd(offload_tools_bin().join("offload-manifest")).arg("check").args(manifests).run();
    assert_eq!(out.stdout_utf8().lines().count(), manifests.len(), "{}", out.stdout_utf8());
}

/// The `target` bitcode inside the offload image `image` (`host.out`), as the offload runtime
/// will get it, written beside the image as `image.bc`.
pub fn image_bitcode(image: &Path, target: &str) -> PathBuf {
    let bc = image.with_file_name("image.bc");
    cmd(llvm_tool("llvm-offload-binary"))
        .arg(image)
        .arg(format!("--image=file={},triple={target}", bc.display()))
        .run();
    bc
}

/// The textual IR of the `target` bitcode inside the offload image `image` (`host.out`).
pub fn image_ir(image: &Path, target: &str) -> String {
    let bc = image_bitcode(image, target);
    cmd(llvm_tool("llvm-dis")).arg(&bc).arg("-o").arg("-").run().stdout_utf8()
}

/// Takes the `gfx90a` and `sm_90` images out of the executable `exe` (`llvm-offload-binary`)
/// into `dir`; returns their paths: the AMD code object (`gfx90a.so`) and the cubin
/// (`sm_90.cubin`). Panics when the executable lacks either.
pub fn extract_gpu_images(exe: &Path, dir: &Path) -> (PathBuf, PathBuf) {
    let (so, cubin) = (dir.join("gfx90a.so"), dir.join("sm_90.cubin"));
    cmd(llvm_tool("llvm-offload-binary"))
        .arg(exe)
        .arg(format!("--image=file={},triple=amdgcn-amd-amdhsa,arch=gfx90a", so.display()))
        .arg(format!("--image=file={},triple=nvptx64-nvidia-cuda,arch=sm_90", cubin.display()))
        .run();
    (so, cubin)
}

/// The kernels of an AMD code object (`<kernel>.kd` symbols, `llvm-nm`).
pub fn code_object_kernels(so: &Path) -> BTreeSet<String> {
    cmd(llvm_tool("llvm-nm"))
        .arg(so)
        .run()
        .stdout_utf8()
        .lines()
        .filter_map(|l| l.split_whitespace().last()?.strip_suffix(".kd").map(str::to_string))
        .collect()
}

/// The kernels of an NVIDIA cubin (its global functions, `llvm-readelf -s`).
pub fn cubin_kernels(cubin: &Path) -> BTreeSet<String> {
    cmd(llvm_tool("llvm-readelf"))
        .args(["-s", "-W"])
        .arg(cubin)
        .run()
        .stdout_utf8()
        .lines()
        .filter(|l| l.contains(" FUNC ") && l.contains(" GLOBAL "))
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect()
}

/// What the GPU vendors' tools report on a device image that they accepted.
pub struct VendorReport {
    /// The kernels of the linked code object: `<name>.kd` symbols (amdgcn), `.entry`
    /// functions (nvptx).
    pub kernels: BTreeSet<String>,
    /// `ptxas -v`'s lines on each function (registers, spills, stack); empty on amdgcn.
    pub resources: Vec<String>,
}

/// Checks the `target` image `image` (`host.out`) with the GPU vendors' tools, so that an image
/// that leaves anything undefined fails the test:
/// - `amdgcn-amd-amdhsa`: `llc -mcpu=gfx90a` (code object v5) to an object, then
///   `ld.lld -shared --no-undefined` to the code object the runtime loads;
/// - `nvptx64-nvidia-cuda`: `llc -mcpu=sm_90` to PTX, `ptxas -arch=sm_90 -c -v` to a
///   relocatable cubin, then `nvlink -arch=sm_90`, which reports every undefined function or
///   global (whole-program `ptxas` would allocate an undefined global as zeros).
/// Panics with the tool's output when a tool refuses the image.
pub fn vendor_check(image: &Path, target: &str) -> VendorReport {
    vendor_result(image, target).unwrap_or_else(|complaint| panic!("{target}: {complaint}"))
}

/// [`vendor_check`], returning the refusing tool's name and output instead of panicking.
pub fn vendor_result(image: &Path, target: &str) -> Result<VendorReport, String> {
    let bc = image_bitcode(image, target);
    let dir = image.parent().unwrap();
    match target {
        "amdgcn-amd-amdhsa" => amdgcn_vendor_result(&bc, dir),
        "nvptx64-nvidia-cuda" => nvptx_vendor_result(&bc, dir),
        _ => panic!("no vendor check for {target}"),
    }
}

/// `out` if `tool` succeeded, else its name and output.
fn accepted(tool: &str, out: CompletedProcess) -> Result<CompletedProcess, String> {
    if out.status().success() {
        Ok(out)
    } else {
        Err(format!("{tool} refused the image:\n{}{}", out.stdout_utf8(), out.stderr_utf8()))
    }
}

/// The amdgcn half of [`vendor_result`]: the bitcode `bc` to a code object in `dir`.
fn amdgcn_vendor_result(bc: &Path, dir: &Path) -> Result<VendorReport, String> {
    let obj = dir.join("image.o");
    let so = dir.join("image.so");
    let llc = cmd(llvm_tool("llc"))
        .arg("-mcpu=gfx90a")
        .arg("--amdhsa-code-object-version=5")
        .arg("-filetype=obj")
        .arg(bc)
        .arg("-o")
        .arg(&obj)
        .run_unchecked();
    accepted("llc", llc)?;
    let lld = cmd(llvm_tool("ld.lld"))
        .arg("-shared")
        .arg("--no-undefined")
        .arg(&obj)
        .arg("-o")
        .arg(&so)
        .run_unchecked();
    accepted("ld.lld", lld)?;
    let nm = cmd(llvm_tool("llvm-nm")).arg(&so).run().stdout_utf8();
    let kernels = nm
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter_map(|name| name.strip_suffix(".kd"))
        .map(str::to_string)
        .collect();
    Ok(VendorReport { kernels, resources: Vec::new() })
}

/// The nvptx half of [`vendor_result`]: the bitcode `bc` to PTX, a cubin and a linked cubin in
/// `dir`.
fn nvptx_vendor_result(bc: &Path, dir: &Path) -> Result<VendorReport, String> {
    let ptx = dir.join("image.ptx");
    let cubin = dir.join("image.cubin");
    let llc = cmd(llvm_tool("llc")).arg("-mcpu=sm_90").arg(bc).arg("-o").arg(&ptx).run_unchecked();
    accepted("llc", llc)?;
    let ptxas = cmd(cuda_tool("ptxas"))
        .arg("-arch=sm_90")
        .arg("-c")
        .arg("-v")
        .arg(&ptx)
        .arg("-o")
        .arg(&cubin)
        .run_unchecked();
    let assembled = accepted("ptxas", ptxas)?;
    let nvlink = cmd(cuda_tool("nvlink"))
        .arg("-arch=sm_90")
        .arg(&cubin)
        .arg("-o")
        .arg(dir.join("image.linked.cubin"))
        .run_unchecked();
    accepted("nvlink", nvlink)?;
    let kernels = rfs::read_to_string(&ptx)
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split('(').next().unwrap().trim().to_string())
        .collect();
    let mut resources = assembled.stdout_utf8();
    resources.push_str(&assembled.stderr_utf8());
    let resources = resources
        .lines()
        .filter(|l| l.contains("registers") || l.contains("spill") || l.contains("stack"))
        .map(str::to_string)
        .collect();
    Ok(VendorReport { kernels, resources })
}

/// The functions `ir` defines that a code object made from it exports: neither internal nor
/// private, and not hidden (a hidden function, such as one with a fixed symbol, is visible to
/// the other modules of a link, but not exported).
pub fn exported_functions(ir: &str) -> BTreeSet<String> {
    ir.lines()
        .filter(|l| l.starts_with("define "))
        .filter(|l| {
            !l.starts_with("define internal ")
                && !l.starts_with("define private ")
                && !l.starts_with("define hidden ")
        })
        .map(|l| l[l.find(" @").unwrap() + 2..].split('(').next().unwrap().to_string())
        .collect()
}

/// The functions `ir` defines that no kernel (`amdgpu_kernel` / `ptx_kernel` definition)
/// reaches through calls or through the initializers of globals (vtables, tables of function
/// pointers), sorted. References are found by name (`@symbol`) in each definition's text.
pub fn unreached_functions(ir: &str) -> Vec<String> {
    fn symbols(text: &str) -> Vec<String> {
        text.split('@')
            .skip(1)
            .map(|rest| {
                if let Some(quoted) = rest.strip_prefix('"') {
                    quoted.split('"').next().unwrap_or("").to_string()
                } else {
                    rest.chars()
                        .take_while(|c| c.is_alphanumeric() || "_.$-".contains(*c))
                        .collect()
                }
            })
            .collect()
    }
    let mut refs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let (mut functions, mut kernels, mut current) = (BTreeSet::new(), Vec::new(), None);
    for line in ir.lines() {
        if line.starts_with("define ") {
            let name = symbols(line).into_iter().next().expect("a definition names its function");
            if line.contains("amdgpu_kernel") || line.contains("ptx_kernel") {
                kernels.push(name.clone());
            }
            functions.insert(name.clone());
            refs.entry(name.clone()).or_default().extend(symbols(line).into_iter().skip(1));
            current = Some(name);
        } else if line.starts_with('}') {
            current = None;
        } else if let Some(name) = &current {
            refs.entry(name.clone()).or_default().extend(symbols(line));
        } else if line.starts_with('@') {
            let mut names = symbols(line).into_iter();
            if let Some(global) = names.next() {
                refs.entry(global).or_default().extend(names);
            }
        }
    }
    let mut reached = BTreeSet::new();
    while let Some(name) = kernels.pop() {
        if reached.insert(name.clone()) {
            kernels.extend(refs.get(&name).into_iter().flatten().cloned());
        }
    }
    functions.difference(&reached).cloned().collect()
}

/// The functions `ir` declares without defining them, LLVM intrinsics aside.
pub fn undefined_functions(ir: &str) -> Vec<&str> {
    ir.lines().filter(|l| l.starts_with("declare ") && !l.contains("@llvm.")).collect()
}

/// The kernel symbols the host object `object` has offload entries for.
pub fn offload_entries(object: &Path) -> BTreeSet<String> {
    let nm = cmd(llvm_tool("llvm-nm")).arg(object).run().stdout_utf8();
    nm.lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter_map(|name| name.strip_prefix(".offloading.entry_name."))
        .map(str::to_string)
        .collect()
}

/// The instructions of each kernel (`_offload_kernel_*`) in the device image `image` (a code
/// object or shared object), disassembled by `objdump` (an `llvm-objdump`), without addresses
/// and comments, by symbol. The offset that an amdgcn `s_add_u32` adds to the address
/// `s_getpc_b64` just read is written `<pc-relative>`: it is where the linker put the data the
/// kernel reads, which moves with the other data of the image (the two `core`s' constants, in
/// an order that their symbol hashes decide), not a difference of the kernel's code.
pub fn kernel_instructions(objdump: &Path, image: &Path) -> BTreeMap<String, Vec<String>> {
    let text = cmd(objdump).args(["-d", "--no-show-raw-insn"]).arg(image).run().stdout_utf8();
    let mut kernels: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line.split_once(" <").and_then(|(_, rest)| rest.strip_suffix(">:")) {
            current = name.starts_with("_offload_kernel_").then(|| name.to_string());
            continue;
        }
        let Some(kernel) = &current else { continue };
        // `    1a2b:      \tinsn ...` (x86-64) or `\tinsn ... // 0000D510: ...` (amdgcn).
        let insn = match line.trim_start().split_once(':') {
            Some((address, insn)) if address.chars().all(|c| c.is_ascii_hexdigit()) => insn,
            _ => line,
        };
        let insn = insn.split("//").next().unwrap().trim();
        if insn.is_empty() {
            continue;
        }
        let insns = kernels.entry(kernel.clone()).or_default();
        let after_getpc = insns.last().is_some_and(|last| last.starts_with("s_getpc_b64"));
        let insn = match insn.rsplit_once(", ") {
            Some((operands, _)) if after_getpc && insn.starts_with("s_add_u32 ") => {
                format!("{operands}, <pc-relative>")
            }
            _ => insn.to_string(),
        };
        insns.push(insn);
    }
    kernels
}

/// Each kernel's PTX lines (its `.entry` to its closing brace) in `ptx`, by name, every Rust
/// symbol in them written `_R`: the two builds' crate graphs give internal `core` functions
/// other v0 crate disambiguators.
pub fn ptx_kernels(ptx: &str) -> BTreeMap<String, Vec<String>> {
    let mut kernels: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in ptx.lines() {
        if let Some(rest) = line.strip_prefix(".visible .entry ") {
            current = rest.split('(').next().map(str::to_string);
            continue;
        }
        let Some(kernel) = &current else { continue };
        if line == "}" {
            current = None;
            continue;
        }
        let line = line.split("//").next().unwrap().trim();
        let normalized: Vec<String> = line
            .split_inclusive(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map(|token| if token.starts_with("_R") { "_R".to_string() } else { token.into() })
            .collect();
        if !line.is_empty() {
            kernels.entry(kernel.clone()).or_default().push(normalized.concat());
        }
    }
    kernels
}

/// Compares the kernels of an image built with the toolchain's `core` with those of the same
/// image built with `core` from source (`--build-std`), for `what`: the same kernels, each
/// with the same instructions or, where the two `core`s' optimized MIR leads LLVM to other
/// choices, no more instructions with the toolchain's `core`. Returns the kernels whose
/// instructions differ.
pub fn compare_kernels(
    what: &str,
    toolchain: &BTreeMap<String, Vec<String>>,
    from_source: &BTreeMap<String, Vec<String>>,
) -> Vec<String> {
    assert_eq!(
        toolchain.keys().collect::<Vec<_>>(),
        from_source.keys().collect::<Vec<_>>(),
        "{what}: the kernels of the two images"
    );
    assert!(!toolchain.is_empty(), "{what}: no kernels in the image");
    let mut differing = Vec::new();
    for (kernel, insns) in toolchain {
        let other = &from_source[kernel];
        if insns != other {
            assert!(
                insns.len() <= other.len(),
                "{what}: `{kernel}` has {} instructions with the toolchain's core, {} with \
                 --build-std",
                insns.len(),
                other.len()
            );
            differing.push(kernel.clone());
        }
    }
    println!(
        "{what}: {} kernels, {} with other instructions than --build-std's (none longer): \
         {differing:?}",
        toolchain.len(),
        differing.len()
    );
    differing
}
