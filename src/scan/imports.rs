//! Import resolution: which local names a Python file binds to framework modules and
//! objects (`import torch as t`, `from torch import nn`, `from jax import numpy as jnp`,
//! `import tensorflow.compat.v1 as tf`, relative imports resolved against the file's
//! package), and the one canonical spelling of a framework function name shared by the
//! scanner, the catalogue and the store (`tf.linalg.svd` ≡ `tensorflow.linalg.svd`).
//!
//! Imports are flow-insensitive: an import anywhere in a file (a function body, a `try`
//! block) binds its name for the whole file, as a reader skimming the file would assume.

use std::collections::HashMap;

use crate::model::Framework;

/// The top-level module of each framework, as code imports it.
pub const ROOTS: [(&str, Framework); 4] = [
    ("torch", Framework::Torch),
    ("tensorflow", Framework::Tensorflow),
    ("jax", Framework::Jax),
    ("numpy", Framework::Numpy),
];

/// The abbreviations mlport's catalogue (and the field) uses for framework modules,
/// rewritten by [`canonical`] to the module they stand for.
const ABBREVIATIONS: [(&str, &str); 4] =
    [("tf", "tensorflow"), ("jnp", "jax.numpy"), ("np", "numpy"), ("pytorch", "torch")];

/// The framework a fully qualified name belongs to, by its first component (after
/// [`canonical`]); `None` for anything else.
pub fn framework_of(qualified: &str) -> Option<Framework> {
    let first = qualified.split('.').next().unwrap_or("");
    ROOTS.iter().find(|(r, _)| *r == first).map(|(_, f)| *f)
}

/// The canonical spelling of a framework function name: the abbreviated module prefixes
/// `tf.`, `jnp.`, `np.` (and `pytorch.`) become `tensorflow.`, `jax.numpy.`, `numpy.`
/// (`torch.`); every other name is returned unchanged. Scanned calls, catalogue names and
/// stored function names all pass through here before they are compared.
pub fn canonical(name: &str) -> String {
    for (short, long) in ABBREVIATIONS {
        if name == short {
            return long.to_string();
        }
        if let Some(rest) = name.strip_prefix(short).and_then(|r| r.strip_prefix('.')) {
            return format!("{long}.{rest}");
        }
    }
    name.to_string()
}

/// The names a file binds by importing, with what they stand for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Aliases {
    /// Local name → fully qualified module or object (`F` → `torch.nn.functional`).
    pub names: HashMap<String, String>,
    /// Modules star-imported (`from torch.nn.functional import *`), resolved, with the line.
    pub stars: Vec<(String, u32)>,
}

impl Aliases {
    /// The qualified name a dotted chain stands for, when its first name is bound by an
    /// import: `F.conv2d` → `torch.nn.functional.conv2d`.
    pub fn resolve(&self, chain: &str) -> Option<String> {
        let (root, rest) = match chain.split_once('.') {
            Some((r, rest)) => (r, Some(rest)),
            None => (chain, None),
        };
        let base = self.names.get(root)?;
        Some(match rest {
            Some(rest) => format!("{base}.{rest}"),
            None => base.clone(),
        })
    }

    /// The local names bound to a framework module or object.
    pub fn framework_names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().filter(|(_, q)| framework_of(q).is_some()).map(|(n, _)| n.as_str())
    }

    /// `import a.b.c [as d]`: without `as`, binds `a` to `a`.
    pub fn add_import(&mut self, module: &str, alias: Option<&str>) {
        match alias {
            Some(a) => self.names.insert(a.to_string(), module.to_string()),
            None => {
                let root = module.split('.').next().unwrap_or(module);
                self.names.insert(root.to_string(), root.to_string())
            }
        };
    }

    /// `from MODULE import name [as alias]`, where `module` is already resolved to an
    /// absolute name (see [`resolve_relative`]); `None` when a relative import cannot be
    /// resolved, which binds the name to nothing known (it is removed).
    pub fn add_from(&mut self, module: Option<&str>, name: &str, alias: Option<&str>) {
        let local = alias.unwrap_or(name).to_string();
        match module {
            Some(m) => self.names.insert(local, format!("{m}.{name}")),
            None => self.names.remove(&local),
        };
    }
}

