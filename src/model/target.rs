//! Targets: a canonical device (`cpu`, `cuda:0`, ...) in an execution [`Mode`] (`cpu`,
//! `cpu/compiled`). Every report and rule works on targets.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How a target executes a case: each framework's ordinary dispatch, or through its compiler
/// (docs/modes.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::EnumString, strum::VariantArray, strum::EnumCount)]
#[strum(serialize_all = "snake_case", parse_err_ty = String, parse_err_fn = unknown_mode)]
pub enum Mode {
    /// Each framework's ordinary dispatch: PyTorch and TensorFlow eager execution, JAX's
    /// op-by-op dispatch, NumPy. The default, and the only mode NumPy has.
    Eager,
    /// The whole timed call compiled as users compile it: `torch.compile` with its defaults
    /// (Inductor; a graph break falls back to Python for that part and is counted), `jax.jit`,
    /// `tf.function(jit_compile=True)`.
    Compiled,
    /// torch only: `torch.compile(fullgraph=True)`, where a graph break is an error
    /// (`compile_error`): what accelerators that need whole graphs (XLA, export) see. Stores
    /// before schema 9 called this mode `compiled` (migration 9 renames their torch targets).
    CompiledFullgraph,
    /// An export route (docs/ir-routes.md): the case's function exported to ONNX (torch:
    /// `torch.onnx.export(dynamo=True)`; JAX: `jax2onnx`; TensorFlow: `tf2onnx` with an explicit
    /// input signature) and run in ONNX Runtime on the execution provider that matches the device.
    /// On `vulkan:N`, where ONNX Runtime has no provider, the same model is imported by IREE's
    /// ONNX importer, compiled for SPIR-V (`vulkan-spirv`) and run by IREE's Vulkan driver
    /// (docs/vulkan.md).
    Onnx,
    /// An export route (docs/ir-routes.md): the same ONNX model as [`Mode::Onnx`] (same
    /// exporters), run by OpenVINO's runtime (`openvino.Core().compile_model`, the `CPU` device
    /// with its documented defaults but the worker's thread budget) instead of ONNX Runtime. CPU
    /// only: OpenVINO's GPU plugin drives Intel GPUs, not CUDA devices.
    OnnxOpenvino,
    /// An export route (docs/ir-routes.md): JAX's function exported as serialized StableHLO
    /// (`jax.export`, the serialization round trip included), compiled and run by IREE
    /// (`llvm-cpu` on cpu, `cuda` on cuda:N, `vulkan-spirv` on vulkan:N).
    Stablehlo,
}

impl Mode {
    /// Every mode, eager first.
    pub const ALL: [Mode; <Mode as strum::EnumCount>::COUNT] =
        *<Mode as strum::VariantArray>::VARIANTS.first_chunk().expect("every variant");

    /// `eager`, `compiled`, `compiled_fullgraph`, `onnx`, `onnx_openvino` or `stablehlo`: the suffix of a target
    /// (`cpu/compiled`, `cpu/onnx`), the worker's `--mode` and the catalogue's `modes` spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Whether the case runs transformed rather than as written — compiled or exported (every
    /// mode but eager); such a target is judged against eager on its own device.
    pub fn is_compiled(self) -> bool {
        self != Mode::Eager
    }

    /// Whether the mode is an export route (`onnx`, `onnx_openvino`, `stablehlo`): the function leaves its
    /// framework through an interchange format and runs on another runtime.
    pub fn is_route(self) -> bool {
        matches!(self, Mode::Onnx | Mode::OnnxOpenvino | Mode::Stablehlo)
    }
}

/// The error of parsing an unknown [`Mode`], listing the modes.
fn unknown_mode(s: &str) -> String {
    format!("unknown mode `{s}` (expected eager, compiled, compiled_fullgraph, onnx, onnx_openvino or stablehlo)")
}

