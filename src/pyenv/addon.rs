//! Add-ons: packages a managed environment gets on first use of a feature, pinned beside the
//! stack's lock without moving any of its pins. One exists: `ir-routes`, the export routes'
//! converters and runtimes (docs/ir-routes.md), pinned by `python/ir-routes.lock`.

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

/// The marker's name for the add-on: `ir-routes:` and the first 12 hex digits of the SHA-256 of
/// its lock and package list, so a changed lock or a package added to the list installs again.
fn addon_key() -> String {
    let what = format!("{IR_ROUTES_LOCK}\n{}", IR_ROUTE_PACKAGES.join(" "));
    format!("ir-routes:{}", &hex::encode(Sha256::digest(what.as_bytes()))[..12])
}

/// Installs the export routes' packages into the managed environment `env`, once (its marker
/// records the add-on). `--python` environments are left as they are: their routes are
/// available where the modules are importable, and the worker says which are missing.
///
/// Errors: the environment's folder cannot be locked or written, or the installer fails (the
/// add-on's install log, `ir-routes.log` in the environment's folder, is named). The run then
/// goes on and reports the route targets unavailable.
pub fn ensure_ir_routes(env: &PythonEnv) -> Result<()> {
    let Some(choice) = env.stack.as_ref().filter(|_| env.managed) else { return Ok(()) };
    let dir =
        env.python.parent().and_then(Path::parent).context("the managed interpreter has no environment folder")?;
    let parent = dir.parent().unwrap_or(dir);
    let lock_path = parent.join(".lock");
    let lock = std::fs::File::create(&lock_path).with_context(|| format!("cannot create {}", lock_path.display()))?;
    lock.lock().with_context(|| format!("cannot lock {}", lock_path.display()))?;
    let marker_path = dir.join(MARKER);
    let mut marker: Marker = read_marker(&marker_path).unwrap_or_default();
    let key = addon_key();
    if marker.addons.contains(&key) {
        return Ok(());
    }
    // The stack's pins and the add-on's together: uv/pip may not move a framework to fit.
    let constraints = dir.join("ir-routes.constraints");
    std::fs::write(&constraints, format!("{}\n{IR_ROUTES_LOCK}", choice.stack.lock()))
        .with_context(|| format!("cannot write {}", constraints.display()))?;
    let log = dir.join("ir-routes.log");
    eprintln!(
        "mlport: installing the export routes' converters and runtimes (python/ir-routes.lock) into {} (log: {})",
        dir.display(),
        log.display()
    );
    let pb = spinner("choosing an installer");
    let base = std::env::var("MLPORT_BASE_PYTHON").unwrap_or_else(|_| "python3".into());
    let chosen = super::pick_installer(&base, &pb, &log)?;
    let what = format!("{} install {} (about 300 MB of wheels)", chosen.name(), IR_ROUTE_PACKAGES.join(" "));
    pb.set_message(what.clone());
    let mut cmd: Command = installer::install_command(&chosen, &env.python, &constraints, IR_ROUTE_PACKAGES);
    let (ok, tail) = run_logged(&mut cmd, &what, &pb, &log)?;
    pb.finish_and_clear();
    if !ok {
        bail!("the export routes' packages did not install into {} (see {}):\n{tail}", dir.display(), log.display());
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
    fn the_ir_routes_lock_pins_every_package_and_agrees_with_the_main_lock() {
        let pins = |text: &str| -> std::collections::BTreeMap<String, String> {
            text.lines()
                .filter_map(|l| l.trim().split_once("=="))
                .map(|(n, v)| (n.replace('_', "-").to_lowercase(), v.trim().to_string()))
                .collect()
        };
        let ir = pins(IR_ROUTES_LOCK);
        for p in IR_ROUTE_PACKAGES {
            assert!(ir.contains_key(*p), "{p} is not pinned in python/ir-routes.lock");
        }
        let main = pins(crate::pyenv::Stack::Main.lock());
        for (name, v) in &ir {
            if let Some(m) = main.get(name) {
                assert_eq!(m, v, "{name}: ir-routes.lock pins {v}, requirements.lock {m}");
            }
        }
        for l in IR_ROUTES_LOCK.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
            assert!(l.contains("=="), "unpinned line in python/ir-routes.lock: {l}");
        }
    }
}
