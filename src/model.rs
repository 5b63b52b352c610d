//! The shared vocabulary of mlport: devices, dtypes, outcomes, failure reasons and
//! function statuses, with the names used in the paper ("The Grand Illusion",
//! Mince et al., arXiv 2309.07181) and in DESIGN.md. Every durable format stores the
//! `as_str` spellings below.

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
    /// JAX (`jax`); its worker turns on `jax_enable_x64`, so 64-bit dtypes are really 64-bit.
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

/// How a target executes a case: each framework's ordinary dispatch, or through its compiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Each framework's ordinary dispatch: PyTorch and TensorFlow eager execution, JAX's
    /// op-by-op dispatch, NumPy. The default, and the only mode NumPy has.
    Eager,
    /// The whole timed call compiled: `torch.compile(fullgraph=True)` with its default
    /// backend (Inductor), `jax.jit`, `tf.function(jit_compile=True)` (docs/modes.md).
    Compiled,
}

impl Mode {
    /// Both modes, eager first.
    pub const ALL: [Mode; 2] = [Mode::Eager, Mode::Compiled];

    /// `eager` or `compiled`: the suffix of a target (`cpu/compiled`) and the worker's `--mode`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Eager => "eager",
            Mode::Compiled => "compiled",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("unknown mode `{s}` (expected eager or compiled)"))
    }
}

/// A target: a canonical device name (`cpu`, `cuda:N`, `tpu:N`, `mps` or `xpu:N`) and an
/// execution [`Mode`]. Eager is the default and is written without a suffix (`cpu`,
/// `cuda:0`); the compiled mode is written `cpu/compiled`. `cpu/eager` parses to `cpu`, so a
/// target has one spelling. Everything keyed by device (the store, reports, slowdowns,
/// audits) is keyed by target.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Device(String);

/// The separator between a device and its mode: `cpu/compiled`.
const MODE_SEPARATOR: char = '/';

impl Device {
    /// The host CPU, eager: the default reference device.
    pub fn cpu() -> Device {
        Device("cpu".into())
    }

    /// The canonical spelling (`cuda:0`, never `cuda`; `cpu/compiled`, never `cpu/eager`), as
    /// stored and shown.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The device without its mode (`cpu` for `cpu/compiled`): what the worker's `--device`
    /// receives.
    pub fn base(&self) -> Device {
        Device(self.0.split(MODE_SEPARATOR).next().unwrap_or(&self.0).to_string())
    }

    /// The execution mode.
    pub fn mode(&self) -> Mode {
        if self.0.ends_with("/compiled") { Mode::Compiled } else { Mode::Eager }
    }

    /// The same device in `mode`: `cpu` with [`Mode::Compiled`] is `cpu/compiled`.
    pub fn with_mode(&self, mode: Mode) -> Device {
        let base = self.base();
        match mode {
            Mode::Eager => base,
            Mode::Compiled => Device(format!("{}{MODE_SEPARATOR}{}", base.0, mode.as_str())),
        }
    }

    /// The target whose results a failure (or an answer) on this target is judged against:
    /// for a compiled target, the same device eager (the compiler is what is tested); for an
    /// eager one, the run's `reference` device.
    pub fn reference_target(&self, reference: &Device) -> Device {
        match self.mode() {
            Mode::Compiled => self.base(),
            Mode::Eager => reference.clone(),
        }
    }

    fn parse_base(s: &str) -> Result<Device, String> {
        let bad = || format!("unknown device `{s}` (expected cpu, cuda:N, tpu:N, mps or xpu:N)");
        match s {
            "cpu" | "mps" => return Ok(Device(s.to_string())),
            "cuda" | "tpu" | "xpu" => return Ok(Device(format!("{s}:0"))),
            _ => {}
        }
        let (kind, index) = s.split_once(':').ok_or_else(bad)?;
        if !matches!(kind, "cuda" | "tpu" | "xpu") || index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let n: u32 = index.parse().map_err(|_| bad())?;
        Ok(Device(format!("{kind}:{n}")))
    }
}

