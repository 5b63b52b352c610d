//! The portability summary computed from stored results, by the paper's definitions
//! ("The Grand Illusion", Mince et al., arXiv 2309.07181, section 3): per framework and
//! device, how many functions succeed, fail partly or fail completely, why cases fail,
//! and the median steady-state latency; harness errors are kept apart, never counted.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::model::{CaseResult, DeviceInfo, ResultRow, RunSource, RunSummary};
use crate::model::{Dtype, Framework, FunctionStatus, Outcome, Reason, Target};

/// Which failures on a target other than its reference target are the target's fault. The
/// reference target of an eager target is the report's reference device; that of a compiled
/// target is the same device eager ([`Target::reference_target`]), so a failure under the
/// compiler counts only when the same case ran eagerly on the same device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attribution {
    /// Live runs (docs/architecture.md, "Words": device-attributable): a failing case counts only if the same case passed on the
    /// reference device; a case the reference did not pass (or did not run) is excused.
    ReferencePassed,
    /// Test suites (imported or run by `mlport pytest`), the paper's rule: a failing test
    /// is excused only when its reference copy (PyTorch's `..._cpu` twin) failed too. A
    /// device test with no reference copy, or whose copy was skipped, counts: nothing
    /// shows that the failure is not the device's.
    ReferenceNotFailed,
}

impl Attribution {
    /// The rule for runs from `source`.
    pub fn for_source(source: RunSource) -> Attribution {
        if source.is_test_suite() { Attribution::ReferenceNotFailed } else { Attribution::ReferencePassed }
    }
}

/// How to count failures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportOptions {
    /// Device-attributable counting: on a device other than the reference, a failing
    /// case counts only if the same case passed on the reference device. Default true.
    pub attributable: bool,
    /// The device failures are attributed against; `None` uses the run's
    /// `reference_device`. Default `None`.
    pub reference: Option<Target>,
    /// The strict view: a disagreement with float64 or a silent dtype change on the reference
    /// target itself ([`Counted::Everywhere`]) counts toward the function's status too. Off by
    /// default (the paper's rule: such a case is shown in its own column and not counted).
    pub strict: bool,
    /// List the failing cases excused as not attributable ([`Counted::NotAttributable`]) with the
    /// function's cases too, marked, without counting them (`--functions --not-attributable`).
    /// Default false: only their number is said.
    pub list_not_attributable: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { attributable: true, reference: None, strict: false, list_not_attributable: false }
    }
}

/// The run a report describes: enough to reproduce it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunHeader {
    pub id: i64,
    pub host: String,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// `running`, `finished` or `interrupted`.
    pub state: String,
    pub python_version: String,
    /// Each framework's version; `None` when it could not be imported.
    pub frameworks: BTreeMap<Framework, Option<String>>,
    pub catalogue_version: BTreeMap<Framework, String>,
    pub seed: u64,
    pub mlport_version: String,
    /// JAX ran with `jax_enable_x64` on (`mlport run --jax-x64`); JAX's default is off.
    pub jax_x64: bool,
    /// Where the results came from (`live` for `mlport run`).
    pub source: RunSource,
    /// The run's label, if it has one.
    pub label: Option<String>,
    /// The machine the data was measured on, when it is not `host`.
    pub machine: Option<String>,
    /// Notes stored with the run (e.g. quirks of imported data), printed with the report.
    pub notes: Vec<String>,
    /// Devices a framework ran on with another stack than the run's interpreter (torch on
    /// `xla:N` runs the torch-xla stack's own torch and torch_xla, docs/stacks.md): what its worker
    /// reported, so the header never credits the main stack's versions to them.
    pub device_stacks: Vec<crate::model::DeviceStack>,
}

/// One listed case of a function, for the per-function detail: a counted failure, a wrong answer or
/// dtype change on the reference target itself (`everywhere`), or, on request, an excused one
/// (`not_attributable`).
#[derive(Clone, Debug, PartialEq)]
pub struct CaseFailure {
    /// The result's id in the store (`mlport repro ID`); 0 when not read from a store.
    pub result_id: i64,
    pub case_id: String,
    /// `None` for an imported case.
    pub dtype: Option<Dtype>,
    pub reason: Reason,
    /// A disagreement or dtype change on the reference target itself ([`Counted::Everywhere`]):
    /// listed, but counted toward the status only in the strict view.
    pub everywhere: bool,
    /// A failure excused as not attributable (it did not pass on the reference), listed only when
    /// asked for ([`ReportOptions::list_not_attributable`]) and never counted.
    pub not_attributable: bool,
    /// The error message on one line, its head and tail when longer than 160 characters
    /// ([`super::excerpt`]), or the outcome.
    pub message: String,
    /// The whole message as stored ([`full_failure_message`]), for formats that keep it
    /// (JSON's `full_message`).
    pub full_message: String,
}

impl CaseFailure {
    /// `row`'s case listed as a counted failure with `reason` (neither `everywhere` nor
    /// `not_attributable`), its messages as [`failure_message`] and [`full_failure_message`] give
    /// them.
    pub fn of(row: &ResultRow, reason: Reason) -> CaseFailure {
        CaseFailure {
            result_id: row.id,
            case_id: row.case.case_id.clone(),
            dtype: row.case.dtype,
            reason,
            everywhere: false,
            not_attributable: false,
            message: failure_message(&row.result),
            full_message: full_failure_message(&row.result),
        }
    }
}

/// A failing result's message for people: the error's type (its last dotted part) and an
/// excerpt of its message ([`super::excerpt`], 160 characters; a dtype change's up to its first
/// `; `, where the dtypes are said); the outcome when nothing was recorded.
pub fn failure_message(r: &CaseResult) -> String {
    // A dtype change's message leads with the dtypes (`… (output 0): dtype int64, expected uint64;`
    // then the values' comparison): that clause is kept whole rather than cut in its middle.
    let message = r.message.as_deref().map(|m| match r.reason {
        Some(Reason::DtypeChanged) => m.split("; ").next().unwrap_or(m),
        _ => m,
    });
    match (&r.error_type, message) {
        (Some(t), Some(m)) => format!("{}: {}", t.rsplit('.').next().unwrap_or(t), super::excerpt(m, 160)),
        (None, Some(m)) => super::excerpt(m, 160),
        (Some(t), None) => t.clone(),
        (None, None) => r.outcome.to_string(),
    }
}

/// A failing result's whole message: the error's full type name and the stored message,
/// uncut; the outcome when nothing was recorded.
pub fn full_failure_message(r: &CaseResult) -> String {
    match (&r.error_type, &r.message) {
        (Some(t), Some(m)) => format!("{t}: {m}"),
        (None, Some(m)) => m.clone(),
        (Some(t), None) => t.clone(),
        (None, None) => r.outcome.to_string(),
    }
}

