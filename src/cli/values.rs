//! Value parsers for clap: each turns one command-line string into a typed, validated value
//! ([`Framework`], [`Target`] targets, [`Mode`], positive numbers, `--slowdown` sides,
//! `--threshold-for` pairs), so no code past the command line parses a string again. An
//! error is the message clap prints after naming the option (a usage error, exit code 2).

use std::str::FromStr;

use crate::model::{Framework, Mode, Shard, Target};
use crate::store::Location;

/// A `--device` value: a target, and whether it was written with its mode (`cpu/compiled` is
/// a target on its own; `cpu` is run in each of `--modes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetArg {
    /// The target as parsed (`cpu/eager` is `cpu`).
    pub target: Target,
    /// True when the value named a mode after `/`.
    pub explicit_mode: bool,
}

impl FromStr for TargetArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(TargetArg { target: s.parse()?, explicit_mode: s.contains('/') })
    }
}

/// The targets of `--device` and `--modes`: each device without a mode in each mode (a
/// `vulkan:N` in its own routes, [`Target::in_modes`]), a device written with its mode
/// (`cpu/compiled`) as it is; duplicates dropped, order kept.
pub fn targets(devices: &[TargetArg], modes: &[Mode]) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    for d in devices {
        let expanded: Vec<Target> = if d.explicit_mode { vec![d.target.clone()] } else { d.target.in_modes(modes) };
        for t in expanded {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// A reference device (`run --reference`, `audit --reference`): a target with an eager mode,
/// since answers and failures elsewhere are judged against it.
///
/// Errors: a device no framework runs eagerly on (`vulkan:N`, docs/vulkan.md), or not a target.
pub fn reference(s: &str) -> Result<Target, String> {
    let t: Target = s.parse()?;
    if !t.has_eager() {
        return Err(format!(
            "{t} cannot be the reference device: no framework runs eagerly on it, its routes are judged against the \
             reference (docs/vulkan.md)"
        ));
    }
    Ok(t)
}

/// A target results are read for (`audit --device`): a Vulkan device must name its route,
/// since no result is ever stored on `vulkan:N` itself.
///
/// Errors: a bare `vulkan:N`, naming its two targets; not a target.
pub fn result_target(s: &str) -> Result<Target, String> {
    let t: Target = s.parse()?;
    if t.is_vulkan() && !s.contains('/') {
        return Err(format!(
            "{t} has results on its routes only: name one, {t}/stablehlo or {t}/onnx (docs/vulkan.md)"
        ));
    }
    Ok(t)
}

/// The modes of `--modes`, duplicates dropped, order kept.
pub fn modes(v: &[Mode]) -> Vec<Mode> {
    dedup(v)
}

/// `v` without repeats, in first-seen order.
pub fn dedup<T: Clone + PartialEq>(v: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in v {
        if !out.contains(x) {
            out.push(x.clone());
        }
    }
    out
}

/// A positive, finite number (seconds, ms, a ratio or a fraction).
pub fn positive(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if !(v > 0.0 && v.is_finite()) {
        return Err(format!("must be a positive number, not {v}"));
    }
    Ok(v)
}

/// A finite ratio above 1 (`mlport diff --threshold`, `--error-factor`): at 1 or below every
/// change, or none, would be one.
pub fn above_one(s: &str) -> Result<f64, String> {
    let v = positive(s)?;
    if v <= 1.0 {
        return Err(format!("must be above 1, not {v}"));
    }
    Ok(v)
}

/// A per-case timeout in seconds: positive and at most one day
/// ([`crate::catalogue::MAX_TIMEOUT_S`]).
pub fn timeout(s: &str) -> Result<f64, String> {
    let v = positive(s)?;
    if v > crate::catalogue::MAX_TIMEOUT_S {
        return Err(format!("{v:e} is longer than one day ({} s)", crate::catalogue::MAX_TIMEOUT_S));
    }
    Ok(v)
}

/// A thread count of at least 1.
pub fn threads(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// A scan's `--threads`: a count up to what the machine allows ([`crate::scan::check_threads`]).
pub fn scan_threads(s: &str) -> Result<usize, String> {
    crate::scan::check_threads(s.parse().map_err(|e| format!("{e}"))?)
}

/// `--threshold-for NAME=RATIO`: a function's own intolerable-slowdown ratio.
#[derive(Clone, Debug, PartialEq)]
pub struct ThresholdFor {
    /// The function (or op) name.
    pub name: String,
    /// Its threshold, a positive ratio.
    pub ratio: f64,
}

impl FromStr for ThresholdFor {
    type Err = String;
    fn from_str(t: &str) -> Result<Self, String> {
        let (name, x) = t.split_once('=').ok_or_else(|| format!("`{t}`: expected NAME=RATIO"))?;
        let ratio = positive(x).map_err(|e| format!("`{t}`: {e}"))?;
        Ok(ThresholdFor { name: name.to_string(), ratio })
    }
}

/// A `--resume` value: `latest` or a run id.
pub fn resume_run(s: &str) -> Result<String, String> {
    if s == "latest" || s.parse::<i64>().is_ok() {
        Ok(s.to_string())
    } else {
        Err(format!("`{s}` is not a run id (a number, as `mlport runs` prints it)"))
    }
}

/// A `--shard` value: `INDEX/COUNT` with `0 <= INDEX < COUNT` ([`Shard`]'s parser).
pub fn shard(s: &str) -> Result<Shard, String> {
    s.parse()
}

/// A `--shards` (or `MLPORT_SHARDS`) count: at least 1.
pub fn shard_count(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err("the shard count must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a shard count (a whole number, at least 1)")),
    }
}

/// A `--campaign` or `--machine` name: not blank, and without `..` or `@`, which `--slowdown
/// DEVICE@MACHINE..DEVICE@MACHINE` uses to separate its sides.
pub fn fleet_name(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        Err("must not be empty".into())
    } else if s.contains("..") || s.contains('@') {
        Err(format!("`{s}` holds `..` or `@`, which --slowdown uses to separate machines; choose another name"))
    } else {
        Ok(s.to_string())
    }
}

