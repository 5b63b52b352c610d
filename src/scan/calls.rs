//! Framework calls in a parsed Python module (Ruff's syntax tree, `ruff_python_ast`): the
//! import statements that bind names, then every call whose callee resolves through them to
//! a torch, tensorflow, jax or numpy name, with its line.
//!
//! Rules:
//! - A callee is a dotted chain of names (`F.conv2d`, `torch.nn.functional.conv2d`); its
//!   first name resolves through the file's imports ([`super::imports::Aliases`]), unless an
//!   enclosing function binds that name itself (a parameter or assignment shadows the import).
//! - A bare decorator (`@jax.jit`, `@torch.no_grad` without parentheses) counts as a call.
//! - A method call is attributed only when the receiver is clearly a framework object: a
//!   direct call of a framework array function or class (`torch.zeros(3).argsort()` →
//!   `torch.Tensor.argsort`; `nn.Linear(2, 2).forward(x)` → `torch.nn.Linear.forward`), or
//!   a function's local name that every binding in that function binds to such a call, or
//!   whose annotation names a framework array type (`x: torch.Tensor`; not a class such as
//!   `nn.Module`, whose subclasses add methods of their own). Module-level names are never
//!   tracked: any function may rebind them.
//! - Other method calls whose name is one mlport measures (`x.argsort()`) are listed as
//!   unresolved (`?.argsort`), never guessed, within top-level statements that use a
//!   framework name.
//! - With a star import, calls of names the file does not define are kept for the caller to
//!   resolve against the star-imported module.

use std::collections::{HashMap, HashSet};

use ruff_python_ast::statement_visitor::{StatementVisitor, walk_stmt as walk_statement};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Decorator, Expr, ExprCall, Pattern, Stmt, StmtFunctionDef};
use ruff_source_file::LineIndex;
use ruff_text_size::{Ranged, TextRange};

use super::imports::{Aliases, framework_of, resolve_relative};
use crate::model::Framework;

/// Runs one level of a recursive walk over a syntax tree, moving to a stack on the heap when
/// little of the thread's stack is left: trees are as deep as the code's nesting, and a long
/// `a + b + …` chain or `x.a.a.a…` is a deep tree (see [`super::source::MAX_DEPTH`]).
pub(crate) fn deeper<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(128 * 1024, 4 * 1024 * 1024, f)
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

/// `a.b.c` for a name or an attribute chain of names; `None` otherwise.
fn dotted(e: &Expr) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    let mut cur = e;
    loop {
        match cur {
            Expr::Name(n) => break parts.push(n.id.as_str()),
            Expr::Attribute(a) => {
                parts.push(a.attr.id.as_str());
                cur = &a.value;
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

/// The imports of a module: every `import` and `from ... import` statement anywhere in it
/// (function bodies, `try` blocks, class bodies). `module` is the file's module path (for
/// relative imports), `is_package` true for an `__init__.py`; `lines` gives a star import's
/// line.
pub fn collect_imports(body: &[Stmt], lines: &LineIndex, module: Option<&[String]>, is_package: bool) -> Aliases {
    struct Imports<'m> {
        aliases: Aliases,
        lines: &'m LineIndex,
        module: Option<&'m [String]>,
        is_package: bool,
    }
    impl<'a> StatementVisitor<'a> for Imports<'_> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::Import(i) => {
                    for a in &i.names {
                        self.aliases.add_import(a.name.as_str(), a.asname.as_ref().map(|n| n.as_str()));
                    }
                }
                Stmt::ImportFrom(i) => {
                    let name = i.module.as_ref().map_or("", |m| m.as_str());
                    let resolved = if i.level > 0 {
                        resolve_relative(self.module, self.is_package, i.level as usize, name)
                    } else {
                        Some(name.to_string())
                    };
                    for a in &i.names {
                        if a.name.as_str() == "*" {
                            if let Some(r) = &resolved {
                                self.aliases.stars.push((r.clone(), line(self.lines, stmt.range())));
                            }
                        } else {
                            self.aliases.add_from(
                                resolved.as_deref(),
                                a.name.as_str(),
                                a.asname.as_ref().map(|n| n.as_str()),
                            );
                        }
                    }
                }
                _ => deeper(|| walk_statement(self, stmt)),
            }
        }
    }
    let mut v = Imports { aliases: Aliases::default(), lines, module, is_package };
    v.visit_body(body);
    v.aliases
}

