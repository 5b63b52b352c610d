//! The operator table of a suite run (`mlport report ops`, docs/suites.md): per suite entry ×
//! dtype × target, the four levels — a kernel is **registered** for the device, the framework
//! **declares** the dtype there, the samples **run**, and they **agree** with the float64
//! reference — and the places where the levels disagree: "declared but fails", "works but
//! undeclared", "registered but wrong", "not registered". Also [`declared_diff`]: what two
//! device types declare differently, from a listing alone. Computes only; `render::ops` writes.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{Dtype, Outcome, Reason, ResultRow, Suite, SuiteSample, Target};
use crate::testdata::Listing;

/// One entry × dtype × target of a suite run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpRow {
    /// The suite the entry comes from.
    pub suite: Suite,
    /// The entry: `name` or `name.variant` (`nn.functional.pad.reflect`).
    pub entry: String,
    /// The public callable users write (`torch.nn.functional.pad`).
    pub function: String,
    /// The dtype.
    pub dtype: Dtype,
    /// The target.
    pub target: Target,
    /// A kernel is registered for the target's device (its own or a composite one); `None`:
    /// the suite cannot say (no ATen operator, no dispatcher, a device without a key).
    pub registered: Option<bool>,
    /// The framework declares the dtype on the target's device type; `None`: the suite says
    /// nothing for that device type.
    pub declared: Option<bool>,
    /// Samples with a result that counts (neither skipped nor mlport's own harness error).
    pub samples: u32,
    /// Samples that ran to an answer (passed, or disagreed with the reference).
    pub ran: u32,
    /// Samples whose answer agreed with every reference it was compared with, or that nothing
    /// could check (`unchecked` of them).
    pub agreed: u32,
    /// Of `agreed`, those nothing compared (no float64 reference at the dtype, and no other
    /// target to compare with).
    pub unchecked: u32,
    /// Of `ran`, samples whose every input tensor is empty (no element; OpInfo's 0×0 matrices,
    /// [`SuiteSample::empty_at`]): they show that the operator accepts the dtype, not that it
    /// computes in it.
    pub empty: u32,
    /// Samples that disagreed with a reference (`wrong_result`).
    pub wrong: u32,
    /// Samples that failed: an error, crash, timeout, a silent dtype change, flaky.
    pub failed: u32,
    /// Harness errors: the suite's own generator or mlport failed; counted nowhere else.
    pub harness: u32,
    /// The most frequent reason among the failed samples.
    pub reason: Option<Reason>,
    /// The first failed (else wrong) sample's message, first line, at most 200 characters.
    pub message: Option<String>,
}

impl OpRow {
    /// Every sample ran to an answer (and there was at least one).
    pub fn runs(&self) -> bool {
        self.samples > 0 && self.ran == self.samples
    }

    /// Every sample ran and none disagreed with its reference.
    pub fn agrees(&self) -> bool {
        self.runs() && self.wrong == 0
    }

    /// The places where the four levels disagree that this row is one of.
    pub fn findings(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        if self.declared == Some(true) && self.failed > 0 {
            out.push(Finding::DeclaredButFails);
        }
        if self.declared == Some(false) && self.agrees() && self.ran > self.empty {
            out.push(Finding::WorksButUndeclared);
        }
        if self.registered != Some(false) && self.wrong > 0 {
            out.push(Finding::RegisteredButWrong);
        }
        if self.registered == Some(false) {
            out.push(Finding::NotRegistered);
        }
        out
    }
}

/// Where the four levels disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Finding {
    /// The framework declares the dtype on the device, and a sample fails there.
    DeclaredButFails,
    /// The framework does not declare the dtype on the device, and every sample runs and agrees
    /// (one at least with a non-empty input).
    WorksButUndeclared,
    /// A kernel is registered for the device (or registration is unknown: JAX, a backend not
    /// loaded where the suite was listed), and a sample's answer disagrees with its reference.
    RegisteredButWrong,
    /// No kernel (own or composite) is registered for the device.
    NotRegistered,
}

impl Finding {
    /// `declared_but_fails`, ...: the JSON and CSV spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// `declared but fails`, ...: as headings say it.
    pub fn title(self) -> &'static str {
        match self {
            Finding::DeclaredButFails => "declared but fails",
            Finding::WorksButUndeclared => "works but undeclared",
            Finding::RegisteredButWrong => "registered but wrong",
            Finding::NotRegistered => "not registered",
        }
    }
}