/// `--db` / `MLPORT_DB`: an SQLite path or a PostgreSQL URL ([`Location::parse`]). A clap
/// parser of its own because clap's usual message repeats the value as given, and a URL's
/// password must not reach the terminal: the error names the value with its password hidden.
#[derive(Clone, Debug)]
pub struct StoreParser;

impl clap::builder::TypedValueParser for StoreParser {
    type Value = Location;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Location, clap::Error> {
        let name = arg.map_or_else(|| "--db".to_string(), |a| format!("--{}", a.get_id()));
        let text = value.to_str().ok_or_else(|| {
            clap::Error::raw(clap::error::ErrorKind::InvalidUtf8, format!("invalid value for {name}: not UTF-8\n"))
                .with_cmd(cmd)
        })?;
        Location::parse(text).map_err(|e| {
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("invalid value for {name}: {e}\n"))
                .with_cmd(cmd)
        })
    }
}

/// A result id as reports print it: `123` or `#123`.
pub fn result_id(s: &str) -> Result<i64, String> {
    s.trim_start_matches('#')
        .parse()
        .map_err(|_| format!("`{s}` is not a result id (a number, as reports print it: #123)"))
}

/// One side of `--slowdown`: a target, optionally a framework, and optionally the run (id or
/// label) it is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowdownSide {
    /// Only this framework's results (`FRAMEWORK/DEVICE`); `None` for every framework.
    pub framework: Option<Framework>,
    /// The target compared.
    pub device: Target,
    /// The run (an id or a label) holding its results; `None` for the default run.
    pub run: Option<String>,
}

