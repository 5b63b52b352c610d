//! One Python source through the parser: the full parse (tree-sitter-python over every
//! byte) and the fast path, which parses only what can hold a framework call and gives the
//! same result.
//!
//! The fast path: (1) a file whose text names no framework (`torch`, `tensorflow`, `jax`,
//! `numpy`), lies outside a framework's package and star-imports nothing cannot bind a
//! framework name: it is not parsed. (2) A small lexer (strings, comments, brackets, line
//! continuations) splits the file into top-level statements. (3) The statements holding
//! the word `import` are parsed first, giving the file's imports. (4) Of the rest, only
//! statements holding a framework-bound name as a word are parsed. Every call rule in
//! [`super::calls`] depends only on the imports and on the top-level statement a call sits
//! in, so the calls found are those of the full parse. The parser gets a copy of the file
//! in which the statements left out and the contents of strings (not f-strings) and
//! comments are blanked to spaces, so every position stays; only blanked stretches of at
//! least [`CUT`] bytes are cut out of its ranges (tree-sitter's lexer scans its included
//! ranges from the first at every token, so many ranges cost more than they save). A file
//! with a star import, a byte-order mark, a quote inside an f-string's replacement field
//! (Python 3.12's PEP 701 nesting), another lexer surprise or a parse error in the parsed
//! part is parsed in full.
//!
//! Syntax errors, in both modes: a file is reported as unparsable when the statements the
//! fast path parses hold an error. An error elsewhere (a statement that neither imports nor
//! names a framework, or a file that names none) cannot hide a framework call: the full
//! parse then keeps the fast path's scan of the file, as the fast path never parses such a
//! statement. (tree-sitter-python rejects a few valid statements, such as
//! `host, *rest = endpoint, *[]`; their files are still scanned.)

use std::cell::RefCell;
use std::collections::HashSet;

use memchr::memmem;
use tree_sitter::{Parser, Point, Range, Tree};

use super::calls::{Extracted, collect_imports, extract};
use super::imports::{Aliases, ROOTS};

/// How a source was handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handling {
    /// Parsed in full.
    Full,
    /// Only the top-level statements that can hold a framework call were parsed.
    Partial,
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
    /// How it was parsed.
    pub handling: Handling,
    /// Bytes parsed (less the blanked ones on the fast path).
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

thread_local! {
    static PARSER: RefCell<Parser> = RefCell::new({
        let mut p = Parser::new();
        p.set_language(&tree_sitter_python::LANGUAGE.into()).expect("tree-sitter-python matches tree-sitter");
        p
    });
}

fn parse(src: &[u8], ranges: Option<&[Range]>) -> Option<Tree> {
    PARSER.with(|p| {
        let mut p = p.borrow_mut();
        let all = [Range {
            start_byte: 0,
            end_byte: usize::MAX,
            start_point: Point::new(0, 0),
            end_point: Point::new(usize::MAX, usize::MAX),
        }];
        p.set_included_ranges(ranges.unwrap_or(&all)).ok()?;
        p.parse(src, None)
    })
}

/// The first error or missing node of a tree with errors.
fn first_error(tree: &Tree, src: &[u8]) -> SyntaxError {
    let mut cursor = tree.walk();
    loop {
        let n = cursor.node();
        if n.is_error() || n.is_missing() {
            let line = n.start_position().row as u32 + 1;
            let message = if n.is_missing() {
                format!("missing `{}`", n.kind())
            } else {
                let t = String::from_utf8_lossy(&src[n.byte_range()]);
                let t: String = t.lines().next().unwrap_or("").chars().take(40).collect();
                format!("unexpected `{}`", t.trim())
            };
            return SyntaxError { line, message };
        }
        // Descend into the first child that holds an error, else move on.
        if n.has_error() && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return SyntaxError { line: 1, message: "syntax error".into() };
            }
        }
    }
}