/// One function's counted cases on one target.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionSummary {
    /// Fully qualified name, e.g. `torch.argsort`.
    pub name: String,
    /// `None` when no case of the function was counted (the function was not "run").
    pub status: Option<FunctionStatus>,
    pub passed: usize,
    /// Of the passing cases, those nothing compared ("ran, unchecked": no reference, or
    /// outputs that could not be compared); live runs only.
    pub unchecked: usize,
    /// Counted cases that raised, timed out or crashed (errors, by reason in `reasons`); dtype
    /// changes and wrong values are apart, in `dtype_changed`, `wrong` and `wrong_everywhere`.
    pub failed: usize,
    /// Cases that ran but disagreed with float64 (`wrong_result`) where the same case agreed on
    /// the reference target: the device's or compiler's doing (device-attributable).
    pub wrong: usize,
    /// Cases that disagreed with float64 on the reference target itself ([`Counted::Everywhere`]):
    /// the dtype's precision or the framework's own numerics, the same on every target.
    pub wrong_everywhere: usize,
    /// Cases whose output came back in another dtype than expected (`dtype_changed`): on the
    /// reference target itself (JAX's x64 default, the framework's promotion rules) or
    /// device-attributable on another target.
    pub dtype_changed: usize,
    /// Of the failing cases above, those that count toward `status` under the view: errors,
    /// device-attributable wrong results and dtype changes, and in the strict view the
    /// reference target's own too.
    pub counted_failures: usize,
    /// Failing cases excused by the [`Attribution`] rule (not the device's fault).
    pub not_attributable: usize,
    /// Errors by reason (wrong values and dtype changes are counted apart).
    pub reasons: BTreeMap<Reason, usize>,
    /// The failing, wrong and dtype-changed cases (counted or [`Counted::Everywhere`]), and the
    /// excused ones when [`ReportOptions::list_not_attributable`] asks, in planned order.
    pub failures: Vec<CaseFailure>,
}

/// `n` as a percentage of `of`; `None` when `of` is 0.
pub fn percent_of(n: usize, of: usize) -> Option<f64> {
    (of > 0).then(|| 100.0 * n as f64 / of as f64)
}

impl FunctionSummary {
    /// The reasons of the cases that count toward the status under the report's view: errors,
    /// and the device-attributable (or, strict, every) wrong answers and dtype changes — what an
    /// audit or the paper comparison calls failing. Listed cases that do not count (the reference
    /// target's own outside the strict view, excused ones) are left out.
    pub fn counted_reasons(&self, strict: bool) -> BTreeMap<Reason, usize> {
        let mut reasons = BTreeMap::new();
        for c in self.failures.iter().filter(|c| !c.not_attributable && (strict || !c.everywhere)) {
            *reasons.entry(c.reason).or_default() += 1;
        }
        reasons
    }

    /// The errors by reason with the dtype changes added as `dtype_changed` and the wrong
    /// results (device-attributable or everywhere) as `wrong_result` (the summary keeps them
    /// apart from the errors; audits and the modes view list them together).
    pub fn reasons_with_wrong(&self) -> BTreeMap<Reason, usize> {
        let mut reasons = self.reasons.clone();
        if self.dtype_changed > 0 {
            reasons.insert(Reason::DtypeChanged, self.dtype_changed);
        }
        if self.wrong + self.wrong_everywhere > 0 {
            reasons.insert(Reason::WrongResult, self.wrong + self.wrong_everywhere);
        }
        reasons
    }
}

/// The portability of one framework on one device.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetSummary {
    pub framework: Framework,
    pub device: Target,
    /// Functions with at least one counted case, or one listed but not counted (the reference
    /// target's own wrong answer or dtype change, which counts with the passes toward the status);
    /// the denominator of every percentage.
    pub functions_run: usize,
    pub success: usize,
    pub partial: usize,
    pub complete_failure: usize,
    /// Counted failing cases by reason: errors only (wrong results are `cases_wrong` and
    /// `cases_wrong_everywhere`, dtype changes `cases_dtype_changed`).
    pub reasons: BTreeMap<Reason, usize>,
    /// Functions with at least one device-attributable `wrong_result` case: they ran without an
    /// error but disagreed with float64 beyond tolerance where the reference target agreed.
    pub wrong_result_functions: usize,
    /// Functions with at least one case that disagreed with float64 on the reference target
    /// itself ([`FunctionSummary::wrong_everywhere`]).
    pub wrong_everywhere_functions: usize,
    pub cases_passed: usize,
    /// Of the passing cases, those nothing compared ("ran, unchecked"); live runs only.
    pub cases_unchecked: usize,
    /// Counted cases that raised, timed out or crashed.
    pub cases_failed: usize,
    /// Device-attributable cases that ran but disagreed with float64 (`wrong_result`).
    pub cases_wrong: usize,
    /// Cases that disagreed with float64 on the reference target itself.
    pub cases_wrong_everywhere: usize,
    /// Cases whose output came back in another dtype (`dtype_changed`), on the reference
    /// target or device-attributable.
    pub cases_dtype_changed: usize,
    pub cases_skipped: usize,
    /// Failing cases that did not pass on the reference device: neither pass nor fail.
    pub cases_not_attributable: usize,
    /// Median, over passing cases with samples, of each case's median steady-state
    /// sample, in ns per call; `None` when no passing case has samples.
    pub median_latency_ns: Option<f64>,
    /// Every function with a result on this target, in planned order.
    pub functions: Vec<FunctionSummary>,
}

impl TargetSummary {
    /// `n` as a percentage of `functions_run`; `None` when no function ran.
    pub fn percent(&self, n: usize) -> Option<f64> {
        percent_of(n, self.functions_run)
    }
}

/// A case that failed because of mlport itself; never counted against a framework.
#[derive(Clone, Debug, PartialEq)]
pub struct HarnessError {
    pub case_key: String,
    pub device: Target,
    /// `error_type: message`, or whichever of the two was recorded.
    pub message: String,
}

/// A run's portability: one summary per (framework, device) with results.
#[derive(Clone, Debug, PartialEq)]
pub struct PortabilityReport {
    pub run: RunHeader,
    /// The device failures were attributed against.
    pub reference: Target,
    /// Whether failures were counted device-attributably.
    pub attributable: bool,
    /// The strict view ([`ReportOptions::strict`]).
    pub strict: bool,
    /// How failures were attributed (chosen by the run's source).
    pub attribution: Attribution,
    /// Ordered by framework (numpy, torch, jax, tensorflow), then the reference
    /// device first, then the other devices by name.
    pub targets: Vec<TargetSummary>,
    pub harness_errors: Vec<HarnessError>,
    /// Flaky cases (outcome `flaky`: passed and failed within one session), with their
    /// message: listed apart, never counted.
    pub flaky: Vec<HarnessError>,
    /// Devices asked for that a framework could not see: not counted.
    pub unavailable: Vec<DeviceInfo>,
    /// Frameworks with results but none on the reference device: their failures could
    /// not be attributed and are all counted.
    pub without_reference: Vec<Framework>,
    /// Frameworks that failed to install or import, with their error: nothing of
    /// theirs ran, nothing is counted.
    pub not_usable: BTreeMap<Framework, String>,
    /// The counting rule in words, the footer of every rendering.
    pub rule: String,
}

