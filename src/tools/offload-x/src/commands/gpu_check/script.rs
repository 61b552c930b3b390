//! `run.sh` of `./x.py gpu-check` ([`run_sh`]), and what reads its table ([`parse_table`],
//! [`without_gpu_mismatch`]).
//!
//! The script is POSIX `sh` (no `bash`), so that it runs on any Linux machine that a bundle runs
//! on. Each row of its table is one run of a bundled program with `OFFLOAD_REPORT=1`: the
//! report names the device and image of each kernel's first launch there, and the row is
//! - `ok` when every kernel that the run launched on the CPU device ran from the `sm_90` image,
//!   no report line names another image or a failed launch, the exit status is the reference's
//!   and the compared output is the reference's;
//! - `wrong` when a kernel ran from the `sm_90` image but one of those did not hold;
//! - `did not run` when no kernel ran from the `sm_90` image (a machine without an NVIDIA GPU
//!   or its driver: the CPU device ran them, or the launches failed).
//!
//! **The comparison rule.** The compared output of a run is its standard output without the
//! lines that start with `[offload report]`, then with the row's mask ([`mask`], a `sed -E`
//! script): the lines that start with one of the row's [`Row::varies`] prefixes are dropped
//! (a racy kernel's counts), and in a [`Row::timed`] row every decimal number, with the spaces
//! before it, reads ` #`. Integers and all other text must match byte for byte: the programs
//! print their results exactly (checksums, counts, `f32` values as Rust prints them), and their
//! own comparisons with the host. Standard error (the report, the runtime's messages) is kept
//! in the results folder and not compared. The reference is the same run's output on the CPU
//! device of the build machine (`sh run.sh --record`, which `./x.py gpu-check` runs before it
//! packs the bundle).

use super::programs::{BUILDS, ROWS, Row, build_of};

/// The table's columns (`printf` format of `run.sh`): program, kernels (`ran from the sm_90
/// image/launched on the CPU device`), the verdict, seconds.
const ROW_FORMAT: &str = "%-26s %7s  %-11s %8s\\n";

/// The verdict of a row that matched.
pub const OK: &str = "ok";
/// The verdict of a row whose kernels ran on the GPU with another result.
pub const WRONG: &str = "wrong";
/// The verdict of a row none of whose kernels ran from the GPU image.
pub const DID_NOT_RUN: &str = "did not run";
/// `run.sh`'s exit status when no row ran on the GPU.
pub const NOTHING_RAN: i32 = 3;
/// What a "did not run" row's reason says when the CPU device ran the run as on the build
/// machine.
pub const SAME_ON_CPU: &str = "its output and exit status are the reference's";

/// The part of `run.sh` before its rows. `@...@` names are filled in by [`run_sh`].
const HEAD: &str = r#"#!/bin/sh
# gpu-check (`./x.py gpu-check`; src/tools/offload-x/src/commands/gpu_check/script.rs writes this
# file):
# runs the offload programs of bundle.tar.xz on this machine's NVIDIA GPU, and compares each run
# with what the same run printed on the CPU device of the machine that built the bundle
# (bundle/reference/, written there by `sh run.sh --record`). Every program holds images for
# @ARCHS@ (@AMD_ARCH@ where it builds); the runtime picks the image that a device of this
# machine runs.
# One table, a row per run, with OFFLOAD_REPORT=1 (one report line per kernel and device):
#   ok           every kernel that the run launched on the CPU device ran from the @ARCH@ image,
#                no report line names another image or a failed launch, and the exit status
#                and the compared output are the reference's;
#   wrong        a kernel ran from the @ARCH@ image, but one of those did not hold;
#   did not run  no kernel ran from the @ARCH@ image (no GPU or driver here: the CPU device ran
#                them, or the launches failed).
# Compared output: standard output without the lines that start with `[offload report]`, then
# the row's MASK, a `sed -E` script for what the device decides (a racy kernel's lines;
# timings: each decimal number reads ` #`). Standard error is kept in the results folder only.
# A run that fails or hangs (GPU_CHECK_TIMEOUT seconds, default 120) does not stop the others.
# Exit status: 0 if every row is ok; 3 if no row ran on the GPU; 2 if the bundle is missing;
# 1 otherwise. GPU_CHECK_RESULTS: the folder for each run's output (default results/ here).
LC_ALL=C
export LC_ALL
# What the programs read comes from their rows only.
unset RUST_OFFLOAD_CPU_WORKERS LIBOMPTARGET_INFO LIBOMPTARGET_DEBUG \
    LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD OMP_TARGET_OFFLOAD OMP_DEFAULT_DEVICE