/// Scans a source by parsing all of it.
pub fn scan_full(
    src: &[u8],
    module: Option<&[String]>,
    is_package: bool,
    measured: &HashSet<String>,
) -> Result<SourceScan, SyntaxError> {
    let tree = parse(src, None).ok_or_else(|| SyntaxError { line: 1, message: "the parser gave up".into() })?;
    if tree.root_node().has_error() {
        // An error counts only where it can hide a framework call: when the statements
        // the fast path parses are free of errors, their scan stands.
        return partial(src, module, is_package, measured).ok_or_else(|| first_error(&tree, src));
    }
    let aliases = collect_imports(&tree, src, module, is_package);
    let uses = uses(src, &aliases);
    let found = extract(&tree, src, &aliases, &uses, measured);
    Ok(SourceScan { aliases, found, handling: Handling::Full, parsed_bytes: src.len() })
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

/// Whether `word` occurs in `hay` as a whole identifier.
pub fn has_word(hay: &[u8], word: &[u8]) -> bool {
    memmem::find_iter(hay, word)
        .any(|i| (i == 0 || !ident(hay[i - 1])) && hay.get(i + word.len()).is_none_or(|b| !ident(*b)))
}

/// The start of every whole-identifier occurrence in `hay` of one of `words` (as
/// [`has_word`] finds them, in one pass for all the words), in order.
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

/// Whether a sorted list of positions has one in `range`.
pub fn marked(marks: &[u32], range: std::ops::Range<usize>) -> bool {
    let i = marks.partition_point(|&p| (p as usize) < range.start);
    marks.get(i).is_some_and(|&p| (p as usize) < range.end)
}

/// Scans a source the fast way (see the module's notes); same result as [`scan_full`].
pub fn scan_fast(
    src: &[u8],
    module: Option<&[String]>,
    is_package: bool,
    measured: &HashSet<String>,
) -> Result<SourceScan, SyntaxError> {
    match partial(src, module, is_package, measured) {
        Some(s) => Ok(s),
        None => scan_full(src, module, is_package, measured),
    }
}

/// The fast path's scan; `None` when the source needs the full parse (a star import, a
/// lexer surprise, a syntax error in the parsed statements, a byte-order mark: its bytes would
/// read as part of a first-line word).
fn partial(src: &[u8], module: Option<&[String]>, is_package: bool, measured: &HashSet<String>) -> Option<SourceScan> {
    if src.starts_with(b"\xef\xbb\xbf") {
        return None;
    }
    let in_framework = module.and_then(|m| m.first()).is_some_and(|m| ROOTS.iter().any(|(r, _)| r == m));
    let star = memmem::find(src, b"*").is_some() && has_star_import(src);
    if star {
        return None;
    }
    if !in_framework && !ROOTS.iter().any(|(r, _)| memmem::find(src, r.as_bytes()).is_some()) {
        return Some(SourceScan {
            aliases: Aliases::default(),
            found: Extracted::default(),
            handling: Handling::Skipped,
            parsed_bytes: 0,
        });
    }
    let (chunks, gaps) = top_level(src)?;
    let (imports, rest): (Vec<&Chunk>, Vec<&Chunk>) = chunks.iter().partition(|c| has_word(c.bytes(src), b"import"));
    let mut parsed = 0;
    let mut aliases = Aliases::default();
    let mut found = Extracted::default();
    let mut import_tree = None;
    if !imports.is_empty() {
        let (code, ranges, code_bytes) = prepare(src, &chunks, &imports, &gaps);
        parsed += code_bytes;
        let tree = parse(&code, Some(&ranges)).filter(|t| !t.root_node().has_error())?;
        aliases = collect_imports(&tree, src, module, is_package);
        import_tree = Some(tree);
    }
    let uses = uses(src, &aliases);
    if let Some(tree) = import_tree {
        found = extract(&tree, src, &aliases, &uses, measured);
    }
    let wanted: Vec<&Chunk> = rest.into_iter().filter(|c| marked(&uses, c.start..c.end)).collect();
    if !wanted.is_empty() {
        let (code, ranges, code_bytes) = prepare(src, &chunks, &wanted, &gaps);
        parsed += code_bytes;
        let tree = parse(&code, Some(&ranges)).filter(|t| !t.root_node().has_error())?;
        let more = extract(&tree, src, &aliases, &uses, measured);
        found.calls.extend(more.calls);
        found.unresolved.extend(more.unresolved);
    }
    Some(SourceScan { aliases, found, handling: Handling::Partial, parsed_bytes: parsed })
}

/// Whether the source has `import *` (with any spacing).
fn has_star_import(src: &[u8]) -> bool {
    memmem::find_iter(src, b"import").any(|i| {
        let after = &src[i + 6..];
        let rest = after.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\\' | b'\n' | b'\r' | b'('));
        rest.is_some_and(|p| p > 0 && after[p] == b'*')
    })
}

/// A top-level statement (with the comments and blank lines after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// 0-based row of `start` (always at column 0).
    pub row: usize,
    /// Row and column of `end`.
    pub end_point: (usize, usize),
}

impl Chunk {
    fn bytes<'a>(&self, src: &'a [u8]) -> &'a [u8] {
        &src[self.start..self.end]
    }
}

