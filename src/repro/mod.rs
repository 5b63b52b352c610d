//! `mlport repro RESULT_ID`: a self-contained Python script, with the exact input arrays the
//! run used saved beside it, that reproduces one stored failure or wrong result for filing
//! upstream. The script needs only NumPy and the framework (no mlport); for a wrong result it
//! also ships the reference outputs the result disagreed with — the float64 reference's wherever
//! there is one — and compares against them with the same rule and tolerance.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::model::ResultRow;
use crate::model::{Against, CaseSpec, ComparisonRow, ComparisonVerdict, Dtype, Framework, Outcome};
use crate::store::Store;
use crate::worker::protocol::Phase;

const TEMPLATE: &str = include_str!("repro.py.j2");

/// What [`write`] produced.
#[derive(Clone, Debug)]
pub struct Written {
    /// The script, `<dir>/repro_<id>.py`.
    pub script: PathBuf,
    /// Every file written beside it (inputs, expected outputs).
    pub files: Vec<PathBuf>,
    /// One line saying what it reproduces.
    pub what: String,
    /// The interpreter the run used (it has the framework), to run the script with.
    pub python: String,
}

/// Writes the reproduction of result `result_id` into `out` (created; it must be empty if it
/// exists). `run_dir` maps a run id to its folder of arrays (`.mlport/<store>-run-<id>`).
///
/// Errors: an unknown result id; a result that passed (nothing to reproduce); inputs that the
/// run did not save (runs made before inputs were kept, protocol < 3); a non-empty `out`.
pub fn write(store: &Store, result_id: i64, out: &Path, run_dir: &dyn Fn(i64) -> PathBuf) -> Result<Written> {
    if out.is_file() {
        bail!("{}: is a file; --out names a folder to create", out.display());
    }
    let created = !out.exists();
    let written = write_into(store, result_id, out, run_dir);
    if written.is_err() && created && out.exists() {
        let _ = std::fs::remove_dir_all(out); // nothing half-written is left behind
    }
    written
}

