//! One Python source through the parser (Ruff's, `ruff_python_parser`: a hand-written
//! recursive-descent parser for Python 3.14 syntax, about 105 MB/s on one core here against
//! 12 MB/s for tree-sitter-python on the same files), then [`super::calls`] over its tree.
//!
//! Files that cannot refer to a framework are not parsed: a file whose text names no
//! framework (`torch`, `tensorflow`, `jax`, `numpy`), lies outside a framework's package and
//! star-imports nothing binds no framework name, so it holds no framework call. `--full-parse`
//! parses them anyway; the result is the same (`tests/scan.rs` checks it on a real tree).
//!
//! Syntax errors: a file that can refer to a framework and does not parse is reported as
//! unparsable (the first error's line and message), never fatal. A file that cannot refer to a
//! framework holds no framework call whatever its syntax, so an error there is not reported in
//! either mode. So is a syntax tree nested deeper than [`MAX_DEPTH`] (a 100,000-term `a + b + …`
//! is one), and a file with more than [`MAX_LAMBDAS`] `lambda`s. Deep trees are walked and
//! dropped on stacks that grow as needed (`stacker`), never overflowing a thread's.

use std::collections::HashSet;

use memchr::memmem;
use ruff_python_parser::{Mode, ParseOptions};
use ruff_source_file::LineIndex;

use super::calls::{Extracted, collect_imports, deeper, extract};
use super::imports::{Aliases, ROOTS};

/// How a source was handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handling {
    /// Parsed.
    Parsed,
    /// Not parsed: nothing in it can refer to a framework.
    Skipped,
}

/// The result of one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceScan {
    /// What the file's imports bind.
    pub aliases: Aliases,
    /// The calls found.
    pub found: Extracted,
    /// How it was handled.
    pub handling: Handling,
    /// Bytes parsed (0 when skipped).
    pub parsed_bytes: usize,
}

/// A syntax error: the file is reported, not scanned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line of the first error.
    pub line: u32,
    /// What the parser found there.
    pub message: String,
}

/// What kind of source a text is.
#[derive(Clone, Copy, Debug, Default)]
pub struct Origin<'a> {
    /// The file's module path (`torch.nn.modules.conv`), for relative imports; `None` outside
    /// a package.
    pub module: Option<&'a [String]>,
    /// An `__init__.py` (its module is the package itself).
    pub is_package: bool,
    /// The joined code cells of a notebook: IPython's escapes (`%time f()`, `!ls`, `x = !ls`,
    /// `obj?`) parse (Ruff's IPython mode).
    pub notebook: bool,
}

/// The deepest syntax tree scanned, in nested statements, expressions and patterns: far beyond
/// real code (CPython 3.11 refuses trees deeper than about 3,000 levels), and shallow enough
/// for the walks over it and its drop to fit a scanning thread's stack.
pub const MAX_DEPTH: usize = 10_000;

/// A parsed file's syntax `error`: reported when the file can refer to a framework; else
/// nothing is found in it (an error there cannot hide a framework call), in both modes.
fn syntax_error(error: SyntaxError, refers: bool, src: &[u8]) -> Result<SourceScan, SyntaxError> {
    if refers {
        return Err(error);
    }
    Ok(SourceScan {
        aliases: Aliases::default(),
        found: Extracted::default(),
        handling: Handling::Parsed,
        parsed_bytes: src.len(),
    })
}

/// The statements of a parsed module (none for an expression: never parsed here).
fn module_body(parsed: &ruff_python_parser::Parsed<ruff_python_ast::Mod>) -> &[ruff_python_ast::Stmt] {
    match parsed.syntax() {
        ruff_python_ast::Mod::Module(m) => &m.body,
        ruff_python_ast::Mod::Expression(_) => &[],
    }
}

/// How deep a module's tree is.
struct Depth {
    /// Its depth, in nested statements, expressions and patterns.
    max: usize,
    /// Where it first gets deeper than [`MAX_DEPTH`], if it does.
    beyond: Option<ruff_text_size::TextSize>,
}

