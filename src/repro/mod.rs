//! `mlport repro RESULT_ID`: a self-contained Python script, with the exact input arrays the
//! run used saved beside it, that reproduces one stored failure or wrong result for filing
//! upstream. The script needs only NumPy and the framework (no mlport); for a wrong result it
//! also ships the reference outputs the result disagreed with and compares against them with
//! the same rule and tolerance.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::model::ResultRow;
use crate::model::{Against, ComparisonVerdict, Dtype, Framework, Mode, Outcome};
use crate::store::Store;

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
    let run = store
        .run_of_result(result_id)?
        .with_context(|| format!("{}: no result #{result_id}", store.path().display()))?;
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
    let mut files = Vec::new();

    // Inputs: the arrays the run made once, copied; literal values inline.
    let specs = &spec.inputs;
    let key = crate::plan::input_key(&spec.inputs, case_dtype, row.case.seed);
    let mut inputs = Vec::new();
    // A failure to find the function (phase `resolve`, e.g. `api_missing`) happens before any
    // input is made: the script reproduces it by looking the name up, and needs no inputs.
    let before_inputs = r.phase.as_deref() == Some("resolve");
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
    if r.outcome == Outcome::WrongResult {
        let comparisons: Vec<_> = store
            .comparisons(run)?
            .into_iter()
            .filter(|c| c.case_key == row.case.key && c.device == r.device && c.verdict == ComparisonVerdict::Disagree)
            .collect();
        let references = store.references(run)?;
        let all = store.results(run)?;
        for c in &comparisons {
            let outputs = match &c.against {
                Against::Float64 => {
                    let op = row.function.op.clone().unwrap_or_default();
                    let k = crate::agreement::reference_key(&op, &row.case.case_id, case_dtype);
                    references.iter().find(|x| x.key == k).map(|x| x.outputs.clone())
                }
                Against::Target(dev) => all
                    .iter()
                    .find(|x| x.case.key == row.case.key && x.result.device == *dev)
                    .map(|x| x.result.outputs.clone()),
            };
            let Some(path) = outputs.as_ref().and_then(|o| output_path(o, c.output_index)) else { continue };
            let name = format!("expected{}_{}.npy", c.output_index, c.against.to_string().replace([':', '/'], "_"));
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
    let lit = |v: &Value| serde_json::to_string(&v.to_string()).expect("a string serialises");
    let s = |v: &str| serde_json::to_string(v).expect("a string serialises");
    let code = match spec.code.as_deref() {
        Some(c) => s(c),
        None => "None".to_string(),
    };
    let message = r.message.clone().unwrap_or_default();
    let message = format!("{}{}", r.error_type.as_ref().map(|t| format!("{t}: ")).unwrap_or_default(), message);
    let ctx = minijinja::context! {
        result_id, function => row.function.name, device => r.device.as_str(), dtype => case_dtype.as_str(),
        case_id => row.case.case_id, outcome => r.outcome.as_str(), reason => r.reason.map(|x| x.as_str()).filter(|x| *x != r.outcome.as_str()),
        message => message.replace("\"\"\"", "'''"), mlport_version => summary.info.mlport_version, run_id => run,
        host => summary.info.host, started_at => summary.info.started_at, python_version => summary.info.python_version,
        framework => fw.as_str(), framework_version => info.and_then(|i| i.version.clone()).unwrap_or_else(|| "?".into()),
        numpy_version => info.and_then(|i| i.packages.get("numpy").cloned()).or_else(|| summary.info.frameworks.get(&Framework::Numpy).and_then(|i| i.version.clone())).unwrap_or_else(|| "?".into()),
        input_note => if before_inputs { "none needed: the run failed looking the function up, before making any".to_string() } else if files.is_empty() { "literal values".to_string() } else { "input*.npy beside this script".to_string() },
        script_name, needs_ml_dtypes => fw == Framework::Numpy && case_dtype == Dtype::Bfloat16,
        expected => !expected.is_empty(), expected_what => against_what.join(", "),
        function_json => s(&row.function.name), device_json => s(r.device.base().as_str()), dtype_json => s(case_dtype.as_str()),
        mode_json => s(r.device.mode().as_str()), compiled => r.device.mode() == Mode::Compiled,
        compiler => compiler(fw), calls => if r.device.mode() == Mode::Compiled { 5 } else { 1 },
        inputs_json => lit(&Value::Array(inputs)), kwargs_json => lit(&Value::Object(spec.kwargs.clone())), code_json => code,
        expected_json => lit(&Value::Array(expected)), seed => row.case.seed & 0xFFFF_FFFF,
    };
    let mut env = minijinja::Environment::new();
    env.set_keep_trailing_newline(true);
    let text = env.render_str(TEMPLATE, ctx).context("rendering the repro template")?;
    let script = out.join(&script_name);
    std::fs::write(&script, text).with_context(|| format!("cannot write {}", script.display()))?;
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

/// How mlport's compiled mode compiles a case of `fw` (docs/modes.md), for the script's docstring.
fn compiler(fw: Framework) -> &'static str {
    match fw {
        Framework::Torch => "torch.compile(fullgraph=True)",
        Framework::Jax => "jax.jit",
        Framework::Tensorflow => "tf.function(jit_compile=True)",
        Framework::Numpy => "none: NumPy runs eagerly",
    }
}

fn output_path(outputs: &Value, index: u32) -> Option<String> {
    outputs.as_array()?.iter().find(|d| d["index"].as_u64() == Some(index as u64))?["path"].as_str().map(str::to_string)
}
