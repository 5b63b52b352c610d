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
use std::sync::OnceLock;

use tree_sitter::{Node, Tree};

use super::imports::{Aliases, framework_of, resolve_relative};
use super::source::marked;
use crate::model::Framework;

/// The node kinds the extraction tells apart (every other kind is `Other`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum K {
    Other,
    Identifier,
    Attribute,
    ImportStatement,
    DottedName,
    AliasedImport,
    ImportFromStatement,
    Call,
    ExpressionStatement,
    String,
    ReturnStatement,
    RelativeImport,
    ImportPrefix,
    WildcardImport,
    Type,
    TypedParameter,
    TypedDefaultParameter,
    FunctionDefinition,
    ClassDefinition,
    Lambda,
    Assignment,
    ForStatement,
    ForInClause,
    AsPattern,
    NamedExpression,
    GlobalStatement,
    NonlocalStatement,
    Decorator,
    Subscript,
}

/// tree-sitter-python's ids of those kinds and of the fields read, looked up once: comparing
/// ids is cheaper than comparing kind names, and a field lookup by name scans every name.
struct Ids {
    /// Kind of each kind id (several ids may share a name).
    kinds: Vec<K>,
    alias: u16,
    attribute: u16,
    body: u16,
    function: u16,
    left: u16,
    module_name: u16,
    name: u16,
    object: u16,
    parameters: u16,
    right: u16,
    r#type: u16,
}

fn ids() -> &'static Ids {
    static IDS: OnceLock<Ids> = OnceLock::new();
    IDS.get_or_init(|| {
        let lang: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
        let kinds = (0..lang.node_kind_count() as u16)
            .map(|id| match lang.node_kind_for_id(id).unwrap_or("") {
                "identifier" => K::Identifier,
                "attribute" => K::Attribute,
                "import_statement" => K::ImportStatement,
                "dotted_name" => K::DottedName,
                "aliased_import" => K::AliasedImport,
                "import_from_statement" => K::ImportFromStatement,
                "call" => K::Call,
                "expression_statement" => K::ExpressionStatement,
                "string" => K::String,
                "return_statement" => K::ReturnStatement,
                "relative_import" => K::RelativeImport,
                "import_prefix" => K::ImportPrefix,
                "wildcard_import" => K::WildcardImport,
                "type" => K::Type,
                "typed_parameter" => K::TypedParameter,
                "typed_default_parameter" => K::TypedDefaultParameter,
                "function_definition" => K::FunctionDefinition,
                "class_definition" => K::ClassDefinition,
                "lambda" => K::Lambda,
                "assignment" => K::Assignment,
                "for_statement" => K::ForStatement,
                "for_in_clause" => K::ForInClause,
                "as_pattern" => K::AsPattern,
                "named_expression" => K::NamedExpression,
                "global_statement" => K::GlobalStatement,
                "nonlocal_statement" => K::NonlocalStatement,
                "decorator" => K::Decorator,
                "subscript" => K::Subscript,
                _ => K::Other,
            })
            .collect();
        let field = |name: &str| lang.field_id_for_name(name).map_or(0, |f| f.get());
        Ids {
            kinds,
            alias: field("alias"),
            attribute: field("attribute"),
            body: field("body"),
            function: field("function"),
            left: field("left"),
            module_name: field("module_name"),
            name: field("name"),
            object: field("object"),
            parameters: field("parameters"),
            right: field("right"),
            r#type: field("type"),
        }
    })
}

/// The kind of a node.
fn kind(n: Node<'_>) -> K {
    ids().kinds.get(n.kind_id() as usize).copied().unwrap_or(K::Other)
}

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
    let mut parts: Vec<&str> = Vec::new();
    let mut cur = n;
    loop {
        match kind(cur) {
            K::Identifier => break parts.push(text(cur, src)),
            K::Attribute => {
                let obj = cur.child_by_field_id(ids().object)?;
                parts.push(text(cur.child_by_field_id(ids().attribute)?, src));
                cur = obj;
            }
            _ => return None,
        }
    }
    let mut out = String::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for (i, p) in parts.iter().rev().enumerate() {
        if i > 0 {
            out.push('.');
        }
        out.push_str(p);
    }
    Some(out)
}