fn write_into(store: &Store, result_id: i64, out: &Path, run_dir: &dyn Fn(i64) -> PathBuf) -> Result<Written> {
    let run =
        store.run_of_result(result_id)?.with_context(|| format!("{}: no result #{result_id}", store.location()))?;
    let summary = store.run(run)?;
    let row: ResultRow = store
        .results(run)?
        .into_iter()
        .find(|r| r.id == result_id)
        .with_context(|| format!("result #{result_id} is not in run {run}"))?;
    let r = &row.result;
    if matches!(r.outcome, Outcome::Pass | Outcome::Skip) {
        bail!(
            "result #{result_id} ({} on {} at {}) is `{}`: nothing to reproduce",
            row.function.name,
            r.device,
            crate::model::name_or_empty(row.case.dtype),
            r.outcome
        );
    }
    if !summary.origin.source.is_live() {
        bail!(
            "result #{result_id} was imported ({}), not run by mlport: there are no inputs to reproduce it with",
            summary.origin.source.as_str()
        );
    }
    let (Some(spec), Some(case_dtype)) = (row.case.spec.catalogue(), row.case.dtype) else {
        bail!(
            "result #{result_id} has no catalogue case at a dtype (`{}`): there is nothing to reproduce",
            row.case.key
        );
    };
    if out.exists() && std::fs::read_dir(out).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{}: exists and is not empty; choose another --out", out.display());
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let dir = run_dir(run);
    let elsewhere = arrays_elsewhere(&summary, &dir);
    let mut files = Vec::new();

    // Inputs: the arrays the run made once, copied; literal values inline.
    let specs = &spec.inputs;
    let key = crate::plan::input_key(&spec.inputs, case_dtype, row.case.seed);
    let mut inputs = Vec::new();
    // A failure to find the function (phase `resolve`, e.g. `api_missing`) happens before any
    // input is made: the script reproduces it by looking the name up, and needs no inputs.
    let before_inputs = matches!(r.phase.as_deref().map(str::parse), Some(Ok(Phase::Resolve)));
    for (i, s) in specs.iter().enumerate().filter(|_| !before_inputs) {
        let dtype = match s["dtype"].as_str() {
            None | Some("T") => case_dtype.to_string(),
            Some(d) => d.to_string(),
        };
        let how = if s["scalar"].as_bool() == Some(true) { "scalar" } else { s["as"].as_str().unwrap_or("tensor") };
        let saved = dir.join("inputs").join(format!("{key}.in{i}.npy"));
        if saved.exists() {
            let name = format!("input{i}.npy");
            std::fs::copy(&saved, out.join(&name)).with_context(|| format!("cannot copy {}", saved.display()))?;
            files.push(out.join(&name));
            inputs.push(json!({"file": name, "dtype": dtype, "as": how}));
        } else if !s["value"].is_null() {
            inputs.push(json!({"value": s["value"], "dtype": dtype, "as": how}));
        } else if let Some(why) = &elsewhere {
            bail!("input {i} of result #{result_id} is not on this machine: {why}");
        } else {
            bail!(
                "input {i} of result #{result_id} was not saved ({} is missing): this run predates saved inputs or its \
                 folder was removed; run the case again (`mlport run --function {} --dtype {}`) and reproduce that result",
                saved.display(),
                row.function.name,
                case_dtype
            );
        }
    }

    // Expected outputs: what a wrong result disagreed with.
    let mut expected = Vec::new();
    let mut against_what = Vec::new();
    // Expected output dtypes, where a dtype changed: `{index, dtype}`.
    let mut dtypes: Vec<Value> = Vec::new();
    if r.outcome == Outcome::WrongResult {
        let mine: Vec<_> = store
            .comparisons(run)?
            .into_iter()
            .filter(|c| c.case_key == row.case.key && c.device == r.device)
            .collect();
        dtypes = expected_dtypes(spec, case_dtype, &r.outputs, &mine);
        // The float64 reference is the expected answer wherever it judged an output; the same
        // case on another target only where it could not (crate::agreement::check_run).
        let float64_judged = |index: u32| {
            mine.iter().any(|c| {
                c.against == Against::Float64 && c.output_index == index && c.verdict != ComparisonVerdict::Incomparable
            })
        };
        let comparisons: Vec<_> = mine
            .iter()
            .filter(|c| c.verdict == ComparisonVerdict::Disagree)
            .filter(|c| c.against == Against::Float64 || !float64_judged(c.output_index))
            .collect();
        let references = store.references(run)?;
        let all = store.results(run)?;
        for c in &comparisons {
            let outputs = match &c.against {
                Against::Float64 => crate::agreement::reference_keys(row.function.op.as_deref(), &row.case)
                    .iter()
                    .find_map(|k| references.iter().find(|x| &x.key == k))
                    .map(|x| x.outputs.clone()),
                Against::Target(dev) => all
                    .iter()
                    .find(|x| x.case.key == row.case.key && x.result.device == *dev)
                    .map(|x| x.result.outputs.clone()),
            };
            let Some(path) = outputs.as_ref().and_then(|o| output_path(o, c.output_index)) else { continue };
            let name = format!("expected{}_{}.npy", c.output_index, c.against.to_string().replace([':', '/'], "_"));
            if let Some(why) = elsewhere.as_ref().filter(|_| !Path::new(&path).exists()) {
                bail!("the output result #{result_id} disagreed with ({path}) is not on this machine: {why}");
            }
            std::fs::copy(&path, out.join(&name)).with_context(|| format!("cannot copy {path}"))?;
            files.push(out.join(&name));
            expected.push(json!({"index": c.output_index, "file": name, "rule": c.rule, "rtol": c.rtol, "atol": c.atol, "against": c.reference}));
            if !against_what.contains(&c.reference) {
                against_what.push(c.reference.clone());
            }
        }
    }

    let fw = row.function.framework;
    let info = summary.info.frameworks.get(&fw);
    let script_name = format!("repro_{result_id}.py");
    let message = r.message.clone().unwrap_or_default();
    let message = format!("{}{}", r.error_type.as_ref().map(|t| format!("{t}: ")).unwrap_or_default(), message);
    let json = |v: Value| v.to_string();
    let ctx = minijinja::context! {
        result_id, function => row.function.name, device => r.device.as_str(), dtype => case_dtype.as_str(),
        case_id => row.case.case_id, outcome => r.outcome.as_str(), reason => r.reason.map(|x| x.as_str()).filter(|x| *x != r.outcome.as_str()),
        message, mlport_version => summary.info.mlport_version, run_id => run,
        host => summary.info.host, started_at => summary.info.started_at, python_version => summary.info.python_version,
        framework => fw.as_str(), backend => fw.backend().as_str(),
        keras_backend => (fw != fw.backend()).then(|| fw.backend().as_str()),
        framework_version => info.and_then(|i| i.version.clone()).unwrap_or_else(|| "?".into()),
        numpy_version => info.and_then(|i| i.packages.get("numpy").cloned()).or_else(|| summary.info.frameworks.get(&Framework::Numpy).and_then(|i| i.version.clone())).unwrap_or_else(|| "?".into()),
        input_note => if spec.suite.is_some() { "rebuilt from the framework's own test data (mlport_suites.py beside this script)".to_string() } else if before_inputs { "none needed: the run failed looking the function up, before making any".to_string() } else if files.is_empty() { "literal values".to_string() } else { "input*.npy beside this script".to_string() },
        needs_ml_dtypes => fw == Framework::Numpy && case_dtype == Dtype::Bfloat16,
        expected => !expected.is_empty() || !dtypes.is_empty(), expected_what => if against_what.is_empty() { "its declared out_dtype".to_string() } else { against_what.join(", ") },
        dtypes_json => json(Value::Array(dtypes)),
        device_base => r.device.base().as_str(), mode => r.device.mode().as_str(), compiled => r.device.mode().is_compiled(), route => r.device.mode().is_route(),
        compiler => compiler(fw, r.device.mode()), calls => if r.device.mode().is_compiled() { 5 } else { 1 },
        inputs_json => json(Value::Array(inputs)), kwargs_json => json(Value::Object(spec.kwargs.clone())), code => spec.code.as_deref(),
        expected_json => json(Value::Array(expected)), seed => row.case.seed & 0xFFFF_FFFF,
        suite_json => spec.suite.as_ref().map(|s| serde_json::to_string(s).expect("a suite sample serialises")),
        jax_x64 => summary.info.jax_x64,
    };
    let text = render(ctx)?;
    let script = out.join(&script_name);
    std::fs::write(&script, text).with_context(|| format!("cannot write {}", script.display()))?;
    // The script exports and runs through the same route code as the worker, and rebuilds a
    // suite's sample with the worker's suite code, written beside it.
    let beside = [("mlport_routes.py", r.device.mode().is_route()), ("mlport_suites.py", spec.suite.is_some())];
    for (name, _) in beside.into_iter().filter(|(_, needed)| *needed) {
        let source = crate::worker::SOURCES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, text)| *text)
            .expect("the worker sources hold it");
        let path = out.join(name);
        std::fs::write(&path, source).with_context(|| format!("cannot write {}", path.display()))?;
        files.push(path);
    }
    Ok(Written {
        script,
        files,
        python: if summary.info.python_executable.is_empty() {
            "python3".into()
        } else {
            summary.info.python_executable.clone()
        },
        what: format!(
            "{} on {} at {} (case `{}`): {}",
            row.function.name,
            r.device,
            case_dtype,
            row.case.case_id,
            r.reason.map_or_else(|| r.outcome.to_string(), |x| x.to_string())
        ),
    })
}

