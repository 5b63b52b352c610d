//! The frameworks' own test data as cases (`mlport run --suite`, docs/suites.md): which suite a
//! case was taken from ([`Suite`]) and what a case carries about its operator ([`SuiteSample`]):
//! the sample's place in the suite and the operator's declared dtypes and registered kernels,
//! as the installed framework said them when the suite was listed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Dtype, Framework, Target};

/// A framework's own test data, read from the installed wheel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[derive(strum::IntoStaticStr, strum::EnumString, strum::Display)]
#[strum(serialize_all = "kebab-case")]
#[derive(clap::ValueEnum)]
pub enum Suite {
    /// PyTorch's `torch.testing._internal.common_methods_invocations.op_db`: one OpInfo per
    /// operator (and variant), with `sample_inputs(device, dtype)` and declared dtypes per
    /// device type.
    Opinfo,
    /// PyTorch's `torch.testing._internal.common_modules.module_db`: one ModuleInfo per
    /// `torch.nn` module, with constructor and forward inputs.
    Modules,
    /// JAX's `jax._src.internal_test_util.test_harnesses.all_harnesses`: one harness per
    /// primitive, shape and dtype, with declared limitations per device.
    JaxHarnesses,
}

impl Suite {
    /// `opinfo`, `modules`, `jax-harnesses`: the stored spelling and the `--suite` value.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The framework whose wheel ships the suite and whose worker runs its cases.
    pub fn framework(self) -> Framework {
        match self {
            Suite::Opinfo | Suite::Modules => Framework::Torch,
            Suite::JaxHarnesses => Framework::Jax,
        }
    }

    /// The Python module the suite's import needs beyond the framework, and the pinned
    /// requirement that provides it (`python/suites.lock`).
    pub fn needs(self) -> (&'static str, &'static str) {
        match self {
            Suite::Opinfo | Suite::Modules => ("expecttest", "expecttest==0.3.0"),
            Suite::JaxHarnesses => ("absl", "absl-py==2.5.1"),
        }
    }

    /// The word for one of the suite's entries in reports: OpInfo, ModuleInfo, harness.
    pub fn entry(self) -> &'static str {
        match self {
            Suite::Opinfo => "OpInfo",
            Suite::Modules => "ModuleInfo",
            Suite::JaxHarnesses => "harness",
        }
    }

    /// `n` of the suite's entries in words: `1 OpInfo`, `701 OpInfos`, `5594 harnesses`.
    pub fn count(self, n: usize) -> String {
        match (n, self) {
            (1, _) => format!("1 {}", self.entry()),
            (_, Suite::JaxHarnesses) => format!("{n} harnesses"),
            _ => format!("{n} {}s", self.entry()),
        }
    }
}

/// The dispatch keys a PyTorch kernel can be registered under, as
/// `torch._C._dispatch_has_kernel_for_dispatch_key` names them, plus `Composite` (a
/// CompositeImplicitAutograd or CompositeExplicitAutograd kernel, which every device runs
/// through other operators).
pub const DISPATCH_KEYS: [&str; 7] = ["CPU", "CUDA", "XLA", "MPS", "XPU", "PrivateUse1", "Composite"];

/// What a case taken from a suite carries (a [`super::CaseSpec`]'s `suite`): where the sample
/// is in the suite, so the worker can build it again, and what the installed framework
/// declares about its operator, so reports can set running against declaring.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteSample {
    /// The suite.
    pub suite: Suite,
    /// The entry's own name: the OpInfo's `name` (`nn.functional.pad`), the module class
    /// (`torch.nn.Linear`), the harness group (`dot_general`).
    pub name: String,
    /// The entry's variant: OpInfo's `variant_test_name`, the harness name; empty when none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub variant: String,
    /// The sample's index in the entry's sample stream at the case's dtype (0-based).
    pub sample: u32,
    /// The dtypes the entry declares per device type (`cpu`, `cuda`, `xla`, `xpu`, `tpu`), as
    /// the framework's own test data says them (OpInfo's `supported_dtypes`, a harness's
    /// limitations).
    pub declared: BTreeMap<String, Vec<Dtype>>,
    /// PyTorch only: whether a kernel is registered for the entry's ATen operator, per
    /// dispatch key ([`DISPATCH_KEYS`]) whose backend was loaded where the suite was listed (a
    /// key left out is unknown); `None` when it has no ATen operator of that name or the
    /// framework has no dispatcher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered: Option<BTreeMap<String, bool>>,
    /// The entry's own NumPy reference (OpInfo's `ref`, by name), used for the float64
    /// reference where it computes; `None`: the operator itself in float64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The output depends on the random generator or on uninitialised memory: compared on
    /// shape and dtype only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub random: bool,
    /// The dtypes at which this sample's every tensor has no element (OpInfo's 0×0 matrices):
    /// it shows that the dtype is accepted, not that anything is computed in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub empty_at: Vec<Dtype>,
}

