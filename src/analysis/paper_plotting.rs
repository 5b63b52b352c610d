//! The GPU (T4) → TPU v3 latency figures of "The Grand Illusion" as the authors' own plotting
//! code computes them (for-ai/portability, commit b220f30, `src/plotting/`), followed step by
//! step on the paper's imported runs, quirks included: the latency half of the authors' method
//! of `mlport report paper` ([`super::paper`]).
//!
//! 1. **Which report** (`utils.py`, `open_file`): each device's sessions are read with the
//!    failure report at the top of the machine's folder. For TensorFlow that is the 8 May report
//!    set, not the 13 May one beside the sessions; the importer keeps each test's outcome there
//!    ([`ImportedSpec::authors_outcome`]). A run with no report of its own reads the other
//!    device's: their `jax_timings/tpu_vm/test_failure_report.json` is a byte-identical copy of
//!    the JAX T4 run's report.
//! 2. **Which tests** (`utils.py`, `combine_function_tests`): the report's tests in report order
//!    ([`ImportedSpec::report_index`]); a test counts when it passed, its key `<file>:<test>`
//!    (the file without the `src/<fw>_tests_reduced/` folder, the class dropped) has timed calls
//!    on the device, and the key holds no `_cpu` anywhere (PyTorch's CPU copies, and any other
//!    test or file named so). Each counting test adds all the key's timed calls of the three
//!    sessions, first calls included — so two passing tests that share a key (two classes of one
//!    file; the timing file kept one entry) add the same calls twice (TensorFlow's
//!    `assert_less`, `tensor_scatter_update`).
//! 3. **Keys** (`utils.py`, `fetch_data`): PyTorch's are cut at their first `_xla` (TPU) or
//!    `_cuda` (GPU) — `key.split("_xla")[0]` — which drops the dtype after the device token too,
//!    so a test's dtype variants collide and the last one in report order wins, on each device
//!    on its own (a TPU float32 variant may be set against a GPU float64 one). Keys on both
//!    devices are kept and grouped by test file (`Adamax_test`), their calls concatenated.
//! 4. **Figures** (`overall_success.py`, `get_percent_count`): per function the mean of all its
//!    calls on each device; faster on TPU when the TPU mean is below the GPU mean. The median and
//!    geometric mean of the ratio TPU mean / GPU mean and the share above the 10× mark summarise
//!    the same per-function ratios (the plotting code draws them, it prints none).
//!
//! Not followed to the letter, with no effect on the published data: after each session their
//! code drops keys with no timed call yet, so a key first timed in session 2 or 3 moves to the
//! end of the order (and would win a dtype collision); the store keeps each test's calls, not
//! which session timed them, so report order is used. The one such key in the data (PyTorch TPU
//! v3 `test_ormqr_xla_float64`) failed and never counts. `overall_success.py` reads TensorFlow
//! with `consolidation_method="mean"`, which raises on the published data (the doubled keys of
//! step 2 make ragged arrays); the default "concat" reading, every other plot's, is followed.
//! Times are the store's whole nanoseconds, theirs seconds: ratios agree to about 1e-9.
//!
//! `scripts/paper_plotting_check.py` follows the same code on the raw JSON files;
//! `tests/paper_report.rs` checks both give the same figures.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::slowdown::{Distribution, all_calls};
use crate::import::suite::{DEVICE_TOKEN, device_suffix};
use crate::model::{Framework, ImportedSpec, Outcome, ResultRow, Spec, Target};
use crate::stats::StatsConfig;

/// The folders `combine_function_tests` strips from a node id's file.
const TEST_FOLDERS: [&str; 3] =
    ["src/tensorflow_tests_reduced/", "src/pytorch_tests_reduced/", "src/jax_tests_reduced/"];

/// One function (test file) the plotting code compares.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlottedFunction {
    /// The authors' key for it: the test file without `.py` (`Adamax_test`).
    pub key: String,
    /// mlport's name for it (the catalogue's, through its `paper` stem).
    pub name: String,
    /// Timed calls counted on the GPU.
    pub gpu_calls: usize,
    /// Timed calls counted on the TPU.
    pub tpu_calls: usize,
    /// Their mean on the GPU, ns.
    pub gpu_mean_ns: f64,
    /// Their mean on the TPU, ns.
    pub tpu_mean_ns: f64,
    /// `tpu_mean_ns / gpu_mean_ns`.
    pub ratio: f64,
}

/// One framework's latency figure as the plotting code computes it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlottedLatency {
    /// The functions compared, by key.
    pub functions: Vec<PlottedFunction>,
    /// Their ratios' distribution.
    pub distribution: Distribution,
    /// Functions (test files) with results on either device that were not compared.
    pub not_compared: usize,
}