/// What the parser gets for some of a source's chunks (`wanted`, in order, a subset of `all`):
/// a copy of the source in which everything outside them and every gap inside them is
/// blanked (spaces; line breaks kept, so every position stays), and the ranges to parse:
/// the wanted chunks less the blanked stretches of at least [`CUT`] bytes. Few ranges keep
/// tree-sitter's lexer fast (each token start scans the ranges from the first); the shorter
/// blanked stretches are lexed as whitespace or string content. Also the number of bytes
/// not blanked.
fn prepare(src: &[u8], all: &[Chunk], wanted: &[&Chunk], gaps: &[Gap]) -> (Vec<u8>, Vec<Range>, usize) {
    let mut code = src.to_vec();
    // The stretches left out, in order: runs of unwanted chunks and the gaps of wanted ones.
    let mut skips: Vec<Gap> = Vec::new();
    let mut w = wanted.iter().peekable();
    let mut g = 0;
    let mut code_bytes = 0;
    for c in all {
        if w.peek().is_some_and(|x| x.start == c.start) {
            w.next();
            code_bytes += c.end - c.start;
            while g < gaps.len() && gaps[g].start < c.start {
                g += 1;
            }
            while g < gaps.len() && gaps[g].end <= c.end {
                let gap = gaps[g];
                blank_string(&mut code[gap.start..gap.end]);
                code_bytes -= gap.end - gap.start;
                skips.push(gap);
                g += 1;
            }
            continue;
        }
        blank_all(&mut code[c.start..c.end]);
        match skips.last_mut() {
            Some(last) if last.end == c.start => {
                last.end = c.end;
                last.end_point = c.end_point;
            }
            _ => skips.push(Gap { start: c.start, end: c.end, start_point: (c.row, 0), end_point: c.end_point }),
        }
    }
    let mut ranges = Vec::new();
    let mut from = (0, (0, 0));
    for s in skips.iter().filter(|s| s.end - s.start >= CUT) {
        if s.start > from.0 {
            ranges.push(range(from, (s.start, s.start_point)));
        }
        from = (s.end, s.end_point);
    }
    let last = all.last().map_or((0, (0, 0)), |c| (c.end, c.end_point));
    if last.0 > from.0 {
        ranges.push(range(from, last));
    }
    (code, ranges, code_bytes)
}

fn range(from: (usize, (usize, usize)), to: (usize, (usize, usize))) -> Range {
    Range {
        start_byte: from.0,
        end_byte: to.0,
        start_point: Point::new(from.1.0, from.1.1),
        end_point: Point::new(to.1.0, to.1.1),
    }
}

/// Blanked stretches at least this long are cut out of the parser's ranges; shorter ones are
/// lexed (measured on torch, tensorflow and jax: 256 beats 64 and 1024).
const CUT: usize = 256;

/// Blanks the content of a string or comment: spaces, keeping line breaks and a backslash
/// before one (it continues a single-quoted string).
fn blank_string(b: &mut [u8]) {
    for i in 0..b.len() {
        let keep = match b[i] {
            b'\n' | b'\r' => true,
            b'\\' => matches!(b.get(i + 1), Some(b'\n' | b'\r')),
            _ => false,
        };
        if !keep {
            b[i] = b' ';
        }
    }
}