impl FromStr for Device {
    type Err = String;
    /// Accepts the canonical device spellings, optionally followed by `/eager` or
    /// `/compiled`; `cuda` alone means `cuda:0`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(MODE_SEPARATOR) {
            Some((device, mode)) => {
                let mode: Mode = mode.parse().map_err(|e: String| format!("target `{s}`: {e}"))?;
                Ok(Device::parse_base(device)?.with_mode(mode))
            }
            None => Device::parse_base(s),
        }
    }
}

impl TryFrom<String> for Device {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Device> for String {
    fn from(d: Device) -> String {
        d.0
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The dtypes a case may sweep, named as in NumPy/PyTorch.
pub const DTYPES: [&str; 15] = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
];

/// How one case ended on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Ran and (where compared) agreed.
    Pass,
    /// Raised an error; see the [`Reason`].
    Fail,
    /// Not run, with a stated why (never a failure).
    Skip,
    /// Exceeded its time limit; the worker was killed.
    Timeout,
    /// The worker died (signal, abort, OOM kill).
    Crash,
    /// Ran, but disagreed with its reference beyond tolerance (reason `wrong_result`): the
    /// float64 reference of its canonical op, or the same case on the reference device.
    WrongResult,
}

impl Outcome {
    /// Every outcome, in report order (the derived `Ord`).
    pub const ALL: [Outcome; 6] =
        [Outcome::Pass, Outcome::Fail, Outcome::Skip, Outcome::Timeout, Outcome::Crash, Outcome::WrongResult];

    /// The snake_case name stored with each result and shown in reports (`pass`, `timeout`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Skip => "skip",
            Outcome::Timeout => "timeout",
            Outcome::Crash => "crash",
            Outcome::WrongResult => "wrong_result",
        }
    }
}

impl FromStr for Outcome {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == s).ok_or_else(|| format!("unknown outcome `{s}`"))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a case failed: the taxonomy of DESIGN.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// No kernel or lowering for this op on this device.
    NotImplemented,
    /// The op exists on the device but not for this dtype.
    DtypeUnsupported,
    /// Ran, but the answer disagrees beyond tolerance.
    WrongResult,
    /// The device or host ran out of memory: `torch.OutOfMemoryError`, `MemoryError`,
    /// TensorFlow's `ResourceExhaustedError` or an out-of-memory message.
    OutOfMemory,
    /// No answer within the case's time limit (`timeout_s`, default 60 s); goes with
    /// [`Outcome::Timeout`].
    Timeout,
    /// The worker died from a signal or abort.
    Crash,
    /// Ran, but on the host instead of the target device.
    SilentFallback,
    /// A compiler (XLA, Inductor) rejected the function: a graph break it cannot handle, a
    /// data-dependent shape, a tracer error.
    CompileError,
    /// Compiled more than once for the same inputs (first call and steady state of one case,
    /// compiled mode); the count is in the message and the result's `compiles`.
    Recompiles,
    /// The function does not exist in this framework version.
    ApiMissing,
    /// mlport's own bug; never counted against a framework.
    HarnessError,
    /// Anything no classification rule recognises, including argument mismatches (`TypeError`
    /// on the call's signature) and a framework that failed to import.
    Other,
}

impl Reason {
    /// Every reason, in DESIGN.md's order (the derived `Ord`).
    pub const ALL: [Reason; 12] = [
        Reason::NotImplemented,
        Reason::DtypeUnsupported,
        Reason::WrongResult,
        Reason::OutOfMemory,
        Reason::Timeout,
        Reason::Crash,
        Reason::SilentFallback,
        Reason::CompileError,
        Reason::Recompiles,
        Reason::ApiMissing,
        Reason::HarnessError,
        Reason::Other,
    ];

    /// The snake_case name stored with each result and shown in reports (`not_implemented`).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotImplemented => "not_implemented",
            Reason::DtypeUnsupported => "dtype_unsupported",
            Reason::WrongResult => "wrong_result",
            Reason::OutOfMemory => "out_of_memory",
            Reason::Timeout => "timeout",
            Reason::Crash => "crash",
            Reason::SilentFallback => "silent_fallback",
            Reason::CompileError => "compile_error",
            Reason::Recompiles => "recompiles",
            Reason::ApiMissing => "api_missing",
            Reason::HarnessError => "harness_error",
            Reason::Other => "other",
        }
    }
}

