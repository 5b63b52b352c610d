//! Stacks: which pinned set of wheels a managed environment follows, and why it was chosen.
//!
//! Three stacks are installable from PyPI, each pinned by its own lock file in `python/`:
//! - `main` (`requirements.lock`): CPU builds of JAX and TensorFlow, PyPI's default torch.
//! - `cuda` (`requirements-cuda.lock`): the same frameworks with JAX's CUDA plugin
//!   (`jax[cuda13]`) and TensorFlow's `and-cuda` extra; chosen where `nvidia-smi -L` lists a GPU,
//!   or with `--accelerator cuda`.
//! - `torch-xla` (`requirements-torch-xla.lock`): PyTorch/XLA, which pins its own torch
//!   (torch_xla 2.9.0 needs torch 2.9.0), so it lives in an environment of its own beside the
//!   main one; it runs torch on `xla:N` targets.
//!
//! ROCm, TPU and Apple stacks are not installed by mlport: they are `--python` routes
//! (docs/stacks.md), and [`native_to_canonical`] maps their frameworks' device names onto
//! mlport's canonical ones.

use serde::{Deserialize, Serialize};

use crate::model::Framework;

/// A pinned set of wheels a managed environment is created from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::EnumString, strum::VariantArray, strum::EnumCount)]
#[strum(serialize_all = "kebab-case", parse_err_ty = String, parse_err_fn = unknown_stack)]
pub enum Stack {
    /// CPU builds (`python/requirements.lock`).
    Main,
    /// CUDA builds of JAX and TensorFlow (`python/requirements-cuda.lock`).
    Cuda,
    /// PyTorch/XLA with the torch it pins (`python/requirements-torch-xla.lock`).
    TorchXla,
}

impl Stack {
    /// Every stack, main first.
    pub const ALL: [Stack; <Stack as strum::EnumCount>::COUNT] =
        *<Stack as strum::VariantArray>::VARIANTS.first_chunk().expect("every variant");

    /// `main`, `cuda`, `torch-xla`: the `--stack` spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The lock file's text (embedded): a pip constraints file pinning every package.
    pub fn lock(self) -> &'static str {
        match self {
            Stack::Main => include_str!("../../python/requirements.lock"),
            Stack::Cuda => include_str!("../../python/requirements-cuda.lock"),
            Stack::TorchXla => include_str!("../../python/requirements-torch-xla.lock"),
        }
    }

    /// The lock file's path in the repository, for messages.
    pub fn lock_path(self) -> &'static str {
        match self {
            Stack::Main => "python/requirements.lock",
            Stack::Cuda => "python/requirements-cuda.lock",
            Stack::TorchXla => "python/requirements-torch-xla.lock",
        }
    }

    /// The prefix of the environment's folder under `<cache>/envs/` (the lock's hash follows):
    /// `py` for the main stack, as before stacks existed, so its environment is kept.
    pub fn dir_prefix(self) -> &'static str {
        match self {
            Stack::Main => "py",
            Stack::Cuda => "py-cuda",
            Stack::TorchXla => "torch-xla",
        }
    }

    /// The frameworks this stack can install; `torch-xla` holds torch (and NumPy) only.
    pub fn frameworks(self) -> &'static [Framework] {
        match self {
            Stack::Main | Stack::Cuda => &Framework::ALL,
            Stack::TorchXla => &[Framework::Numpy, Framework::Torch],
        }
    }

    /// Top-level packages installed for `fw` in this stack (the lock pins them and their
    /// dependencies; an extra such as `jax[cuda13]` installs the lock's pins of its plugin).
    /// NumPy brings the tools `mlport pytest` runs suites with in the main and CUDA stacks.
    pub fn packages(self, fw: Framework) -> &'static [&'static str] {
        match (self, fw) {
            (Stack::TorchXla, Framework::Numpy) => &["numpy"],
            (Stack::TorchXla, Framework::Torch) => &["torch", "torch-xla"],
            (Stack::TorchXla, _) => &[],
            (_, Framework::Numpy) => &["numpy", "scipy", "pytest", "pytest-json-report"],
            (_, Framework::Torch) => &["torch"],
            (Stack::Cuda, Framework::Jax) => &["jax[cuda13]", "jaxlib"],
            (Stack::Cuda, Framework::Tensorflow) => &["tensorflow[and-cuda]"],
            (_, Framework::Jax) => &["jax", "jaxlib"],
            // An add-on of the main stack (python/ir-routes.lock), installed on first use, not
            // from requirements.lock.
            (_, Framework::Onnxruntime) => &[],
            // Keras 3 comes with TensorFlow ([`Framework::needs`]).
            (_, Framework::KerasJax | Framework::KerasTorch | Framework::KerasTensorflow) => &[],
            (_, Framework::Tensorflow) => {
                if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
                    &["tensorflow"]
                } else {
                    &["tensorflow-cpu"]
                }
            }
        }
    }
}