/// Renders the script. Every `{{ value }}` of the template is written as a Python literal
/// ([`python_literal`]): a string the store holds (a case id, a message, a host name) can end
/// no string and start no code, whatever it contains.
fn render(ctx: minijinja::Value) -> Result<String> {
    let mut env = minijinja::Environment::new();
    env.set_keep_trailing_newline(true);
    env.set_formatter(|out, _state, value| {
        let literal = python_literal(value).ok_or_else(|| {
            minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, format!("no Python literal for {value:?}"))
        })?;
        out.write_str(&literal).map_err(minijinja::Error::from)
    });
    env.render_str(TEMPLATE, ctx).context("rendering the repro template")
}

/// `value` as Python source: a string as an ASCII-only string literal (every quote, backslash,
/// line end and non-ASCII character escaped), an integer in decimal, `True`/`False`, `None`
/// for none; `None` (no literal) for anything else.
fn python_literal(value: &minijinja::Value) -> Option<String> {
    use minijinja::value::ValueKind;
    match value.kind() {
        ValueKind::String => value.as_str().map(python_str),
        ValueKind::Number => value.as_i64().map(|n| n.to_string()),
        ValueKind::Bool => Some(if value.is_true() { "True" } else { "False" }.to_string()),
        ValueKind::None | ValueKind::Undefined => Some("None".to_string()),
        _ => None,
    }
}