/// `--slowdown A..B`, each side `[FRAMEWORK/]DEVICE[@RUN]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowdownSpec {
    /// The baseline side.
    pub a: SlowdownSide,
    /// The side whose slowdown relative to A is reported.
    pub b: SlowdownSide,
}

impl FromStr for SlowdownSpec {
    type Err = String;
    /// Parses `A..B`, naming the bad part.
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| format!("`{s}`: expected A..B, e.g. cpu..tpu:0, cuda:0@3..tpu:0@5 or torch/cpu..jax/cpu"))?;
        let side = |part: &str| -> Result<SlowdownSide, String> {
            let (device, run) = match part.split_once('@') {
                Some((d, r)) if !r.is_empty() => (d, Some(r.to_string())),
                Some(_) => return Err(format!("`{s}`: `{part}` names no run after @")),
                None => (part, None),
            };
            // `torch/cpu/compiled`: a framework, then a target; `cpu/compiled` alone is a target.
            let (framework, device) = match device.split_once('/') {
                Some((f, d)) if f.parse::<Framework>().is_ok() || d.parse::<Mode>().is_err() => {
                    let f: Framework = f.parse().map_err(|e: String| format!("`{s}`: {e}"))?;
                    (Some(f), d)
                }
                _ => (None, device),
            };
            let device = device.parse::<Target>().map_err(|e| format!("`{s}`: {e}"))?;
            Ok(SlowdownSide { framework, device, run })
        };
        Ok(SlowdownSpec { a: side(a)?, b: side(b)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> Result<(SlowdownSide, SlowdownSide), String> {
        s.parse::<SlowdownSpec>().map(|p| (p.a, p.b))
    }

    #[test]
    fn bad_devices_frameworks_and_numbers_are_named() {
        assert!("gpu0".parse::<TargetArg>().unwrap_err().contains("unknown device `gpu0`"));
        assert!("mxnet".parse::<Framework>().unwrap_err().contains("unknown framework `mxnet`"));
        assert!(positive("0").is_err());
        assert!(positive("nan").is_err());
        assert!(positive("x").unwrap_err().contains("not a number"));
        assert_eq!(positive("2.5"), Ok(2.5));
        assert!(timeout("1e300").unwrap_err().contains("1e300 is longer than one day"));
        assert!(threads("0").unwrap_err().contains("at least 1"));
        assert_eq!(threads("4"), Ok(4));
        assert_eq!("bfloat16".parse::<crate::model::Dtype>(), Ok(crate::model::Dtype::Bfloat16));
        assert!("float8".parse::<crate::model::Dtype>().unwrap_err().contains("unknown dtype `float8`"));
        assert_eq!(resume_run("latest"), Ok("latest".to_string()));
        assert_eq!(resume_run("7"), Ok("7".to_string()));
        assert!(resume_run("abc").unwrap_err().contains("`abc` is not a run id"));
        assert_eq!(result_id("#12"), Ok(12));
        assert!(result_id("x12").unwrap_err().contains("is not a result id"));
        assert_eq!(shard("1/4"), Ok(Shard { index: 1, count: 4 }));
        assert!(shard("5/4").unwrap_err().contains("shard index 5 is not below the count 4"));
        assert!(shard("0/0").unwrap_err().contains("at least 1"));
        assert!(shard("x/2").unwrap_err().contains("`x` in `x/2` is not a shard index"));
        assert_eq!(shard_count("4"), Ok(4));
        assert!(shard_count("0").unwrap_err().contains("at least 1"));
        assert!(shard_count("four").unwrap_err().contains("not a shard count"));
        assert_eq!(fleet_name("gpu-box"), Ok("gpu-box".to_string()));
        assert!(fleet_name(" ").unwrap_err().contains("empty"));
        assert!(fleet_name("a@b").unwrap_err().contains("`..` or `@`"));
    }

    #[test]
    fn threshold_for_is_name_equals_ratio() {
        let t: ThresholdFor = "torch.add=1.5".parse().unwrap();
        assert_eq!((t.name.as_str(), t.ratio), ("torch.add", 1.5));
        assert!("numpy.add".parse::<ThresholdFor>().unwrap_err().contains("expected NAME=RATIO"));
        assert!("numpy.add=x".parse::<ThresholdFor>().unwrap_err().contains("not a number"));
        assert!("numpy.add=-1".parse::<ThresholdFor>().unwrap_err().contains("positive"));
    }

    #[test]
    fn slowdown_sides_parse() {
        let (a, b) = spec("cpu..tpu:0").unwrap();
        assert_eq!((a.device.as_str(), a.run, b.device.as_str(), b.run), ("cpu", None, "tpu:0", None));
        let (a, b) = spec("cuda:0@paper/torch/t4_vm/gpu..tpu:0@7").unwrap();
        assert_eq!((a.device.as_str(), a.run.as_deref()), ("cuda:0", Some("paper/torch/t4_vm/gpu")));
        assert_eq!((b.device.as_str(), b.run.as_deref()), ("tpu:0", Some("7")));
        assert!(spec("cpu").unwrap_err().contains("expected A..B"));
        assert!(spec("gpu..cpu").unwrap_err().contains("unknown device `gpu`"));
        assert!(spec("cpu@..cpu").unwrap_err().contains("names no run"));
        let (a, b) = spec("torch/cpu..jax/cpu@4").unwrap();
        assert_eq!(
            (a.framework, b.framework, b.run.as_deref()),
            (Some(Framework::Torch), Some(Framework::Jax), Some("4"))
        );
        assert!(spec("pandas/cpu..cpu").is_err());
        // Targets with a mode, with and without a framework.
        let (a, b) = spec("cpu..cpu/compiled").unwrap();
        assert_eq!(
            (a.framework, a.device.as_str(), b.framework, b.device.as_str()),
            (None, "cpu", None, "cpu/compiled")
        );
        let (a, b) = spec("jax/cpu..jax/cpu/compiled@3").unwrap();
        assert_eq!((a.framework, b.framework), (Some(Framework::Jax), Some(Framework::Jax)));
        assert_eq!((b.device.as_str(), b.run.as_deref()), ("cpu/compiled", Some("3")));
        assert!(spec("cpu..cpu/jit").is_err());
    }

    #[test]
    fn a_vulkan_device_is_neither_a_reference_nor_a_result_target_without_its_route() {
        assert!(reference("vulkan:0").unwrap_err().contains("cannot be the reference device"));
        assert_eq!(reference("cuda").unwrap().as_str(), "cuda:0");
        let e = result_target("vulkan").unwrap_err();
        assert!(e.contains("vulkan:0/stablehlo or vulkan:0/onnx"), "{e}");
        assert_eq!(result_target("vulkan:0/onnx").unwrap().as_str(), "vulkan:0/onnx");
        assert_eq!(result_target("cpu").unwrap().as_str(), "cpu");
    }

    #[test]
    fn targets_are_devices_times_modes() {
        let t = |s: &[&str]| s.iter().map(|x| x.parse::<TargetArg>().unwrap()).collect::<Vec<_>>();
        let all = targets(&t(&["cpu", "cuda:0"]), &[Mode::Eager, Mode::Compiled]);
        let names: Vec<&str> = all.iter().map(Target::as_str).collect();
        assert_eq!(names, ["cpu", "cpu/compiled", "cuda:0", "cuda:0/compiled"]);
        // A device with its own mode stays as written; eager is the default mode.
        let some = targets(&t(&["cpu/compiled", "cuda:0", "cuda"]), &[Mode::Eager]);
        assert_eq!(some.iter().map(Target::as_str).collect::<Vec<_>>(), ["cpu/compiled", "cuda:0"]);
        assert!("jit".parse::<Mode>().unwrap_err().contains("unknown mode `jit`"));
        assert_eq!(modes(&[Mode::Compiled, Mode::Compiled]), vec![Mode::Compiled]);
    }
}