/// The error of parsing an unknown [`Stack`], listing the stacks.
fn unknown_stack(s: &str) -> String {
    format!("unknown stack `{s}` (expected main, cuda or torch-xla)")
}

/// `--accelerator`: the accelerator the main environment is installed for, instead of
/// asking `nvidia-smi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Accelerator {
    /// CPU builds (the main stack) whatever the machine has.
    Cpu,
    /// CUDA builds (the CUDA stack), even where `nvidia-smi` does not answer (a build host).
    Cuda,
}

/// The stack chosen for the main environment and why, in words (`mlport env` prints it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The stack.
    pub stack: Stack,
    /// Why: `--accelerator cuda`, `nvidia-smi lists GPU 0: ...`, `no NVIDIA GPU (nvidia-smi: ...)`.
    pub why: String,
}

/// The main environment's stack: `accelerator` when given, else CUDA where `gpu` (the
/// detection, [`nvidia_gpu`] outside tests) finds one, else main. `gpu` returns
/// `Ok(first line of nvidia-smi -L)` or `Err(why there is none)`.
pub fn choose(accelerator: Option<Accelerator>, gpu: impl FnOnce() -> Result<String, String>) -> Choice {
    match accelerator {
        Some(Accelerator::Cuda) => Choice { stack: Stack::Cuda, why: "--accelerator cuda".into() },
        Some(Accelerator::Cpu) => Choice { stack: Stack::Main, why: "--accelerator cpu".into() },
        None => match gpu() {
            Ok(line) => Choice { stack: Stack::Cuda, why: format!("nvidia-smi lists {line}") },
            Err(why) => Choice { stack: Stack::Main, why: format!("no NVIDIA GPU ({why})") },
        },
    }
}

/// The first GPU `nvidia-smi -L` lists (`GPU 0: NVIDIA H200 (UUID: ...)`), or why there is none
/// (not installed, failed, listed nothing).
pub fn nvidia_gpu() -> Result<String, String> {
    let out = std::process::Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .map_err(|e| format!("nvidia-smi cannot run: {e}"))?;
    if !out.status.success() {
        return Err(format!("nvidia-smi -L exits with {}", out.status));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("GPU "))
        .map(str::to_string)
        .ok_or_else(|| "nvidia-smi -L lists no GPU".into())
}

/// A stack mlport does not install, used through `--python` (docs/stacks.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// AMD GPUs: PyTorch's ROCm wheels, `jax[rocm]`, `tensorflow-rocm`.
    Rocm,
    /// Google TPU VMs: `torch_xla[tpu]`, `jax[tpu]`, TensorFlow on a TPU VM.
    Tpu,
    /// Apple silicon: PyTorch's MPS backend, `jax-metal`, `tensorflow-metal`.
    Apple,
}

