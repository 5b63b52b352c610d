//! The layout's rules, checked on the source tree (docs/architecture.md): no import cycle
//! among the modules of `src/`; dependencies run one way (commands → analysis/render →
//! model; render reads analysis, never the reverse; nothing but `commands` reaches `cli`);
//! nothing below `commands` writes to stdout or exits the process; a command's file stays
//! orchestration (at most 300 lines); the runner has one execution path.
//!
//! A module is a file (`src/a/b.rs` or `src/a/b/mod.rs` is `a::b`). It depends on another
//! when it names it in a path: `crate::x::y`, `super::y`, `self::y` in a `use` or inline. A
//! module's own descendants (what it declares and re-exports) are not counted as
//! dependencies; its children naming it back (`super::Format`) are.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/a/b.rs` and `src/a/b/mod.rs` → `["a", "b"]`; `src/lib.rs` → `[]`; `main.rs` → `["main"]`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    match last.as_str() {
        "mod.rs" | "lib.rs" => {}
        _ => parts.push(last.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// The source without comments and string literals (so a doc line naming `crate::x` is no
/// dependency).
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'r'
            && (b.get(i + 1) == Some(&b'#') || b.get(i + 1) == Some(&b'"'))
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric() && b[i - 1] != b'_')
        {
            // A raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            j += 1;
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            while j < b.len() && !b[j..].starts_with(&close) {
                j += 1;
            }
            i = j + close.len();
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A char literal such as '"'.
            i += 3;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// The module paths a file names: after `crate::`, `super::` (relative to its parent) or
/// `self::`, including `use crate::{a, b::c}` groups (their first segments).
fn named_paths(module: &[String], is_mod_file: bool, code: &str) -> Vec<Vec<String>> {
    // `a::b::C; ...` → [a, b, C]: identifiers joined by `::`, up to the first other character.
    let ident = |s: &str| -> Vec<String> {
        let mut parts = Vec::new();
        let mut rest = s.trim_start();
        loop {
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
            if end == 0 {
                break;
            }
            parts.push(rest[..end].to_string());
            match rest[end..].strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        parts
    };
    // The module `self` is, and its parent, as paths from the crate root.
    let here: Vec<String> = module.to_vec();
    let parent: Vec<String> = if is_mod_file || module.is_empty() {
        here[..here.len().saturating_sub(1)].to_vec()
    } else {
        here[..here.len() - 1].to_vec()
    };
    let mut out = Vec::new();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent), ("self::", here)] {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut groups: Vec<&str> = Vec::new();
            if let Some(body) = rest.strip_prefix('{') {
                let end = body.find('}').unwrap_or(body.len());
                groups.extend(body[..end].split(','));
            } else {
                groups.push(rest);
            }
            for g in groups {
                let mut p = base.clone();
                p.extend(ident(g));
                out.push(p);
            }
        }
    }
    out
}

struct Tree {
    /// Module path → its file's code.
    code: BTreeMap<Vec<String>, String>,
    /// Module path → the modules it depends on.
    deps: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
}

fn tree() -> Tree {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut code = BTreeMap::new();
    let mut is_mod = BTreeMap::new();
    for f in &files {
        let m = module_of(&src, f);
        let text = std::fs::read_to_string(f).unwrap();
        // Unit tests may reach anywhere: only the code above `#[cfg(test)]` is the module's.
        let text = match text.find("#[cfg(test)]\nmod tests") {
            Some(i) => text[..i].to_string(),
            None => text,
        };
        is_mod.insert(m.clone(), f.file_name().is_some_and(|n| n == "mod.rs" || n == "lib.rs"));
        code.insert(m, code_only(&text));
    }
    let modules: BTreeSet<Vec<String>> = code.keys().cloned().collect();
    let mut deps = BTreeMap::new();
    for (m, text) in &code {
        let mut set = BTreeSet::new();
        for mut p in named_paths(m, is_mod[m], text) {
            // The longest prefix that is a module.
            while !p.is_empty() && !modules.contains(&p) {
                p.pop();
            }
            let descendant = p.len() >= m.len() && p[..m.len()] == m[..];
            if !p.is_empty() && !descendant && m.as_slice() != ["main"] {
                set.insert(p);
            }
        }
        deps.insert(m.clone(), set);
    }
    Tree { code, deps }
}

