//! The frameworks mlport drives, with the spellings every durable format stores.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A framework mlport can drive. `numpy` is the float64 reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    /// NumPy (`numpy`, also parsed from `np`): the float64 reference; its worker reports `cpu` only.
    Numpy,
    /// PyTorch (`torch`, also parsed from `pytorch`).
    Torch,
    /// JAX (`jax`); runs with `jax_enable_x64` off, as JAX ships, unless `mlport run --jax-x64`.
    Jax,
    /// TensorFlow (`tensorflow`, also parsed from `tf`); the managed environment installs
    /// `tensorflow-cpu` except on Apple silicon.
    Tensorflow,
}

impl Framework {
    /// All frameworks, in report order.
    pub const ALL: [Framework; 4] = [Framework::Numpy, Framework::Torch, Framework::Jax, Framework::Tensorflow];

    /// The lowercase name stored in every durable format, used in case keys and passed to the
    /// worker's `--framework` (`torch`).
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::Numpy => "numpy",
            Framework::Torch => "torch",
            Framework::Jax => "jax",
            Framework::Tensorflow => "tensorflow",
        }
    }
}

impl Framework {
    /// Why this framework has no `mode` (docs/modes.md), `None` when it has: NumPy runs
    /// eagerly only; `compiled_fullgraph` is torch's alone (`jax.jit` and
    /// `tf.function(jit_compile=True)` always compile the whole call, so their `compiled` is
    /// already whole-graph); the `stablehlo` route is JAX's alone (docs/ir-routes.md).
    pub fn lacks_mode(self, mode: super::Mode) -> Option<String> {
        use super::Mode;
        match (self, mode) {
            (_, Mode::Eager) => None,
            (Framework::Numpy, m) if m.is_route() => {
                Some(format!("numpy has no {m} route: NumPy is the float64 reference and runs eagerly only"))
            }
            (Framework::Numpy, _) => Some("numpy has no compiled mode: NumPy runs eagerly only".into()),
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

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Framework {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "numpy" | "np" => Ok(Framework::Numpy),
            "torch" | "pytorch" => Ok(Framework::Torch),
            "jax" => Ok(Framework::Jax),
            "tensorflow" | "tf" => Ok(Framework::Tensorflow),
            _ => Err(format!("unknown framework `{s}` (expected numpy, torch, jax or tensorflow)")),
        }
    }
}
