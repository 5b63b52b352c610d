//! The frameworks mlport drives, with the spellings every durable format stores.

use serde::{Deserialize, Serialize};

/// A framework mlport can drive. `numpy` is the float64 reference.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::Display,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase", parse_err_ty = String, parse_err_fn = unknown_framework)]
pub enum Framework {
    /// NumPy (`numpy`, also parsed from `np`): the float64 reference; its worker reports `cpu` only.
    #[strum(to_string = "numpy", serialize = "np")]
    Numpy,
    /// PyTorch (`torch`, also parsed from `pytorch`).
    #[strum(to_string = "torch", serialize = "pytorch")]
    Torch,
    /// JAX (`jax`); runs with `jax_enable_x64` off, as JAX ships, unless `mlport run --jax-x64`.
    #[strum(to_string = "jax")]
    Jax,
    /// TensorFlow (`tensorflow`, also parsed from `tf`); the managed environment installs
    /// `tensorflow-cpu` except on Apple silicon.
    #[strum(to_string = "tensorflow", serialize = "tf")]
    Tensorflow,
    /// ONNX Runtime (`onnxruntime`, also parsed from `ort`): single ONNX operators built with
    /// `onnx.helper` and run in an `InferenceSession` on the execution provider of the device
    /// (`catalogue/onnxruntime.toml`). Its packages are an add-on of the main stack
    /// (`python/ir-routes.lock`), so it runs only when selected (`--framework onnxruntime`).
    #[strum(to_string = "onnxruntime", serialize = "ort")]
    Onnxruntime,
    /// Keras 3 on JAX (`keras-jax`, also parsed from `keras/jax`): a JAX worker with
    /// `KERAS_BACKEND=jax` whose catalogue is `keras.*` (`catalogue/keras.toml`, one file for the
    /// three backends). Its ops run when it is selected (`--framework`), its workloads in every
    /// run (docs/workloads.md).
    #[serde(rename = "keras-jax")]
    #[strum(to_string = "keras-jax", serialize = "keras/jax")]
    KerasJax,
    /// Keras 3 on PyTorch (`keras-torch`, also `keras/torch`).
    #[serde(rename = "keras-torch")]
    #[strum(to_string = "keras-torch", serialize = "keras/torch")]
    KerasTorch,
    /// Keras 3 on TensorFlow (`keras-tensorflow`, also `keras/tensorflow`, `keras-tf`).
    #[serde(rename = "keras-tensorflow")]
    #[strum(to_string = "keras-tensorflow", serialize = "keras/tensorflow", serialize = "keras-tf")]
    KerasTensorflow,
}

impl Framework {
    /// The frameworks of the main stack (`python/requirements.lock`), in report order: the ones
    /// `mlport env` probes and a stack installs. Add-on frameworks are in [`Framework::ADD_ONS`].
    pub const ALL: [Framework; 4] = [Framework::Numpy, Framework::Torch, Framework::Jax, Framework::Tensorflow];

    /// Frameworks whose packages are an add-on of the main stack (`python/ir-routes.lock`),
    /// installed on first use: ONNX Runtime.
    pub const ADD_ONS: [Framework; 1] = [Framework::Onnxruntime];

    /// Keras 3 keyed by its backend: each runs in its backend's worker with `KERAS_BACKEND` set,
    /// from the one `catalogue/keras.toml`.
    pub const KERAS: [Framework; 3] = [Framework::KerasJax, Framework::KerasTorch, Framework::KerasTensorflow];

    /// Whether `mlport run` without `--framework` (and without `--function`) runs this
    /// framework's catalogue: every main-stack framework does; an add-on ([`Framework::ADD_ONS`])
    /// runs only when selected, so a plain run never installs its packages; so do the Keras
    /// backends (their ops repeat the frameworks' own).
    pub fn in_default_run(self) -> bool {
        !Self::ADD_ONS.contains(&self) && !Self::KERAS.contains(&self)
    }

    /// The framework whose worker, devices, compiler and exporter this one uses: a Keras
    /// framework's backend; the framework itself otherwise.
    pub fn backend(self) -> Framework {
        match self {
            Framework::KerasJax => Framework::Jax,
            Framework::KerasTorch => Framework::Torch,
            Framework::KerasTensorflow => Framework::Tensorflow,
            other => other,
        }
    }

    /// The frameworks whose packages this one needs installed: its backend, and for Keras
    /// TensorFlow too (Keras 3 comes with it in `python/requirements.lock`).
    pub fn needs(self) -> Vec<Framework> {
        if Self::KERAS.contains(&self) {
            let mut v = vec![self.backend(), Framework::Tensorflow];
            v.dedup();
            v
        } else {
            vec![self]
        }
    }