/// Blanks whole statements: spaces, keeping line breaks.
fn blank_all(b: &mut [u8]) {
    for c in b.iter_mut() {
        if !matches!(*c, b'\n' | b'\r') {
            *c = b' ';
        }
    }
}

/// Splits a source into top-level statements: lines at column 0 outside strings,
/// brackets and continuations, except `else`/`elif`/`except`/`finally` and what follows a
/// decorator. `None` when the lexer is unsure (an unterminated string, unbalanced brackets).
pub fn top_level(src: &[u8]) -> Option<(Vec<Chunk>, Vec<Gap>)> {
    let mut starts: Vec<(usize, usize)> = vec![(0, 0)];
    let mut gaps: Vec<Gap> = Vec::new();
    let mut line_begin = 0usize;
    let mut depth: i64 = 0;
    let mut row = 0usize;
    let mut continued = false;
    let mut after_decorator = false;
    let mut i = 0;
    let n = src.len();
    let mut line_start = true;
    while i < n {
        if line_start {
            line_start = false;
            let b = src[i];
            if depth == 0 && !continued && !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'#' | b'\x0c') {
                let rest = &src[i..];
                let keyword = ["else", "elif", "except", "finally"].iter().any(|k| {
                    rest.starts_with(k.as_bytes())
                        && rest.get(k.len()).is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                });
                if !keyword && !after_decorator && i > 0 {
                    starts.push((i, row));
                }
                after_decorator = b == b'@';
            }
            continued = false;
        }
        let b = src[i];
        match b {
            b'\n' => {
                row += 1;
                line_start = true;
                i += 1;
                line_begin = i;
            }
            b'#' => {
                let from = i + 1;
                while i < n && src[i] != b'\n' {
                    i += 1;
                }
                let end = if i > 0 && src[i - 1] == b'\r' { i - 1 } else { i };
                if end > from + MIN_GAP {
                    gaps.push(Gap {
                        start: from,
                        end,
                        start_point: (row, from - line_begin),
                        end_point: (row, end - line_begin),
                    });
                }
            }
            b'\\' => {
                if src.get(i + 1) == Some(&b'\n') || (src.get(i + 1) == Some(&b'\r') && src.get(i + 2) == Some(&b'\n'))
                {
                    continued = true;
                }
                i += 1;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
                i += 1;
            }
            b'\'' | b'"' => {
                let triple = src.get(i + 1) == Some(&b) && src.get(i + 2) == Some(&b);
                // An f-string (or t-string) holds code: its content is never skipped.
                let mut p = i;
                while p > 0 && matches!(src[p - 1], b'r' | b'R' | b'b' | b'B' | b'u' | b'U' | b'f' | b'F' | b't' | b'T')
                {
                    p -= 1;
                }
                let prefix = &src[p..i];
                let code = prefix.iter().any(|c| matches!(c, b'f' | b'F' | b't' | b'T'))
                    && (p == 0 || !(src[p - 1].is_ascii_alphanumeric() || src[p - 1] == b'_'));
                i += if triple { 3 } else { 1 };
                let from = (i, row, i - line_begin);
                // Replacement fields open in an f-string: since Python 3.12 (PEP 701) one may
                // hold strings with the same quotes; any quote inside one sends the file to the
                // full parse rather than guessing where the f-string ends.
                let mut fields = 0usize;
                loop {
                    let c = *src.get(i)?;
                    if code {
                        match c {
                            b'{' if fields == 0 && src.get(i + 1) == Some(&b'{') => {
                                i += 2;
                                continue;
                            }
                            b'{' => fields += 1,
                            b'}' if fields > 0 => fields -= 1,
                            b'\'' | b'"' if fields > 0 => return None,
                            _ => {}
                        }
                    }
                    match c {
                        b'\\' => {
                            if src.get(i + 1) == Some(&b'\n') {
                                row += 1;
                                line_begin = i + 2;
                            }
                            i += 2;
                        }
                        b'\n' => {
                            if !triple {
                                return None;
                            }
                            row += 1;
                            i += 1;
                            line_begin = i;
                        }
                        _ if c == b => {
                            let closing = !triple || (src.get(i + 1) == Some(&b) && src.get(i + 2) == Some(&b));
                            if closing {
                                if !code && i > from.0 + MIN_GAP {
                                    gaps.push(Gap {
                                        start: from.0,
                                        end: i,
                                        start_point: (from.1, from.2),
                                        end_point: (row, i - line_begin),
                                    });
                                }
                                i += if triple { 3 } else { 1 };
                                break;
                            }
                            i += 1;
                        }
                        _ => i += 1,
                    }
                }
            }
            _ => i += 1,
        }
    }
    if depth != 0 {
        return None;
    }
    let last_nl = src.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
    let eof = (row, n - last_nl);
    let mut chunks = Vec::with_capacity(starts.len());
    for (k, (start, srow)) in starts.iter().enumerate() {
        let (end, end_point) = match starts.get(k + 1) {
            Some((e, erow)) => (*e, (*erow, 0)),
            None => (n, eof),
        };
        chunks.push(Chunk { start: *start, end, row: *srow, end_point });
    }
    Some((chunks, gaps))
}