/// Per target, how many entry × dtype pairs reach each level, and each list's length.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Entry × dtype pairs with a counted sample.
    pub pairs: usize,
    /// Samples counted.
    pub samples: u64,
    /// Pairs with a kernel registered (known), and without.
    pub registered: usize,
    /// Pairs known to have no kernel.
    pub not_registered: usize,
    /// Pairs whose dtype the device type declares.
    pub declared: usize,
    /// Pairs every sample of which runs.
    pub runs: usize,
    /// Pairs every sample of which runs and agrees.
    pub agrees: usize,
    /// Of `agrees`, pairs at least one sample of which nothing compared (no float64 reference
    /// at its dtype, no other target): "agrees" there means only "nothing disagreed".
    pub agrees_unchecked: usize,
    /// Each finding's count.
    pub findings: BTreeMap<&'static str, usize>,
}

/// The operator table of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpsReport {
    /// The run read.
    pub run_id: i64,
    /// The suites the run took its cases from, each with the framework version it came from
    /// (`opinfo of torch 2.15.0, 3 samples`).
    pub suites: Vec<String>,
    /// The targets, in report order.
    pub targets: Vec<Target>,
    /// Per target.
    pub totals: BTreeMap<String, Totals>,
    /// Every entry × dtype × target, by entry, dtype and target.
    pub rows: Vec<OpRow>,
}

impl OpsReport {
    /// The rows with `finding`, in row order.
    pub fn with(&self, finding: Finding) -> impl Iterator<Item = &OpRow> {
        self.rows.iter().filter(move |r| r.findings().contains(&finding))
    }
}

/// Builds the table from a run's results (`suites`: the run's catalogue versions, said in the
/// header). Results of cases not taken from a suite are left out.
pub fn build(run_id: i64, suites: Vec<String>, results: &[ResultRow]) -> OpsReport {
    #[derive(Default)]
    struct Acc {
        row: Option<OpRow>,
        reasons: BTreeMap<Reason, u32>,
        failed_message: Option<String>,
        wrong_message: Option<String>,
    }
    let mut acc: BTreeMap<(String, Dtype, Target, Suite), Acc> = BTreeMap::new();
    let mut targets: Vec<Target> = Vec::new();
    for r in results {
        let (Some(spec), Some(dtype)) = (r.case.spec.catalogue(), r.case.dtype) else { continue };
        let Some(s) = spec.suite.as_ref() else { continue };
        let target = r.result.device.clone();
        if !targets.contains(&target) {
            targets.push(target.clone());
        }
        let a = acc.entry((s.entry_name(), dtype, target.clone(), s.suite)).or_default();
        let row = a.row.get_or_insert_with(|| empty_row(s, &r.function.name, dtype, &target));
        let first_line = || r.result.message.as_deref().map(first_line);
        if matches!(r.result.outcome, Outcome::Pass | Outcome::WrongResult) && s.empty_at.contains(&dtype) {
            row.empty += 1;
        }
        match r.result.outcome {
            Outcome::Skip => continue,
            Outcome::Fail if r.result.reason == Some(Reason::HarnessError) => {
                row.harness += 1;
                continue;
            }
            Outcome::Pass => {
                row.ran += 1;
                row.agreed += 1;
                if !r.compared {
                    row.unchecked += 1;
                }
            }
            Outcome::WrongResult => {
                row.ran += 1;
                row.wrong += 1;
                if a.wrong_message.is_none() {
                    a.wrong_message = first_line().or_else(|| Some("disagrees with its reference".into()));
                }
            }
            Outcome::Fail | Outcome::Timeout | Outcome::Crash | Outcome::Flaky => {
                row.failed += 1;
                *a.reasons.entry(r.result.reason.unwrap_or(Reason::Other)).or_default() += 1;
                if a.failed_message.is_none() {
                    a.failed_message = first_line();
                }
            }
        }
        row.samples += 1;
    }
    targets.sort();
    let mut rows: Vec<OpRow> = acc
        .into_values()
        .filter_map(|mut a| {
            let mut row = a.row.take()?;
            // The most frequent reason; the first in the taxonomy's order on a tie.
            row.reason = a.reasons.iter().max_by_key(|(r, n)| (**n, std::cmp::Reverse(**r))).map(|(r, _)| *r);
            row.message = a.failed_message.or(a.wrong_message);
            Some(row)
        })
        .collect();
    rows.sort_by(|x, y| (&x.entry, x.dtype, &x.target).cmp(&(&y.entry, y.dtype, &y.target)));
    let mut totals: BTreeMap<String, Totals> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.samples > 0) {
        let t = totals.entry(r.target.to_string()).or_default();
        t.pairs += 1;
        t.samples += u64::from(r.samples);
        t.registered += usize::from(r.registered == Some(true));
        t.not_registered += usize::from(r.registered == Some(false));
        t.declared += usize::from(r.declared == Some(true));
        t.runs += usize::from(r.runs());
        t.agrees += usize::from(r.agrees());
        t.agrees_unchecked += usize::from(r.agrees() && r.unchecked > 0);
        for f in r.findings() {
            *t.findings.entry(f.as_str()).or_default() += 1;
        }
    }
    OpsReport { run_id, suites, targets, totals, rows }
}

