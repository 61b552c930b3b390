//! The function-length rule of `./x.py style` ([`crate::commands::style`]): no function longer
//! than [`MAX_FN_LINES`] lines, counted from the line of its `fn` to the line of its body's
//! closing brace, comments included.
//!
//! offload-x has no Rust parser (std only, no `syn`), so [`functions`] finds `fn` items with a
//! small scanner that knows what could hide a brace, a semicolon or a `fn` from it: comments
//! (nested block comments included), string literals (raw, byte and C strings included) and
//! character literals, told apart from lifetimes and labels. Items under `#[cfg(test)]` are
//! left out. A leaf module: it imports nothing of the crate.

/// The most lines a function may have, from its `fn` line to its closing brace, both included.
pub const MAX_FN_LINES: usize = 80;

/// A function item with a body, as [`functions`] finds it in a file's text.
#[derive(Debug, PartialEq, Eq)]
pub struct Function {
    /// Its name, without the `impl` or module it is in.
    pub name: String,
    /// The line of its `fn` keyword, counted from 1.
    pub line: usize,
    /// Its length in lines: from the `fn` line to the line of the body's closing brace, both
    /// included.
    pub lines: usize,
}

/// What the scanner keeps of the source: enough to find items, their names and their bodies.
#[derive(Debug, PartialEq, Eq)]
enum Tok {
    /// An identifier, keyword or number (a number's parts may be split at `.`).
    Word(String),
    /// One character of punctuation.
    Punct(char),
    /// A string, byte string or character literal (lifetimes and labels are dropped).
    Literal,
}

/// A token and the line (from 1) it starts on.
#[derive(Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