/// A Python string literal of `s` in plain ASCII: `"` + escapes + `"`; `eval` of it is `s`.
fn python_str(s: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x100 => write!(out, "\\x{:02x}", c as u32).expect("writing to a String"),
            c if (c as u32) < 0x1_0000 => write!(out, "\\u{:04x}", c as u32).expect("writing to a String"),
            c => write!(out, "\\U{:08x}", c as u32).expect("writing to a String"),
        }
    }
    out.push('"');
    out
}

/// How mlport's compiled mode compiles a case of `fw` (docs/modes.md), or its export route
/// exports and runs it (docs/ir-routes.md), for the script.
fn compiler(fw: Framework, mode: crate::model::Mode) -> &'static str {
    use crate::model::Mode;
    let fw = fw.backend();
    match (fw, mode) {
        (Framework::Torch, Mode::Onnx) => return "torch.onnx.export(dynamo=True) -> ONNX Runtime",
        (Framework::Jax, Mode::Onnx) => return "jax2onnx -> ONNX Runtime",
        (Framework::Tensorflow, Mode::Onnx) => return "tf2onnx -> ONNX Runtime",
        (Framework::Torch, Mode::OnnxOpenvino) => return "torch.onnx.export(dynamo=True) -> OpenVINO",
        (Framework::Jax, Mode::OnnxOpenvino) => return "jax2onnx -> OpenVINO",
        (Framework::Tensorflow, Mode::OnnxOpenvino) => return "tf2onnx -> OpenVINO",
        (_, Mode::Stablehlo) => return "jax.export (StableHLO, serialized) -> IREE",
        _ => {}
    }
    match fw {
        Framework::Torch if mode == crate::model::Mode::CompiledFullgraph => "torch.compile(fullgraph=True)",
        Framework::Torch => "torch.compile (graph breaks allowed)",
        Framework::Jax => "jax.jit",
        Framework::Tensorflow => "tf.function(jit_compile=True)",
        Framework::Numpy => "none: NumPy runs eagerly",
        Framework::Onnxruntime => "none: ONNX Runtime runs the operator's InferenceSession",
        Framework::KerasJax | Framework::KerasTorch | Framework::KerasTensorflow => unreachable!("the backend's"),
    }
}

/// Why a run's arrays are not here, when its folder is missing and the run was made on another
/// machine (its arrays stay where they were made, see docs/fleet.md): names the machine and the
/// way out. `None` when the folder exists or the run was made on this host.
fn arrays_elsewhere(summary: &crate::model::RunSummary, dir: &Path) -> Option<String> {
    let here = crate::sysinfo::host();
    if dir.exists() || summary.info.host == here {
        return None;
    }
    let machine = summary.origin.machine.as_deref().map(|m| format!(" (--machine {m})")).unwrap_or_default();
    Some(format!(
        "run {} was made on host `{}`{machine} and its arrays stay there ({} does not exist on `{here}`); \
         run `mlport repro` on `{}`, or pass --outputs DIR naming the folder its arrays were shared to",
        summary.id,
        summary.info.host,
        dir.display(),
        summary.info.host
    ))
}