cd "$(dirname "$0")" || exit 2
here=$(pwd)
mode=check
limit=${GPU_CHECK_TIMEOUT:-120}
if [ "${1:-}" = --record ]; then
    mode=record
    limit=${GPU_CHECK_TIMEOUT:-900}
fi
if [ "$mode" = check ] && [ -f bundle.tar.xz ]; then
    # Unpacked outside this folder, which stays as small as the device tool carries it.
    work=$(mktemp -d 2>/dev/null) || work=${TMPDIR:-/tmp}/gpu-check.$$
    trap 'rm -rf "$work"' EXIT
    trap 'exit 130' INT TERM
    mkdir -p "$work" && tar -xJf bundle.tar.xz -C "$work" ||
        { echo "gpu-check: cannot unpack bundle.tar.xz" >&2; exit 2; }
    bundle=$work/bundle
else
    bundle=$here/bundle
fi
if [ ! -d "$bundle" ] || { [ "$mode" = check ] && [ ! -d "$bundle/reference" ]; }; then
    echo "gpu-check: no bundle.tar.xz (or bundle/ with its reference/) beside $0" >&2
    exit 2
fi
results=${GPU_CHECK_RESULTS:-$here/results}
mkdir -p "$results" || exit 2
if command -v timeout >/dev/null 2>&1; then
    limited() { timeout "$limit" "$@"; }
else
    limited() { "$@"; }
