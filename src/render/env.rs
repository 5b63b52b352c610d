//! `mlport env` and the probe half of `mlport list`: the interpreter, each framework's
//! version (or why it is not usable) and the devices it sees, and the installed packages.

use std::collections::BTreeMap;

use super::grid::Grid;
use crate::pyenv::{FrameworkProbe, PythonEnv};

/// `python: PATH (managed)`, newline-terminated.
/// With the managed environment's stack and why it was chosen on a second line.
pub fn python_line(env: &PythonEnv) -> String {
    let mut s = format!("python: {}{}\n", env.python.display(), if env.managed { " (managed)" } else { "" });
    if let Some(c) = &env.stack {
        s.push_str(&format!("stack: {} ({}): {}\n", c.stack, c.stack.lock_path(), c.why));
    }
    s
}

/// One row per probed framework: version or `not usable: ...`, devices, interpreter.
pub fn probe_table(probes: &[FrameworkProbe]) -> String {
    let mut t = Grid::new(["framework", "version", "devices", "python"]);
    for p in probes {
        let version = match &p.version {
            Ok(v) => v.clone(),
            Err(why) => format!("not usable: {why}"),
        };
        t.push([p.framework.to_string(), version, p.devices.join(", "), p.python.clone()]);
    }
    format!("{}\n", t.table())
}

/// `packages: a==1 b==2`, newline-terminated; empty when there are none.
pub fn packages_line(packages: &BTreeMap<String, String>) -> String {
    if packages.is_empty() {
        return String::new();
    }
    let list: Vec<String> = packages.iter().map(|(k, v)| format!("{k}=={v}")).collect();
    format!("packages: {}\n", list.join(" "))
}