/// The modes a `vulkan:N` device has: the export routes IREE compiles for SPIR-V. No framework
/// runs eagerly (or compiles with its own compiler) on a Vulkan device (docs/vulkan.md).
pub const VULKAN_MODES: [Mode; 2] = [Mode::Stablehlo, Mode::Onnx];

/// A target: a canonical device name (`cpu`, `cuda:N`, `tpu:N`, `xla:N`, `mps`, `xpu:N` or
/// `vulkan:N`) and an
/// execution [`Mode`]. Eager is the default and is written without a suffix (`cpu`,
/// `cuda:0`); the compiled modes are written `cpu/compiled` and `cpu/compiled_fullgraph`, the export routes
/// `cpu/onnx` and `cpu/stablehlo`. `cpu/eager` parses to `cpu`, so a
/// target has one spelling. Everything keyed by device (the store, reports, slowdowns,
/// audits) is keyed by target.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Target(String);

/// The separator between a device and its mode: `cpu/compiled`.
const MODE_SEPARATOR: char = '/';

impl Target {
    /// The host CPU, eager: the default reference device.
    pub fn cpu() -> Target {
        Target("cpu".into())
    }

    /// The first TPU core, eager (the paper's TPU runs).
    pub fn tpu0() -> Target {
        Target("tpu:0".into())
    }

    /// The canonical spelling (`cuda:0`, never `cuda`; `cpu/compiled`, never `cpu/eager`), as
    /// stored and shown.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The device without its mode (`cpu` for `cpu/compiled`): what the worker's `--device`
    /// receives.
    pub fn base(&self) -> Target {
        Target(self.0.split(MODE_SEPARATOR).next().unwrap_or(&self.0).to_string())
    }

    /// The execution mode.
    pub fn mode(&self) -> Mode {
        match self.0.split_once(MODE_SEPARATOR) {
            Some((_, m)) => m.parse().unwrap_or(Mode::Eager),
            None => Mode::Eager,
        }
    }

    /// The same device in `mode`: `cpu` with [`Mode::Compiled`] is `cpu/compiled`.
    pub fn with_mode(&self, mode: Mode) -> Target {
        let base = self.base();
        match mode {
            Mode::Eager => base,
            _ => Target(format!("{}{MODE_SEPARATOR}{}", base.0, mode.as_str())),
        }
    }

    /// The target whose results a failure (or an answer) on this target is judged against:
    /// for a compiled target (either compiled mode, or a route), the same device eager (the
    /// compiler is what is tested); for an eager one, and for a device without an eager mode
    /// (`vulkan:N`), the run's `reference` device.
    pub fn reference_target(&self, reference: &Target) -> Target {
        if self.mode().is_compiled() && self.has_eager() { self.base() } else { reference.clone() }
    }

    /// Whether a framework can run eagerly on this device: every device but `vulkan:N`, which
    /// only export routes reach ([`VULKAN_MODES`]).
    pub fn has_eager(&self) -> bool {
        !self.is_vulkan()
    }

    /// Whether the device is a Vulkan device (`vulkan:N`, the Nth physical device the Vulkan
    /// loader enumerates; lavapipe on a machine without a GPU): reached through IREE's
    /// Vulkan driver only ([`VULKAN_MODES`], docs/vulkan.md).
    pub fn is_vulkan(&self) -> bool {
        self.kind() == "vulkan"
    }

    /// This device in each of `modes` (`cpu` in eager and compiled is `cpu`, `cpu/compiled`); a
    /// device without an eager mode (`vulkan:N`) in each of its own modes ([`VULKAN_MODES`])
    /// whatever `modes` says.
    pub fn in_modes(&self, modes: &[Mode]) -> Vec<Target> {
        if self.is_vulkan() {
            VULKAN_MODES.iter().map(|m| self.with_mode(*m)).collect()
        } else {
            modes.iter().map(|m| self.with_mode(*m)).collect()
        }
    }