/// Shorter gaps are not recorded (blanking them saves nothing).
const MIN_GAP: usize = 24;

/// The content of a string (not an f-string) or of a comment: never holds a call, so the
/// fast path blanks it (see [`prepare`]), keeping the quotes (`"""` + `"""` still parses as
/// a string) and the `#`. Also a stretch of statements left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gap {
    /// First byte left out.
    pub start: usize,
    /// One past the last byte left out.
    pub end: usize,
    /// Row and column of `start`.
    pub start_point: (usize, usize),
    /// Row and column of `end`.
    pub end_point: (usize, usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> HashSet<String> {
        ["argsort", "sum"].iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn statements_split_at_column_zero() {
        let src = b"import torch\n\n@dec\n# c\ndef f(x):\n    return (1,\n2)\n\nif a:\n    pass\nelse:\n    s = '''\nx = 1\n'''\nx = \\\n  2\n";
        let (c, _) = top_level(src).unwrap();
        let firsts: Vec<&str> =
            c.iter().map(|c| std::str::from_utf8(&src[c.start..c.end]).unwrap().lines().next().unwrap()).collect();
        assert_eq!(firsts, ["import torch", "@dec", "if a:", "x = \\"]);
        assert_eq!(c[1].row, 2);
        assert!(top_level(b"x = (1,\n").is_none());
        assert!(top_level(b"s = 'abc\n").is_none());
    }

    #[test]
    fn words_and_stars() {
        assert!(has_word(b"x = torch.zeros(1)", b"torch"));
        assert!(!has_word(b"x = torchvision.zeros(1)", b"torch"));
        assert!(!has_word(b"x = my_torch", b"torch"));
        let src = "torch my_torch torchx np.torch é_np np\nnp".as_bytes();
        assert_eq!(word_positions(src, &["torch", "np"]), [0, 22, 25, 37, 40]);
        assert!(marked(&[3, 9], 4..10) && !marked(&[3, 9], 4..9));
        assert!(has_star_import(b"from torch import *\n"));
        assert!(has_star_import(b"from torch import (\n *)\n"));
        assert!(!has_star_import(b"import torch\nx = 2 * 3\n"));
    }

    #[test]
    fn a_bom_and_pep_701_f_strings_give_the_full_parses_calls() {
        let cases: [&[u8]; 3] = [
            b"\xef\xbb\xbfimport torch\nx = torch.zeros(1)\n",
            b"import numpy as np\nrow = {\"a\": 1, \"b\": 2}\nprint(f\"{row[\"a\"]}: mean {np.mean(np.ones(3))} and {row[\"b\"]}\")\n",
            b"import numpy as np\ns = f\"{1}{\"b\"}{np.ones(3).sum() + 100000000}{\"c\"}\"\n",
        ];
        for src in cases {
            let full = scan_full(src, None, false, &measured()).unwrap();
            let fast = scan_fast(src, None, false, &measured()).unwrap();
            assert!(!full.found.calls.is_empty(), "{}", String::from_utf8_lossy(src));
            assert_eq!(fast.found, full.found, "{}", String::from_utf8_lossy(src));
        }
    }

    #[test]
    fn fast_equals_full_on_a_mixed_file() {
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
        let full = scan_full(src, None, false, &measured()).unwrap();
        let fast = scan_fast(src, None, false, &measured()).unwrap();
        assert_eq!(fast.handling, Handling::Partial);
        assert!(fast.parsed_bytes < src.len());
        let mut a = full.found.calls.clone();
        let mut b = fast.found.calls.clone();
        a.sort();
        b.sort();
        assert_eq!(a, b);
        assert!(a.contains(&("numpy.ndarray.argsort".into(), 11)));
        assert!(a.contains(&("jax.numpy.ones".into(), 18)));
        assert_eq!(full.found.unresolved, fast.found.unresolved);
        assert_eq!(full.found.unresolved, [("?.sum".to_string(), 11)]);
    }

    fn same(src: &[u8]) -> SourceScan {
        let full = scan_full(src, None, false, &measured()).unwrap();
        let fast = scan_fast(src, None, false, &measured()).unwrap();
        assert_eq!(fast.found, full.found);
        assert_eq!(fast.aliases, full.aliases);
        fast
    }

    #[test]
    fn blanked_strings_comments_and_statements_keep_every_position() {
        let doc = "word ".repeat(80);
        let mut src = format!("import torch  # {doc}\nimport numpy as np\n\n\"\"\"{doc}\n  torch.fake(1)\n\"\"\"\n\n");
        src += "def g():\n    return 1\n\n";
        src += &format!("def f(x):\n    '''{doc}'''\n    s = 'a\\\n b \\' torch.fake(2)' + \"\\\\\" + 'é ü {doc}'\n");
        src += &format!("    # {doc} np.fake(3)\n    t = f\"{{np.ones(3).sum()}} {doc}\"\n");
        src += "    return torch.zeros(2).argsort() + x.sum()\n\ndef h():\n    return 2\n\n";
        src += "class C:\n    y = np.zeros(1)  # short\n\ndef k(): pass\n";
        src += &"z = 1\n".repeat(100);
        src += "y = torch.ones(1)\n";
        let fast = same(src.as_bytes());
        assert_eq!(fast.handling, Handling::Partial);
        let mut calls: Vec<(&str, u32)> = fast.found.calls.iter().map(|(c, l)| (c.as_str(), *l)).collect();
        calls.sort();
        assert_eq!(
            calls,
            [
                ("numpy.ndarray.sum", 16),
                ("numpy.ones", 16),
                ("numpy.zeros", 23),
                ("torch.Tensor.argsort", 17),
                ("torch.ones", 126),
                ("torch.zeros", 17)
            ]
        );
        assert_eq!(fast.found.unresolved, [("?.sum".to_string(), 17)]);
        // Few parser ranges: the long blanked stretches only.
        let s = src.as_bytes();
        let (chunks, gaps) = top_level(s).unwrap();
        let wanted: Vec<&Chunk> = chunks.iter().filter(|c| has_word(c.bytes(s), b"torch")).collect();
        let (code, ranges, code_bytes) = prepare(s, &chunks, &wanted, &gaps);
        assert_eq!(code.len(), s.len());
        assert_eq!(code.iter().filter(|b| **b == b'\n').count(), s.iter().filter(|b| **b == b'\n').count());
        assert!(ranges.len() < 10 && code_bytes < s.len() / 2, "{ranges:?}");
    }

    #[test]
    fn syntax_errors_count_only_where_a_framework_call_can_hide() {
        // tree-sitter-python rejects this valid statement; it names no framework.
        let fine = b"import torch\n\nhost, *rest = endpoint, *[]\n\nx = torch.zeros(1)\n";
        assert!(parse(fine, None).unwrap().root_node().has_error());
        assert_eq!(same(fine).found.calls, [("torch.zeros".to_string(), 5)]);
        let bad = b"import torch\n\nhost, *rest = torch.e, *[]\n";
        let m = measured();
        assert_eq!(scan_full(bad, None, false, &m).unwrap_err(), scan_fast(bad, None, false, &m).unwrap_err());
    }

    #[test]
    fn syntax_errors_are_located() {
        let e = scan_full(b"import torch\n\ndef f(:\n    pass\n", None, false, &measured()).unwrap_err();
        assert_eq!(e.line, 3);
    }
}
