//! Add-ons: packages a managed environment gets on first use of a feature, pinned beside the
//! stack's lock without moving any of its pins, so the main environment's hash (and its 7 GB
//! install) stays as it is. The table [`ADDONS`]: `ir-routes`, the export routes' converters and
//! runtimes (docs/ir-routes.md, `python/ir-routes.lock`); `models`, the model libraries the
//! workloads build from (docs/workloads.md, `python/models.lock`); `suites`, what the frameworks'
//! own test data imports (docs/suites.md, `python/suites.lock`).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use super::{MARKER, Marker, PythonEnv, installer, read_marker, run_logged, spinner};

/// The export routes' pins (`python/ir-routes.lock`): resolved with `uv pip compile` together
/// with `python/requirements.lock`, so none of them moves a framework pin.
pub const IR_ROUTES_LOCK: &str = include_str!("../../python/ir-routes.lock");

/// What the `ir-routes` add-on installs (the lock pins them and their dependencies):
/// `torch.onnx.export(dynamo=True)` needs `onnxscript`; JAX's ONNX route `jax2onnx`,
/// TensorFlow's `tf2onnx`; ONNX Runtime runs the ONNX models, IREE the StableHLO ones.
/// OpenVINO runs the `onnx_openvino` route's models.
pub const IR_ROUTE_PACKAGES: &[&str] = &[
    "onnx",
    "onnxscript",
    "onnxruntime",
    "openvino",
    "jax2onnx",
    "tf2onnx",
    "iree-base-compiler",
    "iree-base-runtime",
];

/// The workloads' model libraries (`python/models.lock`), resolved with `uv pip compile`
/// together with `python/requirements.lock`, so none of them moves a framework pin.
pub const MODELS_LOCK: &str = include_str!("../../python/models.lock");

/// What the `models` add-on installs: torchvision (ResNet-18) for torch workloads, flax
/// (`flax.linen`) for JAX ones; TensorFlow's keras comes with the main lock.
pub const MODEL_PACKAGES: &[&str] = &["torchvision", "flax"];

/// The frameworks' own test data's imports (`python/suites.lock`): expecttest for PyTorch's
/// OpInfo and ModuleInfo databases, absl-py for JAX's test harnesses (docs/suites.md).
pub const SUITES_LOCK: &str = include_str!("../../python/suites.lock");

/// One add-on: a package list pinned by a lock of its own.
#[derive(Clone, Copy, Debug)]
pub struct Addon {
    /// Its name in messages, logs (`NAME.log`) and the environment's marker.
    pub name: &'static str,
    /// What it is for, in messages.
    pub purpose: &'static str,
    /// Its lock's text (pins beyond the stack's lock).
    pub lock: &'static str,
    /// Where the lock lives in the repository, in messages.
    pub lock_path: &'static str,
    /// The top-level packages installed (the lock pins them and their dependencies).
    pub packages: &'static [&'static str],
    /// The Python modules it provides: a catalogue case whose code imports one needs the add-on
    /// ([`Addon::needed_by`]).
    pub modules: &'static [&'static str],
    /// About how much it downloads, in messages.
    pub size: &'static str,
}

/// The export routes' converters and runtimes (needed by route targets and the onnxruntime
/// framework; `modules` is empty because the worker's route code, not case code, imports them).
pub const IR_ROUTES: Addon = Addon {
    name: "ir-routes",
    purpose: "the export routes' converters and runtimes",
    lock: IR_ROUTES_LOCK,
    lock_path: "python/ir-routes.lock",
    packages: IR_ROUTE_PACKAGES,
    modules: &[],
    size: "about 300 MB of wheels",
};

/// The workloads' model libraries.
pub const MODELS: Addon = Addon {
    name: "models",
    purpose: "the workloads' model libraries",
    lock: MODELS_LOCK,
    lock_path: "python/models.lock",
    packages: MODEL_PACKAGES,
    modules: &["torchvision", "flax"],
    size: "about 60 MB of wheels",
};