/// The 1-based line a node starts on.
fn line(lines: &LineIndex, range: TextRange) -> u32 {
    lines.line_index(range.start()).get() as u32
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
                Framework::Onnxruntime | Framework::KerasJax | Framework::KerasTorch | Framework::KerasTensorflow => {
                    return None;
                }
            }
            .to_string(),
        );
    }
    None
}

/// An annotation that names a framework array type (`torch.Tensor`, `np.ndarray`, `jax.Array`,
/// `tf.Tensor`, `tf.Variable`); a string annotation (`"torch.Tensor"`) is not read. Other classes
/// (`nn.Module`) are not: an annotation names a base class, and the object's own methods
/// (`model.load_pretrained()` on a `model: nn.Module`) are not the framework's.
fn annotation_type(e: &Expr, aliases: &Aliases) -> Option<String> {
    let q = aliases.resolve(&dotted(e)?)?;
    framework_of(&q)?;
    let last = q.rsplit('.').next()?;
    ARRAY_TYPES.contains(&last).then_some(q)
}

/// The last name of the framework array types an annotation can give a local.
const ARRAY_TYPES: [&str; 4] = ["Tensor", "ndarray", "Array", "Variable"];

/// What a call expression returns, when it is clearly a framework object.
fn receiver(call: &ExprCall, aliases: &Aliases) -> Option<String> {
    returns(&aliases.resolve(&dotted(&call.func)?)?)
}

/// A local name's type in a function: `Some(T)` when every binding agrees, `None` unknown.
type Scope = HashMap<String, Option<String>>;

/// The local names of a function and what they hold: parameters (typed by annotation), and
/// every name the body binds (assignment, `for`, `with … as`, `except … as`, `:=`, match
/// captures, `nonlocal`, nested `def`/`class`; not a `global` name), not looking into nested functions,
/// classes and lambdas. A name is typed when each of its bindings gives the same framework
/// type: an assignment of a framework array call or class (`x = torch.zeros(3)`), or an
/// annotation (`x: torch.Tensor = f()`); any other binding makes it unknown.
struct ScopeBuilder<'a> {
    scope: Scope,
    aliases: &'a Aliases,
    /// Names a `global` statement declares: the module's, not locals.
    globals: HashSet<String>,
}

impl ScopeBuilder<'_> {
    fn bind(&mut self, name: &str, ty: Option<String>) {
        match self.scope.get_mut(name) {
            Some(existing) => {
                if *existing != ty {
                    *existing = None;
                }
            }
            None => {
                self.scope.insert(name.to_string(), ty);
            }
        }
    }

    /// Marks every name a binding target binds as unknown (`a.b = …` and `a[i] = …` bind none).
    fn bind_unknown(&mut self, target: &Expr) {
        target_names(target, &mut |n| self.bind(n, None));
    }

    /// The type one assignment of `value` to `target` gives.
    fn assign(&mut self, target: &Expr, value: Option<&Expr>) {
        match target {
            Expr::Name(n) => {
                let ty = match value {
                    Some(Expr::Call(c)) => receiver(c, self.aliases),
                    _ => None,
                };
                self.bind(n.id.as_str(), ty);
            }
            _ => self.bind_unknown(target),
        }
    }

    fn function(f: &StmtFunctionDef, aliases: &Aliases) -> Scope {
        let mut b = ScopeBuilder { scope: Scope::new(), aliases, globals: HashSet::new() };
        let p = &f.parameters;
        for pd in p.iter_non_variadic_params() {
            let ty = pd.parameter.annotation.as_deref().and_then(|a| annotation_type(a, aliases));
            b.bind(pd.parameter.name.as_str(), ty);
        }
        for star in [&p.vararg, &p.kwarg].into_iter().flatten() {
            b.bind(star.name.as_str(), None);
        }
        b.visit_body(&f.body);
        for g in &b.globals {
            b.scope.remove(g);
        }
        b.scope
    }
}