/// Visits every node below `root` in document order without recursion (trees of long
/// expressions are deep): `visit(node, true)` on entering, returning false to skip the
/// node's children, and `visit(node, false)` on leaving it.
fn walk<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>, bool) -> bool) {
    let mut cursor = root.walk();
    let mut descend = visit(root, true);
    // How far below `root` the cursor is (cheaper than comparing nodes).
    let mut depth = 0usize;
    loop {
        if descend && cursor.goto_first_child() {
            depth += 1;
            descend = visit(cursor.node(), true);
            continue;
        }
        // No (more) children: leave this node, then move to a sibling or climb.
        loop {
            visit(cursor.node(), false);
            if depth == 0 {
                return;
            }
            if cursor.goto_next_sibling() {
                descend = visit(cursor.node(), true);
                break;
            }
            cursor.goto_parent();
            depth -= 1;
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
            && match kind(n) {
                K::ImportStatement => {
                    let mut c = n.walk();
                    for child in n.named_children(&mut c) {
                        match kind(child) {
                            K::DottedName => aliases.add_import(text(child, src), None),
                            K::AliasedImport => {
                                if let (Some(name), Some(alias)) =
                                    (child.child_by_field_id(ids().name), child.child_by_field_id(ids().alias))
                                {
                                    aliases.add_import(text(name, src), Some(text(alias, src)));
                                }
                            }
                            _ => {}
                        }
                    }
                    false
                }
                K::ImportFromStatement => {
                    from_import(n, src, module, is_package, &mut aliases);
                    false
                }
                // Expressions hold no import statements; statements and blocks may.
                K::Call | K::ExpressionStatement | K::String | K::ReturnStatement => false,
                _ => true,
            }
    });
    aliases
}