/// A cycle in `graph`, as the list of its nodes, if there is one.
fn find_cycle<N: Ord + Clone>(graph: &BTreeMap<N, BTreeSet<N>>) -> Option<Vec<N>> {
    fn visit<N: Ord + Clone>(
        n: &N,
        graph: &BTreeMap<N, BTreeSet<N>>,
        state: &mut BTreeMap<N, u8>,
        stack: &mut Vec<N>,
    ) -> Option<Vec<N>> {
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for d in graph.get(n).into_iter().flatten() {
            match state.get(d) {
                Some(1) => {
                    let from = stack.iter().position(|x| x == d).unwrap();
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(d.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(d, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if !state.contains_key(n)
            && let Some(c) = visit(n, graph, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

fn show(cycle: &[Vec<String>]) -> String {
    cycle.iter().map(|m| if m.is_empty() { "crate".to_string() } else { m.join("::") }).collect::<Vec<_>>().join(" → ")
}

#[test]
fn no_module_imports_itself_through_others() {
    let t = tree();
    // Between files.
    assert!(t.deps.len() > 40, "the tree was read: {} modules", t.deps.len());
    if let Some(c) = find_cycle(&t.deps) {
        panic!("import cycle between modules: {}", show(&c));
    }
    // Between the top-level modules (`store` and `model` each taken whole).
    let mut top: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, ds) in &t.deps {
        let Some(head) = m.first() else { continue };
        let entry = top.entry(vec![head.clone()]).or_default();
        for d in ds {
            if let Some(h) = d.first().filter(|h| *h != head) {
                entry.insert(vec![h.clone()]);
            }
        }
    }
    if let Some(c) = find_cycle(&top) {
        panic!("import cycle between top-level modules: {}", show(&c));
    }
}

#[test]
fn dependencies_run_one_way() {
    let t = tree();
    let uses = |from: &str, to: &str| -> Vec<String> {
        t.deps
            .iter()
            .filter(|(m, _)| m.first().map(String::as_str) == Some(from))
            .filter(|(_, ds)| ds.iter().any(|d| d.first().map(String::as_str) == Some(to)))
            .map(|(m, _)| m.join("::"))
            .collect()
    };
    // Only the commands (and main) see the command line.
    for m in t.deps.keys().filter_map(|m| m.first()).collect::<BTreeSet<_>>() {
        if !matches!(m.as_str(), "commands" | "cli" | "main") {
            assert!(uses(m, "cli").is_empty(), "{m} uses cli: {:?}", uses(m, "cli"));
        }
        if m != "commands" && m != "main" {
            assert!(uses(m, "commands").is_empty() || m == "cli", "{m} uses commands: {:?}", uses(m, "commands"));
        }
    }
    // Analysis computes; render formats what analysis computed, never the reverse.
    assert!(uses("analysis", "render").is_empty(), "analysis uses render: {:?}", uses("analysis", "render"));
    assert!(uses("model", "store").is_empty(), "model uses store: {:?}", uses("model", "store"));
    assert!(
        uses("audit", "render").is_empty(),
        "audit computes with analysis, not a renderer: {:?}",
        uses("audit", "render")
    );
}

#[test]
fn nothing_below_commands_prints_results_or_exits() {
    let t = tree();
    for (m, code) in &t.code {
        let top = m.first().map(String::as_str);
        if matches!(top, Some("main")) {
            continue;
        }
        assert!(!code.contains("process::exit("), "{} exits the process", m.join("::"));
        if !matches!(top, Some("commands")) {
            for p in ["println!(", "print!(", "stdout()"] {
                let writes = code.match_indices(p).any(|(i, _)| {
                    !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':' || c == '.')
                });
                assert!(!writes, "{} writes to stdout ({p}): results go through commands", m.join("::"));
            }
        }
    }
}

/// The longest a file under `src/commands/` may be: a command wires the library to the command
/// line; what grows past this belongs in a library module (issue 35).
const COMMAND_FILE_MAX_LINES: usize = 300;

#[test]
fn command_files_stay_orchestration() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, std::fs::read_to_string(f).unwrap().lines().count()))
        .filter(|(_, n)| *n > COMMAND_FILE_MAX_LINES)
        .map(|(f, n)| format!("{} ({n} lines)", f.strip_prefix(&dir).unwrap().display()))
        .collect();
    assert!(long.is_empty(), "over {COMMAND_FILE_MAX_LINES} lines under src/commands/: {long:?}");
}

/// One execution path in `runner/`: `execute` is its only public function that writes the
/// store, the dispatcher is built in one place (so the serial run, `--jobs 1`, goes through
/// it as every run does), and workers start only where a lane needs one (a request's attempt,
/// a framework's probe, torch's `xla:N` devices).
#[test]
fn the_runner_has_one_execution_path() {
    let t = tree();
    let runner: Vec<(&Vec<String>, &String)> =
        t.code.iter().filter(|(m, _)| m.first().map(String::as_str) == Some("runner")).collect();
    let writers: Vec<String> = runner
        .iter()
        .flat_map(|(m, code)| {
            code.split("pub fn ").skip(1).filter_map(move |rest| {
                let signature = &rest[..rest.find('{').unwrap_or(rest.len())];
                let name = &rest[..rest.find(['(', '<']).unwrap_or(0)];
                signature.contains("&mut Store").then(|| format!("{}::{name}", m.join("::")))
            })
        })
        .collect();
    assert_eq!(writers, ["runner::execute::execute"], "the runner's entry points that write the store");
    let where_ = |needle: &str| -> Vec<String> {
        runner.iter().filter(|(_, code)| code.contains(needle)).map(|(m, _)| m.join("::")).collect()
    };
    assert_eq!(where_("Dispatch::new("), ["runner::execute"], "where the dispatcher is built");
    assert_eq!(where_("Next::Run("), ["runner::dispatch", "runner::execute"], "who hands out cases");
    assert_eq!(
        where_("worker::spawn("),
        ["runner::attempt", "runner::devices", "runner::lanes"],
        "where the runner starts workers"
    );
}

#[test]
fn the_reader_sees_paths_not_comments() {
    let code = code_only(
        "use crate::a::b; // crate::c\nlet s = \"crate::d\"; let r = r#\"crate::e\"#; super::f(); '\"'; crate::{g, h::i};",
    );
    let paths = named_paths(&["x".into(), "y".into()], false, &code);
    let p: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(p, ["a::b", "g", "h::i", "x::f"]);
}