impl<'a> Visitor<'a> for ScopeBuilder<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => return self.bind(f.name.as_str(), None),
            Stmt::ClassDef(c) => return self.bind(c.name.as_str(), None),
            Stmt::Assign(a) => a.targets.iter().for_each(|t| self.assign(t, Some(&a.value))),
            Stmt::AnnAssign(a) => match &*a.target {
                Expr::Name(n) => {
                    let ty = annotation_type(&a.annotation, self.aliases);
                    self.bind(n.id.as_str(), ty);
                }
                t => self.bind_unknown(t),
            },
            Stmt::For(f) => self.bind_unknown(&f.target),
            Stmt::With(w) => {
                w.items.iter().filter_map(|i| i.optional_vars.as_deref()).for_each(|t| self.bind_unknown(t))
            }
            Stmt::Try(t) => {
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(n) = &h.name {
                        self.bind(n.as_str(), None);
                    }
                }
            }
            Stmt::Global(g) => self.globals.extend(g.names.iter().map(|n| n.to_string())),
            Stmt::Nonlocal(g) => g.names.iter().for_each(|n| self.bind(n.as_str(), None)),
            _ => {}
        }
        deeper(|| visitor::walk_stmt(self, stmt));
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Lambda(_) => return,
            Expr::Named(n) => self.assign(&n.target, Some(&n.value)),
            _ => {}
        }
        deeper(|| visitor::walk_expr(self, expr));
    }

    fn visit_pattern(&mut self, p: &'a Pattern) {
        let name = match p {
            Pattern::MatchAs(m) => m.name.as_ref(),
            Pattern::MatchStar(m) => m.name.as_ref(),
            Pattern::MatchMapping(m) => m.rest.as_ref(),
            _ => None,
        };
        if let Some(n) = name {
            self.bind(n.as_str(), None);
        }
        deeper(|| visitor::walk_pattern(self, p));
    }
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
    /// The function; `None` for a lambda's or a comprehension's scope, whose names (all of
    /// unknown type) are known from the start.
    node: Option<&'t StmtFunctionDef>,
    scope: Option<Scope>,
}

/// Calls `name` with each name a binding target binds (`a`, `a, *b`, `[a, (b, c)]`); `a.b = …`
/// and `a[i] = …` bind none.
fn target_names(target: &Expr, name: &mut impl FnMut(&str)) {
    match target {
        Expr::Name(n) => name(n.id.as_str()),
        Expr::Tuple(t) => t.elts.iter().for_each(|e| target_names(e, name)),
        Expr::List(l) => l.elts.iter().for_each(|e| target_names(e, name)),
        Expr::Starred(st) => target_names(&st.value, name),
        _ => {}
    }
}

/// The walk of one module's statements that finds the calls.
struct Extractor<'t, 'x> {
    aliases: &'x Aliases,
    lines: &'x LineIndex,
    /// Where the source names a framework-bound name as a word.
    uses: &'x [u32],
    measured: &'x HashSet<String>,
    keep_free: bool,
    scopes: Vec<LazyScope<'t>>,
    defined: HashSet<String>,
    /// Unresolved method calls of the current top-level statement.
    pending: Vec<(String, u32)>,
    out: Extracted,
}