/// The key `combine_function_tests` builds for a test: `<file>:<test>` (module docs, step 2),
/// from the case key, mlport's `{device}` placeholder back to `device`'s token.
fn authors_key(row: &ResultRow, device: &Target) -> String {
    let key = row.case.key.replace(DEVICE_TOKEN, &device_suffix(device).to_ascii_lowercase());
    let file = TEST_FOLDERS.iter().fold(key.as_str(), |k, folder| k.strip_prefix(folder).unwrap_or(k));
    let file = file.split(':').next().unwrap_or(file);
    let test = key.rsplit(':').next().unwrap_or(&key);
    format!("{file}:{test}")
}

/// The function key `fetch_data` groups by: the file without `.py` (module docs, step 3).
fn function_key(key: &str) -> &str {
    let file = key.split(':').next().unwrap_or(key);
    file.strip_suffix(".py").unwrap_or(file)
}

fn imported(row: &ResultRow) -> Option<&ImportedSpec> {
    match &row.case.spec {
        Spec::Imported(s) => Some(s),
        Spec::Catalogue(_) => None,
    }
}

/// Whether the test passed in the report the authors read (module docs, step 1).
fn passed_for_authors(row: &ResultRow) -> bool {
    match imported(row).and_then(|s| s.authors_outcome.as_deref()) {
        Some(word) => word == "passed",
        None => matches!(row.result.outcome, Outcome::Pass | Outcome::Flaky),
    }
}

/// The rows of `framework` on `device`.
fn on<'a>(rows: &'a [ResultRow], device: &'a Target, framework: Framework) -> impl Iterator<Item = &'a ResultRow> {
    rows.iter().filter(move |r| &r.result.device == device && r.function.framework == framework)
}

/// A report's tests on `device`, in report order.
fn report_tests<'a>(rows: &'a [ResultRow], device: &'a Target, framework: Framework) -> Vec<(u64, &'a ResultRow)> {
    let mut tests: Vec<(u64, &ResultRow)> =
        on(rows, device, framework).filter_map(|r| imported(r)?.report_index.map(|i| (i, r))).collect();
    tests.sort_by_key(|(i, _)| *i);
    tests
}

/// Keys in insertion order with their values, a later insert of a key replacing its value in
/// place (a Python dict).
#[derive(Default)]
struct Ordered {
    keys: Vec<String>,
    values: HashMap<String, Vec<f64>>,
}

impl Ordered {
    /// `d[key] = value`.
    fn insert(&mut self, key: String, value: Vec<f64>) {
        if !self.values.contains_key(&key) {
            self.keys.push(key.clone());
        }
        self.values.insert(key, value);
    }

    /// `d.setdefault(key, [])` then `+= calls`.
    fn extend(&mut self, key: &str, calls: &[f64]) {
        if !self.values.contains_key(key) {
            self.keys.push(key.to_string());
        }
        self.values.entry(key.to_string()).or_default().extend_from_slice(calls);
    }
}

/// One device's timed calls per key after `combine_function_tests` over its three sessions
/// (steps 1–2): `rows` are the device run's, `report` the rows whose outcomes it reads.
fn combine(rows: &[ResultRow], device: &Target, framework: Framework, report: (&[ResultRow], &Target)) -> Ordered {
    let mut timed: HashMap<String, Vec<f64>> = HashMap::new();
    for r in on(rows, device, framework) {
        let calls = all_calls(&r.result);
        if !calls.is_empty() {
            timed.entry(authors_key(r, device)).or_insert(calls);
        }
    }
    let mut out = Ordered::default();
    for (_, test) in report_tests(report.0, report.1, framework) {
        let key = authors_key(test, report.1);
        if !passed_for_authors(test) || key.contains("_cpu") {
            continue;
        }
        if let Some(calls) = timed.get(&key) {
            out.extend(&key, calls);
        }
    }
    out
}

/// PyTorch's keys cut at the first device token, the last colliding key winning (step 3).
fn cut_device_token(side: Ordered, framework: Framework, token: &str) -> Ordered {
    if framework != Framework::Torch {
        return side;
    }
    let mut out = Ordered::default();
    for key in side.keys {
        let cut = key.find(token).map_or(key.as_str(), |i| &key[..i]).to_string();
        out.insert(cut, side.values[&key].clone());
    }
    out
}