    /// The lowercase name stored in every durable format, used in case keys and passed to the
    /// worker's `--framework` (`torch`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The error of parsing an unknown [`Framework`], listing the frameworks.
fn unknown_framework(s: &str) -> String {
    format!(
        "unknown framework `{s}` (expected numpy, torch, jax, tensorflow, onnxruntime, keras-jax, keras-torch or \
         keras-tensorflow)"
    )
}

impl Framework {
    /// Why this framework has no `mode` (docs/modes.md), `None` when it has: NumPy runs
    /// eagerly only; `compiled_fullgraph` is torch's alone (`jax.jit` and
    /// `tf.function(jit_compile=True)` always compile the whole call, so their `compiled` is
    /// already whole-graph); the `stablehlo` route is JAX's alone (docs/ir-routes.md).
    pub fn lacks_mode(self, mode: super::Mode) -> Option<String> {
        use super::Mode;
        if self != self.backend() {
            return self.backend().lacks_mode(mode).map(|why| format!("{self} runs on {}: {why}", self.backend()));
        }
        match (self, mode) {
            (_, Mode::Eager) => None,
            (Framework::Numpy, m) if m.is_route() => {
                Some(format!("numpy has no {m} route: NumPy is the float64 reference and runs eagerly only"))
            }
            (Framework::Numpy, _) => Some("numpy has no compiled mode: NumPy runs eagerly only".into()),
            (Framework::Onnxruntime, m) if m.is_route() => Some(format!(
                "onnxruntime has no {m} route: its cases are ONNX models already, run in ONNX Runtime directly"
            )),
            (Framework::Onnxruntime, _) => Some(
                "onnxruntime has no compiled mode: an ONNX model is already a whole graph, optimised once when its \
                 InferenceSession is created (part of each case's setup)"
                    .into(),
            ),
            (_, Mode::OnnxOpenvino) if !matches!(self, Framework::Torch | Framework::Jax | Framework::Tensorflow) => {
                Some(format!("{self} has no onnx_openvino route"))
            }
            (Framework::Torch, Mode::Stablehlo) => Some(
                "torch has no stablehlo route: mlport exports StableHLO from JAX only (jax.export); torch_xla's \
                 StableHLO exporter is not a route yet"
                    .into(),
            ),
            (Framework::Tensorflow, Mode::Stablehlo) => Some(
                "tensorflow has no stablehlo route: mlport exports StableHLO from JAX only (jax.export); \
                 TensorFlow's MLIR bridge is not a route yet"
                    .into(),
            ),
            (Framework::Jax | Framework::Tensorflow, Mode::CompiledFullgraph) => Some(format!(
                "{self} has no compiled_fullgraph mode: its compiler always takes the whole call, so `compiled` is \
                 already whole-graph (compiled_fullgraph is torch.compile(fullgraph=True))"
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Framework;

    #[test]
    fn onnxruntime_parses_from_its_alias_and_is_opt_in() {
        assert_eq!("ort".parse::<Framework>(), Ok(Framework::Onnxruntime));
        assert_eq!("onnxruntime".parse::<Framework>(), Ok(Framework::Onnxruntime));
        assert_eq!(Framework::Onnxruntime.to_string(), "onnxruntime");
        assert_eq!(serde_json::to_string(&Framework::Onnxruntime).unwrap(), "\"onnxruntime\"");
        assert!(!Framework::Onnxruntime.in_default_run());
        assert!(Framework::ALL.iter().all(|f| f.in_default_run()));
        assert!(Framework::Onnxruntime.lacks_mode(super::super::Mode::Compiled).is_some());
    }

    #[test]
    fn keras_is_keyed_by_its_backend() {
        use super::super::Mode;
        assert_eq!("keras/jax".parse::<Framework>(), Ok(Framework::KerasJax));
        assert_eq!(Framework::KerasTorch.to_string(), "keras-torch");
        for fw in Framework::KERAS {
            assert_eq!(serde_json::to_string(&fw).unwrap(), format!("\"{fw}\""));
        }
        assert_eq!(Framework::KerasTensorflow.backend(), Framework::Tensorflow);
        assert_eq!(Framework::KerasJax.needs(), [Framework::Jax, Framework::Tensorflow]);
        assert_eq!(Framework::KerasTensorflow.needs(), [Framework::Tensorflow]);
        assert!(Framework::KERAS.iter().all(|f| !f.in_default_run()));
        assert!(Framework::KerasTorch.lacks_mode(Mode::CompiledFullgraph).is_none());
        let why = Framework::KerasJax.lacks_mode(Mode::CompiledFullgraph).unwrap();
        assert!(why.starts_with("keras-jax runs on jax: jax has no compiled_fullgraph"), "{why}");
    }
}
