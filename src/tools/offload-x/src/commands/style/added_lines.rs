//! The lines that our patches add to upstream files, found where the materialized tree has
//! them ([`patch_added_lines`]), for the length rules of [`super::lengths`].
//!
//! A patch's `@@` line numbers are not enough: patches apply in order, each to the file as the
//! ones before it left it, and `patch` finds a hunk at an offset from its stated line when an
//! earlier patch changed after the hunk was written. So the tree file is taken apart from the
//! last patch back to the first, the way `patch -R` would: each hunk's new side (context and
//! `+` lines) is found in the file by its text, nearest to its stated line, and replaced by its
//! old side; a `+` line found there that is still a line of the tree file is one of ours.

use std::collections::BTreeMap;

use crate::materialize::Patch;

/// One hunk of a patch's section: its `@@ -OLD,LEN +NEW,LEN @@` ranges (lines counted from 1;
/// a range of length 0 starts after the line it names) and its body lines (` `, `-`, `+`).
#[derive(Debug)]
struct Hunk<'a> {
    old_len: usize,
    new_start: usize,
    new_len: usize,
    body: Vec<&'a str>,
}

/// The hunks of a patch section (a `diff --git` section); its header lines and `\ No newline`
/// markers are skipped. A hunk takes as many body lines as its ranges say.
fn hunks(section: &str) -> Vec<Hunk<'_>> {
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let header = |line: &str| -> Option<Hunk<'_>> {
        let (ranges, _) = line.strip_prefix("@@ -")?.split_once(" @@")?;
        let (old, new) = ranges.split_once(" +")?;
        let ((_, old_len), (new_start, new_len)) = (range(old)?, range(new)?);
        Some(Hunk { old_len, new_start, new_len, body: Vec::new() })
    };
    let mut out: Vec<Hunk<'_>> = Vec::new();
    let (mut old_left, mut new_left) = (0, 0);
    for line in section.lines() {
        if old_left == 0 && new_left == 0 {
            if let Some(hunk) = header(line) {
                (old_left, new_left) = (hunk.old_len, hunk.new_len);
                out.push(hunk);
            }
            continue;
        }
        let Some(hunk) = out.last_mut() else { continue };
        match line.as_bytes().first() {
            Some(b'\\') => continue,
            Some(b'+') => new_left = new_left.saturating_sub(1),
            Some(b'-') => old_left = old_left.saturating_sub(1),
            _ => (old_left, new_left) = (old_left.saturating_sub(1), new_left.saturating_sub(1)),
        }
        hunk.body.push(line);
    }
    out
}

/// A hunk's lines on one side: the context lines and those of `sign` (`+` for the new side,
/// `-` for the old), each with whether it is of `sign`.
fn side<'a>(hunk: &Hunk<'a>, sign: u8) -> Vec<(&'a str, bool)> {
    hunk.body
        .iter()
        .filter_map(|line| match line.as_bytes().first() {
            Some(&b) if b == sign => Some((line[1..].trim_end_matches('\r'), true)),
            Some(b'+' | b'-') => None,
            // Context: a space, or an empty line that an editor stripped.
            _ => Some((line.get(1..).unwrap_or("").trim_end_matches('\r'), false)),
        })
        .collect()
}

/// Where `want` (texts) stands in `lines`, the match nearest to index `near` first, as `patch`
/// searches for a hunk's context.
fn find(lines: &[(String, Option<usize>)], want: &[&str], near: usize) -> Option<usize> {
    let fits = |at: usize| {
        at + want.len() <= lines.len() && want.iter().zip(&lines[at..]).all(|(w, (l, _))| w == l)
    };
    let last = lines.len().checked_sub(want.len())?;
    let near = near.min(last);
    (0..=last.max(near))
        .flat_map(|d| [near.checked_sub(d), Some(near + d)])
        .flatten()
        .find(|&at| at <= last && fits(at))
}

/// A hunk whose new side is not in the tree file: the name of its patch and its stated line
/// (from 1) on the new side. The tree is stale: `./x.py prepare` makes it again.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct MissingHunk {
    /// The patch's name (`0003-...`, without `.patch`).
    pub(super) patch: String,
    /// The hunk's `+NEW` line.
    pub(super) line: usize,
}

/// The lines of `text` (the tree's `path`, as the series leaves it) that `patches` add: tree
/// line (from 1) -> the name of the patch that adds it. Lines that a later patch changed again
/// are that patch's; lines that a later patch moved keep the patch that added them. Fails with
/// [`MissingHunk`] for the first hunk whose new side is not in the file (a tree that the
/// project no longer makes: `./x.py prepare` rewrites it).
pub(super) fn patch_added_lines(
    patches: &[Patch],
    path: &str,
    text: &str,
) -> Result<BTreeMap<usize, String>, MissingHunk> {
    // Each line of the file as it is taken apart, with its line in the tree (None: a line that
    // a taken-apart hunk put back).
    let mut lines: Vec<(String, Option<usize>)> =
        text.lines().enumerate().map(|(i, l)| (l.to_string(), Some(i + 1))).collect();
    let mut ours = BTreeMap::new();
    for patch in patches.iter().rev() {
        let Some(k) = patch.files.iter().position(|f| f == path) else { continue };
        for hunk in hunks(&patch.sections[k]).iter().rev() {
            let (new, old) = (side(hunk, b'+'), side(hunk, b'-'));
            let want: Vec<&str> = new.iter().map(|(t, _)| *t).collect();
            // A new side of length 0 starts after the line it names.
            let near =
                if hunk.new_len == 0 { hunk.new_start } else { hunk.new_start.saturating_sub(1) };
            let at = if want.is_empty() {
                near.min(lines.len())
            } else {
                find(&lines, &want, near)
                    .ok_or_else(|| MissingHunk { patch: patch.name(), line: hunk.new_start })?
            };
            let mut context = Vec::new();
            for ((_, added), (_, tree_line)) in new.iter().zip(&lines[at..]) {
                match (added, tree_line) {
                    (true, Some(tree_line)) => {
                        ours.entry(*tree_line).or_insert_with(|| patch.name());
                    }
                    (true, None) => {}
                    (false, tree_line) => context.push(*tree_line),
                }
            }
            let mut context = context.into_iter();
            let before: Vec<(String, Option<usize>)> = old
                .iter()
                .map(|(t, removed)| {
                    (t.to_string(), if *removed { None } else { context.next().flatten() })
                })
                .collect();
            lines.splice(at..at + new.len(), before);
        }
    }
    Ok(ours)
}