fn empty_row(s: &SuiteSample, function: &str, dtype: Dtype, target: &Target) -> OpRow {
    OpRow {
        suite: s.suite,
        entry: s.entry_name(),
        function: function.to_string(),
        dtype,
        target: target.clone(),
        registered: s.registered_on(target),
        declared: s.declares(target, dtype),
        samples: 0,
        ran: 0,
        agreed: 0,
        unchecked: 0,
        empty: 0,
        wrong: 0,
        failed: 0,
        harness: 0,
        reason: None,
        message: None,
    }
}

/// The first line of `text`, at most 200 characters.
fn first_line(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or("");
    line.chars().take(200).collect()
}

/// What two device types declare differently, per entry (`report ops --declared A..B`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeclaredDiff {
    /// The suite and the framework version it came from.
    pub suite: String,
    /// Side A's device type.
    pub a: String,
    /// Side B's device type.
    pub b: String,
    /// Entries listed.
    pub entries: usize,
    /// Entry × dtype pairs declared on A, and on B.
    pub declared_a: usize,
    /// As `declared_a`, for B.
    pub declared_b: usize,
    /// Per entry that differs: the dtypes only A declares and those only B declares.
    pub rows: Vec<DeclaredRow>,
}

/// One entry whose declared dtypes differ between two device types.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeclaredRow {
    /// `name` or `name.variant`.
    pub entry: String,
    /// The public callable.
    pub function: String,
    /// Declared on A only.
    pub only_a: Vec<Dtype>,
    /// Declared on B only.
    pub only_b: Vec<Dtype>,
}