impl SuiteSample {
    /// The entry's name with its variant: `nn.functional.pad.reflect`, `sin`.
    pub fn entry_name(&self) -> String {
        entry_name(&self.name, &self.variant)
    }

    /// Whether the entry declares `dtype` on `target`'s device type; `None` when the suite says
    /// nothing for that device type.
    pub fn declares(&self, target: &Target, dtype: Dtype) -> Option<bool> {
        self.declared.get(device_type(target)).map(|list| list.contains(&dtype))
    }

    /// Whether a kernel for the entry's ATen operator is registered for `target`'s device, its
    /// own or a composite one; `None` when unknown (no ATen operator, no dispatcher, or a device
    /// with no dispatch key of its own).
    pub fn registered_on(&self, target: &Target) -> Option<bool> {
        let keys = self.registered.as_ref()?;
        let composite = keys.get("Composite").copied().unwrap_or(false);
        // A key the listing left out: that backend's kernels were not loaded where the suite was
        // listed (PyTorch/XLA's, without torch_xla imported): unknown unless a composite runs.
        match dispatch_key(target).and_then(|k| keys.get(k)) {
            Some(own) => Some(*own || composite),
            None => composite.then_some(true),
        }
    }
}

/// A suite entry's name with its variant, as reports and `--op` spell it: `name.variant`, or
/// `name` when it has none.
pub fn entry_name(name: &str, variant: &str) -> String {
    if variant.is_empty() { name.to_string() } else { format!("{name}.{variant}") }
}

/// The device type of a target, as suites name them: its kind (`cpu`, `cuda`, `xla`, `tpu`,
/// `mps`, `xpu`, `vulkan`), whatever its mode.
pub fn device_type(target: &Target) -> &str {
    target.kind()
}

/// The PyTorch dispatch key of a target's device: `CPU`, `CUDA`, `XLA` (xla and tpu), `MPS`,
/// `XPU`; `None` for any other.
pub fn dispatch_key(target: &Target) -> Option<&'static str> {
    Some(match device_type(target) {
        "cpu" => "CPU",
        "cuda" => "CUDA",
        "xla" | "tpu" => "XLA",
        "mps" => "MPS",
        "xpu" => "XPU",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SuiteSample {
        SuiteSample {
            suite: Suite::Opinfo,
            name: "nn.functional.pad".into(),
            variant: "reflect".into(),
            sample: 2,
            declared: BTreeMap::from([
                ("cpu".into(), vec![Dtype::Float32, Dtype::Float64]),
                ("cuda".into(), vec![Dtype::Float16, Dtype::Float32]),
            ]),
            registered: Some(BTreeMap::from([("CPU".into(), true), ("CUDA".into(), false)])),
            reference: Some("numpy.pad".into()),
            random: false,
            empty_at: Vec::new(),
        }
    }

    #[test]
    fn declared_and_registered_follow_the_target_device() {
        let s = sample();
        let cpu: Target = "cpu".parse().unwrap();
        let compiled: Target = "cpu/compiled".parse().unwrap();
        let cuda: Target = "cuda:0".parse().unwrap();
        let xla: Target = "xla:0".parse().unwrap();
        assert_eq!(s.declares(&cpu, Dtype::Float16), Some(false));
        assert_eq!(s.declares(&compiled, Dtype::Float64), Some(true));
        assert_eq!(s.declares(&cuda, Dtype::Float16), Some(true));
        assert_eq!(s.declares(&xla, Dtype::Float32), None, "nothing said for xla");
        assert_eq!(s.registered_on(&cpu), Some(true));
        assert_eq!(s.registered_on(&cuda), Some(false));
        assert_eq!(s.registered_on(&xla), None, "a key not listed: that backend was not loaded");
        let mut composite = s.clone();
        composite.registered.as_mut().unwrap().insert("Composite".into(), true);
        assert_eq!(composite.registered_on(&cuda), Some(true), "a composite kernel runs everywhere");
        assert_eq!(composite.registered_on(&xla), Some(true));
        assert_eq!(s.entry_name(), "nn.functional.pad.reflect");
    }

    #[test]
    fn round_trips_and_refuses_unknown_keys() {
        let s = sample();
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<SuiteSample>(&text).unwrap(), s);
        assert!(text.contains(r#""suite":"opinfo""#), "{text}");
        assert!(!text.contains("random"), "false is left out: {text}");
        assert!(serde_json::from_str::<SuiteSample>(&text.replace("\"sample\"", "\"colour\":1,\"sample\"")).is_err());
        assert_eq!("jax-harnesses".parse::<Suite>().unwrap(), Suite::JaxHarnesses);
        assert_eq!(Suite::JaxHarnesses.framework(), Framework::Jax);
    }
}