/// What `mlport run --suite` imports beyond the frameworks (`modules` is empty: the worker's
/// suite code, not case code, imports them).
pub const SUITES: Addon = Addon {
    name: "suites",
    purpose: "the imports of the frameworks' own test data",
    lock: SUITES_LOCK,
    lock_path: "python/suites.lock",
    packages: &["expecttest", "absl-py"],
    modules: &[],
    size: "about 200 kB of wheels",
};

/// Every add-on, in install order.
pub const ADDONS: &[Addon] = &[IR_ROUTES, MODELS, SUITES];

impl Addon {
    /// The marker's name for the add-on: its name, `:` and the first 12 hex digits of the
    /// SHA-256 of its lock and package list, so a changed lock or a package added to the list
    /// installs again.
    pub fn key(&self) -> String {
        let what = format!("{}\n{}", self.lock, self.packages.join(" "));
        format!("{}:{}", self.name, &hex::encode(Sha256::digest(what.as_bytes()))[..12])
    }

    /// Whether Python source `code` imports one of the add-on's modules (`import torchvision`,
    /// `from flax import linen`, `import flax.linen as nn`), line by line.
    pub fn needed_by(&self, code: &str) -> bool {
        code.lines().map(str::trim_start).any(|l| {
            let rest = l.strip_prefix("import ").or_else(|| l.strip_prefix("from "));
            rest.is_some_and(|r| {
                let top = r.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("");
                self.modules.contains(&top)
            })
        })
    }
}

/// The add-ons whose modules some case's code imports (`codes`: the planned cases' code).
pub fn needed<'a>(codes: impl IntoIterator<Item = &'a str>) -> Vec<&'static Addon> {
    let codes: Vec<&str> = codes.into_iter().collect();
    ADDONS.iter().filter(|a| !a.modules.is_empty() && codes.iter().any(|c| a.needed_by(c))).collect()
}

/// Installs the export routes' packages ([`IR_ROUTES`]): [`ensure`] for that add-on.
///
/// Errors: as [`ensure`].
pub fn ensure_ir_routes(env: &PythonEnv) -> Result<()> {
    ensure(env, &IR_ROUTES)
}