/// Resolves the module of `from .x import y` (`dots` leading dots, `rest` the dotted name
/// after them, possibly empty) for a file whose module is `module` (`torch.nn.modules.conv`;
/// `is_package` for an `__init__.py`, whose module is the package itself). `None` when the
/// file's module is unknown or the dots climb above its top-level package.
pub fn resolve_relative(module: Option<&[String]>, is_package: bool, dots: usize, rest: &str) -> Option<String> {
    let module = module?;
    // The package `.` stands for.
    let mut package: Vec<&str> = module.iter().map(String::as_str).collect();
    if !is_package {
        package.pop();
    }
    for _ in 1..dots {
        package.pop()?;
    }
    if package.is_empty() {
        return None;
    }
    let mut out = package.join(".");
    if !rest.is_empty() {
        out.push('.');
        out.push_str(rest);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_names() {
        assert_eq!(canonical("tf.linalg.svd"), "tensorflow.linalg.svd");
        assert_eq!(canonical("tensorflow.linalg.svd"), "tensorflow.linalg.svd");
        assert_eq!(canonical("jnp.argsort"), "jax.numpy.argsort");
        assert_eq!(canonical("np.sum"), "numpy.sum");
        assert_eq!(canonical("tf"), "tensorflow");
        assert_eq!(canonical("torch.nn.functional.conv2d"), "torch.nn.functional.conv2d");
        assert_eq!(canonical("tfx.thing"), "tfx.thing");
        assert_eq!(canonical("npx.sum"), "npx.sum");
        assert_eq!(framework_of("jax.numpy.sum"), Some(Framework::Jax));
        assert_eq!(framework_of("torchvision.ops.nms"), None);
    }

    #[test]
    fn aliases_resolve() {
        let mut a = Aliases::default();
        a.add_import("torch", Some("t"));
        a.add_import("tensorflow.compat.v1", Some("tf"));
        a.add_import("os.path", None);
        a.add_from(Some("jax"), "numpy", Some("jnp"));
        a.add_from(Some("torch"), "nn", None);
        assert_eq!(a.resolve("t.argsort").as_deref(), Some("torch.argsort"));
        assert_eq!(a.resolve("tf.placeholder").as_deref(), Some("tensorflow.compat.v1.placeholder"));
        assert_eq!(a.resolve("jnp.sum").as_deref(), Some("jax.numpy.sum"));
        assert_eq!(a.resolve("nn.functional.relu").as_deref(), Some("torch.nn.functional.relu"));
        assert_eq!(a.resolve("os.path.join").as_deref(), Some("os.path.join"));
        assert_eq!(a.resolve("x.sum"), None);
        let mut names: Vec<&str> = a.framework_names().collect();
        names.sort();
        assert_eq!(names, ["jnp", "nn", "t", "tf"]);
    }

    #[test]
    fn relative_imports() {
        let m: Vec<String> = ["torch", "nn", "modules", "conv"].iter().map(|s| s.to_string()).collect();
        assert_eq!(resolve_relative(Some(&m), false, 1, "utils").as_deref(), Some("torch.nn.modules.utils"));
        assert_eq!(resolve_relative(Some(&m), false, 2, "functional").as_deref(), Some("torch.nn.functional"));
        assert_eq!(resolve_relative(Some(&m), false, 2, "").as_deref(), Some("torch.nn"));
        assert_eq!(resolve_relative(Some(&m[..2]), true, 1, "").as_deref(), Some("torch.nn"));
        assert_eq!(resolve_relative(Some(&m), false, 5, ""), None);
        assert_eq!(resolve_relative(None, false, 1, "x"), None);
    }
}