/// The depth of a module's tree (walked on a stack that grows on the heap as needed).
fn depth_of(body: &[ruff_python_ast::Stmt]) -> Depth {
    use ruff_python_ast::visitor::{Visitor, walk_expr, walk_pattern, walk_stmt};
    use ruff_text_size::Ranged;
    struct Walk {
        depth: usize,
        out: Depth,
    }
    impl Walk {
        fn enter(&mut self, node: &impl Ranged, walk: impl FnOnce(&mut Self)) {
            self.depth += 1;
            self.out.max = self.out.max.max(self.depth);
            if self.depth > MAX_DEPTH && self.out.beyond.is_none() {
                self.out.beyond = Some(node.start());
            }
            deeper(|| walk(self));
            self.depth -= 1;
        }
    }
    impl<'a> Visitor<'a> for Walk {
        fn visit_stmt(&mut self, s: &'a ruff_python_ast::Stmt) {
            self.enter(s, |v| walk_stmt(v, s));
        }
        fn visit_expr(&mut self, e: &'a ruff_python_ast::Expr) {
            self.enter(e, |v| walk_expr(v, e));
        }
        fn visit_pattern(&mut self, p: &'a ruff_python_ast::Pattern) {
            self.enter(p, |v| walk_pattern(v, p));
        }
    }
    let mut w = Walk { depth: 0, out: Depth { max: 0, beyond: None } };
    w.visit_body(body);
    w.out
}

/// Whether a source can refer to a framework (see the module's notes). A file with any
/// non-ASCII byte is parsed: Python reads identifiers NFKC-normalised, so `ｎｕｍｐｙ` (fullwidth)
/// imports numpy.
fn can_refer(src: &[u8], origin: &Origin<'_>) -> bool {
    origin.notebook
        || origin.module.and_then(|m| m.first()).is_some_and(|m| ROOTS.iter().any(|(r, _)| r == m))
        || ROOTS.iter().any(|(r, _)| memmem::find(src, r.as_bytes()).is_some())
        || (memmem::find(src, b"*").is_some() && has_star_import(src))
        || !src.is_ascii()
}

/// Scans a source. `parse_all` parses a file that cannot refer to a framework too (same
/// result, see the module's notes). `measured` holds the method names worth listing as
/// unresolved. Errors: the first syntax error of a file that can refer to a framework.
pub fn scan_source(
    src: &[u8],
    origin: &Origin<'_>,
    measured: &HashSet<String>,
    parse_all: bool,
) -> Result<SourceScan, SyntaxError> {
    // Every check below reads the text Python reads: under a declared encoding such as
    // iso-2022-jp, bytes that spell neither `numpy` nor `lambda` can decode to them.
    // A text that cannot be decoded is reported: whether it refers to a framework is unknown.
    let text = decode(src)?;
    let refers = can_refer(text.as_bytes(), origin);
    if !refers && !parse_all {
        return Ok(skipped());
    }
    let lambdas = memmem::find_iter(text.as_bytes(), b"lambda").count();
    if lambdas > MAX_LAMBDAS {
        let error = SyntaxError {
            line: 1,
            message: format!("more than {MAX_LAMBDAS} `lambda`s: not parsed (each may nest in the one before)"),
        };
        return syntax_error(error, refers, src);
    }
    // Ruff's parser checks its stack everywhere but in lambdas nested in parameter defaults
    // (`lambda a=lambda a=…: 0: 0`): their depth is bounded by the `lambda`s, so give it room.
    if lambdas > LAMBDAS_ON_THREAD_STACK {
        let per = if cfg!(debug_assertions) { 8 << 10 } else { 2 << 10 };
        return stacker::grow((8 << 20) + lambdas * per, || parse_and_extract(src, &text, origin, measured, refers));
    }
    parse_and_extract(src, &text, origin, measured, refers)
}

/// The scan of a file that is not parsed.
fn skipped() -> SourceScan {
    SourceScan {
        aliases: Aliases::default(),
        found: Extracted::default(),
        handling: Handling::Skipped,
        parsed_bytes: 0,
    }
}

/// Files with more `lambda`s than this are not parsed (see [`scan_source`]): at about 1.3 KiB
/// of stack a nested lambda (measured, release build), a 1 GiB stack.
pub const MAX_LAMBDAS: usize = 800_000;

/// Up to this many `lambda`s the scanning thread's own stack holds the deepest nesting of
/// lambdas they allow (20,000 parsed in a debug build on its 128 MiB).
const LAMBDAS_ON_THREAD_STACK: usize = 10_000;