#[cfg(test)]
pub(super) mod tests {
    use std::path::PathBuf;

    use super::*;

    /// A patch's section for `file`, with `hunks` as its text after the file header.
    fn section(file: &str, hunks: &str) -> String {
        format!(
            "diff --git a/{file} b/{file}\nindex 1..2 100644\n--- a/{file}\n+++ b/{file}\n{hunks}"
        )
    }

    pub(in crate::commands::style) fn patch(name: &str, sections: &[(&str, &str)]) -> Patch {
        Patch {
            path: PathBuf::from(format!("src/patches/{name}.patch")),
            header: String::new(),
            files: sections.iter().map(|(f, _)| f.to_string()).collect(),
            sections: sections.iter().map(|(f, h)| section(f, h)).collect(),
            new_files: Vec::new(),
        }
    }

    #[test]
    fn hunks_take_the_lines_their_ranges_say() {
        let text = section(
            "a.rs",
            "@@ -1,2 +1,3 @@ fn f() {\n a\n+b\n c\n\\ No newline at end of file\n\
             @@ -9 +10 @@\n-x\n+y\n-- \n2.39.0\n",
        );
        let found = hunks(&text);
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].old_len, found[0].new_start, found[0].new_len), (2, 1, 3));
        assert_eq!(found[0].body, [" a", "+b", " c"]);
        assert_eq!((found[1].old_len, found[1].new_start, found[1].new_len), (1, 10, 1));
        assert_eq!(found[1].body, ["-x", "+y"]);
        assert_eq!(side(&found[0], b'+'), [("a", false), ("b", true), ("c", false)]);
        assert_eq!(side(&found[1], b'-'), [("x", true)]);
    }

    /// The series of the tests below, on an upstream file of the lines `1` to `10`: 0001 adds a
    /// function after `5`; 0002 adds a line at the top and changes `2`, its hunk stated two
    /// lines off (as after an earlier patch grew); 0003 changes the function's last line; 0004
    /// removes `4`.
    fn series() -> Vec<Patch> {
        vec![
            patch("0001-a", &[("a.rs", "@@ -4,3 +4,5 @@\n 4\n 5\n+fn ours() {\n+}\n 6\n")]),
            patch("0002-b", &[("a.rs", "@@ -3,2 +3,3 @@\n+// top\n 1\n-2\n+two\n")]),
            patch("0003-c", &[("a.rs", "@@ -7,3 +7,3 @@\n fn ours() {\n-}\n+} // end\n 6\n")]),
            patch("0004-d", &[("a.rs", "@@ -4,3 +4,2 @@\n 3\n-4\n 5\n")]),
        ]
    }

    #[test]
    fn added_lines_are_found_where_the_series_leaves_them() {
        let tree = "// top\n1\ntwo\n3\n5\nfn ours() {\n} // end\n6\n7\n8\n9\n10\n";
        let found = patch_added_lines(&series(), "a.rs", tree).unwrap();
        let found: Vec<(usize, &str)> = found.iter().map(|(l, p)| (*l, p.as_str())).collect();
        assert_eq!(found, [(1, "0002-b"), (3, "0002-b"), (6, "0001-a"), (7, "0003-c")]);
        // Another file of the tree: none of its lines is ours.
        assert!(patch_added_lines(&series(), "b.rs", tree).unwrap().is_empty());
    }

    #[test]
    fn a_tree_without_a_hunk_is_stale() {
        let tree = "// top\n1\ntwo\n3\n5\nfn theirs() {\n} // end\n6\n7\n8\n9\n10\n";
        assert_eq!(
            patch_added_lines(&series(), "a.rs", tree),
            Err(MissingHunk { patch: "0003-c".to_string(), line: 7 })
        );
        let tree = "1\n2\n";
        assert_eq!(
            patch_added_lines(&series(), "a.rs", tree),
            Err(MissingHunk { patch: "0004-d".to_string(), line: 4 })
        );
    }

    #[test]
    fn a_hunk_is_found_nearest_its_stated_line() {
        let lines: Vec<(String, Option<usize>)> =
            ["x", "y", "x", "y", "z", "x", "y"].iter().map(|t| (t.to_string(), None)).collect();
        assert_eq!(find(&lines, &["x", "y"], 0), Some(0));
        assert_eq!(find(&lines, &["x", "y"], 3), Some(2));
        assert_eq!(find(&lines, &["x", "y"], 4), Some(5));
        assert_eq!(find(&lines, &["x", "y"], 100), Some(5));
        assert_eq!(find(&lines, &["y", "z", "x", "y", "x"], 0), None);
        assert_eq!(find(&lines[..1], &["x", "y"], 0), None);
    }
}