/// The counting rule of live runs (the paper's view) in a few sentences.
pub fn rule_text(reference: &Target, attributable: bool) -> String {
    rule_text_for(reference, attributable, Attribution::ReferencePassed, false)
}

/// The counting rule under `attribution` in a few sentences: the footer of every report.
/// `strict`: [`ReportOptions::strict`].
pub fn rule_text_for(reference: &Target, attributable: bool, attribution: Attribution, strict: bool) -> String {
    let base = "A function succeeds when all its counted cases pass, is partial when some fail and a complete \
                failure when all fail (the paper's rule); skips and harness errors never count.";
    let live = match (attribution, strict) {
        (Attribution::ReferenceNotFailed, _) => " A failing test counts whatever its reason.".to_string(),
        (Attribution::ReferencePassed, false) => format!(
            " Counted failures are errors (fail, timeout, crash; by reason) and, where the same case agreed on \
             the reference {reference}, answers that disagree with float64 beyond the dtype's tolerance (wrong \
             (device)) or come back in another dtype (dtype changed). A wrong answer or dtype change on the \
             reference {reference} itself, eager (the dtype's precision, the framework's own numerics or dtype rules such as \
             JAX's x64 default) is listed (wrong (everywhere), dtype changed) but not counted; --strict counts it."
        ),
        (Attribution::ReferencePassed, true) => " Strict view: errors, every answer that disagrees with float64 \
             beyond the dtype's tolerance and every silent dtype change count, on the reference device too."
            .to_string(),
    };
    let attributed = match (attributable, attribution) {
        (false, _) => {
            format!(" Every failure on a device other than the reference {reference} counts (no attribution to it).")
        }
        (true, Attribution::ReferencePassed) => format!(
            " Failures are device-attributable: on devices other than the reference {reference}, a failure \
             counts only if the same case passed on {reference}; others are reported as not attributable."
        ),
        (true, Attribution::ReferenceNotFailed) => format!(
            " A function is a test file and a case is a test. Failures are device-attributable: on devices \
             other than the reference {reference}, a failing test counts unless its {reference} copy in the same \
             run (PyTorch's `_{reference}` twin of a device test) failed too; a test with no {reference} copy, or \
             whose copy was skipped, counts. Excused failures are reported as not attributable."
        ),
    };
    format!("{base}{live}{attributed}")
}

/// The rule's addition when a report has compiled targets.
pub const COMPILED_RULE: &str = " A compiled target (`cpu/compiled`) is judged against the same device eager (`cpu`): a \
     failure under the compiler counts only if the same case passed eagerly there, and its answers are compared with \
     the eager ones.";

/// Where a result lands under the report's rules ([`counted`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// A counted pass.
    Pass,
    /// A counted failure with its reason (`wrong_result` for a case that ran but disagreed).
    Fail(Reason),
    /// A live run's `wrong_result` or `dtype_changed` on the reference target itself: what the
    /// framework does at that dtype on every target (its precision, numerics or dtype rules), not
    /// a device's doing. Listed in its own column; counts toward the status only in the strict
    /// view ([`Counted::counts`]).
    Everywhere(Reason),
    /// Skipped: never counted.
    Skipped,
    /// A failure excused by the [`Attribution`] rule: not the target's fault.
    NotAttributable,
    /// Passed and failed within one session (reruns, Hypothesis' `Flaky`): listed apart,
    /// never counted against the device.
    Flaky,
    /// mlport's own (or the catalogue's) bug: listed apart, never counted.
    Harness,
}

impl Counted {
    /// Whether the result counts as a failure toward its function's status: every [`Counted::Fail`],
    /// and [`Counted::Everywhere`] in the `strict` view.
    pub fn counts(self, strict: bool) -> bool {
        matches!(self, Counted::Fail(_)) || (strict && matches!(self, Counted::Everywhere(_)))
    }

    /// The failure's reason for a [`Counted::Fail`] or [`Counted::Everywhere`].
    pub fn reason(self) -> Option<Reason> {
        match self {
            Counted::Fail(r) | Counted::Everywhere(r) => Some(r),
            _ => None,
        }
    }
}

/// A failing result's reason: the stored one, else `timeout`, `crash`, `wrong_result` or (for
/// `fail`) `other` by its outcome.
pub fn failure_reason(r: &CaseResult) -> Reason {
    r.reason.unwrap_or(match r.outcome {
        Outcome::Timeout => Reason::Timeout,
        Outcome::Crash => Reason::Crash,
        Outcome::WrongResult => Reason::WrongResult,
        _ => Reason::Other,
    })
}

/// How each of `results` (a run's rows as [`crate::store::Store::results`] returns them)
/// counts under `opts`, in the same order: the classification [`build`] totals. A failing
/// result without a reason counts as `timeout`, `crash` or (for `fail`) `other`. A live run's
/// wrong result or dtype change on its own reference target is [`Counted::Everywhere`] whatever
/// `opts.strict` says (the view decides what counts, [`Counted::counts`]); a test suite's is a
/// [`Counted::Fail`], as the paper counted a failing test.
pub fn counted(run: &RunSummary, results: &[ResultRow], opts: &ReportOptions) -> Vec<Counted> {
    let reference = opts.reference.clone().unwrap_or_else(|| run.info.reference_device.clone());
    let attribution = Attribution::for_source(run.origin.source);
    // Attribution needs the reference target: a framework with no result on it is counted as is.
    let with_reference: HashSet<(Framework, &Target)> =
        results.iter().map(|r| (r.function.framework, &r.result.device)).collect();
    // Under ReferencePassed the set holds the (case, target) pairs that passed; under
    // ReferenceNotFailed, those that failed.
    let on_target: HashSet<(&str, &Target)> = results
        .iter()
        .filter(|r| match attribution {
            Attribution::ReferencePassed => r.result.outcome == Outcome::Pass,
            Attribution::ReferenceNotFailed => {
                matches!(r.result.outcome, Outcome::Fail | Outcome::Timeout | Outcome::Crash)
            }
        })
        .map(|r| (r.result.case_key.as_str(), &r.result.device))
        .collect();
    let excused = |key: &str, target: &Target| match attribution {
        Attribution::ReferencePassed => !on_target.contains(&(key, target)),
        Attribution::ReferenceNotFailed => on_target.contains(&(key, target)),
    };
    results
        .iter()
        .map(|row| {
            let r = &row.result;
            match r.outcome {
                Outcome::Pass => Counted::Pass,
                Outcome::Skip => Counted::Skipped,
                Outcome::Flaky => Counted::Flaky,
                Outcome::Fail | Outcome::Timeout | Outcome::Crash | Outcome::WrongResult => {
                    let reason = failure_reason(r);
                    let target = r.device.reference_target(&reference);
                    if reason == Reason::HarnessError {
                        Counted::Harness
                    } else if opts.attributable
                        && r.device != target
                        && with_reference.contains(&(row.function.framework, &target))
                        && excused(r.case_key.as_str(), &target)
                    {
                        Counted::NotAttributable
                    } else if attribution == Attribution::ReferencePassed
                        && r.device == target
                        && matches!(reason, Reason::WrongResult | Reason::DtypeChanged)
                    {
                        Counted::Everywhere(reason)
                    } else {
                        Counted::Fail(reason)
                    }
                }
            }
        })
        .collect()
}