/// The text Python reads: decoded from the encoding a PEP 263 declaration names (on the first
/// line, or on the second when the first is a comment or blank: `# -*- coding: latin-1 -*-`),
/// else UTF-8 with undecodable bytes replaced (line breaks survive either way, so every line
/// number stays); a byte-order mark dropped. Errors: an encoding the decoder (WHATWG's
/// encodings, `encoding_rs`) does not have, such as `cp437`.
fn decode(src: &[u8]) -> Result<std::borrow::Cow<'_, str>, SyntaxError> {
    let encoding = match declared_encoding(src) {
        None => None,
        Some((line, name)) => {
            // Python's names for WHATWG encodings under other labels.
            let label = match name.as_str() {
                "latin9" | "latin-9" | "iso8859-15" => "iso-8859-15",
                "mac-roman" | "macroman" => "macintosh",
                "utf8" | "utf-8-sig" | "ascii" | "us-ascii" => "utf-8",
                n => n,
            };
            let found = encoding_rs::Encoding::for_label(label.as_bytes())
                .or_else(|| encoding_rs::Encoding::for_label(label.replace('-', "").as_bytes()))
                .filter(|e| *e != encoding_rs::REPLACEMENT);
            match found {
                Some(e) => Some(e),
                None => {
                    return Err(SyntaxError { line, message: format!("source encoding `{name}` is not supported") });
                }
            }
        }
    };
    Ok(match encoding {
        Some(e) if e != encoding_rs::UTF_8 => e.decode_without_bom_handling(src).0,
        _ => String::from_utf8_lossy(src.strip_prefix(b"\xef\xbb\xbf").unwrap_or(src)),
    })
}

/// The PEP 263 declaration of a source, lower-case with `_` as `-`, and its line: Python's
/// `^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)` on line 1, or on line 2 when line 1 is a comment or
/// blank.
fn declared_encoding(src: &[u8]) -> Option<(u32, String)> {
    let mut lines = src.split(|b| *b == b'\n');
    for n in 1..=2u32 {
        let line = lines.next()?;
        let line = String::from_utf8_lossy(line);
        let line = line.trim_start_matches([' ', '\t', '\x0c', '\u{feff}']);
        let Some(comment) = line.strip_prefix('#') else {
            // Python looks at line 2 only after a comment-only or blank line 1.
            if line.trim().is_empty() {
                continue;
            }
            return None;
        };
        let mut from = 0;
        while let Some(at) = comment[from..].find("coding") {
            let after = &comment[from + at + "coding".len()..];
            if let Some(rest) = after.strip_prefix([':', '=']) {
                let rest = rest.trim_start_matches([' ', '\t']);
                let name: String =
                    rest.chars().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')).collect();
                if !name.is_empty() {
                    return Some((n, name.to_ascii_lowercase().replace('_', "-")));
                }
            }
            from += at + 1;
        }
    }
    None
}

/// [`scan_source`]'s parse and extraction of a file that is to be parsed.
fn parse_and_extract(
    src: &[u8],
    text: &str,
    origin: &Origin<'_>,
    measured: &HashSet<String>,
    refers: bool,
) -> Result<SourceScan, SyntaxError> {
    let mode = if origin.notebook { Mode::Ipython } else { Mode::Module };
    let parsed = std::panic::catch_unwind(|| ruff_python_parser::parse_unchecked(text, ParseOptions::from(mode)))
        .map_err(|_| SyntaxError { line: 1, message: "the parser failed on this file".into() })?;
    let lines = LineIndex::from_source_text(text);
    let depth = depth_of(module_body(&parsed));
    let error = match depth.beyond {
        Some(at) => {
            // Ruff's nodes drop recursively, one frame a level: on a stack as deep as the tree.
            let per = if cfg!(debug_assertions) { 4 << 10 } else { 1 << 10 };
            stacker::grow((1 << 20) + depth.max * per, move || drop(parsed));
            let error = SyntaxError {
                line: lines.line_index(at).get() as u32,
                message: format!(
                    "nested more than {MAX_DEPTH} levels deep (CPython 3.11 refuses syntax trees deeper than about 3,000)"
                ),
            };
            return syntax_error(error, refers, src);
        }
        None => parsed.errors().iter().min_by_key(|e| e.location.start()).map(|e| SyntaxError {
            line: lines.line_index(e.location.start()).get() as u32,
            message: e.error.to_string(),
        }),
    };
    if let Some(error) = error {
        return syntax_error(error, refers, src);
    }
    let body = module_body(&parsed);
    let aliases = collect_imports(body, &lines, origin.module, origin.is_package);
    let uses = uses(text.as_bytes(), &aliases);
    let found = extract(body, &lines, &aliases, &uses, measured);
    Ok(SourceScan { aliases, found, handling: Handling::Parsed, parsed_bytes: src.len() })
}