fn from_import(n: Node<'_>, src: &[u8], module: Option<&[String]>, is_package: bool, aliases: &mut Aliases) {
    let Some(m) = n.child_by_field_id(ids().module_name) else { return };
    let resolved = match kind(m) {
        K::RelativeImport => {
            let mut c = m.walk();
            let mut dots = 0;
            let mut rest = "";
            for child in m.named_children(&mut c) {
                match kind(child) {
                    K::ImportPrefix => dots = text(child, src).trim().len(),
                    K::DottedName => rest = text(child, src),
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
        match kind(child) {
            K::WildcardImport => {
                if let Some(r) = &resolved {
                    aliases.stars.push((r.clone(), n.start_position().row as u32 + 1));
                }
            }
            K::DottedName => aliases.add_from(resolved.as_deref(), text(child, src), None),
            K::AliasedImport => {
                if let (Some(name), Some(alias)) =
                    (child.child_by_field_id(ids().name), child.child_by_field_id(ids().alias))
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
    let n = if kind(n) == K::Type { n.named_child(0)? } else { n };
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
        if kind(n) == K::Identifier {
            bind(scope, text(n, src), None);
        }
        // `a.b = ...` and `a[i] = ...` bind nothing.
        !matches!(kind(n), K::Attribute | K::Subscript)
    });
}

/// The local names of a function and what they hold.
fn function_scope(f: Node<'_>, src: &[u8], aliases: &Aliases) -> Scope {
    let mut scope = Scope::new();
    if let Some(params) = f.child_by_field_id(ids().parameters) {
        let mut c = params.walk();
        for p in params.named_children(&mut c) {
            match kind(p) {
                K::Identifier => bind(&mut scope, text(p, src), None),
                K::TypedParameter | K::TypedDefaultParameter => {
                    let name = match kind(p) {
                        K::TypedParameter => p.named_child(0),
                        _ => p.child_by_field_id(ids().name),
                    };
                    let ty = p.child_by_field_id(ids().r#type).and_then(|t| annotation_type(t, src, aliases));
                    if let Some(name) = name.filter(|n| kind(*n) == K::Identifier) {
                        bind(&mut scope, text(name, src), ty);
                    } else if let Some(name) = name {
                        bind_unknown(&mut scope, name, src);
                    }
                }
                _ => bind_unknown(&mut scope, p, src),
            }
        }
    }
    let Some(body) = f.child_by_field_id(ids().body) else { return scope };
    walk(body, |n, enter| {
        enter
            && match kind(n) {
                K::FunctionDefinition | K::ClassDefinition | K::Lambda => false,
                K::Assignment => {
                    if let Some(left) = n.child_by_field_id(ids().left) {
                        if kind(left) == K::Identifier {
                            let ty = match (n.child_by_field_id(ids().r#type), n.child_by_field_id(ids().right)) {
                                (Some(t), _) => annotation_type(t, src, aliases),
                                (None, Some(r)) if kind(r) == K::Call => receiver(r, src, aliases),
                                _ => None,
                            };
                            bind(&mut scope, text(left, src), ty);
                        } else {
                            bind_unknown(&mut scope, left, src);
                        }
                    }
                    true
                }
                K::ForStatement | K::ForInClause => {
                    if let Some(left) = n.child_by_field_id(ids().left) {
                        bind_unknown(&mut scope, left, src);
                    }
                    true
                }
                K::AsPattern => {
                    if let Some(alias) = n.child_by_field_id(ids().alias) {
                        bind_unknown(&mut scope, alias, src);
                    }
                    true
                }
                K::NamedExpression => {
                    if let Some(name) = n.child_by_field_id(ids().name) {
                        bind_unknown(&mut scope, name, src);
                    }
                    true
                }
                K::GlobalStatement | K::NonlocalStatement => {
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
    let f = call.child_by_field_id(ids().function)?;
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
/// `uses` holds where `src` names a framework-bound name as a word, in order
/// ([`super::source::word_positions`]); `measured` the method names worth listing as
/// unresolved.
pub fn extract(tree: &Tree, src: &[u8], aliases: &Aliases, uses: &[u32], measured: &HashSet<String>) -> Extracted {
    let mut out = Extracted::default();
    let mut scopes: Vec<LazyScope<'_>> = Vec::new();
    let mut defined: HashSet<String> = HashSet::new();
    let mut pending: Vec<(String, u32)> = Vec::new();
    let root = tree.root_node();
    let keep_free = !aliases.stars.is_empty();
    let line = |n: Node<'_>| n.start_position().row as u32 + 1;
    let marks: Vec<u32> = memchr::memchr2_iter(b'(', b'@', src).map(|p| p as u32).collect();
    let mut statements = root.walk();
    for stmt in root.named_children(&mut statements) {
        pending.clear();
        walk(stmt, |n, enter| {
            if !enter {
                if kind(n) == K::FunctionDefinition {
                    scopes.pop();
                }
                return true;
            }
            match kind(n) {
                K::FunctionDefinition => {
                    if keep_free && let Some(name) = n.child_by_field_id(ids().name) {
                        defined.insert(text(name, src).to_string());
                    }
                    scopes.push(LazyScope { node: n, scope: None });
                }
                K::ClassDefinition if keep_free => {
                    if let Some(name) = n.child_by_field_id(ids().name) {
                        defined.insert(text(name, src).to_string());
                    }
                }
                K::Assignment if keep_free => {
                    if let Some(left) = n.child_by_field_id(ids().left).filter(|l| kind(*l) == K::Identifier) {
                        defined.insert(text(left, src).to_string());
                    }
                }
                K::Decorator => {
                    if let Some(e) = n.named_child(0)
                        && let Some(q) = dotted(e, src).and_then(|d| aliases.resolve(&d))
                        && framework_of(&q).is_some()
                    {
                        out.calls.push((q, line(n)));
                    }
                }
                K::Call => {
                    if let Some(f) = n.child_by_field_id(ids().function) {
                        call(f, n, src, aliases, uses, &mut scopes, measured, &mut out, &mut pending, keep_free);
                    }
                }
                // A subtree without `(` or `@` holds no call, decorator or function.
                _ if !keep_free && n.child_count() > 0 => return marked(&marks, n.byte_range()),
                _ => {}
            }
            true
        });
        // Unresolved calls count only in statements that use a framework name.
        if !pending.is_empty() && marked(uses, stmt.byte_range()) {
            out.unresolved.append(&mut pending);
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
fn local_type(name: &str, scopes: &mut [LazyScope<'_>], src: &[u8], aliases: &Aliases, uses: &[u32]) -> Option<String> {
    if name == "self" || name == "cls" {
        return None;
    }
    for s in scopes.iter_mut().rev() {
        let scope = s.scope.get_or_insert_with(|| {
            // Without a framework name in its text, nothing in a function is typed.
            if marked(uses, s.node.byte_range()) { function_scope(s.node, src, aliases) } else { Scope::new() }
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
    uses: &[u32],
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
        let ty = if head.contains('.') { None } else { local_type(head, scopes, src, aliases, uses) };
        match ty {
            Some(t) => out.calls.push((format!("{t}.{method}"), line)),
            _ if measured.contains(method) => pending.push((format!("?.{method}"), line)),
            _ => {}
        }
        return;
    }
    // A method of some other expression: clear only for a framework call's result.
    if kind(f) == K::Attribute
        && let (Some(obj), Some(attr)) = (f.child_by_field_id(ids().object), f.child_by_field_id(ids().attribute))
    {
        let method = text(attr, src);
        let ty = if kind(obj) == K::Call { receiver(obj, src, aliases) } else { None };
        match ty {
            Some(t) => out.calls.push((format!("{t}.{method}"), line)),
            None if measured.contains(method) => pending.push((format!("?.{method}"), line)),
            None => {}
        }
    }
}