impl<'t> Visitor<'t> for Extractor<'t, '_> {
    fn visit_stmt(&mut self, stmt: &'t Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => {
                if self.keep_free {
                    self.defined.insert(f.name.to_string());
                }
                // Decorators, defaults, annotations belong to the enclosing scope.
                for d in &f.decorator_list {
                    self.visit_decorator(d);
                }
                if let Some(tp) = &f.type_params {
                    self.visit_type_params(tp);
                }
                self.visit_parameters(&f.parameters);
                if let Some(r) = &f.returns {
                    self.visit_annotation(r);
                }
                self.scopes.push(LazyScope { node: Some(f), scope: None });
                deeper(|| self.visit_body(&f.body));
                self.scopes.pop();
                return;
            }
            Stmt::ClassDef(c) if self.keep_free => {
                self.defined.insert(c.name.to_string());
            }
            Stmt::Assign(a) if self.keep_free => {
                for t in &a.targets {
                    if let Expr::Name(n) = t {
                        self.defined.insert(n.id.to_string());
                    }
                }
            }
            Stmt::AnnAssign(a) if self.keep_free => {
                if let Expr::Name(n) = &*a.target {
                    self.defined.insert(n.id.to_string());
                }
            }
            _ => {}
        }
        deeper(|| visitor::walk_stmt(self, stmt));
    }

    fn visit_decorator(&mut self, d: &'t Decorator) {
        if let Some(q) = dotted(&d.expression).and_then(|c| self.aliases.resolve(&c))
            && framework_of(&q).is_some()
        {
            self.out.calls.push((q, line(self.lines, d.range())));
        }
        visitor::walk_decorator(self, d);
    }

    fn visit_expr(&mut self, expr: &'t Expr) {
        match expr {
            Expr::Call(c) => self.call(c),
            // A lambda's parameters are its own locals; its defaults belong to the enclosing scope.
            Expr::Lambda(l) => {
                let mut scope = Scope::new();
                if let Some(p) = &l.parameters {
                    for pd in p.iter_non_variadic_params() {
                        if let Some(d) = &pd.default {
                            self.visit_expr(d);
                        }
                        scope.insert(pd.parameter.name.to_string(), None);
                    }
                    for star in [&p.vararg, &p.kwarg].into_iter().flatten() {
                        scope.insert(star.name.to_string(), None);
                    }
                }
                self.scopes.push(LazyScope { node: None, scope: Some(scope) });
                deeper(|| self.visit_expr(&l.body));
                self.scopes.pop();
                return;
            }
            // A comprehension's targets are its own locals; its first iterable is evaluated in
            // the enclosing scope.
            Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_) => {
                let (generators, elts): (&[ruff_python_ast::Comprehension], Vec<&Expr>) = match expr {
                    Expr::ListComp(c) => (&c.generators, vec![&*c.elt]),
                    Expr::SetComp(c) => (&c.generators, vec![&*c.elt]),
                    Expr::Generator(c) => (&c.generators, vec![&*c.elt]),
                    // `{**d for …}` has no key (PEP 798).
                    Expr::DictComp(c) => (&c.generators, c.key.iter().map(|k| &**k).chain([&*c.value]).collect()),
                    _ => unreachable!("matched above"),
                };
                let mut scope = Scope::new();
                for g in generators {
                    target_names(&g.target, &mut |n| {
                        scope.insert(n.to_string(), None);
                    });
                }
                if let Some(first) = generators.first() {
                    self.visit_expr(&first.iter);
                }
                self.scopes.push(LazyScope { node: None, scope: Some(scope) });
                deeper(|| {
                    for (k, g) in generators.iter().enumerate() {
                        if k > 0 {
                            self.visit_expr(&g.iter);
                        }
                        g.ifs.iter().for_each(|e| self.visit_expr(e));
                    }
                    elts.into_iter().for_each(|e| self.visit_expr(e));
                });
                self.scopes.pop();
                return;
            }
            _ => {}
        }
        deeper(|| visitor::walk_expr(self, expr));
    }
}

impl Extractor<'_, '_> {
    /// How the innermost enclosing function that binds `name` binds it: `Some(Some(T))` a local
    /// of framework type `T`, `Some(None)` a local of unknown type, `None` not a local of any
    /// enclosing function (a module-level or imported name).
    fn binding(&mut self, name: &str) -> Option<Option<String>> {
        let (aliases, uses) = (self.aliases, self.uses);
        for s in self.scopes.iter_mut().rev() {
            let scope = s.scope.get_or_insert_with(|| match s.node {
                // Without a framework-bound name in its text, a function binds none of them and
                // types nothing.
                Some(f) if marked(uses, f.range().to_std_range()) => ScopeBuilder::function(f, aliases),
                _ => Scope::new(),
            });
            if let Some(t) = scope.get(name) {
                return Some(t.clone());
            }
        }
        None
    }