    /// The device kind without index or mode: `cuda` for `cuda:1/compiled`, `xla` for `xla:0`.
    pub fn kind(&self) -> &str {
        let base = self.0.split(MODE_SEPARATOR).next().unwrap_or(&self.0);
        base.split(':').next().unwrap_or(base)
    }

    /// Whether the device is PyTorch/XLA's `xla:N` (`PJRT_DEVICE=CPU` on a host without a TPU):
    /// it runs in the `torch-xla` stack's environment ([`crate::pyenv::stack`]).
    pub fn is_xla(&self) -> bool {
        self.kind() == "xla"
    }

    fn parse_base(s: &str) -> Result<Target, String> {
        let bad = || format!("unknown device `{s}` (expected cpu, cuda:N, tpu:N, xla:N, mps, xpu:N or vulkan:N)");
        match s {
            "cpu" | "mps" => return Ok(Target(s.to_string())),
            "cuda" | "tpu" | "xla" | "xpu" | "vulkan" => return Ok(Target(format!("{s}:0"))),
            _ => {}
        }
        let (kind, index) = s.split_once(':').ok_or_else(bad)?;
        if !matches!(kind, "cuda" | "tpu" | "xla" | "xpu" | "vulkan")
            || index.is_empty()
            || !index.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        let n: u32 = index.parse().map_err(|_| bad())?;
        Ok(Target(format!("{kind}:{n}")))
    }
}

impl FromStr for Target {
    type Err = String;
    /// Accepts the canonical device spellings, optionally followed by `/eager`, `/compiled`,
    /// `/compiled_fullgraph`, `/onnx`, `/onnx_openvino` or `/stablehlo`; `cuda` alone means
    /// `cuda:0`. A `vulkan:N` target takes only its own modes ([`VULKAN_MODES`]).
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(MODE_SEPARATOR) {
            Some((device, mode)) => {
                let mode: Mode = mode.parse().map_err(|e: String| format!("target `{s}`: {e}"))?;
                let base = Target::parse_base(device)?;
                if base.is_vulkan() && !VULKAN_MODES.contains(&mode) {
                    return Err(format!(
                        "target `{s}`: {base} is reached through IREE's Vulkan driver only: {base}/stablehlo (JAX) or \
                         {base}/onnx (PyTorch, TensorFlow, JAX); no framework runs {mode} on a Vulkan device"
                    ));
                }
                Ok(base.with_mode(mode))
            }
            None => Target::parse_base(s),
        }
    }
}