/// The scanner's place in the text.
struct Lexer {
    chars: Vec<char>,
    at: usize,
    line: usize,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    /// Moves past one character, counting lines.
    fn bump(&mut self) -> Option<char> {
        let c = self.peek(0)?;
        self.at += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    /// Past a `// ...` comment, up to its newline.
    fn line_comment(&mut self) {
        while self.peek(0).is_some_and(|c| c != '\n') {
            self.bump();
        }
    }

    /// Past a `/* ... */` comment, whose nested comments nest (as Rust's do).
    fn block_comment(&mut self) {
        let mut depth = 0;
        while let Some(c) = self.bump() {
            if c == '/' && self.peek(0) == Some('*') {
                self.bump();
                depth += 1;
            } else if c == '*' && self.peek(0) == Some('/') {
                self.bump();
                depth -= 1;
                if depth == 0 {
                    return;
                }
            }
        }
    }

    /// Past a quoted string literal, at its opening `"`: backslash escapes skip a character.
    fn string(&mut self) {
        self.bump();
        while let Some(c) = self.bump() {
            match c {
                '\\' => {
                    self.bump();
                }
                '"' => return,
                _ => {}
            }
        }
    }

    /// Past a raw string literal, at the first of its `hashes` `#`s (or at its `"`): no escapes,
    /// it ends at a `"` followed by as many `#`s.
    fn raw_string(&mut self, hashes: usize) {
        self.at += hashes + 1;
        while let Some(c) = self.bump() {
            if c == '"' && (0..hashes).all(|i| self.peek(i) == Some('#')) {
                self.at += hashes;
                return;
            }
        }
    }

    /// Past a character literal (`'x'`, `'\n'`, `'\u{7d}'`) at its opening `'`, returning true;
    /// or past a lifetime or label (`'a`, `'static`, `'outer`), returning false.
    fn quote(&mut self, always_char: bool) -> bool {
        if self.peek(1) == Some('\\') {
            self.at += 2;
            self.bump();
            while self.bump().is_some_and(|c| c != '\'') {}
            return true;
        }
        if always_char || self.peek(2) == Some('\'') {
            // `'x'`: a newline inside is a character too.
            self.bump();
            self.bump();
            self.bump();
            return true;
        }
        self.bump();
        while self.peek(0).is_some_and(is_word_char) {
            self.bump();
        }
        false
    }

    /// A word (identifier, keyword, number), or the literal that a prefix word starts: `r"..."`
    /// and `r#"..."#`, `b"..."`, `br"..."`, `c"..."`, `cr"..."`, `b'x'`; a raw identifier
    /// (`r#type`) is the word after `r#`.
    fn word(&mut self) -> Tok {
        let start = self.at;
        while self.peek(0).is_some_and(is_word_char) {
            self.bump();
        }
        let word: String = self.chars[start..self.at].iter().collect();
        let hashes = (0..).take_while(|&i| self.peek(i) == Some('#')).count();
        match (word.as_str(), self.peek(0), self.peek(hashes)) {
            ("r" | "br" | "cr", _, Some('"')) => self.raw_string(hashes),
            ("r", Some('#'), Some(c)) if hashes == 1 && is_word_char(c) => {
                self.bump();
                return self.word();
            }
            ("b" | "c", Some('"'), _) => self.string(),
            ("b", Some('\''), _) => {
                self.quote(true);
            }
            _ => return Tok::Word(word),
        }
        Tok::Literal
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The tokens of `text`, without comments, whitespace, lifetimes and labels.
fn tokens(text: &str) -> Vec<Token> {
    let mut lexer = Lexer { chars: text.chars().collect(), at: 0, line: 1 };
    let mut out = Vec::new();
    while let Some(c) = lexer.peek(0) {
        let line = lexer.line;
        let tok = match (c, lexer.peek(1)) {
            (c, _) if c.is_whitespace() => {
                lexer.bump();
                continue;
            }
            ('/', Some('/')) => {
                lexer.line_comment();
                continue;
            }
            ('/', Some('*')) => {
                lexer.block_comment();
                continue;
            }
            ('"', _) => {
                lexer.string();
                Tok::Literal
            }
            ('\'', _) => match lexer.quote(false) {
                true => Tok::Literal,
                false => continue,
            },
            (c, _) if is_word_char(c) => lexer.word(),
            (c, _) => {
                lexer.bump();
                Tok::Punct(c)
            }
        };
        out.push(Token { tok, line });
    }
    out
}

/// The index of the `}` that closes the `{` at `open`, or None if the text ends first.
fn closing_brace(toks: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate().skip(open) {
        match t.tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// From `start` (after an item's name, or after an attribute), where the item ends: the index
/// of its body's `{` and of the matching `}`, or None for an item that ends with `;` (a
/// function without a body, a `mod m;`) or a text that ends first. Parentheses and brackets
/// hide a `;` (`[u8; 4]`).
fn item_body(toks: &[Token], start: usize) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate().skip(start) {
        match t.tok {
            Tok::Punct('(' | '[') => depth += 1,
            Tok::Punct(')' | ']') => depth = depth.saturating_sub(1),
            Tok::Punct(';' | '}') if depth == 0 => return None,
            Tok::Punct('{') if depth == 0 => return Some((i, closing_brace(toks, i)?)),
            _ => {}
        }
    }
    None
}

/// Whether `toks[i..]` is the attribute `#[cfg(test)]` (`inner`: `#![cfg(test)]`).
fn is_cfg_test(toks: &[Token], i: usize, inner: bool) -> bool {
    let mut want: Vec<Tok> = vec![Tok::Punct('#')];
    if inner {
        want.push(Tok::Punct('!'));
    }
    want.extend([
        Tok::Punct('['),
        Tok::Word("cfg".into()),
        Tok::Punct('('),
        Tok::Word("test".into()),
        Tok::Punct(')'),
        Tok::Punct(']'),
    ]);
    toks.len() >= i + want.len()
        && toks[i..i + want.len()].iter().zip(&want).all(|(t, w)| t.tok == *w)
}

/// The functions with a body that `text` (Rust source) defines, in the order of their `fn`
/// lines, nested ones included; none of an item under `#[cfg(test)]` (a test module, say), and
/// none at all in a file that starts `#![cfg(test)]`. A `fn` that is not followed by a name
/// (a function pointer type) or whose item ends with `;` (a declaration) is no function here.
pub fn functions(text: &str) -> Vec<Function> {
    let toks = tokens(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if is_cfg_test(&toks, i, true) {
            return Vec::new();
        }
        if is_cfg_test(&toks, i, false) {
            // The item after the attribute (more attributes included) is skipped whole.
            i = match item_body(&toks, i + 7) {
                Some((_, close)) => close + 1,
                None => i + 7,
            };
            continue;
        }
        if let (Tok::Word(kw), Some(Token { tok: Tok::Word(name), .. })) =
            (&toks[i].tok, toks.get(i + 1))
            && kw == "fn"
            && let Some((_, close)) = item_body(&toks, i + 2)
        {
            let line = toks[i].line;
            out.push(Function { name: name.clone(), line, lines: toks[close].line - line + 1 });
        }
        i += 1;
    }
    out
}

/// The functions of `text` longer than [`MAX_FN_LINES`].
pub fn too_long(text: &str) -> Vec<Function> {
    functions(text).into_iter().filter(|f| f.lines > MAX_FN_LINES).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, usize, usize)> {
        functions(text).into_iter().map(|f| (f.name, f.line, f.lines)).collect()
    }

    fn one(name: &str, line: usize, lines: usize) -> Vec<(String, usize, usize)> {
        vec![(name.to_string(), line, lines)]
    }

    #[test]
    fn counts_from_fn_line_to_closing_brace() {
        let text = "/// Doc.\n#[inline]\npub(crate) const fn a(\n    x: u8,\n) -> u8 {\n    x\n}\n";
        assert_eq!(found(text), one("a", 3, 5));
        assert_eq!(found("fn b() {}"), one("b", 1, 1));
        assert_eq!(found("fn c()\nwhere\n    u8: Copy,\n{\n}\n"), one("c", 1, 5));
    }

    #[test]
    fn braces_in_strings_do_not_count() {
        let text = "fn a() {\n    let s = \"}\\\" }\";\n    let t = \"\n}\n\";\n}\nfn b() {}\n";
        assert_eq!(found(text), [("a".into(), 1, 6), ("b".into(), 7, 1)]);
        let text = "fn a() {\n    let s = r#\"} \" }\"#;\n    let t = r##\"\"# }\"##;\n}\n";
        assert_eq!(found(text), one("a", 1, 4));
        let text = "fn a() {\n    let s = (b\"}\", br#\"}\"#, c\"}\", cr\"}\", r\"\\\");\n}\n";
        assert_eq!(found(text), one("a", 1, 3));
        assert_eq!(found("fn a() { \"fn x() {\" }"), one("a", 1, 1));
    }

    #[test]
    fn char_literals_and_lifetimes() {
        let text = "fn a<'a>(x: &'a str) -> &'static str {\n    \
                    let c = ['{', '\\'', '\\u{7d}', '\"', b'}', b'\\''];\n    \
                    'outer: loop {\n        break 'outer;\n    }\n    x\n}\n";
        assert_eq!(found(text), one("a", 1, 7));
        // A lifetime right before a `'` of a char literal does not swallow it.
        let text = "fn a<'b>(x: &'b u8) -> char {\n    '}'\n}\nfn b() {}\n";
        assert_eq!(found(text), [("a".into(), 1, 3), ("b".into(), 4, 1)]);
    }

    #[test]
    fn braces_in_comments_do_not_count() {
        let text = "fn a() {\n    // }\n    /* } /* nested } */ still comment } */\n    /// }\n}\n";
        assert_eq!(found(text), one("a", 1, 5));
        assert_eq!(found("/* fn hidden() {} */ // fn also() {}\nfn b() {}"), one("b", 2, 1));
    }

    #[test]
    fn declarations_and_pointer_types_are_not_functions() {
        let text = "trait T {\n    fn decl(&self) -> [u8; 2];\n    fn provided(&self) {}\n}\n\
                    unsafe extern \"C\" {\n    fn ext(f: fn(u8) -> u8);\n}\n\
                    type F = fn(u8);\nfn g(f: fn(u8) -> u8, h: impl Fn()) {}\n";
        assert_eq!(found(text), [("provided".into(), 3, 1), ("g".into(), 9, 1)]);
    }

    #[test]
    fn nested_functions_and_raw_identifiers() {
        let text = "fn outer() {\n    fn inner() {\n    }\n}\nfn r#type() {}\n";
        assert_eq!(
            found(text),
            [("outer".into(), 1, 4), ("inner".into(), 2, 2), ("type".into(), 5, 1)]
        );
    }

    #[test]
    fn test_modules_are_left_out() {
        let text = "fn a() {}\n#[cfg(test)]\n#[allow(dead_code)]\nmod tests {\n    fn t() {\n    \
                    }\n}\n#[cfg(test)]\nmod more;\n#[cfg(test)]\nfn helper() {}\nfn b() {}\n";
        assert_eq!(found(text), [("a".into(), 1, 1), ("b".into(), 12, 1)]);
        assert!(found("#![cfg(test)]\nfn a() {}\n").is_empty());
        // `cfg(not(test))` is not test code.
        assert_eq!(found("#[cfg(not(test))]\nfn a() {}\n"), one("a", 2, 1));
    }

    #[test]
    fn unterminated_text_finds_no_body() {
        assert!(found("fn a() {\n    \"}").is_empty());
        assert!(found("fn a() /* {} ").is_empty());
        assert!(found("fn").is_empty());
    }

    #[test]
    fn too_long_is_over_the_limit_only() {
        let body = |n: usize| format!("fn f{n}() {{\n{}}}\n", "    x();\n".repeat(n - 2));
        let text = format!("{}{}", body(MAX_FN_LINES), body(MAX_FN_LINES + 1));
        let long = too_long(&text);
        assert_eq!(long.len(), 1);
        assert_eq!(long[0], Function { name: "f81".into(), line: 81, lines: 81 });
    }
}
