//! `mlport env`: create or check the managed environment (or `--python`), then start one
//! CPU worker per framework and print its version and the devices it sees. Also the
//! interpreter choice and probe that `run`, `list` and `pytest` share.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Result;

use super::ExitStatus;
use super::output::emit;
use crate::cli::{EnvArgs, PythonArg};
use crate::model::{Framework, Target};
use crate::pyenv::{self, FrameworkProbe, PythonEnv};
use crate::render;
use crate::{worker, workspace};

/// The interpreter for `frameworks`: `--python` as is, else the managed environment
/// (created or completed with them).
pub fn python_env(arg: &PythonArg, frameworks: &[Framework]) -> Result<PythonEnv> {
    match &arg.python {
        Some(p) => pyenv::user_python(p),
        None => pyenv::ensure_stack(pyenv::stack::choose(arg.accelerator, pyenv::stack::nvidia_gpu), frameworks),
    }
}

/// The interpreter of torch on `xla:N`: `--python`'s, else the torch-xla stack's managed
/// environment (created on first use). `None`, said on stderr, when it cannot be set up: the
/// run then reports those targets unavailable.
///
/// `suites`: the run holds cases of a framework's own test data, so the stack gets the `suites`
/// add-on too (its OpInfos are its own torch's).
pub fn xla_python(arg: &PythonArg, suites: bool) -> Option<std::path::PathBuf> {
    if let Some(p) = &arg.python {
        return Some(p.clone());
    }
    let choice = pyenv::Choice { stack: pyenv::Stack::TorchXla, why: "an xla:N device was asked for".into() };
    match pyenv::ensure_stack(choice, &[Framework::Torch]) {
        Ok(env) if !env.install_failures.contains_key(&Framework::Torch) => {
            if suites && let Err(e) = pyenv::addon::ensure(&env, &pyenv::addon::SUITES) {
                eprintln!(
                    "mlport: {e:#}\nmlport: the suite's cases fail on xla:N as harness errors; the rest of the run goes on"
                );
            }
            Some(env.python)
        }
        Ok(env) => {
            eprintln!("mlport: torch-xla could not be installed in {}; xla:N is unavailable", env.python.display());
            None
        }
        Err(e) => {
            eprintln!("mlport: the torch-xla stack's environment could not be set up ({e:#}); xla:N is unavailable");
            None
        }
    }
}

/// Starts one CPU worker per framework and asks it what it is: version or import error,
/// devices, interpreter; with the packages the usable ones report.
pub fn probe(env: &PythonEnv, frameworks: &[Framework]) -> Result<(Vec<FrameworkProbe>, BTreeMap<String, String>)> {
    let dir = workspace::worker_dir()?;
    let mut probes = Vec::new();
    let mut packages = BTreeMap::new();
    for fw in frameworks {
        let spec = worker::WorkerSpec {
            python: env.python.clone(),
            script_dir: dir.clone(),
            framework: *fw,
            device: Target::cpu(),
            env: Vec::new(),
        };
        // No Ctrl-C handler here: an interrupt ends `env`/`list` at once, as it always did.
        let probe = match worker::spawn(&spec, Duration::from_secs(300), &AtomicBool::new(false)) {
            Ok(w) => {
                let h = w.hello.clone();
                w.shutdown();
                match &h.import_error {
                    Some(e) => FrameworkProbe {
                        framework: *fw,
                        version: Err(format!("{}: {}", e.error_type, e.message)),
                        devices: Vec::new(),
                        python: h.python.clone(),
                    },
                    None => {
                        packages.extend(h.packages.clone());
                        FrameworkProbe {
                            framework: *fw,
                            version: Ok(h.framework_version.clone().unwrap_or_default()),
                            devices: h.devices.iter().filter(|d| d.available).map(|d| d.device.clone()).collect(),
                            python: h.python.clone(),
                        }
                    }
                }
            }
            Err(f) => FrameworkProbe {
                framework: *fw,
                version: Err(f.to_string()),
                devices: Vec::new(),
                python: String::new(),
            },
        };
        probes.push(probe);
    }
    Ok((probes, packages))
}

/// `mlport env`: the main environment, or with `--stack` that stack's (`torch-xla`: torch
/// and NumPy only).
pub fn env(args: EnvArgs) -> Result<ExitStatus> {
    let (env, frameworks): (PythonEnv, Vec<Framework>) = match (args.stack, &args.python.python) {
        (Some(stack), None) => {
            let why = format!("--stack {stack}");
            let frameworks = stack.frameworks().to_vec();
            (pyenv::ensure_stack(pyenv::Choice { stack, why }, &frameworks)?, frameworks)
        }
        _ => (python_env(&args.python, &Framework::ALL)?, Framework::ALL.to_vec()),
    };
    emit(&render::env::python_line(&env))?;
    let (probes, packages) = probe(&env, &frameworks)?;
    emit(&render::env::probe_table(&probes))?;
    emit(&render::env::vulkan_table(&crate::vulkan::devices()))?;
    emit(&render::env::packages_line(&packages))?;
    Ok(ExitStatus::Ok)
}