/// Bytes that can be part of a Python identifier (ASCII letters, digits, `_`, and every byte of
/// a non-ASCII character), as a table.
const IDENT: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
        b += 1;
    }
    t
};

fn ident(b: u8) -> bool {
    IDENT[b as usize]
}

/// The start of every whole-identifier occurrence in `hay` of one of `words` (not preceded or
/// followed by an identifier byte; one pass for all the words), in order.
pub fn word_positions(hay: &[u8], words: &[&str]) -> Vec<u32> {
    let mut out = Vec::new();
    if words.is_empty() {
        return out;
    }
    let set: HashSet<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
    let (min, max) = set.iter().fold((usize::MAX, 0), |(lo, hi), w| (lo.min(w.len()), hi.max(w.len())));
    let mut first = [false; 256];
    for w in &set {
        if let Some(b) = w.first() {
            first[*b as usize] = true;
        }
    }
    let mut i = 0;
    while i < hay.len() {
        if !ident(hay[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < hay.len() && ident(hay[i]) {
            i += 1;
        }
        let len = i - start;
        if first[hay[start] as usize] && (min..=max).contains(&len) && set.contains(&hay[start..i]) {
            out.push(start as u32);
        }
    }
    out
}

/// Where a source uses a name its imports bind to a framework.
fn uses(src: &[u8], aliases: &Aliases) -> Vec<u32> {
    let names: Vec<&str> = aliases.framework_names().collect();
    word_positions(src, &names)
}

/// Whether the source has `import *` (with any spacing).
fn has_star_import(src: &[u8]) -> bool {
    memmem::find_iter(src, b"import").any(|i| {
        let after = &src[i + 6..];
        let rest = after.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\x0c' | b'\\' | b'\n' | b'\r' | b'('));
        rest.is_some_and(|p| after[p] == b'*')
    })
}

#[cfg(test)]
mod tests {
    use super::super::calls::marked;
    use super::*;

    fn measured() -> HashSet<String> {
        ["argsort", "sum"].iter().map(|s| s.to_string()).collect()
    }

    fn scan(src: &[u8]) -> Result<SourceScan, SyntaxError> {
        scan_source(src, &Origin::default(), &measured(), false)
    }

    fn sorted_calls(s: &SourceScan) -> Vec<(&str, u32)> {
        let mut v: Vec<(&str, u32)> = s.found.calls.iter().map(|(c, l)| (c.as_str(), *l)).collect();
        v.sort();
        v
    }

    #[test]
    fn words_and_stars() {
        let src = "torch my_torch torchx np.torch é_np np\nnp".as_bytes();
        assert_eq!(word_positions(src, &["torch", "np"]), [0, 22, 25, 37, 40]);
        assert!(marked(&[3, 9], 4..10) && !marked(&[3, 9], 4..9));
        assert!(has_star_import(b"from torch import *\n"));
        assert!(has_star_import(b"from torch import (\n *)\n"));
        assert!(!has_star_import(b"import torch\nx = 2 * 3\n"));
    }

    #[test]
    fn a_mixed_file() {
        let src = br#"import numpy as np
from torch import nn
import json

def plain(a):
    return json.dumps(a).strip()

class M(nn.Module):
    def forward(self, x: "t"):
        y = np.zeros(3)
        return y.argsort() + x.sum()

def other(z):
    return z.argsort()

def lazy():
    import jax.numpy as jnp
    return jnp.ones(2)
"#;
        let s = scan(src).unwrap();
        assert_eq!(s.handling, Handling::Parsed);
        assert_eq!(sorted_calls(&s), [("jax.numpy.ones", 18), ("numpy.ndarray.argsort", 11), ("numpy.zeros", 10)]);
        // `z.argsort()` sits in a statement that names no framework: not listed.
        assert_eq!(s.found.unresolved, [("?.sum".to_string(), 11)]);
    }

    #[test]
    fn bindings_that_type_a_local_and_those_that_do_not() {
        let src = br#"import torch
def f(a: torch.Tensor, *args, b=torch.zeros(1).argsort(), **kw):
    x = y = torch.zeros(2)
    (w := torch.ones(1))
    for i in range(3):
        pass
    with open("f") as fh:
        pass
    u: torch.Tensor = make()
    v = torch.ones(1)
    v = [1]
    return a.sum(), x.sum(), y.sum(), w.sum(), i.sum(), fh.sum(), u.sum(), v.sum(), args.sum()
"#;
        let s = scan(src).unwrap();
        let methods: Vec<&str> =
            s.found.calls.iter().filter(|(c, _)| c.ends_with(".sum")).map(|(c, _)| c.as_str()).collect();
        // a, x, y, w, u typed; i, fh, v, args unknown.
        assert_eq!(methods, ["torch.Tensor.sum"; 5]);
        assert_eq!(s.found.unresolved.len(), 4);
        // A default is evaluated outside the function: a direct framework call's method.
        assert!(s.found.calls.contains(&("torch.Tensor.argsort".into(), 2)));
    }

    #[test]
    fn a_local_shadows_an_import() {
        let src = b"from numpy import config\nimport numpy as np\ndef to_json(np):\n    config = open('f')\n    config.write('x')\n    np.ones(1)\n    return np.sum(1)\ndef g():\n    global config\n    config.show()\n    np.ones(2)\n";
        let s = scan(src).unwrap();
        assert_eq!(sorted_calls(&s), [("numpy.config.show", 10), ("numpy.ones", 11)]);
        assert_eq!(s.found.unresolved, [("?.sum".to_string(), 7)]);
        // A lambda's parameter shadows; a comprehension's variable only inside it.
        let src = b"import numpy as np\nk = lambda np, a=np.zeros(1): np.ones(1)\ndef m():\n    v = [np.sum(np) for np in [1]]\n    return np.ones(2), (x.sum() for x in np.arange(3))\n";
        let s = scan(src).unwrap();
        assert_eq!(sorted_calls(&s), [("numpy.arange", 5), ("numpy.ones", 5), ("numpy.zeros", 2)]);
        assert_eq!(s.found.unresolved, [("?.sum".to_string(), 4), ("?.sum".to_string(), 5)]);
    }

    #[test]
    fn only_array_annotations_type_a_local() {
        let src = b"import torch\nfrom torch import nn\ndef f(m: nn.Module, t: torch.Tensor, v: 'torch.Tensor'):\n    return m.load_pretrained(), m.sum(), t.sum(), v.sum()\n";
        let s = scan(src).unwrap();
        assert_eq!(sorted_calls(&s), [("torch.Tensor.sum", 4)]);
        assert_eq!(s.found.unresolved, [("?.sum".to_string(), 4), ("?.sum".to_string(), 4)]);
    }

    #[test]
    fn a_bom_pep_701_f_strings_and_other_encodings() {
        let cases: [(&[u8], &str, u32); 6] = [
            (b"\xef\xbb\xbfimport torch\nx = torch.zeros(1)\n", "torch.zeros", 2),
            (
                b"import numpy as np\nrow = {\"a\": 1}\nprint(f\"{row[\"a\"]}: mean {np.mean(np.ones(3))}\")\n",
                "numpy.mean",
                3,
            ),
            (b"# -*- coding: latin-1 -*-\nimport numpy as np\ns = '\xe9t\xe9'\nnp.ones(2)\n", "numpy.ones", 4),
            (b"import torch\nt\"{torch.ones(1)}\"\n", "torch.ones", 2),
            (b"# -*- coding: latin-1 -*-\nimport numpy as np\ncaf\xe9 = np.ones(1)\n", "numpy.ones", 3),
            (
                b"#!/usr/bin/env python\n# vim: set fileencoding=latin9 :\nimport numpy as np\n\xe9 = np.ones(1)\n",
                "numpy.ones",
                4,
            ),
        ];
        for (src, want, line) in cases {
            let s = scan(src).unwrap();
            assert!(
                s.found.calls.contains(&(want.to_string(), line)),
                "{}: {:?}",
                String::from_utf8_lossy(src),
                s.found
            );
        }
    }

    #[test]
    fn files_that_cannot_refer_to_a_framework_are_skipped_with_the_same_result() {
        let plain = b"import json\ndef f(x):\n    return json.dumps(x).argsort()\n";
        let skipped = scan(plain).unwrap();
        assert_eq!(skipped.handling, Handling::Skipped);
        let parsed = scan_source(plain, &Origin::default(), &measured(), true).unwrap();
        assert_eq!(parsed.handling, Handling::Parsed);
        assert_eq!(parsed.found, skipped.found);
        // A syntax error there hides no framework call, in either mode.
        let broken = b"def f(:\n    pass\n";
        assert_eq!(scan(broken).unwrap().found, Extracted::default());
        assert_eq!(scan_source(broken, &Origin::default(), &measured(), true).unwrap().found, Extracted::default());
        // Forms that can bind a framework name without spelling one in ASCII are parsed: NFKC
        // identifiers, star imports without a space or after a form feed.
        let m: Vec<String> = vec!["pkg".into(), "a".into()];
        let origin = Origin { module: Some(&m), ..Origin::default() };
        for src in ["import ｎｕｍｐｙ as np\nnp.ones(1)\n", "from .b import*\nx = zeros(3)\n", "from .b import\x0c*\n"]
        {
            let s = scan_source(src.as_bytes(), &origin, &measured(), false).unwrap();
            assert_eq!(s.handling, Handling::Parsed, "{src}");
        }
        let s =
            scan(b"import \xef\xbd\x8e\xef\xbd\x95\xef\xbd\x8d\xef\xbd\x90\xef\xbd\x99 as np\nnp.ones(1)\n").unwrap();
        assert_eq!(sorted_calls(&s), [("numpy.ones", 2)]);
        // In a framework's own package the file is parsed (relative imports can bind it).
        let m: Vec<String> = vec!["torch".into(), "x".into()];
        let origin = Origin { module: Some(&m), ..Origin::default() };
        assert_eq!(scan_source(plain, &origin, &measured(), false).unwrap().handling, Handling::Parsed);
    }

    #[test]
    fn declared_encodings_are_read_as_python_reads_them() {
        // iso-2022-jp: an escape sequence inside `lambda`/`numpy` vanishes on decoding.
        let hidden = b"# coding: iso-2022-jp\nimport num\x1b(Bpy as np\nnp.ones(1)\n";
        assert_eq!(sorted_calls(&scan(hidden).unwrap()), [("numpy.ones", 3)]);
        // A declaration on line 2 counts only after a comment or blank line 1.
        assert_eq!(declared_encoding(b"import numpy as np\n# coding: latin-1\n"), None);
        assert_eq!(declared_encoding(b"#!python\n# xcoding coding: Latin_1\n"), Some((2, "latin-1".into())));
        let e = scan(b"# coding: cp437\nimport numpy\n").unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (1, "source encoding `cp437` is not supported"));
    }

    #[test]
    fn syntax_errors_are_located() {
        let e = scan(b"import torch\n\ndef f(:\n    pass\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(!e.message.is_empty());
        // Valid Python that tree-sitter-python rejected.
        let s = scan(b"import torch\nhost, *rest = torch.e, *[]\nx = torch.zeros(1)\n").unwrap();
        assert_eq!(sorted_calls(&s), [("torch.zeros", 3)]);
    }

    #[test]
    fn trees_deeper_than_the_limit_are_unparsable_not_a_crash() {
        let chain = |n| format!("import torch\n\nx = {}\n", vec!["torch.ones(1)"; n].join(" + "));
        let ok = scan(chain(9_000).as_bytes()).unwrap();
        assert_eq!(ok.found.calls.len(), 9_000);
        let e = scan(chain(100_000).as_bytes()).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.starts_with("nested more than 10000 levels deep"), "{}", e.message);
        // Without a framework name the file holds no framework call, deep or not.
        let plain = format!("x = {}\n", vec!["a"; 100_000].join(" + "));
        assert_eq!(scan_source(plain.as_bytes(), &Origin::default(), &measured(), true).unwrap().found.calls, []);
    }

    #[test]
    fn ipython_escapes_parse_in_notebooks() {
        let src = b"import numpy as np\nfiles = !ls\n%time np.ones(3)\nnp.zeros?\nnp.sum(1)\n";
        assert!(scan(src).is_err(), "not Python outside a notebook");
        let origin = Origin { notebook: true, ..Origin::default() };
        let s = scan_source(src, &origin, &measured(), false).unwrap();
        assert_eq!(sorted_calls(&s), [("numpy.sum", 5)]);
    }
}