/// Compares what `listing` declares for device types `a` and `b` (`cpu`, `cuda`, ...).
///
/// Errors: a device type the listing says nothing about (the known ones named).
pub fn declared_diff(listing: &Listing, a: &str, b: &str) -> anyhow::Result<DeclaredDiff> {
    let known: std::collections::BTreeSet<&str> =
        listing.ops.iter().flat_map(|e| e.declared.keys().map(String::as_str)).collect();
    for side in [a, b] {
        if !known.contains(side) {
            let known: Vec<&str> = known.iter().copied().collect();
            anyhow::bail!(
                "the {} suite declares nothing for device type `{side}` (it declares for {})",
                listing.suite,
                known.join(", ")
            );
        }
    }
    let mut rows = Vec::new();
    let (mut declared_a, mut declared_b) = (0, 0);
    for e in &listing.ops {
        let d = e.declared_dtypes();
        let empty = Vec::new();
        let (da, db) = (d.get(a).unwrap_or(&empty), d.get(b).unwrap_or(&empty));
        declared_a += da.len();
        declared_b += db.len();
        let only_a: Vec<Dtype> = da.iter().filter(|x| !db.contains(x)).copied().collect();
        let only_b: Vec<Dtype> = db.iter().filter(|x| !da.contains(x)).copied().collect();
        if !only_a.is_empty() || !only_b.is_empty() {
            rows.push(DeclaredRow { entry: e.entry_name(), function: e.function.clone(), only_a, only_b });
        }
    }
    Ok(DeclaredDiff {
        suite: format!("{} of {} {}", listing.suite, listing.suite.framework(), listing.framework_version),
        a: a.to_string(),
        b: b.to_string(),
        entries: listing.ops.len(),
        declared_a,
        declared_b,
        rows,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::{CaseResult, CaseRow, CaseSpec, Framework, FunctionRow, Spec};

    fn sample(name: &str, declared_cpu: &[Dtype], registered_cpu: Option<bool>) -> SuiteSample {
        SuiteSample {
            suite: Suite::Opinfo,
            name: name.into(),
            variant: String::new(),
            sample: 0,
            declared: BTreeMap::from([("cpu".into(), declared_cpu.to_vec())]),
            registered: registered_cpu.map(|r| BTreeMap::from([("CPU".into(), r)])),
            reference: None,
            random: false,
            empty_at: Vec::new(),
        }
    }

    fn row(s: &SuiteSample, k: u32, dtype: Dtype, target: &str, outcome: Outcome, reason: Option<Reason>) -> ResultRow {
        let function = format!("torch.{}", s.name);
        let mut spec = CaseSpec::new(&function, &format!("s{k}"));
        spec.suite = Some(SuiteSample { sample: k, ..s.clone() });
        let key = format!("torch/{function}/s{k}/{dtype}");
        ResultRow {
            id: 0,
            function: FunctionRow::new(Framework::Torch, &function),
            case: CaseRow {
                key: key.clone(),
                framework: Framework::Torch,
                function,
                case_id: format!("s{k}"),
                dtype: Some(dtype),
                seed: 0,
                spec: Spec::from(spec),
            },
            result: CaseResult {
                reason,
                message: reason.map(|r| format!("{r} happened\nsecond line")),
                outputs: serde_json::json!([{"index": 0, "kind": "array", "dtype": dtype.as_str(), "shape": [3]}]),
                ..CaseResult::new(&key, target.parse().unwrap(), outcome)
            },
            compared: true,
        }
    }

    /// A small run's table (a test double of stored results): sin declared at float32 fails one
    /// of two samples there, runs undeclared at float16, answers wrong at bfloat16; cos has no
    /// kernel; a harness error and a skip are not counted.
    pub(crate) fn report() -> OpsReport {
        build(7, vec!["opinfo of torch 2.15.0, 3 samples".into()], &rows())
    }

    fn rows() -> Vec<ResultRow> {
        use Dtype::*;
        let sin = sample("sin", &[Float32], Some(true));
        let cos = sample("cos", &[Float32], Some(false));
        vec![
            // sin: declared float32 fails on one of two samples: declared but fails.
            row(&sin, 0, Float32, "cpu", Outcome::Pass, None),
            row(&sin, 1, Float32, "cpu", Outcome::Fail, Some(Reason::NotImplemented)),
            // sin float16 undeclared, runs and agrees: works but undeclared.
            row(&sin, 0, Float16, "cpu", Outcome::Pass, None),
            row(&sin, 1, Float16, "cpu", Outcome::Pass, None),
            // sin bfloat16: registered, a wrong answer.
            row(&sin, 0, Bfloat16, "cpu", Outcome::WrongResult, None),
            // cos: not registered; a harness error and a skip are not counted.
            row(&cos, 0, Float32, "cpu", Outcome::Pass, None),
            row(&cos, 1, Float32, "cpu", Outcome::Fail, Some(Reason::HarnessError)),
            row(&cos, 2, Float32, "cpu", Outcome::Skip, None),
        ]
    }

    #[test]
    fn four_levels_and_the_lists() {
        use Dtype::*;
        let rep = report();
        let find = |e: &str, d: Dtype| rep.rows.iter().find(|r| r.entry == e && r.dtype == d).unwrap();
        let s32 = find("sin", Float32);
        assert_eq!((s32.samples, s32.ran, s32.failed, s32.runs()), (2, 1, 1, false));
        assert_eq!(s32.reason, Some(Reason::NotImplemented));
        assert_eq!(s32.message.as_deref(), Some("not_implemented happened"));
        assert_eq!(s32.findings(), [Finding::DeclaredButFails]);
        assert_eq!(find("sin", Float16).findings(), [Finding::WorksButUndeclared]);
        // The same with only an empty output (a 0×0 matrix): it accepts the dtype, no more.
        let mut empty = find("sin", Float16).clone();
        empty.empty = empty.ran;
        assert!(empty.findings().is_empty());
        assert_eq!(find("sin", Bfloat16).findings(), [Finding::RegisteredButWrong]);
        let c = find("cos", Float32);
        assert_eq!((c.samples, c.harness, c.agrees()), (1, 1, true));
        assert_eq!(c.findings(), [Finding::NotRegistered]);
        let t = &rep.totals["cpu"];
        assert_eq!(
            (t.pairs, t.samples, t.registered, t.not_registered, t.declared, t.runs, t.agrees),
            (4, 6, 3, 1, 2, 3, 2)
        );
        assert_eq!(t.findings["declared_but_fails"], 1);
        assert_eq!(rep.with(Finding::WorksButUndeclared).count(), 1);
    }

    #[test]
    fn declared_differences_between_device_types() {
        let l = Listing::parse(
            r#"{"format": 1, "suite": "opinfo", "framework_version": "2.15.0", "samples": 1, "ops": [
              {"name": "sin", "function": "torch.sin",
               "declared": {"cpu": ["float32", "bfloat16"], "cuda": ["float32", "float16"]}},
              {"name": "cos", "function": "torch.cos", "declared": {"cpu": ["float32"], "cuda": ["float32"]}}]}"#,
        )
        .unwrap();
        let d = declared_diff(&l, "cpu", "cuda").unwrap();
        assert_eq!((d.entries, d.declared_a, d.declared_b), (2, 3, 3));
        assert_eq!(d.rows.len(), 1);
        assert_eq!((d.rows[0].only_a.clone(), d.rows[0].only_b.clone()), (vec![Dtype::Bfloat16], vec![Dtype::Float16]));
        let e = declared_diff(&l, "cpu", "mps").unwrap_err().to_string();
        assert!(e.contains("nothing for device type `mps`") && e.contains("cpu, cuda"), "{e}");
    }
}
