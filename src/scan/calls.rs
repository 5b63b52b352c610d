//! Framework calls in a parsed Python file (a tree-sitter-python tree): the import
//! statements that bind names, then every call whose callee resolves through them to a
//! torch, tensorflow, jax or numpy name, with its line.
//!
//! Rules, the same in every scanning mode:
//! - A callee is a dotted chain of names (`F.conv2d`, `torch.nn.functional.conv2d`); its
//!   first name resolves through the file's imports ([`super::imports::Aliases`]).
//! - A bare decorator (`@jax.jit`, `@torch.no_grad` without parentheses) counts as a call.
//! - A method call is attributed only when the receiver is clearly a framework object: a
//!   direct call of a framework array function or class (`torch.zeros(3).argsort()` →
//!   `torch.Tensor.argsort`; `nn.Linear(2, 2).forward(x)` → `torch.nn.Linear.forward`), or
//!   a function's local name that every assignment in that function binds to such a call, or
//!   whose annotation names a framework type (`x: torch.Tensor`). Module-level names are never
//!   tracked: any function may rebind them.
//! - Other method calls whose name is one mlport measures (`x.argsort()`) are listed as
//!   unresolved (`?.argsort`), never guessed, within top-level statements that use a
//!   framework name.
//! - With a star import, calls of names the file does not define are kept for the caller to
//!   resolve against the star-imported module.

use std::collections::{HashMap, HashSet};

use tree_sitter::{Node, Tree};

use super::imports::{Aliases, framework_of, resolve_relative};
use crate::model::Framework;

/// What one file's tree yields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extracted {
    /// Fully qualified framework callees, with their 1-based line.
    pub calls: Vec<(String, u32)>,
    /// Method calls whose receiver is not clearly a framework object (`?.argsort`).
    pub unresolved: Vec<(String, u32)>,
    /// Calls of names (and chains rooted in names) the file neither imports nor defines,
    /// kept only with star imports.
    pub free_calls: Vec<(String, u32)>,
}

/// The text of a node.
fn text<'a>(n: Node<'_>, src: &'a [u8]) -> &'a str {
    std::str::from_utf8(&src[n.byte_range()]).unwrap_or("")
}

/// `a.b.c` for an identifier or an attribute chain of identifiers; `None` otherwise.
fn dotted(n: Node<'_>, src: &[u8]) -> Option<String> {
    match n.kind() {
        "identifier" => Some(text(n, src).to_string()),
        "attribute" => {
            let obj = dotted(n.child_by_field_name("object")?, src)?;
            let attr = n.child_by_field_name("attribute")?;
            Some(format!("{obj}.{}", text(attr, src)))
        }
        _ => None,
    }
}