/// The keys on both devices grouped by test file, calls concatenated (step 3).
fn by_function(side: &Ordered, other: &Ordered) -> Ordered {
    let mut out = Ordered::default();
    for key in side.keys.iter().filter(|k| other.values.contains_key(*k)) {
        out.extend(function_key(key), &side.values[key]);
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The plotting code's latency figure of `framework` from its GPU run's rows on `gpu` and its
/// TPU run's rows on `tpu` (module docs), ratios above `threshold` counted as intolerable;
/// `stats` for the geometric mean's interval.
pub fn plotted_latency(
    (gpu, gpu_rows): (&Target, &[ResultRow]),
    (tpu, tpu_rows): (&Target, &[ResultRow]),
    framework: Framework,
    threshold: f64,
    stats: &StatsConfig,
) -> PlottedLatency {
    let has_report = |rows: &[ResultRow], device: &Target| !report_tests(rows, device, framework).is_empty();
    // A device without a report of its own reads the other's (step 1).
    let gpu_report = if has_report(gpu_rows, gpu) { (gpu_rows, gpu) } else { (tpu_rows, tpu) };
    let tpu_report = if has_report(tpu_rows, tpu) { (tpu_rows, tpu) } else { (gpu_rows, gpu) };
    let tpu_side = cut_device_token(combine(tpu_rows, tpu, framework, tpu_report), framework, "_xla");
    let gpu_side = cut_device_token(combine(gpu_rows, gpu, framework, gpu_report), framework, "_cuda");
    let (tpu_fns, gpu_fns) = (by_function(&tpu_side, &gpu_side), by_function(&gpu_side, &tpu_side));

    let mut names: HashMap<String, String> = HashMap::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (rows, device) in [(gpu_rows, gpu), (tpu_rows, tpu)] {
        for r in on(rows, device, framework) {
            let f = function_key(&authors_key(r, device)).to_string();
            names.entry(f.clone()).or_insert_with(|| r.function.name.clone());
            seen.insert(f);
        }
    }
    let mut functions = Vec::new();
    for key in &gpu_fns.keys {
        let (Some(g), Some(t)) = (gpu_fns.values.get(key), tpu_fns.values.get(key)) else { continue };
        let (gpu_mean_ns, tpu_mean_ns) = (mean(g), mean(t));
        if gpu_mean_ns <= 0.0 || tpu_mean_ns <= 0.0 {
            continue; // a zero time has no ratio (never in the published data)
        }
        functions.push(PlottedFunction {
            key: key.clone(),
            name: names.get(key).cloned().unwrap_or_else(|| key.clone()),
            gpu_calls: g.len(),
            tpu_calls: t.len(),
            gpu_mean_ns,
            tpu_mean_ns,
            ratio: tpu_mean_ns / gpu_mean_ns,
        });
    }
    functions.sort_by(|a, b| a.key.cmp(&b.key));
    let ratios: Vec<f64> = functions.iter().map(|f| f.ratio).collect();
    let intolerable = ratios.iter().filter(|r| **r > threshold).count();
    PlottedLatency {
        distribution: Distribution::of(&ratios, intolerable, stats),
        not_compared: seen.len() - functions.len(),
        functions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::portability::tests::row;
    use crate::model::Outcome::{Fail, Pass, Skip};

    fn dev(s: &str) -> Target {
        s.parse().unwrap()
    }

    /// A row of `function` on `device` for the paper test `key` (`file::Class::test`), with its
    /// place in the report and timed calls (ns).
    fn test(
        device: &str,
        key: &str,
        index: Option<u64>,
        outcome: Outcome,
        authors: Option<&str>,
        calls: &[u64],
    ) -> ResultRow {
        let fw = Framework::Torch;
        let mut r = row(fw, "f", 1, device, outcome, None, &[]);
        r.case.key = key.into();
        r.case.spec = Spec::Imported(ImportedSpec {
            report_index: index,
            authors_outcome: authors.map(str::to_string),
            ..Default::default()
        });
        r.result.device = dev(device);
        r.result.session_first_calls_ns = calls.first().copied().into_iter().collect();
        r.result.samples_ns = calls.iter().skip(1).copied().collect();
        r
    }

    #[test]
    fn keys_are_the_authors_file_and_test_with_the_device_token_back() {
        let r = test(
            "tpu:0",
            "src/pytorch_tests_reduced/Adamax_test.py::TestOptim::test_adamax_{device}_float32",
            None,
            Pass,
            None,
            &[],
        );
        assert_eq!(authors_key(&r, &dev("tpu:0")), "Adamax_test.py:test_adamax_xla_float32");
        assert_eq!(authors_key(&r, &dev("cuda:0")), "Adamax_test.py:test_adamax_cuda_float32");
        let t = test("tpu:0", "Adamax_test.py::test_adamax_{device}", None, Skip, None, &[]);
        assert_eq!(authors_key(&t, &dev("tpu:0")), "Adamax_test.py:test_adamax_xla");
        assert_eq!(function_key("Adamax_test.py:test_adamax"), "Adamax_test");
    }

    #[test]
    fn dtype_variants_collide_and_the_last_in_report_order_wins_on_each_device() {
        let k = "src/pytorch_tests_reduced/a_test.py::T::test_x_{device}";
        let gpu = vec![
            // Report order 2 before 1: the float32 variant is the GPU's last.
            test("cuda:0", &format!("{k}_float32"), Some(2), Pass, None, &[10, 10]),
            test("cuda:0", &format!("{k}_float64"), Some(1), Pass, None, &[1000]),
            test("cpu", &format!("{k}_float32"), Some(0), Pass, None, &[5]),
        ];
        let tpu = vec![
            test("tpu:0", &format!("{k}_float32"), Some(1), Pass, None, &[400]),
            test("tpu:0", &format!("{k}_float64"), Some(2), Fail, None, &[9999]),
        ];
        let p = plotted_latency(
            (&dev("cuda:0"), &gpu),
            (&dev("tpu:0"), &tpu),
            Framework::Torch,
            10.0,
            &StatsConfig::default(),
        );
        assert_eq!(p.functions.len(), 1);
        let f = &p.functions[0];
        assert_eq!((f.key.as_str(), f.gpu_calls, f.tpu_calls, f.ratio), ("a_test", 2, 1, 40.0));
        assert_eq!((p.distribution.intolerable, p.not_compared), (1, 0));
    }

    #[test]
    fn shared_keys_count_once_per_passing_test_and_the_authors_report_decides() {
        let fw = Framework::Tensorflow;
        let mk = |device: &str, class: &str, i, outcome, authors, calls: &[u64]| {
            let mut r = test(
                device,
                &format!("src/tensorflow_tests_reduced/b_test.py::{class}::test_y"),
                Some(i),
                outcome,
                authors,
                calls,
            );
            r.function.framework = fw;
            r
        };
        // Two classes share `test_y`: the timing belongs to the last, both passed on the GPU.
        let gpu =
            vec![mk("cuda:0", "A", 0, Pass, Some("passed"), &[]), mk("cuda:0", "B", 1, Pass, Some("passed"), &[2, 4])];
        // On the TPU the authors' report has the first failed: counted once.
        let tpu =
            vec![mk("tpu:0", "A", 0, Pass, Some("failed"), &[]), mk("tpu:0", "B", 1, Pass, Some("passed"), &[6, 12])];
        let p = plotted_latency((&dev("cuda:0"), &gpu), (&dev("tpu:0"), &tpu), fw, 10.0, &StatsConfig::default());
        let f = &p.functions[0];
        assert_eq!((f.gpu_calls, f.tpu_calls, f.ratio), (4, 2, 3.0));
        // Nothing passed in the authors' TPU report: nothing compared.
        let tpu = vec![mk("tpu:0", "A", 0, Pass, Some("failed"), &[]), mk("tpu:0", "B", 1, Pass, Some("absent"), &[6])];
        let p = plotted_latency((&dev("cuda:0"), &gpu), (&dev("tpu:0"), &tpu), fw, 10.0, &StatsConfig::default());
        assert_eq!((p.functions.len(), p.not_compared), (0, 1));
    }

    #[test]
    fn a_device_without_a_report_reads_the_others_and_cpu_keys_never_count() {
        let fw = Framework::Jax;
        let mk = |device: &str, key: &str, i, outcome, calls: &[u64]| {
            let mut r = test(device, key, i, outcome, None, calls);
            r.function.framework = fw;
            r
        };
        let gpu = vec![
            mk("cuda:0", "src/jax_tests_reduced/c_test.py::C::test_z", Some(0), Pass, &[10]),
            mk("cuda:0", "src/jax_tests_reduced/c_test.py::C::test_on_cpu", Some(1), Pass, &[10]),
            mk("cuda:0", "src/jax_tests_reduced/d_test.py::D::test_w", Some(2), Fail, &[10]),
        ];
        let tpu = vec![
            mk("tpu:0", "c_test.py::test_z", None, Skip, &[5]),
            mk("tpu:0", "c_test.py::test_on_cpu", None, Skip, &[500]),
            mk("tpu:0", "d_test.py::test_w", None, Skip, &[5]),
        ];
        let p = plotted_latency((&dev("cuda:0"), &gpu), (&dev("tpu:0"), &tpu), fw, 10.0, &StatsConfig::default());
        let got: Vec<(&str, f64)> = p.functions.iter().map(|f| (f.key.as_str(), f.ratio)).collect();
        assert_eq!(got, [("c_test", 0.5)]);
        assert_eq!((p.distribution.faster, p.not_compared), (1, 1));
    }
}