impl FromStr for Reason {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Reason::ALL.into_iter().find(|r| r.as_str() == s).ok_or_else(|| format!("unknown failure reason `{s}`"))
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A function's status on a device, the paper's definitions (section 3):
/// `success` when every counted case passes, `partial` when some fail,
/// `complete_failure` when all fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionStatus {
    /// Every counted case passed.
    Success,
    /// At least one counted case passed and at least one failed.
    Partial,
    /// Every counted case failed.
    CompleteFailure,
}

impl FunctionStatus {
    /// The snake_case name shown in reports (`complete_failure`).
    pub fn as_str(self) -> &'static str {
        match self {
            FunctionStatus::Success => "success",
            FunctionStatus::Partial => "partial",
            FunctionStatus::CompleteFailure => "complete_failure",
        }
    }

    /// Status from counts of counted passing and failing cases; `None` when nothing was counted.
    pub fn from_counts(passed: usize, failed: usize) -> Option<FunctionStatus> {
        match (passed, failed) {
            (0, 0) => None,
            (_, 0) => Some(FunctionStatus::Success),
            (0, _) => Some(FunctionStatus::CompleteFailure),
            _ => Some(FunctionStatus::Partial),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_parse_canonically() {
        assert_eq!("cuda".parse::<Device>().unwrap().as_str(), "cuda:0");
        assert_eq!("cuda:01".parse::<Device>().unwrap().as_str(), "cuda:1");
        assert_eq!("tpu:3".parse::<Device>().unwrap().as_str(), "tpu:3");
        for bad in ["gpu", "cuda:", "cuda:x", "CPU", "mps:1", "", "cpu:0"] {
            assert!(bad.parse::<Device>().is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn targets_carry_a_mode() {
        let t: Device = "cpu/compiled".parse().unwrap();
        assert_eq!((t.as_str(), t.base().as_str(), t.mode()), ("cpu/compiled", "cpu", Mode::Compiled));
        assert_eq!("cpu/eager".parse::<Device>().unwrap(), Device::cpu(), "eager is the canonical bare spelling");
        assert_eq!("cuda/compiled".parse::<Device>().unwrap().as_str(), "cuda:0/compiled");
        assert_eq!(Device::cpu().mode(), Mode::Eager);
        assert_eq!(Device::cpu().with_mode(Mode::Compiled), t);
        assert_eq!(t.with_mode(Mode::Eager), Device::cpu());
        let gpu: Device = "cuda:0".parse().unwrap();
        assert_eq!(t.reference_target(&gpu), Device::cpu(), "compiled is judged against eager on its device");
        assert_eq!(gpu.reference_target(&Device::cpu()), Device::cpu());
        for bad in ["cpu/jit", "cpu/", "/compiled", "gpu/compiled", "cpu/compiled/eager"] {
            assert!(bad.parse::<Device>().is_err(), "{bad} should be rejected");
        }
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"cpu/compiled\"");
    }

    #[test]
    fn names_round_trip() {
        for r in Reason::ALL {
            assert_eq!(r.as_str().parse::<Reason>().unwrap(), r);
        }
        for o in Outcome::ALL {
            assert_eq!(o.as_str().parse::<Outcome>().unwrap(), o);
        }
        for m in Mode::ALL {
            assert_eq!(m.as_str().parse::<Mode>().unwrap(), m);
        }
    }

    #[test]
    fn status_follows_the_paper() {
        assert_eq!(FunctionStatus::from_counts(3, 0), Some(FunctionStatus::Success));
        assert_eq!(FunctionStatus::from_counts(2, 1), Some(FunctionStatus::Partial));
        assert_eq!(FunctionStatus::from_counts(0, 4), Some(FunctionStatus::CompleteFailure));
        assert_eq!(FunctionStatus::from_counts(0, 0), None);
    }
}