/// Installs `addon`'s packages into the managed environment `env`, once (its marker records
/// the add-on's [`Addon::key`]). `--python` environments are left as they are: what the add-on
/// brings is available where its modules are importable, and the worker says which are missing.
///
/// Errors: the environment's folder cannot be locked or written, or the installer fails (the
/// add-on's install log, `NAME.log` in the environment's folder, is named). The run then goes
/// on and reports what needed the add-on as failing (routes unavailable, `api_missing` cases).
pub fn ensure(env: &PythonEnv, addon: &Addon) -> Result<()> {
    let Some(choice) = env.stack.as_ref().filter(|_| env.managed) else { return Ok(()) };
    let dir =
        env.python.parent().and_then(Path::parent).context("the managed interpreter has no environment folder")?;
    let parent = dir.parent().unwrap_or(dir);
    let lock_path = parent.join(".lock");
    let lock = std::fs::File::create(&lock_path).with_context(|| format!("cannot create {}", lock_path.display()))?;
    lock.lock().with_context(|| format!("cannot lock {}", lock_path.display()))?;
    let marker_path = dir.join(MARKER);
    let mut marker: Marker = read_marker(&marker_path).unwrap_or_default();
    let key = addon.key();
    if marker.addons.contains(&key) {
        return Ok(());
    }
    // The stack's pins and the add-on's together: uv/pip may not move a framework to fit.
    let constraints = dir.join(format!("{}.constraints", addon.name));
    std::fs::write(&constraints, format!("{}\n{}", choice.stack.lock(), addon.lock))
        .with_context(|| format!("cannot write {}", constraints.display()))?;
    let log = dir.join(format!("{}.log", addon.name));
    eprintln!(
        "mlport: installing {} ({}) into {} (log: {})",
        addon.purpose,
        addon.lock_path,
        dir.display(),
        log.display()
    );
    let pb = spinner("choosing an installer");
    let base = std::env::var("MLPORT_BASE_PYTHON").unwrap_or_else(|_| "python3".into());
    let chosen = super::pick_installer(&base, &pb, &log)?;
    let what = format!("{} install {} ({})", chosen.name(), addon.packages.join(" "), addon.size);
    pb.set_message(what.clone());
    let mut cmd: Command = installer::install_command(&chosen, &env.python, &constraints, addon.packages);
    let (ok, tail) = run_logged(&mut cmd, &what, &pb, &log)?;
    pb.finish_and_clear();
    if !ok {
        bail!("{} did not install into {} (see {}):\n{tail}", addon.purpose, dir.display(), log.display());
    }
    marker.addons.push(key);
    std::fs::write(&marker_path, serde_json::to_string_pretty(&marker)?)
        .with_context(|| format!("cannot write {}", marker_path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every add-on package is pinned, and no add-on pin contradicts a pin of the main lock
    /// (the promise that installing it moves no framework).
    #[test]
    fn every_addon_lock_pins_its_packages_and_agrees_with_the_main_lock() {
        let pins = |text: &str| -> std::collections::BTreeMap<String, String> {
            text.lines()
                .filter_map(|l| l.trim().split_once("=="))
                .map(|(n, v)| (n.replace('_', "-").to_lowercase(), v.trim().to_string()))
                .collect()
        };
        let main = pins(crate::pyenv::Stack::Main.lock());
        for addon in ADDONS {
            let own = pins(addon.lock);
            for p in addon.packages {
                assert!(own.contains_key(*p), "{p} is not pinned in {}", addon.lock_path);
            }
            for (name, v) in &own {
                if let Some(m) = main.get(name) {
                    assert_eq!(m, v, "{name}: {} pins {v}, requirements.lock {m}", addon.lock_path);
                }
            }
            for l in addon.lock.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
                assert!(l.contains("=="), "unpinned line in {}: {l}", addon.lock_path);
            }
        }
    }

    /// The models lock leaves the main lock's frameworks alone: it pins none of them.
    #[test]
    fn the_models_lock_pins_no_framework() {
        for fw in ["torch", "jax", "jaxlib", "tensorflow", "numpy", "keras"] {
            assert!(
                !MODELS_LOCK.lines().any(|l| l.starts_with(&format!("{fw}=="))),
                "python/models.lock pins {fw}, which python/requirements.lock owns"
            );
        }
    }

    /// Add-on names and keys are distinct, so markers never confuse two add-ons.
    #[test]
    fn addon_keys_are_distinct_and_named() {
        let keys: std::collections::BTreeSet<String> = ADDONS.iter().map(Addon::key).collect();
        assert_eq!(keys.len(), ADDONS.len());
        assert!(MODELS.key().starts_with("models:") && MODELS.key().len() == "models:".len() + 12);
        assert!(IR_ROUTES.key().starts_with("ir-routes:"));
    }

    /// A case needs the models add-on exactly when its code imports torchvision or flax.
    #[test]
    fn needed_by_reads_import_lines() {
        assert!(MODELS.needed_by("def build(ctx):\n    import torchvision\n"));
        assert!(MODELS.needed_by("from flax import linen as nn"));
        assert!(MODELS.needed_by("    import flax.linen as nn"));
        assert!(!MODELS.needed_by("import torch\n# torchvision is not used\nx = flaxen"));
        assert!(!MODELS.needed_by("import flaxen"));
        assert!(!IR_ROUTES.needed_by("import onnx"), "ir-routes is asked for by targets, not code");
        let n = needed(["import torch", "from torchvision.models import resnet18"]);
        assert_eq!(n.iter().map(|a| a.name).collect::<Vec<_>>(), ["models"]);
        assert!(needed(["import torch"]).is_empty());
    }
}