fi
# Hundredths of a second since some start.
now() {
    if [ -r /proc/uptime ]; then
        read -r up rest </proc/uptime
        echo $((${up%.*} * 100 + 1${up#*.} - 100))
    else
        echo $(($(date +%s) * 100))
    fi
}
gpu_image='@TRIPLE@ @ARCH@'
cpu_image='@CPU_TRIPLE@'
# A report line of a launch, up to the image: `... ran on DEVICE from image N of M (IMAGE)`.
launched='^\[offload report\] kernel `[^`]*` ran on .* ('
# The kernels (symbols) that the report lines in $1 say ran from the image $2, once each.
ran_from() {
    grep "$launched$2)\$" "$1" | sed 's/^\[offload report\] kernel `\([^`]*\)`.*/\1/' | sort -u
}
# The report lines of kernels in $1 that are not a launch from the image $2 (not the report's
# lines of data moved, which every run ends with).
not_from() {
    grep '^\[offload report\] kernel ' "$1" | grep -v "$launched$2)\$"
}
# The compared output of the standard output $1 under the mask $2.
compared() {
    if [ -n "$2" ]; then
        grep -v '^\[offload report\]' "$1" | sed -E -e "$2"
    else
        grep -v '^\[offload report\]' "$1"
    fi
}
# The first line in which the compared outputs $1 (reference) and $2 differ, both ways.
first_difference() {
    diff "$1" "$2" | grep '^[<>]' | head -n 2 | tr '\n' ' ' | sed 's/ $//'
}
rows=0 passed=0 ran=0 failed=0 reasons=
if [ "$mode" = check ]; then
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader |
            sed 's/^/gpu-check: GPU: /'
    else
        echo "gpu-check: no nvidia-smi on this machine"
    fi
    printf '@ROW_FORMAT@' program kernels GPU seconds
fi
# row NAME PROGRAM MASK [VARIABLE=VALUE...] -- [ARGUMENT...]: one run of bundle/PROGRAM.
row() {
    name=$1 program=$bundle/$2 mask=$3
    shift 3
    # "$@" becomes: VARIABLE=VALUE... PROGRAM ARGUMENT... (for env).
    separated=no
    for word do
        shift
        if [ "$separated" = no ] && [ "$word" = -- ]; then
            separated=yes
            set -- "$@" "$program"
        else
            set -- "$@" "$word"
        fi
    done
    rows=$((rows + 1))
    out=$results/$name.stdout err=$results/$name.stderr
    ref=$bundle/reference/$name
    : >"$out"
    : >"$err"
    start=$(now)
    if [ ! -f "$program" ]; then
        echo "gpu-check: $program is not in the bundle" >"$err"
        status=127
    elif [ "$mode" = record ]; then
        # The CPU device, even on a machine with a GPU.
        limited env OFFLOAD_REPORT=1 CUDA_VISIBLE_DEVICES= ROCR_VISIBLE_DEVICES= "$@" \
            >"$out" 2>"$err"
        status=$?
    else
        limited env OFFLOAD_REPORT=1 "$@" >"$out" 2>"$err"
        status=$?
    fi
    hundredths=$(($(now) - start))
    seconds=$((hundredths / 100)).$((hundredths % 100 / 10))$((hundredths % 10))
    if [ "$mode" = record ]; then
        record
    else
        check
    fi
}
# --record: the run's reference, from the CPU device of this machine.
record() {
    mkdir -p "$bundle/reference" || exit 2
    cp "$out" "$ref.out" && echo "$status" >"$ref.status" || exit 2
    ran_from "$err" "$cpu_image" >"$ref.kernels"
    kernels=$(($(wc -l <"$ref.kernels")))
    elsewhere=$(not_from "$err" "$cpu_image" | head -n 1)
    if [ "$status" -ne 0 ] || [ "$kernels" -eq 0 ] || [ -n "$elsewhere" ]; then
        failed=1
        echo "gpu-check: cannot record $name: exit status $status, $kernels kernels ran on" \
            "the CPU device${elsewhere:+, and: $elsewhere}; see $err"
        tail -n 5 "$err"
        return
    fi
    echo "gpu-check: recorded $name: $kernels kernels on the CPU device, $seconds s"
}
# The run's row of the table.
check() {
    ran_from "$err" "$gpu_image" >"$results/$name.gpu"
    expected=$(($(wc -l <"$ref.kernels")))
    missing=$(($(comm -23 "$ref.kernels" "$results/$name.gpu" | wc -l)))
    on_gpu=$((expected - missing))
    any=$(($(wc -l <"$results/$name.gpu")))
    elsewhere=$(not_from "$err" "$gpu_image" | head -n 1)
    compared "$out" "$mask" >"$results/$name.compared"
    compared "$ref.out" "$mask" >"$results/$name.reference"
    difference=
    if ! cmp -s "$results/$name.reference" "$results/$name.compared"; then
        difference=$(first_difference "$results/$name.reference" "$results/$name.compared")
        difference=${difference:-the outputs differ}
    fi
    reference_status=$(cat "$ref.status")
    why=
    if [ "$status" -ne "$reference_status" ]; then
        why="exit status $status (the reference's: $reference_status)"
        if [ "$status" -eq 124 ]; then why="$why: timed out after $limit s"; fi
    fi
    if [ "$any" -eq 0 ]; then
        verdict='did not run'
        cpu=$(($(ran_from "$err" "$cpu_image" | wc -l)))
        launch=$(grep '^error: ' "$err" | head -n 1)
        if [ "$cpu" -gt 0 ]; then
            on_cpu="the CPU device ran $cpu of its $expected kernels"
            if [ -z "$why$difference" ]; then
                why="$on_cpu; @SAME_ON_CPU@"
            else
                why="$on_cpu; ${why:+$why; }output: ${difference:-as recorded}"
            fi
        else
            why="no kernel ran; ${why:-exit status $status}"
            why="$why${launch:+; $launch}${elsewhere:+; $elsewhere}"
        fi
    elif [ -z "$why$difference$elsewhere" ] && [ "$missing" -eq 0 ]; then
        verdict=ok
        passed=$((passed + 1))
    else
        verdict=wrong
        if [ "$missing" -gt 0 ]; then
            why="${why:+$why; }$missing of $expected kernels did not run from the @ARCH@ image"
        fi
        if [ -n "$elsewhere" ]; then why="${why:+$why; }$elsewhere"; fi
        if [ -n "$difference" ]; then why="${why:+$why; }output: $difference"; fi
    fi
    if [ "$any" -gt 0 ]; then ran=$((ran + 1)); fi
    printf '@ROW_FORMAT@' "$name" "$on_gpu/$expected" "$verdict" "$seconds"
    if [ -n "$why" ]; then
        reasons="$reasons$name: $why
"
    fi
}
"#;

/// The part of `run.sh` after its rows.
const TAIL: &str = r#"if [ "$mode" = record ]; then
    exit "$failed"
fi
echo
printf '%s' "$reasons"
timing=0
if [ -f kernel-time/kernels.json ]; then
    if [ "$ran" -gt 0 ]; then
        # Base's and ours' kernels of the benchmark, timed on this GPU (kernel_time.py).
        python3 kernel-time/kernel_time.py run kernel-time --json kernel-time/results.json ||
            timing=1
    else
        echo "gpu-check: kernel timing (kernel-time/) left out: no row ran on the GPU"
    fi
fi
if [ "$ran" -eq 0 ]; then
    echo "gpu-check: nothing ran on the GPU: all $rows rows did not run (exit status 3)"
    exit 3
fi
if [ "$passed" -eq "$rows" ] && [ "$timing" -eq 0 ]; then
    echo "gpu-check: passed: all $rows runs ran every kernel from the @ARCH@ image and" \
        "printed what they printed on the CPU device"
    exit 0
fi
echo "gpu-check: FAILED: $passed of $rows rows ok, $ran ran on the GPU;" \
    "kernel timing status $timing; each run's output is in $results"
exit 1
"#;

/// `s`, quoted for `sh` where it needs to be.
fn word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+%@".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        crate::sysroot::shell_quote(s)
    }
}

/// `text` as a part of a POSIX extended regular expression that matches it, `/` included (the
/// `sed` delimiter).
fn ere_literal(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.[]()*+?{}|^$/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// What a timed row's mask does to each decimal number and the spaces before it.
const TIMINGS: &str = r"s/ *(-?inf|NaN|-?[0-9]+\.[0-9]+)/ #/g";

/// The row's mask: the `sed -E` script that `run.sh` applies to both outputs, after it dropped
/// the report's lines (see the module's documentation). Empty when the row has none.
pub fn mask(row: &Row) -> String {
    let mut commands: Vec<String> =
        row.varies.iter().map(|prefix| format!("/^{}/d", ere_literal(prefix))).collect();
    if row.timed {
        commands.push(TIMINGS.to_string());
    }
    commands.join("; ")
}

/// The `row` line of `run.sh` for `row` (see its `row` function).
pub fn row_line(row: &Row) -> String {
    let build = build_of(row.bundle).expect("every row's build is in BUILDS");
    let mut words = vec![
        "row".to_string(),
        word(row.name),
        word(&format!("{}/{}", build.bundle, build.program)),
        crate::sysroot::shell_quote(&mask(row)),
    ];
    words.extend(row.env.iter().map(|(key, value)| word(&format!("{key}={value}"))));
    words.push("--".into());
    words.extend(row.args.iter().map(|a| word(a)));
    words.join(" ")
}

/// The archs of every bundled program, as `--offload-arch` names them: the NVIDIA GPU that the
/// check runs on, the AMD GPU (for its vendor tools), and the CPU device of the reference.
pub fn archs() -> String {
    use offload_targets::{AMDGCN, CPU, NVPTX};
    [NVPTX.default_arch, AMDGCN.default_arch, CPU.default_arch].join(",")
}

/// The text of `run.sh` for `rows` (in the table's order); each row's build must be in
/// [`BUILDS`].
pub fn run_sh(rows: &[Row]) -> String {
    use offload_targets::{CPU, NVPTX};
    let head = HEAD
        .replace("@ARCHS@", &archs())
        .replace("@AMD_ARCH@", offload_targets::AMDGCN.default_arch)
        .replace("@ARCH@", NVPTX.default_arch)
        .replace("@TRIPLE@", NVPTX.triple)
        .replace("@CPU_TRIPLE@", CPU.triple)
        .replace("@ROW_FORMAT@", ROW_FORMAT)
        .replace("@SAME_ON_CPU@", SAME_ON_CPU);
    let mut text = head;
    text.push_str("# The runs: row NAME PROGRAM MASK [VARIABLE=VALUE...] -- [ARGUMENT...]\n");
    for row in rows {
        text.push_str(&format!("# {}\n{}\n", row.from, row_line(row)));
    }
    text.push_str(&TAIL.replace("@ARCH@", NVPTX.default_arch));
    text
}

/// `run.sh` for every row of [`ROWS`].
pub fn default_run_sh() -> String {
    debug_assert!(ROWS.iter().all(|r| BUILDS.iter().any(|b| b.bundle == r.bundle)));
    run_sh(ROWS)
}

/// One row of `run.sh`'s table, as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRow {
    /// The row's name.
    pub program: String,
    /// `ON_GPU/LAUNCHED`: kernels that ran from the GPU image, of those that the run launched
    /// on the CPU device.
    pub kernels: String,
    /// [`OK`], [`WRONG`] or [`DID_NOT_RUN`].
    pub verdict: String,
    /// The run's wall time, seconds.
    pub seconds: String,
    /// Why the row is not ok (empty for an ok row).
    pub reason: String,
}

/// The rows of the table in `run.sh`'s standard output `stdout`, each with its reason (the
/// `NAME: ...` line below the table); empty if there is no table.
pub fn parse_table(stdout: &str) -> Vec<TableRow> {
    let mut lines = stdout.lines();
    if !lines.by_ref().any(|l| l.split_whitespace().eq(["program", "kernels", "GPU", "seconds"])) {
        return Vec::new();
    }
    let mut rows: Vec<TableRow> = Vec::new();
    for line in lines.by_ref() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < 4 {
            break;
        }
        rows.push(TableRow {
            program: words[0].to_string(),
            kernels: words[1].to_string(),
            verdict: words[2..words.len() - 1].join(" "),
            seconds: words[words.len() - 1].to_string(),
            reason: String::new(),
        });
    }
    for line in lines {
        for row in rows.iter_mut() {
            if let Some(reason) = line.strip_prefix(&format!("{}: ", row.program))
                && row.reason.is_empty()
            {
                row.reason = reason.to_string();
            }
        }
    }
    rows
}