impl TryFrom<String> for Target {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Target> for String {
    fn from(d: Target) -> String {
        d.0
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_parse_canonically() {
        assert_eq!("cuda".parse::<Target>().unwrap().as_str(), "cuda:0");
        assert_eq!("cuda:01".parse::<Target>().unwrap().as_str(), "cuda:1");
        assert_eq!("tpu:3".parse::<Target>().unwrap().as_str(), "tpu:3");
        assert_eq!("xla".parse::<Target>().unwrap().as_str(), "xla:0");
        let x: Target = "xla:0/compiled".parse().unwrap();
        assert_eq!((x.kind(), x.is_xla(), x.base().as_str()), ("xla", true, "xla:0"));
        assert!(!Target::cpu().is_xla());
        for bad in ["gpu", "cuda:", "cuda:x", "CPU", "mps:1", "", "cpu:0", "xla:", "XLA:0"] {
            assert!(bad.parse::<Target>().is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn targets_carry_a_mode() {
        let t: Target = "cpu/compiled".parse().unwrap();
        assert_eq!((t.as_str(), t.base().as_str(), t.mode()), ("cpu/compiled", "cpu", Mode::Compiled));
        assert_eq!("cpu/eager".parse::<Target>().unwrap(), Target::cpu(), "eager is the canonical bare spelling");
        assert_eq!("cuda/compiled".parse::<Target>().unwrap().as_str(), "cuda:0/compiled");
        assert_eq!(Target::cpu().mode(), Mode::Eager);
        assert_eq!(Target::cpu().with_mode(Mode::Compiled), t);
        assert_eq!(t.with_mode(Mode::Eager), Target::cpu());
        let gpu: Target = "cuda:0".parse().unwrap();
        assert_eq!(t.reference_target(&gpu), Target::cpu(), "compiled is judged against eager on its device");
        assert_eq!(gpu.reference_target(&Target::cpu()), Target::cpu());
        for bad in ["cpu/jit", "cpu/", "/compiled", "gpu/compiled", "cpu/compiled/eager"] {
            assert!(bad.parse::<Target>().is_err(), "{bad} should be rejected");
        }
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"cpu/compiled\"");
        let strict: Target = "cuda:1/compiled_fullgraph".parse().unwrap();
        assert_eq!((strict.mode(), strict.base().as_str()), (Mode::CompiledFullgraph, "cuda:1"));
        assert_eq!(strict.reference_target(&Target::cpu()).as_str(), "cuda:1");
        assert_eq!(t.with_mode(Mode::CompiledFullgraph).as_str(), "cpu/compiled_fullgraph");
        assert!(Mode::CompiledFullgraph.is_compiled() && Mode::Compiled.is_compiled() && !Mode::Eager.is_compiled());
        assert!("cpu/fullgraph".parse::<Target>().unwrap_err().contains("compiled_fullgraph"));
        let onnx: Target = "cuda/onnx".parse().unwrap();
        assert_eq!((onnx.as_str(), onnx.mode()), ("cuda:0/onnx", Mode::Onnx));
        assert_eq!(
            onnx.reference_target(&Target::cpu()).as_str(),
            "cuda:0",
            "a route is judged against eager on its device"
        );
        assert!(Mode::Onnx.is_route() && Mode::Stablehlo.is_route() && !Mode::Compiled.is_route());
        let ov: Target = "cpu/onnx_openvino".parse().unwrap();
        assert!(ov.mode().is_route() && ov.mode().is_compiled());
        assert!("cpu/openvino".parse::<Target>().unwrap_err().contains("onnx_openvino or stablehlo"));
    }

    #[test]
    fn vulkan_devices_take_their_routes_only() {
        let v: Target = "vulkan".parse().unwrap();
        assert_eq!((v.as_str(), v.kind(), v.is_vulkan(), v.has_eager()), ("vulkan:0", "vulkan", true, false));
        assert_eq!("vulkan:1/stablehlo".parse::<Target>().unwrap().as_str(), "vulkan:1/stablehlo");
        for bad in ["vulkan:0/compiled", "vulkan:0/eager", "vulkan:0/onnx_openvino", "vulkan:0/compiled_fullgraph"] {
            let e = bad.parse::<Target>().unwrap_err();
            assert!(e.contains("vulkan:0/stablehlo") && e.contains(bad), "{bad}: {e}");
        }
        let both: Vec<String> = v.in_modes(&[Mode::Eager, Mode::Compiled]).iter().map(|t| t.to_string()).collect();
        assert_eq!(
            both,
            ["vulkan:0/stablehlo", "vulkan:0/onnx"],
            "a Vulkan device runs its routes whatever --modes says"
        );
        assert_eq!(Target::cpu().in_modes(&[Mode::Eager, Mode::Compiled]).len(), 2);
        let route: Target = "vulkan:0/onnx".parse().unwrap();
        assert_eq!(
            route.reference_target(&Target::cpu()),
            Target::cpu(),
            "no eager on a Vulkan device: its routes are judged against the run's reference"
        );
        assert!(!Target::cpu().is_vulkan() && Target::cpu().has_eager());
    }

    #[test]
    fn mode_names_round_trip() {
        for m in Mode::ALL {
            assert_eq!(m.as_str().parse::<Mode>().unwrap(), m);
        }
    }
}