/// Computes the report. `results` is the run's rows as [`crate::store::Store::results`]
/// returns them (planned order); `devices` supplies the unavailable list. A failing
/// result without a reason counts as `timeout`, `crash` or (for `fail`) `other`.
pub fn build(
    run: &RunSummary,
    devices: &[DeviceInfo],
    results: &[ResultRow],
    opts: &ReportOptions,
) -> PortabilityReport {
    let reference = opts.reference.clone().unwrap_or_else(|| run.info.reference_device.clone());
    let attribution = Attribution::for_source(run.origin.source);
    let with_reference: HashSet<(Framework, &Target)> =
        results.iter().map(|r| (r.function.framework, &r.result.device)).collect();
    let compiled_targets = results.iter().any(|r| r.result.device.mode().is_compiled());

    let mut targets: BTreeMap<(Framework, bool, &Target), Totals<'_>> = BTreeMap::new();
    let mut harness_errors = Vec::new();
    let mut flaky = Vec::new();
    for (row, counted) in results.iter().zip(counted(run, results, opts)) {
        let r = &row.result;
        if counted == Counted::Flaky {
            flaky.push(HarnessError {
                case_key: r.case_key.clone(),
                device: r.device.clone(),
                message: r.message.clone().unwrap_or_else(|| "(no message)".into()),
            });
        }
        if let Counted::Harness = counted {
            harness_errors.push(HarnessError {
                case_key: r.case_key.clone(),
                device: r.device.clone(),
                message: match (&r.error_type, &r.message) {
                    (Some(t), Some(m)) => format!("{t}: {m}"),
                    (Some(x), None) | (None, Some(x)) => x.clone(),
                    (None, None) => "(no message)".into(),
                },
            });
        }
        // The reference device sorts first within its framework.
        let key = (row.function.framework, r.device != reference, &r.device);
        targets.entry(key).or_default().add(row, counted, run.origin.source, opts);
    }

    PortabilityReport {
        run: RunHeader {
            id: run.id,
            host: run.info.host.clone(),
            started_at: run.info.started_at.clone(),
            state: run.state.to_string(),
            python_version: run.info.python_version.clone(),
            frameworks: run.info.frameworks.iter().map(|(f, i)| (*f, i.version.clone())).collect(),
            catalogue_version: run.info.catalogue_version.clone(),
            seed: run.info.seed,
            mlport_version: run.info.mlport_version.clone(),
            jax_x64: run.info.jax_x64,
            source: run.origin.source,
            label: run.origin.label.clone(),
            machine: run.origin.machine.clone(),
            notes: run.origin.notes.clone(),
            device_stacks: crate::model::device_stacks(devices),
        },
        targets: targets.into_iter().map(|((framework, _, device), t)| t.finish(framework, device.clone())).collect(),
        harness_errors,
        flaky,
        unavailable: devices.iter().filter(|d| !d.available).cloned().collect(),
        without_reference: if opts.attributable {
            let mut v: Vec<Framework> = results
                .iter()
                .map(|r| r.function.framework)
                .filter(|f| !with_reference.contains(&(*f, &reference)))
                .collect();
            v.sort();
            v.dedup();
            v
        } else {
            Vec::new()
        },
        not_usable: run
            .info
            .frameworks
            .iter()
            .filter_map(|(f, i)| i.import_error.as_ref().map(|e| (*f, e.clone())))
            .collect(),
        rule: rule_text_for(&reference, opts.attributable, attribution, opts.strict)
            + if compiled_targets && opts.attributable { COMPILED_RULE } else { "" },
        attributable: opts.attributable,
        strict: opts.strict,
        attribution,
        reference,
    }
}

/// Running totals for one target while results stream in.
#[derive(Default)]
struct Totals<'a> {
    functions: Vec<FunctionSummary>,
    index: HashMap<&'a str, usize>,
    reasons: BTreeMap<Reason, usize>,
    passed: usize,
    unchecked: usize,
    failed: usize,
    wrong: usize,
    wrong_everywhere: usize,
    dtype_changed: usize,
    skipped: usize,
    not_attributable: usize,
    /// Each counted passing case's median sample, ns.
    case_medians: Vec<f64>,
}

impl<'a> Totals<'a> {
    /// Adds one result: `opts.strict` says whether a [`Counted::Everywhere`] counts toward the
    /// function's status, `opts.list_not_attributable` whether an excused failure is listed.
    fn add(&mut self, row: &'a ResultRow, counted: Counted, source: RunSource, opts: &ReportOptions) {
        let (strict, list_not_attributable) = (opts.strict, opts.list_not_attributable);
        let name = row.function.name.as_str();
        let i = *self.index.entry(name).or_insert_with(|| {
            self.functions.push(FunctionSummary {
                name: name.to_string(),
                status: None,
                passed: 0,
                unchecked: 0,
                failed: 0,
                wrong: 0,
                wrong_everywhere: 0,
                dtype_changed: 0,
                counted_failures: 0,
                not_attributable: 0,
                reasons: BTreeMap::new(),
                failures: Vec::new(),
            });
            self.functions.len() - 1
        });
        let f = &mut self.functions[i];
        match counted {
            Counted::Pass => {
                f.passed += 1;
                self.passed += 1;
                if row.unchecked(source) {
                    f.unchecked += 1;
                    self.unchecked += 1;
                }
                let mut samples: Vec<f64> = row.result.samples_ns.iter().map(|&ns| ns as f64).collect();
                if let Some(m) = median(&mut samples) {
                    self.case_medians.push(m);
                }
            }
            Counted::Fail(reason) | Counted::Everywhere(reason) => {
                let everywhere = matches!(counted, Counted::Everywhere(_));
                f.failures.push(CaseFailure { everywhere, ..CaseFailure::of(row, reason) });
                f.counted_failures += usize::from(counted.counts(strict));
                match reason {
                    Reason::WrongResult if everywhere => {
                        f.wrong_everywhere += 1;
                        self.wrong_everywhere += 1;
                    }
                    Reason::WrongResult => {
                        f.wrong += 1;
                        self.wrong += 1;
                    }
                    Reason::DtypeChanged => {
                        f.dtype_changed += 1;
                        self.dtype_changed += 1;
                    }
                    _ => {
                        f.failed += 1;
                        *f.reasons.entry(reason).or_default() += 1;
                        self.failed += 1;
                        *self.reasons.entry(reason).or_default() += 1;
                    }
                }
            }
            Counted::Skipped => self.skipped += 1,
            Counted::NotAttributable => {
                f.not_attributable += 1;
                self.not_attributable += 1;
                if list_not_attributable {
                    f.failures.push(CaseFailure {
                        not_attributable: true,
                        ..CaseFailure::of(row, failure_reason(&row.result))
                    });
                }
            }
            Counted::Harness | Counted::Flaky => {}
        }
    }