/// Visits every node below `root` in document order without recursion (trees of long
/// expressions are deep): `visit(node, true)` on entering, returning false to skip the
/// node's children, and `visit(node, false)` on leaving it.
fn walk<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>, bool) -> bool) {
    let mut cursor = root.walk();
    let mut descend = visit(cursor.node(), true);
    loop {
        if descend && cursor.goto_first_child() {
            descend = visit(cursor.node(), true);
            continue;
        }
        // No (more) children: leave this node, then move to a sibling or climb.
        loop {
            if cursor.node() == root {
                visit(root, false);
                return;
            }
            visit(cursor.node(), false);
            if cursor.goto_next_sibling() {
                descend = visit(cursor.node(), true);
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// The imports of a tree: every `import` and `from ... import` statement anywhere in it.
/// `module` is the file's module path (for relative imports), `is_package` true for an
/// `__init__.py`.
pub fn collect_imports(tree: &Tree, src: &[u8], module: Option<&[String]>, is_package: bool) -> Aliases {
    let mut aliases = Aliases::default();
    walk(tree.root_node(), |n, enter| {
        enter
            && match n.kind() {
                "import_statement" => {
                    let mut c = n.walk();
                    for child in n.named_children(&mut c) {
                        match child.kind() {
                            "dotted_name" => aliases.add_import(text(child, src), None),
                            "aliased_import" => {
                                if let (Some(name), Some(alias)) =
                                    (child.child_by_field_name("name"), child.child_by_field_name("alias"))
                                {
                                    aliases.add_import(text(name, src), Some(text(alias, src)));
                                }
                            }
                            _ => {}
                        }
                    }
                    false
                }
                "import_from_statement" => {
                    from_import(n, src, module, is_package, &mut aliases);
                    false
                }
                // Expressions hold no import statements; statements and blocks may.
                "call" | "expression_statement" | "string" | "return_statement" => false,
                _ => true,
            }
    });
    aliases
}

fn from_import(n: Node<'_>, src: &[u8], module: Option<&[String]>, is_package: bool, aliases: &mut Aliases) {
    let Some(m) = n.child_by_field_name("module_name") else { return };
    let resolved = match m.kind() {
        "relative_import" => {
            let mut c = m.walk();
            let mut dots = 0;
            let mut rest = "";
            for child in m.named_children(&mut c) {
                match child.kind() {
                    "import_prefix" => dots = text(child, src).trim().len(),
                    "dotted_name" => rest = text(child, src),
                    _ => {}
                }
            }
            resolve_relative(module, is_package, dots, rest)
        }
        _ => Some(text(m, src).to_string()),
    };
    let mut c = n.walk();
    for child in n.named_children(&mut c) {
        if child == m {
            continue;
        }
        match child.kind() {
            "wildcard_import" => {
                if let Some(r) = &resolved {
                    aliases.stars.push((r.clone(), n.start_position().row as u32 + 1));
                }
            }
            "dotted_name" => aliases.add_from(resolved.as_deref(), text(child, src), None),
            "aliased_import" => {
                if let (Some(name), Some(alias)) =
                    (child.child_by_field_name("name"), child.child_by_field_name("alias"))
                {
                    aliases.add_from(resolved.as_deref(), text(name, src), Some(text(alias, src)));
                }
            }
            _ => {}
        }
    }
}

/// Lowercase functions of these namespaces return arrays of their framework.
const ARRAY_NAMESPACES: [&str; 14] = [
    "torch",
    "torch.nn.functional",
    "torch.linalg",
    "torch.fft",
    "torch.special",
    "numpy",
    "numpy.linalg",
    "numpy.random",
    "jax.numpy",
    "jax.numpy.linalg",
    "jax.nn",
    "tensorflow",
    "tensorflow.math",
    "tensorflow.linalg",
];

/// Lowercase functions of those namespaces that do not return arrays.
const NOT_ARRAYS: [&str; 30] = [
    "device",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "load",
    "save",
    "manual_seed",
    "seed",
    "is_tensor",
    "is_floating_point",
    "get_default_dtype",
    "set_default_dtype",
    "compile",
    "dtype",
    "finfo",
    "iinfo",
    "set_printoptions",
    "printoptions",
    "errstate",
    "seterr",
    "vectorize",
    "frompyfunc",
    "broadcast",
    "nditer",
    "default_rng",
    "function",
    "name_scope",
    "print",
    "shape",
];

/// The type of what a framework callee returns, when clear: a class's instance (`Q`
/// itself) or its framework's array type for an array function.
fn returns(q: &str) -> Option<String> {
    let fw = framework_of(q)?;
    let (ns, last) = q.rsplit_once('.')?;
    if last.starts_with(|c: char| c.is_ascii_uppercase()) {
        return Some(q.to_string());
    }
    if ARRAY_NAMESPACES.contains(&ns) && !NOT_ARRAYS.contains(&last) && !last.starts_with('_') {
        return Some(
            match fw {
                Framework::Torch => "torch.Tensor",
                Framework::Numpy => "numpy.ndarray",
                Framework::Jax => "jax.Array",
                Framework::Tensorflow => "tensorflow.Tensor",
            }
            .to_string(),
        );
    }
    None
}

/// An annotation that names a framework type (`torch.Tensor`, `np.ndarray`, `jax.Array`).
fn annotation_type(n: Node<'_>, src: &[u8], aliases: &Aliases) -> Option<String> {
    let n = if n.kind() == "type" { n.named_child(0)? } else { n };
    let q = aliases.resolve(&dotted(n, src)?)?;
    framework_of(&q)?;
    let last = q.rsplit('.').next()?;
    (last.starts_with(|c: char| c.is_ascii_uppercase()) || last == "ndarray").then_some(q)
}

/// A local name's type in a function: `Some(T)` when every binding agrees, `None` unknown.
type Scope = HashMap<String, Option<String>>;

fn bind(scope: &mut Scope, name: &str, ty: Option<String>) {
    match scope.get_mut(name) {
        Some(existing) => {
            if *existing != ty {
                *existing = None;
            }
        }
        None => {
            scope.insert(name.to_string(), ty);
        }
    }
}

/// Marks every identifier in a binding target as unknown.
fn bind_unknown(scope: &mut Scope, target: Node<'_>, src: &[u8]) {
    walk(target, |n, enter| {
        if !enter {
            return true;
        }
        if n.kind() == "identifier" {
            bind(scope, text(n, src), None);
        }
        // `a.b = ...` and `a[i] = ...` bind nothing.
        !matches!(n.kind(), "attribute" | "subscript")
    });
}

/// The local names of a function and what they hold.
fn function_scope(f: Node<'_>, src: &[u8], aliases: &Aliases) -> Scope {
    let mut scope = Scope::new();
    if let Some(params) = f.child_by_field_name("parameters") {
        let mut c = params.walk();
        for p in params.named_children(&mut c) {
            match p.kind() {
                "identifier" => bind(&mut scope, text(p, src), None),
                "typed_parameter" | "typed_default_parameter" => {
                    let name = match p.kind() {
                        "typed_parameter" => p.named_child(0),
                        _ => p.child_by_field_name("name"),
                    };
                    let ty = p.child_by_field_name("type").and_then(|t| annotation_type(t, src, aliases));
                    if let Some(name) = name.filter(|n| n.kind() == "identifier") {
                        bind(&mut scope, text(name, src), ty);
                    } else if let Some(name) = name {
                        bind_unknown(&mut scope, name, src);
                    }
                }
                _ => bind_unknown(&mut scope, p, src),
            }
        }
    }
    let Some(body) = f.child_by_field_name("body") else { return scope };
    walk(body, |n, enter| {
        enter
            && match n.kind() {
                "function_definition" | "class_definition" | "lambda" => false,
                "assignment" => {
                    if let Some(left) = n.child_by_field_name("left") {
                        if left.kind() == "identifier" {
                            let ty = match (n.child_by_field_name("type"), n.child_by_field_name("right")) {
                                (Some(t), _) => annotation_type(t, src, aliases),
                                (None, Some(r)) if r.kind() == "call" => receiver(r, src, aliases),
                                _ => None,
                            };
                            bind(&mut scope, text(left, src), ty);
                        } else {
                            bind_unknown(&mut scope, left, src);
                        }
                    }
                    true
                }
                "for_statement" | "for_in_clause" => {
                    if let Some(left) = n.child_by_field_name("left") {
                        bind_unknown(&mut scope, left, src);
                    }
                    true
                }
                "as_pattern" => {
                    if let Some(alias) = n.child_by_field_name("alias") {
                        bind_unknown(&mut scope, alias, src);
                    }
                    true
                }
                "named_expression" => {
                    if let Some(name) = n.child_by_field_name("name") {
                        bind_unknown(&mut scope, name, src);
                    }
                    true
                }
                "global_statement" | "nonlocal_statement" => {
                    bind_unknown(&mut scope, n, src);
                    false
                }
                _ => true,
            }
    });
    scope
}

/// What a call expression returns, when it is clearly a framework object.
fn receiver(call: Node<'_>, src: &[u8], aliases: &Aliases) -> Option<String> {
    let f = call.child_by_field_name("function")?;
    returns(&aliases.resolve(&dotted(f, src)?)?)
}

/// Python's builtins, never resolved through a star import.
const BUILTINS: [&str; 40] = [
    "print",
    "len",
    "range",
    "int",
    "float",
    "str",
    "list",
    "dict",
    "set",
    "tuple",
    "isinstance",
    "getattr",
    "setattr",
    "hasattr",
    "super",
    "type",
    "enumerate",
    "zip",
    "map",
    "filter",
    "sorted",
    "min",
    "max",
    "sum",
    "abs",
    "any",
    "all",
    "open",
    "repr",
    "iter",
    "next",
    "bool",
    "round",
    "callable",
    "vars",
    "id",
    "hash",
    "issubclass",
    "object",
    "reversed",
];

/// A function's scope, worked out only when a call needs it.
struct LazyScope<'t> {
    node: Node<'t>,
    scope: Option<Scope>,
}

/// The framework calls of a parsed file under `aliases` (from [`collect_imports`]).
/// `measured` holds the method names worth listing as unresolved.
pub fn extract(tree: &Tree, src: &[u8], aliases: &Aliases, measured: &HashSet<String>) -> Extracted {
    let fw_names: Vec<&str> = aliases.framework_names().collect();
    let mut out = Extracted::default();
    let mut scopes: Vec<LazyScope<'_>> = Vec::new();
    let mut defined: HashSet<String> = HashSet::new();
    let mut pending: Vec<(String, u32)> = Vec::new();
    let root = tree.root_node();
    let keep_free = !aliases.stars.is_empty();
    let line = |n: Node<'_>| n.start_position().row as u32 + 1;
    let mut statements = root.walk();
    for stmt in root.named_children(&mut statements) {
        pending.clear();
        walk(stmt, |n, enter| {
            if !enter {
                if n.kind() == "function_definition" {
                    scopes.pop();
                }
                return true;
            }
            match n.kind() {
                "function_definition" => {
                    if keep_free && let Some(name) = n.child_by_field_name("name") {
                        defined.insert(text(name, src).to_string());
                    }
                    scopes.push(LazyScope { node: n, scope: None });
                }
                "class_definition" if keep_free => {
                    if let Some(name) = n.child_by_field_name("name") {
                        defined.insert(text(name, src).to_string());
                    }
                }
                "assignment" if keep_free => {
                    if let Some(left) = n.child_by_field_name("left").filter(|l| l.kind() == "identifier") {
                        defined.insert(text(left, src).to_string());
                    }
                }
                "decorator" => {
                    if let Some(e) = n.named_child(0)
                        && let Some(q) = dotted(e, src).and_then(|d| aliases.resolve(&d))
                        && framework_of(&q).is_some()
                    {
                        out.calls.push((q, line(n)));
                    }
                }
                "call" => {
                    if let Some(f) = n.child_by_field_name("function") {
                        call(f, n, src, aliases, &fw_names, &mut scopes, measured, &mut out, &mut pending, keep_free);
                    }
                }
                _ => {}
            }
            true
        });
        // Unresolved calls count only in statements that use a framework name.
        if !pending.is_empty() {
            let bytes = &src[stmt.byte_range()];
            if fw_names.iter().any(|w| super::source::has_word(bytes, w.as_bytes())) {
                out.unresolved.append(&mut pending);
            }
        }
    }
    if keep_free {
        out.free_calls.retain(|(chain, _)| {
            let root = chain.split('.').next().unwrap_or(chain);
            !defined.contains(root) && !BUILTINS.contains(&root)
        });
    }
    out
}

/// The type of local `name` in the innermost function that binds it.
fn local_type(name: &str, scopes: &mut [LazyScope<'_>], src: &[u8], aliases: &Aliases, fw: &[&str]) -> Option<String> {
    if name == "self" || name == "cls" {
        return None;
    }
    for s in scopes.iter_mut().rev() {
        let scope = s.scope.get_or_insert_with(|| {
            // Without a framework name in its text, nothing in a function is typed.
            let bytes = &src[s.node.byte_range()];
            if fw.iter().any(|w| super::source::has_word(bytes, w.as_bytes())) {
                function_scope(s.node, src, aliases)
            } else {
                Scope::new()
            }
        });
        if let Some(t) = scope.get(name) {
            return t.clone();
        }
    }
    None
}

#[allow(clippy::too_many_arguments)]
fn call(
    f: Node<'_>,
    n: Node<'_>,
    src: &[u8],
    aliases: &Aliases,
    fw: &[&str],
    scopes: &mut [LazyScope<'_>],
    measured: &HashSet<String>,
    out: &mut Extracted,
    pending: &mut Vec<(String, u32)>,
    keep_free: bool,
) {
    let line = n.start_position().row as u32 + 1;
    if let Some(chain) = dotted(f, src) {
        if let Some(q) = aliases.resolve(&chain) {
            if framework_of(&q).is_some() {
                out.calls.push((q, line));
            }
            return;
        }
        if keep_free {
            out.free_calls.push((chain.clone(), line));
        }
        let Some((head, method)) = chain.rsplit_once('.') else { return };
        // A local name of a function (innermost binding wins).
        let ty = if head.contains('.') { None } else { local_type(head, scopes, src, aliases, fw) };
        match ty {
            Some(t) => out.calls.push((format!("{t}.{method}"), line)),
            _ if measured.contains(method) => pending.push((format!("?.{method}"), line)),
            _ => {}
        }
        return;
    }
    // A method of some other expression: clear only for a framework call's result.
    if f.kind() == "attribute"
        && let (Some(obj), Some(attr)) = (f.child_by_field_name("object"), f.child_by_field_name("attribute"))
    {
        let method = text(attr, src);
        let ty = if obj.kind() == "call" { receiver(obj, src, aliases) } else { None };
        match ty {
            Some(t) => out.calls.push((format!("{t}.{method}"), line)),
            None if measured.contains(method) => pending.push((format!("?.{method}"), line)),
            None => {}
        }
    }
}