/// The canonical device mlport records for the device a framework names `native` on a
/// `route` (index `index` among that framework's devices of the kind): ROCm GPUs are `cuda:N`
/// in every framework (HIP answers through `torch.cuda`, JAX's `gpu` backend, TensorFlow's
/// `GPU`), TPU cores are `tpu:N`, Apple's GPU is `mps`. `None` for a name the route does
/// not have. `native` is PyTorch's device type (`cuda`, `xla`, `mps`), JAX's platform
/// (`gpu`/`rocm`, `tpu`, `METAL`) or TensorFlow's device type (`GPU`, `TPU`).
pub fn native_to_canonical(route: Route, fw: Framework, native: &str, index: u32) -> Option<String> {
    let kind = match (route, fw, native) {
        (_, _, "cpu" | "CPU") => return Some("cpu".into()),
        (Route::Rocm, Framework::Torch, "cuda")
        | (Route::Rocm, Framework::Jax, "gpu" | "rocm")
        | (Route::Rocm, Framework::Tensorflow, "GPU") => "cuda",
        (Route::Tpu, Framework::Torch, "xla")
        | (Route::Tpu, Framework::Jax, "tpu")
        | (Route::Tpu, Framework::Tensorflow, "TPU") => "tpu",
        (Route::Apple, Framework::Torch, "mps")
        | (Route::Apple, Framework::Jax, "METAL")
        | (Route::Apple, Framework::Tensorflow, "GPU") => return (index == 0).then(|| "mps".into()),
        _ => return None,
    };
    Some(format!("{kind}:{index}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_gpu_the_main_stack_is_chosen() {
        let c = choose(None, || Err("nvidia-smi cannot run: No such file or directory".into()));
        assert_eq!(c.stack, Stack::Main);
        assert_eq!(c.why, "no NVIDIA GPU (nvidia-smi cannot run: No such file or directory)");
        let c = choose(None, || Ok("GPU 0: NVIDIA H200 (UUID: GPU-1)".into()));
        assert_eq!((c.stack, c.why.as_str()), (Stack::Cuda, "nvidia-smi lists GPU 0: NVIDIA H200 (UUID: GPU-1)"));
        assert_eq!(choose(Some(Accelerator::Cuda), || unreachable!()).stack, Stack::Cuda);
        assert_eq!(choose(Some(Accelerator::Cpu), || Ok("GPU 0".into())).stack, Stack::Main);
    }

    /// This machine: the real `nvidia-smi` (absent on the CI machine) decides.
    #[test]
    fn this_machine_without_nvidia_smi_gets_the_main_stack() {
        if std::process::Command::new("nvidia-smi").arg("-L").output().is_err() {
            assert_eq!(choose(None, nvidia_gpu).stack, Stack::Main);
        }
    }

    #[test]
    fn every_lock_pins_every_package_exactly() {
        for stack in Stack::ALL {
            let lock = stack.lock();
            for fw in stack.frameworks() {
                for pkg in stack.packages(*fw) {
                    let name = pkg.split('[').next().unwrap_or(pkg);
                    let norm = name.replace('-', "_").to_lowercase();
                    let pinned = lock.lines().any(|l| {
                        l.trim()
                            .split_once("==")
                            .is_some_and(|(n, v)| n.replace('-', "_").to_lowercase() == norm && !v.is_empty())
                    });
                    assert!(pinned, "{pkg} is not pinned in {}", stack.lock_path());
                }
            }
            for l in lock.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
                assert!(l.contains("=="), "unpinned line in {}: {l}", stack.lock_path());
            }
        }
    }

    #[test]
    fn torch_xla_pins_the_torch_it_was_built_for() {
        let pin = |lock: &str, name: &str| {
            lock.lines().find_map(|l| l.strip_prefix(&format!("{name}=="))).map(str::to_string)
        };
        let xla = Stack::TorchXla.lock();
        let (torch, torch_xla) = (pin(xla, "torch").unwrap(), pin(xla, "torch-xla").unwrap());
        // torch_xla X.Y.Z is built against torch X.Y.Z (its wheels do not declare it).
        assert_eq!(torch.split('.').take(2).collect::<Vec<_>>(), torch_xla.split('.').take(2).collect::<Vec<_>>());
        // The main environment's torch is not the one torch-xla needs: hence a stack of its own.
        assert_ne!(pin(Stack::Main.lock(), "torch"), Some(torch));
    }

    #[test]
    fn stacks_parse_and_have_distinct_folders() {
        for s in Stack::ALL {
            assert_eq!(s.as_str().parse::<Stack>(), Ok(s));
        }
        assert!("tpu".parse::<Stack>().unwrap_err().contains("main, cuda or torch-xla"));
        let prefixes: std::collections::BTreeSet<_> = Stack::ALL.iter().map(|s| s.dir_prefix()).collect();
        assert_eq!(prefixes.len(), 3);
    }

    #[test]
    fn python_routes_map_native_devices_to_canonical_names() {
        use Framework::*;
        let m = native_to_canonical;
        assert_eq!(m(Route::Rocm, Torch, "cuda", 1).as_deref(), Some("cuda:1"));
        assert_eq!(m(Route::Rocm, Jax, "rocm", 0).as_deref(), Some("cuda:0"));
        assert_eq!(m(Route::Rocm, Jax, "gpu", 2).as_deref(), Some("cuda:2"));
        assert_eq!(m(Route::Rocm, Tensorflow, "GPU", 0).as_deref(), Some("cuda:0"));
        assert_eq!(m(Route::Tpu, Torch, "xla", 3).as_deref(), Some("tpu:3"));
        assert_eq!(m(Route::Tpu, Jax, "tpu", 0).as_deref(), Some("tpu:0"));
        assert_eq!(m(Route::Tpu, Tensorflow, "TPU", 7).as_deref(), Some("tpu:7"));
        assert_eq!(m(Route::Apple, Torch, "mps", 0).as_deref(), Some("mps"));
        assert_eq!(m(Route::Apple, Jax, "METAL", 0).as_deref(), Some("mps"));
        assert_eq!(m(Route::Apple, Tensorflow, "GPU", 0).as_deref(), Some("mps"));
        assert_eq!(m(Route::Apple, Torch, "mps", 1), None, "Apple has one GPU");
        assert_eq!(m(Route::Tpu, Torch, "cpu", 0).as_deref(), Some("cpu"));
        assert_eq!(m(Route::Rocm, Torch, "mps", 0), None);
        assert_eq!(m(Route::Apple, Numpy, "GPU", 0), None);
        // Every mapped name is one the core parses.
        for r in [Route::Rocm, Route::Tpu, Route::Apple] {
            for (fw, n) in [
                (Torch, "cuda"),
                (Torch, "xla"),
                (Torch, "mps"),
                (Jax, "gpu"),
                (Jax, "tpu"),
                (Jax, "METAL"),
                (Tensorflow, "GPU"),
                (Tensorflow, "TPU"),
            ] {
                if let Some(c) = m(r, fw, n, 0) {
                    assert!(c.parse::<crate::model::Target>().is_ok(), "{c}");
                }
            }
        }
    }
}