    fn finish(mut self, framework: Framework, device: Target) -> TargetSummary {
        let mut t = TargetSummary {
            framework,
            device,
            functions_run: 0,
            success: 0,
            partial: 0,
            complete_failure: 0,
            reasons: self.reasons,
            wrong_result_functions: 0,
            wrong_everywhere_functions: 0,
            cases_passed: self.passed,
            cases_unchecked: self.unchecked,
            cases_failed: self.failed,
            cases_wrong: self.wrong,
            cases_wrong_everywhere: self.wrong_everywhere,
            cases_dtype_changed: self.dtype_changed,
            cases_skipped: self.skipped,
            cases_not_attributable: self.not_attributable,
            median_latency_ns: median(&mut self.case_medians),
            functions: self.functions,
        };
        for f in &mut t.functions {
            // A case listed but not counted (the reference target's own wrong answer or dtype
            // change, outside the strict view) ran without a failure of the device's: it counts
            // with the passes toward the status.
            let listed = f.failed + f.wrong + f.wrong_everywhere + f.dtype_changed;
            f.status = FunctionStatus::from_counts(f.passed + (listed - f.counted_failures), f.counted_failures);
            t.wrong_result_functions += usize::from(f.wrong > 0);
            t.wrong_everywhere_functions += usize::from(f.wrong_everywhere > 0);
            match f.status {
                Some(FunctionStatus::Success) => t.success += 1,
                Some(FunctionStatus::Partial) => t.partial += 1,
                Some(FunctionStatus::CompleteFailure) => t.complete_failure += 1,
                None => continue,
            }
            t.functions_run += 1;
        }
        t
    }
}