    /// The type of local `name` in the innermost function that binds it.
    fn local_type(&mut self, name: &str) -> Option<String> {
        if name == "self" || name == "cls" {
            return None;
        }
        self.binding(name).flatten()
    }

    fn call(&mut self, c: &ExprCall) {
        let line = line(self.lines, c.range());
        if let Some(chain) = dotted(&c.func) {
            if let Some(q) = self.aliases.resolve(&chain) {
                // A function's own local of that name (`config = open(f)` beside `from numpy
                // import config`) is not the import.
                let root = chain.split('.').next().unwrap_or(&chain);
                if framework_of(&q).is_none() {
                    return;
                }
                if self.binding(root).is_none() {
                    self.out.calls.push((q, line));
                    return;
                }
            }
            if self.keep_free {
                self.out.free_calls.push((chain.clone(), line));
            }
            let Some((head, method)) = chain.rsplit_once('.') else { return };
            // A local name of a function (innermost binding wins).
            let ty = if head.contains('.') { None } else { self.local_type(head) };
            match ty {
                Some(t) => self.out.calls.push((format!("{t}.{method}"), line)),
                _ if self.measured.contains(method) => self.pending.push((format!("?.{method}"), line)),
                _ => {}
            }
            return;
        }
        // A method of some other expression: clear only for a framework call's result.
        if let Expr::Attribute(a) = &*c.func {
            let method = a.attr.as_str();
            let ty = match &*a.value {
                Expr::Call(inner) => receiver(inner, self.aliases),
                _ => None,
            };
            match ty {
                Some(t) => self.out.calls.push((format!("{t}.{method}"), line)),
                None if self.measured.contains(method) => self.pending.push((format!("?.{method}"), line)),
                None => {}
            }
        }
    }
}

/// The framework calls of a parsed module under `aliases` (from [`collect_imports`]).
/// `uses` holds where the source names a framework-bound name as a word, in order
/// ([`super::source::word_positions`]); `measured` the method names worth listing as
/// unresolved.
pub fn extract(
    body: &[Stmt],
    lines: &LineIndex,
    aliases: &Aliases,
    uses: &[u32],
    measured: &HashSet<String>,
) -> Extracted {
    let mut x = Extractor {
        aliases,
        lines,
        uses,
        measured,
        keep_free: !aliases.stars.is_empty(),
        scopes: Vec::new(),
        defined: HashSet::new(),
        pending: Vec::new(),
        out: Extracted::default(),
    };
    for stmt in body {
        x.pending.clear();
        x.visit_stmt(stmt);
        // Unresolved calls count only in statements that use a framework name.
        if !x.pending.is_empty() && marked(uses, stmt.range().to_std_range()) {
            x.out.unresolved.append(&mut x.pending);
        }
    }
    let mut out = x.out;
    if x.keep_free {
        out.free_calls.retain(|(chain, _)| {
            let root = chain.split('.').next().unwrap_or(chain);
            !x.defined.contains(root) && !BUILTINS.contains(&root)
        });
    }
    out
}

/// A `TextRange` as a byte range.
trait ToStd {
    fn to_std_range(self) -> std::ops::Range<usize>;
}

impl ToStd for TextRange {
    fn to_std_range(self) -> std::ops::Range<usize> {
        self.start().to_usize()..self.end().to_usize()
    }
}

/// Whether a sorted list of positions has one in `range`.
pub fn marked(marks: &[u32], range: std::ops::Range<usize>) -> bool {
    let i = marks.partition_point(|&p| (p as usize) < range.start);
    marks.get(i).is_some_and(|&p| (p as usize) < range.end)
}