fn output_path(outputs: &Value, index: u32) -> Option<String> {
    outputs.as_array()?.iter().find(|d| d["index"].as_u64() == Some(index as u64))?["path"].as_str().map(str::to_string)
}

/// The dtype each output of a wrong result should have had, where one changed: the case's
/// declared `out_dtype` (by output position), else what a comparison that found the change
/// expected (the float64 reference's mapped to the case's precision, or the other target's).
/// Only exact dtypes: "a floating dtype" is not checked by the script.
fn expected_dtypes(spec: &CaseSpec, case_dtype: Dtype, outputs: &Value, mine: &[ComparisonRow]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let indices: Vec<u64> = match &spec.outputs {
        Some(list) => list.iter().map(|&i| u64::from(i)).collect(),
        None => outputs.as_array().map_or_else(Vec::new, |a| a.iter().filter_map(|d| d["index"].as_u64()).collect()),
    };
    for (position, index) in indices.into_iter().enumerate() {
        if let Some(d) = spec.out_dtype.as_ref().and_then(|o| o.of(position, case_dtype)) {
            out.push(json!({"index": index, "dtype": d}));
        }
    }
    for c in mine.iter().filter(|c| c.dtype_changed) {
        let want = c.detail["out_dtype_expected"].as_str().or_else(|| c.detail["dtype_expected"].as_str());
        if let Some(want) = want.filter(|w| w.parse::<Dtype>().is_ok())
            && !out.iter().any(|d| d["index"] == u64::from(c.output_index))
        {
            out.push(json!({"index": c.output_index, "dtype": want}));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RunInfo, RunOrigin, RunState, RunSummary, Target};

    #[test]
    fn stored_text_becomes_an_ascii_python_literal() {
        assert_eq!(python_str("plain id_1"), r#""plain id_1""#);
        assert_eq!(python_str(r"C:\new\table"), r#""C:\\new\\table""#);
        assert_eq!(python_str("\"\"\"; import os\n'''"), r#""\"\"\"; import os\n'''""#);
        assert_eq!(python_str("tab\tcr\r\u{7f}é→😀"), r#""tab\tcr\r\x7f\xe9\u2192\U0001f600""#);
        let v = |x: minijinja::Value| python_literal(&x);
        assert_eq!(v(minijinja::Value::from(7)), Some("7".into()));
        assert_eq!(v(minijinja::Value::from(true)), Some("True".into()));
        assert_eq!(v(minijinja::Value::from(())), Some("None".into()));
        assert_eq!(v(minijinja::Value::from(vec![1])), None, "a list is no literal the template may paste");
    }

    #[test]
    fn the_arrays_of_a_run_made_on_another_machine_name_that_machine() {
        let tmp = tempfile::tempdir().unwrap();
        let mut summary = RunSummary {
            id: 4,
            uid: "u".into(),
            info: RunInfo::blank("mlport run", Target::cpu()),
            origin: RunOrigin { machine: Some("tpu-box".into()), ..RunOrigin::default() },
            state: RunState::Finished,
            finished_at: None,
            cases_planned: 1,
            results: 1,
        };
        summary.info.host = "tpu-vm-7".into();
        let missing = tmp.path().join("db-run-4");
        let why = arrays_elsewhere(&summary, &missing).expect("made elsewhere");
        assert!(
            why.starts_with("run 4 was made on host `tpu-vm-7` (--machine tpu-box) and its arrays stay there"),
            "{why}"
        );
        assert!(why.contains("run `mlport repro` on `tpu-vm-7`, or pass --outputs DIR"), "{why}");
        assert_eq!(arrays_elsewhere(&summary, tmp.path()), None, "the folder is here");
        summary.info.host = crate::sysinfo::host();
        assert_eq!(arrays_elsewhere(&summary, &missing), None, "made here: the folder was removed, said as before");
    }
}