/// Whether `run.sh`'s run here, on a machine without a GPU, went as it must: exit status
/// [`NOTHING_RAN`], a row for each of `rows` in order, each "did not run", and each saying that
/// the CPU device ran every kernel of the run with the reference's output and exit status (the
/// bundle works on this machine, and the comparison finds no difference where there is none).
/// `None` when it did, or what did not (which row, say).
pub fn without_gpu_mismatch(stdout: &str, status: Option<i32>, rows: &[Row]) -> Option<String> {
    let table = parse_table(stdout);
    let names: Vec<&str> = table.iter().map(|r| r.program.as_str()).collect();
    let expected: Vec<&str> = rows.iter().map(|r| r.name).collect();
    if names != expected {
        return Some(format!("run.sh printed the rows {names:?}, not {expected:?}"));
    }
    for row in &table {
        let (on_gpu, launched) = row.kernels.split_once('/').unwrap_or(("?", "?"));
        let all_on_cpu = format!("the CPU device ran {launched} of its {launched} kernels; ");
        if row.verdict != DID_NOT_RUN
            || on_gpu != "0"
            || !row.reason.starts_with(&all_on_cpu)
            || !row.reason.ends_with(SAME_ON_CPU)
        {
            return Some(format!(
                "row {}: {} ({} kernels): {}",
                row.program, row.verdict, row.kernels, row.reason
            ));
        }
    }
    if status != Some(NOTHING_RAN) {
        return Some(format!("run.sh exited with {status:?}, not {NOTHING_RAN}"));
    }
    None
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use super::*;

    #[test]
    fn masks_drop_prefixes_and_timings() {
        let row = ROWS.iter().find(|r| r.name == "cpu-grid").unwrap();
        assert_eq!(mask(row), "/^racy_saxpy: /d");
        let row = ROWS.iter().find(|r| r.name == "bench-cpu-grid").unwrap();
        assert_eq!(mask(row), TIMINGS);
        let odd = Row { varies: &["a.b [x]/y: ", "z"], timed: true, ..ROWS[0] };
        assert_eq!(mask(&odd), format!(r"/^a\.b \[x\]\/y: /d; /^z/d; {TIMINGS}"));
        assert_eq!(mask(&ROWS[1]), "");
    }

    #[test]
    fn row_lines_quote_what_the_shell_would_split() {
        let meet = ROWS.iter().find(|r| r.name == "atomics-meet").unwrap();
        assert_eq!(
            row_line(meet),
            "row atomics-meet atomics/app '' RUST_OFFLOAD_CPU_WORKERS=2 -- meet"
        );
        let grid = ROWS.iter().find(|r| r.name == "cpu-grid").unwrap();
        assert_eq!(row_line(grid), "row cpu-grid cpu-grid/app '/^racy_saxpy: /d' --");
        assert_eq!(word("a b"), "'a b'");
        assert_eq!(word(""), "''");
        assert_eq!(word("it's"), r"'it'\''s'");
    }

    #[test]
    fn the_script_names_the_tables_archs_and_every_row() {
        let text = default_run_sh();
        let (nvptx, cpu) = (offload_targets::NVPTX, offload_targets::CPU);
        assert!(text.contains(&format!("gpu_image='{} {}'\n", nvptx.triple, nvptx.default_arch)));
        assert!(text.contains(&format!("cpu_image='{}'\n", cpu.triple)));
        assert!(text.contains(&format!("images for\n# {},", nvptx.default_arch)), "{text}");
        for placeholder in
            ["@ARCHS@", "@AMD_ARCH@", "@ARCH@", "@TRIPLE@", "@CPU_TRIPLE@", "@ROW_FORMAT@"]
        {
            assert!(!text.contains(placeholder), "{placeholder} is left in run.sh");
        }
        assert!(!text.contains("@SAME_ON_CPU@"));
        for row in ROWS {
            assert_eq!(text.matches(&format!("\n{}\n", row_line(row))).count(), 1, "{}", row.name);
        }
        assert!(text.starts_with("#!/bin/sh\n"));
        // No bash: no arrays, `[[`, `function`, `local`, `source`, `$'...'`, `<<<` or `==`.
        for bashism in
            ["[[", "function ", "local ", "source ", " $'", "=$'", "<<<", " == ", "pipefail"]
        {
            assert!(!text.contains(bashism), "`{bashism}` in run.sh");
        }
        // The device tool shows the last 12,000 characters of a run: the table must fit.
        assert!(ROWS.len() * 60 < 12_000);
    }

    #[test]
    fn the_script_parses_in_every_shell_at_hand() {
        let dir = std::env::temp_dir().join(format!("gpu-check-parse-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("run.sh");
        fs::write(&path, default_run_sh()).unwrap();
        let mut parsed = 0;
        for shell in ["sh", "dash", "bash", "busybox", "mksh", "yash", "posh", "ksh"] {
            let mut command = Command::new(shell);
            if shell == "busybox" {
                command.arg("sh");
            }
            let Ok(out) = command.arg("-n").arg(&path).output() else { continue };
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{shell} -n run.sh: {stderr}");
            parsed += 1;
        }
        fs::remove_dir_all(&dir).unwrap();
        assert!(parsed > 0, "no shell to parse run.sh with");
    }

    #[test]
    fn tables_parse_with_their_reasons() {
        let out = "gpu-check: no nvidia-smi on this machine\n\
                   program                    kernels  GPU          seconds\n\
                   a                              3/3  ok              1.25\n\
                   bb                             0/2  did not run     0.50\n\
                   \n\
                   bb: no kernel ran; exit status 1\n\
                   gpu-check: FAILED\n";
        let rows = parse_table(out);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[1],
            TableRow {
                program: "bb".into(),
                kernels: "0/2".into(),
                verdict: DID_NOT_RUN.into(),
                seconds: "0.50".into(),
                reason: "no kernel ran; exit status 1".into()
            }
        );
        assert_eq!((rows[0].verdict.as_str(), rows[0].reason.as_str()), (OK, ""));
        assert!(parse_table("no table\n").is_empty());
    }

    /// A bundle in a fresh folder: `run.sh` of `rows`, and for each row a start script
    /// `bundle/<bundle>/<program>` that runs the shell code `body` of its row (given `$1`, the
    /// first argument), with its reference output `reference` (one kernel, `k1`).
    struct Fake {
        dir: PathBuf,
    }

    /// The report's lines of data moved, with which it ends every run that launched.
    macro_rules! data_moved {
        () => {
            "\necho '[offload report] data moved: 8 bytes to devices in 1 copy, 8 bytes back in 1 \
             copy' >&2\necho '[offload report] data moved by kernel `k1`: 8 bytes to devices in 1 \
             copy, 8 bytes back in 1 copy' >&2"
        };
    }
    const SM90: &str = concat!(
        "echo '[offload report] kernel `k1` ran on device 0 (sm_90, uid GPU-1) from image 1 of 3 \
         (nvptx64-nvidia-cuda sm_90)' >&2",
        data_moved!()
    );
    const CPU: &str = concat!(
        "echo '[offload report] kernel `k1` ran on device 0 (generic-64bit, uid x86_64-0) from \
         image 3 of 3 (x86_64-unknown-linux-gnu)' >&2",
        data_moved!()
    );

    impl Fake {
        fn new(test: &str, rows: &[Row], bodies: &[&str]) -> Fake {
            let dir = std::env::temp_dir().join(format!("gpu-check-{test}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(dir.join("bundle")).unwrap();
            fs::write(dir.join("run.sh"), run_sh(rows)).unwrap();
            for (row, body) in rows.iter().zip(bodies) {
                let build = build_of(row.bundle).unwrap();
                let program = dir.join("bundle").join(build.bundle).join(build.program);
                fs::create_dir_all(program.parent().unwrap()).unwrap();
                fs::write(&program, format!("#!/bin/sh\n{body}\n")).unwrap();
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).unwrap();
            }
            Fake { dir }
        }

        fn sh(&self, args: &[&str], env: &[(&str, &str)]) -> (String, Option<i32>) {
            let out = Command::new("sh")
                .arg(self.dir.join("run.sh"))
                .args(args)
                .env_remove("GPU_CHECK_TIMEOUT")
                .envs(env.iter().copied())
                .env("GPU_CHECK_RESULTS", self.dir.join("results"))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            (text + &String::from_utf8_lossy(&out.stderr), out.status.code())
        }

        fn reference(&self, name: &str, out: &str, kernels: &str, status: i32) {
            let reference = self.dir.join("bundle/reference");
            fs::create_dir_all(&reference).unwrap();
            fs::write(reference.join(format!("{name}.out")), out).unwrap();
            fs::write(reference.join(format!("{name}.kernels")), kernels).unwrap();
            fs::write(reference.join(format!("{name}.status")), format!("{status}\n")).unwrap();
        }

        fn path(&self, rest: &str) -> PathBuf {
            self.dir.join(rest)
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }

    /// Rows for the fakes: the first `n` of [`ROWS`] whose bundles differ, with `varies` of
    /// `cpu-grid` on the first.
    fn rows(n: usize) -> Vec<Row> {
        let mut seen = Vec::new();
        let mut rows = Vec::new();
        for row in ROWS {
            if !seen.contains(&row.bundle) && rows.len() < n {
                seen.push(row.bundle);
                rows.push(Row { ..*row });
            }
        }
        rows
    }

    fn read(path: &Path) -> String {
        fs::read_to_string(path).unwrap_or_default()
    }

    #[test]
    fn a_gpu_run_is_ok_wrong_or_did_not_run_and_one_table_says_which() {
        let rows = rows(5);
        let timed = Row { timed: true, ..rows[4] };
        let rows =
            [Row { ..rows[0] }, Row { ..rows[1] }, Row { ..rows[2] }, Row { ..rows[3] }, timed];
        let bodies = [
            // ok: the racy line differs, as the mask allows.
            &format!("{SM90}\necho 'x: 1'\necho 'racy_saxpy: 9 9'")[..],
            // wrong: another result.
            &format!("{SM90}\necho 'x: 2'"),
            // did not run: the CPU device ran it, with the reference's output.
            &format!("{CPU}\necho 'x: 1'"),
            // did not run: the launch failed, and the program stopped.
            "echo 'error: the offload launch of kernel `k1` failed: no device' >&2; exit 1",
            // ok: only the timings differ.
            &format!("{SM90}\necho 'host loop   12.345 ms  (0.20 ns each, 1234)'"),
        ];
        let fake = Fake::new("verdicts", &rows, &bodies);
        fake.reference(rows[0].name, "x: 1\nracy_saxpy: 2 3\n", "k1\n", 0);
        fake.reference(rows[1].name, "x: 1\n", "k1\n", 0);
        fake.reference(rows[2].name, "x: 1\n", "k1\n", 0);
        fake.reference(rows[3].name, "x: 1\n", "k1\n", 0);
        fake.reference(rows[4].name, "host loop    1.000 ms  (10.00 ns each, 1234)\n", "k1\n", 0);
        let (out, status) = fake.sh(&[], &[]);
        let table = parse_table(&out);
        let verdicts: Vec<&str> = table.iter().map(|r| r.verdict.as_str()).collect();
        assert_eq!(verdicts, [OK, WRONG, DID_NOT_RUN, DID_NOT_RUN, OK], "{out}");
        assert_eq!(table[0].kernels, "1/1");
        assert_eq!(table[2].kernels, "0/1");
        assert!(table[1].reason.contains("output: < x: 1 > x: 2"), "{out}");
        assert!(table[2].reason.ends_with(SAME_ON_CPU), "{out}");
        assert!(table[3].reason.contains("exit status 1") && table[3].reason.contains("failed"));
        assert!(table[0].seconds.parse::<f64>().is_ok(), "{out}");
        assert_eq!(status, Some(1), "{out}");
        // Each run's output stays in the results folder.
        assert_eq!(read(&fake.path(&format!("results/{}.stdout", rows[1].name))), "x: 2\n");
        // A timing that is not a decimal number still counts.
        let unmasked = "echo 'host loop   12 ms'";
        let fake = Fake::new("timings", &rows[4..], &[&format!("{SM90}\n{unmasked}")]);
        fake.reference(rows[4].name, "host loop   11 ms\n", "k1\n", 0);
        assert_eq!(parse_table(&fake.sh(&[], &[]).0)[0].verdict, WRONG);
    }

    #[test]
    fn every_kernel_must_run_from_the_gpu_image() {
        let rows = rows(2);
        let both = format!(
            "{SM90}\necho '[offload report] kernel `k2` ran on device 1 (generic-64bit, uid \
             x86_64-1) from image 3 of 3 (x86_64-unknown-linux-gnu)' >&2\necho 'x: 1'"
        );
        let fake = Fake::new("kernels", &rows, &[&both, &format!("{SM90}\necho 'x: 1'")]);
        fake.reference(rows[0].name, "x: 1\n", "k1\nk2\n", 0);
        // The second run launched a kernel fewer than on the CPU device.
        fake.reference(rows[1].name, "x: 1\n", "k1\nk3\n", 0);
        let (out, status) = fake.sh(&[], &[]);
        let table = parse_table(&out);
        assert_eq!((table[0].verdict.as_str(), table[0].kernels.as_str()), (WRONG, "1/2"));
        assert!(table[0].reason.contains("1 of 2 kernels did not run from the sm_90 image"));
        assert!(table[0].reason.contains("`k2` ran on device 1"), "{out}");
        assert_eq!((table[1].verdict.as_str(), table[1].kernels.as_str()), (WRONG, "1/2"));
        assert_eq!(status, Some(1));
    }

    #[test]
    fn without_a_gpu_every_row_did_not_run_and_nothing_stops() {
        let rows = rows(3);
        let cpu = format!("{CPU}\necho \"x: ${{1:-none}}\"");
        // The second program is missing from the bundle; the third hangs after its launch.
        let fake = Fake::new("no-gpu", &rows, &[&cpu, &cpu, &format!("{CPU}\nexec sleep 30")]);
        fs::remove_file(fake.path(&format!(
            "bundle/{0}/{1}",
            rows[1].bundle,
            build_of(rows[1].bundle).unwrap().program
        )))
        .unwrap();
        let arg = rows[0].args.first().copied().unwrap_or("none");
        for row in &rows {
            fake.reference(row.name, &format!("x: {arg}\n"), "k1\n", 0);
        }
        let (out, status) = fake.sh(&[], &[("GPU_CHECK_TIMEOUT", "1")]);
        let table = parse_table(&out);
        assert!(table.iter().all(|r| r.verdict == DID_NOT_RUN), "{out}");
        assert!(table[0].reason.ends_with(SAME_ON_CPU), "{out}");
        assert!(table[1].reason.contains("exit status 127"), "{out}");
        assert!(table[2].reason.contains("timed out after 1 s"), "{out}");
        assert_eq!(status, Some(NOTHING_RAN), "{out}");
        assert!(out.contains("gpu-check: nothing ran on the GPU"));
        assert!(without_gpu_mismatch(&out, status, &rows).unwrap().contains(rows[1].name));
        // Two rows that ran on the CPU device as recorded: what `./x.py test` asserts.
        let fake = Fake::new("no-gpu-ok", &rows[..2], &[&cpu, &cpu]);
        for row in &rows[..2] {
            let arg = row.args.first().copied().unwrap_or("none");
            fake.reference(row.name, &format!("x: {arg}\n"), "k1\n", 0);
        }
        let (out, status) = fake.sh(&[], &[]);
        assert_eq!(without_gpu_mismatch(&out, status, &rows[..2]), None);
        assert!(without_gpu_mismatch(&out, status, &rows).is_some());
    }

    #[test]
    fn record_writes_the_references_and_refuses_a_failed_run() {
        let rows = rows(2);
        let body = format!("{CPU}\necho 'x: 1'\necho 'on stderr' >&2");
        let fake = Fake::new("record", &rows, &[&body, &body]);
        let (out, status) = fake.sh(&["--record"], &[]);
        assert_eq!(status, Some(0), "{out}");
        assert!(out.contains(&format!("gpu-check: recorded {}: 1 kernels", rows[0].name)));
        let reference =
            |ext: &str| read(&fake.path(&format!("bundle/reference/{}.{ext}", rows[0].name)));
        assert_eq!(
            (reference("out"), reference("kernels"), reference("status")),
            ("x: 1\n".into(), "k1\n".into(), "0\n".into())
        );
        // Checked against its own references, on the same device: each row did not run on the
        // GPU, and matched.
        let (out, status) = fake.sh(&[], &[]);
        assert_eq!(without_gpu_mismatch(&out, status, &rows), None);
        // A run that fails, or that the GPU ran, is no reference.
        let failing = format!("{CPU}\nexit 4");
        let fake = Fake::new("record-fails", &rows, &[&failing, &format!("{SM90}\necho 'x'")]);
        let (out, status) = fake.sh(&["--record"], &[]);
        assert_eq!(status, Some(1), "{out}");
        assert!(out.contains(&format!("cannot record {}: exit status 4", rows[0].name)), "{out}");
        assert!(out.contains(&format!("cannot record {}: exit status 0, 0 kernels", rows[1].name)));
    }

    #[test]
    fn the_script_passes_arguments_and_environment() {
        let meet = ROWS.iter().find(|r| r.name == "atomics-meet").unwrap();
        let body = format!(
            "{SM90}\necho \"$# $1 workers=$RUST_OFFLOAD_CPU_WORKERS report=$OFFLOAD_REPORT\""
        );
        let rows = [Row { ..*meet }];
        let fake = Fake::new("arguments", &rows, &[&body]);
        fake.reference(meet.name, "1 meet workers=2 report=1\n", "k1\n", 0);
        // The caller's own value does not reach the program.
        let (out, status) = fake.sh(&[], &[("RUST_OFFLOAD_CPU_WORKERS", "7")]);
        assert_eq!(parse_table(&out)[0].verdict, OK, "{out}");
        assert_eq!(status, Some(0));
        assert!(out.contains("gpu-check: passed: all 1 runs"));
    }
}