/// The median (mean of the middle two for an even count, [`crate::stats::median_in_place`]);
/// `None` when empty. Reorders `values`.
fn median(values: &mut [f64]) -> Option<f64> {
    (!values.is_empty()).then(|| crate::stats::median_in_place(values))
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{CaseResult, CaseRow, FrameworkInfo, FunctionRow, RunInfo};

    pub(crate) fn run_summary() -> RunSummary {
        RunSummary {
            id: 7,
            uid: "0123456789abcdef0123456789abcdef".into(),
            info: RunInfo {
                started_at: "2026-12-01T10:00:00Z".into(),
                host: "gpu-box".into(),
                os: "Linux 6.1.0 x86_64".into(),
                cpu_model: "AMD EPYC 9454".into(),
                cpu_cores: 48,
                accelerators: vec!["NVIDIA H200, driver 560.35".into()],
                python_version: "3.11.8".into(),
                python_executable: "/usr/bin/python3".into(),
                frameworks: BTreeMap::from([
                    (Framework::Torch, FrameworkInfo { version: Some("2.5.1".into()), ..Default::default() }),
                    (
                        Framework::Jax,
                        FrameworkInfo { version: None, import_error: Some("ImportError".into()), ..Default::default() },
                    ),
                ]),
                catalogue_version: BTreeMap::from([(Framework::Torch, "2026.11.30".into())]),
                command_line: "mlport run".into(),
                seed: 42,
                reference_device: Target::cpu(),
                mlport_version: "0.1.0".into(),
                jax_x64: false,
                switches: None,
            },
            origin: Default::default(),
            state: crate::model::RunState::Finished,
            finished_at: Some("2026-12-01T10:05:00Z".into()),
            cases_planned: 16,
            results: 17,
        }
    }

    /// One result of `framework`'s function `f` (e.g. "a"), case `case`, on `device`.
    pub(crate) fn row(
        framework: Framework,
        f: &str,
        case: u32,
        device: &str,
        outcome: Outcome,
        reason: Option<Reason>,
        samples: &[u64],
    ) -> ResultRow {
        let name = format!("{}.{f}", framework.as_str());
        let key = format!("{framework}/{name}/c{case}/float32");
        ResultRow {
            id: 0,
            function: FunctionRow {
                framework,
                name: name.clone(),
                paper: None,
                decile: None,
                top20: false,
                op: Some(f.into()),
                moved: None,
                note: None,
            },
            case: CaseRow {
                key: key.clone(),
                framework,
                function: name,
                case_id: format!("c{case}"),
                dtype: Some(Dtype::Float32),
                seed: 1,
                spec: crate::model::Spec::Imported(Default::default()),
            },
            result: CaseResult {
                case_key: key,
                device: device.parse().unwrap(),
                outcome,
                reason,
                error_type: None,
                message: (reason == Some(Reason::HarnessError)).then(|| "KeyError: 'shape'".into()),
                traceback: None,
                phase: None,
                signal: None,
                stderr_tail: None,
                first_call_ns: None,
                samples_ns: samples.to_vec(),
                session_first_calls_ns: Vec::new(),
                block_sizes: Vec::new(),
                compiles: None,
                graph_breaks: None,
                steady_stop: None,
                runqueue_wait_ns: None,
                steady_wall_ns: None,
                measures: None,
                outputs: json!(null),
                wall_ms: 1.0,
                finished_at: "2026-12-01T10:01:00Z".into(),
            },
            // Compared to a verdict unless a test says otherwise ("ran, unchecked").
            compared: true,
        }
    }

    /// The worked example: torch functions a..d on cpu and cuda:0, jax on cpu.
    pub(crate) fn results() -> Vec<ResultRow> {
        use Outcome::{Crash, Fail, Pass, Skip, Timeout};
        use Reason::{ApiMissing, DtypeUnsupported, HarnessError, NotImplemented, Other};
        let t = Framework::Torch;
        vec![
            // jax first in the input, to check that targets are ordered by framework.
            row(Framework::Jax, "a", 1, "cpu", Pass, None, &[5]),
            row(t, "a", 1, "cpu", Pass, None, &[30, 10, 20]),
            row(t, "a", 1, "cuda:0", Fail, Some(NotImplemented), &[]),
            row(t, "a", 2, "cpu", Pass, None, &[50, 40]),
            row(t, "a", 2, "cuda:0", Pass, None, &[7]),
            // Passed with nothing to compare it with.
            ResultRow { compared: false, ..row(t, "b", 1, "cpu", Pass, None, &[100]) },
            row(t, "b", 1, "cuda:0", Fail, Some(NotImplemented), &[]),
            row(t, "b", 2, "cpu", Fail, Some(DtypeUnsupported), &[]),
            row(t, "b", 2, "cuda:0", Fail, Some(DtypeUnsupported), &[]),
            row(t, "c", 1, "cpu", Timeout, None, &[]),
            row(t, "c", 1, "cuda:0", Fail, Some(Other), &[]),
            row(t, "c", 2, "cpu", Crash, None, &[]),
            row(t, "c", 2, "cuda:0", Pass, None, &[1000, 3000]),
            row(t, "d", 1, "cpu", Skip, None, &[]),
            row(t, "d", 1, "cuda:0", Fail, Some(ApiMissing), &[]),
            row(t, "d", 2, "cpu", Fail, Some(HarnessError), &[]),
            row(t, "d", 2, "cuda:0", Pass, None, &[]),
        ]
    }

    pub(crate) fn devices() -> Vec<DeviceInfo> {
        vec![
            DeviceInfo {
                framework: Framework::Torch,
                device: "cuda:0".parse().unwrap(),
                available: true,
                detail: "H200".into(),
            },
            DeviceInfo {
                framework: Framework::Jax,
                device: "cuda:0".parse().unwrap(),
                available: false,
                detail: String::new(),
            },
        ]
    }

    /// The worked example's report with default options.
    pub(crate) fn report() -> PortabilityReport {
        build(&run_summary(), &devices(), &results(), &ReportOptions::default())
    }

    fn target<'r>(report: &'r PortabilityReport, framework: Framework, device: &str) -> &'r TargetSummary {
        report.targets.iter().find(|t| t.framework == framework && t.device.as_str() == device).unwrap()
    }

    fn status(t: &TargetSummary, f: &str) -> Option<FunctionStatus> {
        t.functions.iter().find(|s| s.name.ends_with(&format!(".{f}"))).unwrap().status
    }

    /// Issue 39's split, worked by hand: `e` disagrees with float64 at one case on cpu and on
    /// cuda:0 (the dtype's precision), `f` changes dtype on both (the framework's rule), `g`
    /// agrees on cpu and not on cuda:0, `h` keeps its dtype on cpu and not on cuda:0.
    fn split_rows() -> Vec<ResultRow> {
        use Outcome::{Fail, Pass, WrongResult};
        use Reason::DtypeChanged;
        let (t, wrong) = (Framework::Torch, Some(Reason::WrongResult));
        vec![
            row(t, "e", 1, "cpu", WrongResult, wrong, &[]),
            row(t, "e", 1, "cuda:0", WrongResult, wrong, &[]),
            row(t, "e", 2, "cpu", Pass, None, &[]),
            row(t, "e", 2, "cuda:0", Pass, None, &[]),
            row(t, "f", 1, "cpu", Fail, Some(DtypeChanged), &[]),
            row(t, "f", 1, "cuda:0", Fail, Some(DtypeChanged), &[]),
            row(t, "g", 1, "cpu", Pass, None, &[]),
            row(t, "g", 1, "cuda:0", WrongResult, wrong, &[]),
            row(t, "h", 1, "cpu", Pass, None, &[]),
            row(t, "h", 1, "cuda:0", Fail, Some(DtypeChanged), &[]),
        ]
    }

    #[test]
    fn the_reference_targets_own_wrong_answers_and_dtype_changes_count_only_in_the_strict_view() {
        let rows = split_rows();
        let paper = build(&run_summary(), &[], &rows, &ReportOptions::default());
        let cpu = target(&paper, Framework::Torch, "cpu");
        // Listed apart, not counted: every function succeeds on the reference.
        assert_eq!((cpu.functions_run, cpu.success, cpu.partial, cpu.complete_failure), (4, 4, 0, 0));
        assert_eq!((cpu.wrong_result_functions, cpu.wrong_everywhere_functions), (0, 1));
        assert_eq!((cpu.cases_wrong, cpu.cases_wrong_everywhere, cpu.cases_dtype_changed), (0, 1, 1));
        assert!(cpu.reasons.is_empty(), "a dtype change is not an error: {:?}", cpu.reasons);
        let e = cpu.functions.iter().find(|f| f.name == "torch.e").unwrap();
        assert_eq!((e.wrong_everywhere, e.counted_failures, e.failures.len()), (1, 0, 1));
        assert!(e.failures[0].everywhere);
        // On cuda:0 only what the reference got right counts: g and h; e and f are excused.
        let cuda = target(&paper, Framework::Torch, "cuda:0");
        assert_eq!(status(cuda, "e"), Some(FunctionStatus::Success));
        assert_eq!(status(cuda, "f"), None);
        assert_eq!(status(cuda, "g"), Some(FunctionStatus::CompleteFailure));
        assert_eq!(status(cuda, "h"), Some(FunctionStatus::CompleteFailure));
        assert_eq!((cuda.wrong_result_functions, cuda.wrong_everywhere_functions), (1, 0));
        assert_eq!((cuda.cases_wrong, cuda.cases_dtype_changed, cuda.cases_not_attributable), (1, 1, 2));
        assert!(paper.rule.contains("--strict counts it."), "{}", paper.rule);

        let strict = build(&run_summary(), &[], &rows, &ReportOptions { strict: true, ..Default::default() });
        let cpu = target(&strict, Framework::Torch, "cpu");
        assert_eq!(status(cpu, "e"), Some(FunctionStatus::Partial));
        assert_eq!(status(cpu, "f"), Some(FunctionStatus::CompleteFailure));
        assert_eq!((cpu.success, cpu.partial, cpu.complete_failure), (2, 1, 1));
        // The columns do not move with the view; cuda:0 does not change.
        assert_eq!((cpu.cases_wrong, cpu.cases_wrong_everywhere, cpu.cases_dtype_changed), (0, 1, 1));
        assert_eq!(target(&strict, Framework::Torch, "cuda:0"), target(&paper, Framework::Torch, "cuda:0"));
        assert!(strict.rule.contains("Strict view"), "{}", strict.rule);
    }

    #[test]
    fn a_dtype_changes_message_keeps_its_dtypes() {
        let mut r = row(Framework::Torch, "a", 1, "cpu", Outcome::WrongResult, Some(Reason::DtypeChanged), &[]);
        let long = "all 4096 elements within exact equality: max abs 0, max rel 0, 0 ULP (int64) ".repeat(4);
        r.result.message = Some(format!(
            "dtype changed against numpy.sum on the same uint8 inputs (output 0): dtype int64, expected uint64; {long}"
        ));
        assert_eq!(
            failure_message(&r.result),
            "dtype changed against numpy.sum on the same uint8 inputs (output 0): dtype int64, expected uint64"
        );
        assert!(full_failure_message(&r.result).ends_with(&long), "the whole message is kept for JSON");
    }

    #[test]
    fn excused_failures_are_listed_on_request_without_counting() {
        let rows = split_rows();
        let plain = build(&run_summary(), &[], &rows, &ReportOptions::default());
        let opts = ReportOptions { list_not_attributable: true, ..Default::default() };
        let listed = build(&run_summary(), &[], &rows, &opts);
        let (a, b) = (target(&plain, Framework::Torch, "cuda:0"), target(&listed, Framework::Torch, "cuda:0"));
        for name in ["torch.e", "torch.f", "torch.g", "torch.h"] {
            let (fa, fb) = (a.functions.iter().find(|f| f.name == name), b.functions.iter().find(|f| f.name == name));
            assert_eq!(fa.map(|f| f.status), fb.map(|f| f.status), "{name}: the status does not move");
        }
        let e = b.functions.iter().find(|f| f.name == "torch.e").unwrap();
        assert_eq!(e.failures.len(), 1);
        assert!(e.failures[0].not_attributable && e.failures[0].reason == Reason::WrongResult);
        assert!(a.functions.iter().find(|f| f.name == "torch.e").unwrap().failures.is_empty());
        assert_eq!((b.cases_not_attributable, b.success, b.complete_failure), (2, 1, 2));
    }

    #[test]
    fn a_test_suites_failing_test_counts_whatever_its_reason() {
        let mut run = run_summary();
        run.origin.source = RunSource::ImportPytestJson;
        let report = build(&run, &[], &split_rows(), &ReportOptions::default());
        let cpu = target(&report, Framework::Torch, "cpu");
        assert_eq!((cpu.success, cpu.partial, cpu.complete_failure), (2, 1, 1));
        assert_eq!(cpu.wrong_everywhere_functions, 0);
    }

    #[test]
    fn targets_are_ordered_by_framework_then_reference_first() {
        let report = build(&run_summary(), &devices(), &results(), &ReportOptions::default());
        let order: Vec<_> = report.targets.iter().map(|t| (t.framework, t.device.as_str())).collect();
        assert_eq!(order, vec![(Framework::Torch, "cpu"), (Framework::Torch, "cuda:0"), (Framework::Jax, "cpu")]);
        assert_eq!(report.reference, Target::cpu());
        assert_eq!(report.unavailable, vec![devices()[1].clone()]);
        assert_eq!(report.run.frameworks[&Framework::Jax], None);
    }

    #[test]
    fn reference_device_counts_every_failure() {
        let report = build(&run_summary(), &devices(), &results(), &ReportOptions::default());
        let cpu = target(&report, Framework::Torch, "cpu");
        // a: 2 pass → success; b: 1 pass 1 fail → partial; c: timeout + crash → complete failure;
        // d: a skip and a harness error → nothing counted, not run.
        assert_eq!(status(cpu, "a"), Some(FunctionStatus::Success));
        assert_eq!(status(cpu, "b"), Some(FunctionStatus::Partial));
        assert_eq!(status(cpu, "c"), Some(FunctionStatus::CompleteFailure));
        assert_eq!(status(cpu, "d"), None);
        assert_eq!((cpu.functions_run, cpu.success, cpu.partial, cpu.complete_failure), (3, 1, 1, 1));
        assert_eq!(cpu.percent(cpu.success), Some(100.0 / 3.0));
        // A timeout and a crash without a reason count under their own names.
        let reasons = BTreeMap::from([(Reason::DtypeUnsupported, 1), (Reason::Timeout, 1), (Reason::Crash, 1)]);
        assert_eq!(cpu.reasons, reasons);
        assert_eq!((cpu.cases_passed, cpu.cases_failed, cpu.cases_skipped, cpu.cases_not_attributable), (3, 3, 1, 0));
        // Case medians 20, 45 and 100 ns; their median is 45.
        assert_eq!(cpu.median_latency_ns, Some(45.0));
    }

    #[test]
    fn other_devices_count_only_attributable_failures() {
        let report = build(&run_summary(), &devices(), &results(), &ReportOptions::default());
        let cuda = target(&report, Framework::Torch, "cuda:0");
        // a: c1 fails (passed on cpu) and c2 passes → partial; b: c1 counts, c2 failed on cpu too → complete;
        // c: c1 failed on cpu (excluded), c2 passes → success; d: c1 skipped on cpu (excluded), c2 passes → success.
        assert_eq!(status(cuda, "a"), Some(FunctionStatus::Partial));
        assert_eq!(status(cuda, "b"), Some(FunctionStatus::CompleteFailure));
        assert_eq!(status(cuda, "c"), Some(FunctionStatus::Success));
        assert_eq!(status(cuda, "d"), Some(FunctionStatus::Success));
        assert_eq!((cuda.functions_run, cuda.success, cuda.partial, cuda.complete_failure), (4, 2, 1, 1));
        assert_eq!(cuda.percent(cuda.success), Some(50.0));
        assert_eq!(cuda.percent(cuda.partial), Some(25.0));
        assert_eq!(cuda.reasons, BTreeMap::from([(Reason::NotImplemented, 2)]));
        assert_eq!(
            (cuda.cases_passed, cuda.cases_failed, cuda.cases_skipped, cuda.cases_not_attributable),
            (3, 2, 0, 3)
        );
        // Passing cases with samples: a/c2 (7 ns) and c/c2 (median 2000 ns); d/c2 has none.
        assert_eq!(cuda.median_latency_ns, Some(1003.5));
    }

    #[test]
    fn test_suites_excuse_a_failure_only_when_the_reference_copy_failed_too() {
        let mut run = run_summary();
        run.origin.source = RunSource::ImportPytestJson;
        let report = build(&run, &devices(), &results(), &ReportOptions::default());
        assert_eq!(report.attribution, Attribution::ReferenceNotFailed);
        let cuda = target(&report, Framework::Torch, "cuda:0");
        // a: c1 fails, its cpu copy passed → counts; b: c2 failed on cpu too → excused;
        // c: c1's cpu copy timed out (a failure) → excused; d: c1's cpu copy was skipped → counts.
        assert_eq!(status(cuda, "a"), Some(FunctionStatus::Partial));
        assert_eq!(status(cuda, "b"), Some(FunctionStatus::CompleteFailure));
        assert_eq!(status(cuda, "c"), Some(FunctionStatus::Success));
        assert_eq!(status(cuda, "d"), Some(FunctionStatus::Partial));
        assert_eq!((cuda.functions_run, cuda.success, cuda.partial, cuda.complete_failure), (4, 1, 2, 1));
        assert_eq!((cuda.cases_failed, cuda.cases_not_attributable), (3, 2));
        assert!(report.rule.contains("unless its cpu copy"), "{}", report.rule);
        // The reference device itself counts every failure, as for live runs.
        let cpu = target(&report, Framework::Torch, "cpu");
        assert_eq!((cpu.success, cpu.partial, cpu.complete_failure), (1, 1, 1));
    }

    #[test]
    fn without_attribution_every_failure_counts() {
        let opts = ReportOptions { attributable: false, ..Default::default() };
        let report = build(&run_summary(), &devices(), &results(), &opts);
        let cuda = target(&report, Framework::Torch, "cuda:0");
        assert_eq!((cuda.functions_run, cuda.success, cuda.partial, cuda.complete_failure), (4, 0, 3, 1));
        let reasons = BTreeMap::from([
            (Reason::NotImplemented, 2),
            (Reason::DtypeUnsupported, 1),
            (Reason::ApiMissing, 1),
            (Reason::Other, 1),
        ]);
        assert_eq!(cuda.reasons, reasons);
        assert_eq!((cuda.cases_failed, cuda.cases_not_attributable), (5, 0));
        assert!(report.rule.contains("Every failure on a device other than the reference cpu counts"));
        // The reference device is unchanged by the option.
        assert_eq!(target(&report, Framework::Torch, "cpu").cases_failed, 3);
    }

    #[test]
    fn reference_can_be_chosen() {
        let opts = ReportOptions { reference: Some("cuda:0".parse().unwrap()), ..Default::default() };
        let report = build(&run_summary(), &devices(), &results(), &opts);
        let order: Vec<_> = report.targets.iter().map(|t| (t.framework, t.device.as_str())).collect();
        assert_eq!(order, vec![(Framework::Torch, "cuda:0"), (Framework::Torch, "cpu"), (Framework::Jax, "cpu")]);
        let cpu = target(&report, Framework::Torch, "cpu");
        // b/c2 and c/c1 failed on cuda:0 too → excluded; c/c2 crashed on cpu but passed on cuda:0 → counts.
        assert_eq!((cpu.functions_run, cpu.success, cpu.partial, cpu.complete_failure), (3, 2, 0, 1));
        assert_eq!(cpu.reasons, BTreeMap::from([(Reason::Crash, 1)]));
        assert_eq!(cpu.cases_not_attributable, 2);
        // The jax case never ran on cuda:0, but it passed, so nothing is excluded.
        assert_eq!(target(&report, Framework::Jax, "cpu").cases_not_attributable, 0);
        assert!(report.rule.contains("the reference cuda:0"));
    }

    #[test]
    fn compiled_targets_are_attributed_against_eager_on_the_same_device() {
        use Outcome::{Fail, Pass};
        let t = Framework::Torch;
        let rows = vec![
            row(t, "a", 1, "cpu", Pass, None, &[10]),
            row(t, "a", 1, "cpu/compiled", Fail, Some(Reason::CompileError), &[]),
            row(t, "a", 2, "cpu", Fail, Some(Reason::DtypeUnsupported), &[]),
            row(t, "a", 2, "cpu/compiled", Fail, Some(Reason::CompileError), &[]),
            row(t, "b", 1, "cuda:0", Pass, None, &[10]),
            row(t, "b", 1, "cuda:0/compiled", Fail, Some(Reason::Recompiles), &[10]),
            // Passed on cpu (the run's reference) but not on cuda:0 eager: not the compiler's doing.
            row(t, "c", 1, "cpu", Pass, None, &[10]),
            row(t, "c", 1, "cuda:0", Fail, Some(Reason::NotImplemented), &[]),
            row(t, "c", 1, "cuda:0/compiled", Fail, Some(Reason::NotImplemented), &[]),
        ];
        let report = build(&run_summary(), &[], &rows, &ReportOptions::default());
        let order: Vec<&str> = report.targets.iter().map(|t| t.device.as_str()).collect();
        assert_eq!(order, ["cpu", "cpu/compiled", "cuda:0", "cuda:0/compiled"]);
        let compiled = target(&report, t, "cpu/compiled");
        assert_eq!((compiled.cases_failed, compiled.cases_not_attributable), (1, 1));
        assert_eq!(compiled.reasons, BTreeMap::from([(Reason::CompileError, 1)]));
        let gpu_compiled = target(&report, t, "cuda:0/compiled");
        assert_eq!(gpu_compiled.reasons, BTreeMap::from([(Reason::Recompiles, 1)]));
        assert_eq!((gpu_compiled.cases_failed, gpu_compiled.cases_not_attributable), (1, 1));
        // cuda:0 eager is still judged against the run's reference.
        assert_eq!(target(&report, t, "cuda:0").reasons, BTreeMap::from([(Reason::NotImplemented, 1)]));
        assert!(report.rule.ends_with(COMPILED_RULE), "{}", report.rule);
        // Without compiled targets the rule is what it was.
        assert!(!self::report().rule.contains("compiled"));
    }

    #[test]
    fn harness_errors_are_listed_apart_and_never_counted() {
        let report = build(&run_summary(), &devices(), &results(), &ReportOptions::default());
        assert_eq!(
            report.harness_errors,
            vec![HarnessError {
                case_key: "torch/torch.d/c2/float32".into(),
                device: Target::cpu(),
                message: "KeyError: 'shape'".into(),
            }]
        );
        let cpu = target(&report, Framework::Torch, "cpu");
        assert!(!cpu.reasons.contains_key(&Reason::HarnessError));
        let d = cpu.functions.iter().find(|f| f.name == "torch.d").unwrap();
        assert_eq!((d.passed, d.failed, d.not_attributable), (0, 0, 0));
    }

    #[test]
    fn a_target_with_only_skips_runs_no_function() {
        let results = vec![row(Framework::Numpy, "a", 1, "cpu", Outcome::Skip, None, &[])];
        let report = build(&run_summary(), &[], &results, &ReportOptions::default());
        let t = &report.targets[0];
        assert_eq!((t.functions_run, t.cases_skipped, t.median_latency_ns), (0, 1, None));
        assert_eq!(t.percent(t.success), None);
    }

    #[test]
    fn frameworks_that_did_not_import_are_named_apart() {
        let report = report();
        assert_eq!(report.not_usable, BTreeMap::from([(Framework::Jax, "ImportError".to_string())]));
        // Its note: crate::render::portability's test of the same name.
    }

    #[test]
    fn without_results_on_the_reference_every_failure_counts() {
        // Only the cuda:0 rows: the reference cpu never ran, so nothing can be attributed.
        let rows: Vec<ResultRow> = results().into_iter().filter(|r| r.result.device.as_str() != "cpu").collect();
        let report = build(&run_summary(), &devices(), &rows, &ReportOptions::default());
        let all =
            build(&run_summary(), &devices(), &rows, &ReportOptions { attributable: false, ..Default::default() });
        assert_eq!(report.targets, all.targets);
        assert!(report.targets.iter().all(|t| t.cases_not_attributable == 0));
        assert!(report.targets.iter().any(|t| t.cases_failed > 0));
        assert_eq!(report.without_reference, vec![Framework::Torch]);
        // Its note: crate::render::portability's test of the same name.
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0]), Some(3.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut [9.0, 1.0, 5.0]), Some(5.0));
    }

    #[test]
    fn passes_nothing_compared_are_counted_unchecked_in_live_runs_only() {
        let live = build(&run_summary(), &devices(), &results(), &ReportOptions::default());
        let cpu = target(&live, Framework::Torch, "cpu");
        assert_eq!((cpu.cases_passed, cpu.cases_unchecked), (3, 1));
        let b = cpu.functions.iter().find(|f| f.name == "torch.b").unwrap();
        assert_eq!((b.passed, b.unchecked), (1, 1));
        assert_eq!(target(&live, Framework::Torch, "cuda:0").cases_unchecked, 0);
        // An imported test checked its own answer: never "unchecked".
        let mut run = run_summary();
        run.origin.source = RunSource::ImportPytestJson;
        let imported = build(&run, &devices(), &results(), &ReportOptions::default());
        assert!(imported.targets.iter().all(|t| t.cases_unchecked == 0));
    }
}
