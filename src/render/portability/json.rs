//! The JSON rendering of a portability report: a durable, versioned format
//! (`{"format": "mlport.portability", "version": 3, ...}`) written from its own
//! borrowed structs, so renaming a report field never changes it. Latencies are ns;
//! percentages are of the functions run (`null` when none ran); enums and map keys use
//! the `as_str` spellings; the counting rule comes last, as in every format.

use std::collections::BTreeMap;

use serde::Serialize;

use super::words::listed;
use crate::analysis::{FunctionSummary, PortabilityReport, RunHeader, TargetSummary};
use crate::model::RunSource;
use crate::model::{Framework, FunctionStatus, Reason, Target};
use crate::render::json::pretty;

/// The `format` of the summary document.
pub const FORMAT: &str = "mlport.portability";
/// The `format` of the per-function detail document.
pub const FUNCTIONS_FORMAT: &str = "mlport.portability.functions";
/// The `format` of the summary and detail together (`report --functions --format json`):
/// `{"format", "version", "summary": <mlport.portability>, "functions": <…functions>}`.
pub const BUNDLE_FORMAT: &str = "mlport.portability.bundle";
/// The version of these documents; bumped on any incompatible change.
/// Version 2 added `unchecked` (passing cases nothing compared) to `cases` and each function.
/// Version 3 split the answers and dtypes (issue 39): `wrong_result` holds the device-attributable
/// disagreements only, `wrong_everywhere` those on the reference target itself, `dtype_changed`
/// the silent dtype changes (no longer in `reasons` or `failed`); `strict` says the view; each
/// listed case says `everywhere`; the detail lists `listed` (partial and complete failures, and
/// functions with a case listed but not counted) instead of `not_portable`.
pub const VERSION: u32 = 3;

#[derive(Serialize)]
struct Document<'a, T> {
    format: &'static str,
    version: u32,
    run: Run<'a>,
    reference_device: &'a Target,
    attributable: bool,
    /// The strict view: the reference target's own wrong answers and dtype changes count.
    strict: bool,
    #[serde(flatten)]
    body: T,
    rule: &'a str,
}

#[derive(Serialize)]
struct Run<'a> {
    id: i64,
    host: &'a str,
    started_at: &'a str,
    state: &'a str,
    python_version: &'a str,
    frameworks: &'a BTreeMap<Framework, Option<String>>,
    catalogue_version: &'a BTreeMap<Framework, String>,
    seed: u64,
    mlport_version: &'a str,
    /// Absent for live runs (the format's first version had no sources).
    #[serde(skip_serializing_if = "RunSource::is_live")]
    source: RunSource,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    machine: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    notes: &'a [String],
    /// Devices a framework ran with another stack (torch on `xla:N`), with the versions their
    /// worker reported.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    device_stacks: Vec<DeviceStackJson<'a>>,
}

#[derive(Serialize)]
struct DeviceStackJson<'a> {
    framework: Framework,
    device: &'a Target,
    versions: &'a str,
}

#[derive(Serialize)]
struct Summary<'a> {
    targets: Vec<TargetJson<'a>>,
    harness_errors: Vec<HarnessError<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    flaky: Vec<HarnessError<'a>>,
    unavailable: Vec<Unavailable<'a>>,
    not_usable: Vec<NotUsable<'a>>,
    without_reference: &'a [Framework],
}

#[derive(Serialize)]
struct NotUsable<'a> {
    framework: Framework,
    error: &'a str,
}

#[derive(Serialize)]
struct TargetJson<'a> {
    framework: Framework,
    device: &'a Target,
    functions_run: usize,
    success: Share,
    partial: Share,
    complete_failure: Share,
    /// Functions with a case that disagreed with float64 where the reference target agreed.
    wrong_result: Share,
    /// Functions with a case that disagreed with float64 on the reference target itself.
    wrong_everywhere: Share,
    /// Errors by reason (dtype changes and wrong answers are apart).
    reasons: &'a BTreeMap<Reason, usize>,
    cases: Cases,
    median_latency_ns: Option<f64>,
    functions: Vec<Function<'a>>,
}

#[derive(Serialize)]
struct Share {
    count: usize,
    percent: Option<f64>,
}

#[derive(Serialize)]
struct Cases {
    passed: usize,
    /// Of the passing cases, those nothing compared ("ran, unchecked").
    unchecked: usize,
    /// Raised, timed out or crashed.
    failed: usize,
    /// Disagreed with float64 where the reference target agreed (device-attributable).
    wrong_result: usize,
    /// Disagreed with float64 on the reference target itself.
    wrong_everywhere: usize,
    /// An output came back in another dtype than expected.
    dtype_changed: usize,
    skipped: usize,
    not_attributable: usize,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    status: Option<FunctionStatus>,
    passed: usize,
    unchecked: usize,
    failed: usize,
    wrong_result: usize,
    wrong_everywhere: usize,
    dtype_changed: usize,
    not_attributable: usize,
    reasons: &'a BTreeMap<Reason, usize>,
    failing_cases: Vec<FailingCase<'a>>,
}

#[derive(Serialize)]
struct FailingCase<'a> {
    /// The result id `mlport repro` takes (0 when not read from a store).
    result_id: i64,
    case: &'a str,
    dtype: &'a str,
    reason: Reason,
    /// On the reference target itself: listed, counted only in the strict view.
    everywhere: bool,
    /// Excused (did not pass on the reference), listed on request; never counted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    not_attributable: bool,
    /// One line, at most 160 characters, cut at word boundaries (its head and tail).
    message: &'a str,
    /// The whole message as stored (the error's full type name first).
    full_message: &'a str,
}

#[derive(Serialize)]
struct HarnessError<'a> {
    case_key: &'a str,
    device: &'a Target,
    message: &'a str,
}

#[derive(Serialize)]
struct Unavailable<'a> {
    framework: Framework,
    device: &'a Target,
    detail: &'a str,
}

#[derive(Serialize)]
struct Details<'a> {
    targets: Vec<TargetDetail<'a>>,
}

#[derive(Serialize)]
struct TargetDetail<'a> {
    framework: Framework,
    device: &'a Target,
    functions_run: usize,
    listed: Vec<Function<'a>>,
}

pub(super) fn report(report: &PortabilityReport) -> String {
    let body = Summary {
        targets: report.targets.iter().map(target).collect(),
        harness_errors: report
            .harness_errors
            .iter()
            .map(|e| HarnessError { case_key: &e.case_key, device: &e.device, message: &e.message })
            .collect(),
        flaky: report
            .flaky
            .iter()
            .map(|e| HarnessError { case_key: &e.case_key, device: &e.device, message: &e.message })
            .collect(),
        unavailable: report
            .unavailable
            .iter()
            .map(|d| Unavailable { framework: d.framework, device: &d.device, detail: &d.detail })
            .collect(),
        not_usable: report.not_usable.iter().map(|(f, e)| NotUsable { framework: *f, error: e }).collect(),
        without_reference: &report.without_reference,
    };
    pretty(&document(report, FORMAT, body))
}

pub(super) fn functions(report: &PortabilityReport) -> String {
    let body = Details {
        targets: report
            .targets
            .iter()
            .map(|t| TargetDetail {
                framework: t.framework,
                device: &t.device,
                functions_run: t.functions_run,
                listed: listed(t).map(function).collect(),
            })
            .collect(),
    };
    pretty(&document(report, FUNCTIONS_FORMAT, body))
}

fn document<'a, T>(report: &'a PortabilityReport, format: &'static str, body: T) -> Document<'a, T> {
    let r: &RunHeader = &report.run;
    Document {
        format,
        version: VERSION,
        run: Run {
            id: r.id,
            host: &r.host,
            started_at: &r.started_at,
            state: &r.state,
            python_version: &r.python_version,
            frameworks: &r.frameworks,
            catalogue_version: &r.catalogue_version,
            seed: r.seed,
            mlport_version: &r.mlport_version,
            source: r.source,
            label: r.label.as_deref(),
            machine: r.machine.as_deref(),
            notes: &r.notes,
            device_stacks: r
                .device_stacks
                .iter()
                .map(|d| DeviceStackJson { framework: d.framework, device: &d.device, versions: &d.versions })
                .collect(),
        },
        reference_device: &report.reference,
        attributable: report.attributable,
        strict: report.strict,
        body,
        rule: &report.rule,
    }
}

fn target(t: &TargetSummary) -> TargetJson<'_> {
    let share = |count| Share { count, percent: t.percent(count) };
    TargetJson {
        framework: t.framework,
        device: &t.device,
        functions_run: t.functions_run,
        success: share(t.success),
        partial: share(t.partial),
        complete_failure: share(t.complete_failure),
        wrong_result: share(t.wrong_result_functions),
        wrong_everywhere: share(t.wrong_everywhere_functions),
        reasons: &t.reasons,
        cases: Cases {
            passed: t.cases_passed,
            unchecked: t.cases_unchecked,
            failed: t.cases_failed,
            wrong_result: t.cases_wrong,
            wrong_everywhere: t.cases_wrong_everywhere,
            dtype_changed: t.cases_dtype_changed,
            skipped: t.cases_skipped,
            not_attributable: t.cases_not_attributable,
        },
        median_latency_ns: t.median_latency_ns,
        functions: t.functions.iter().map(function).collect(),
    }
}

fn function(f: &FunctionSummary) -> Function<'_> {
    Function {
        name: &f.name,
        status: f.status,
        passed: f.passed,
        unchecked: f.unchecked,
        failed: f.failed,
        wrong_result: f.wrong,
        wrong_everywhere: f.wrong_everywhere,
        dtype_changed: f.dtype_changed,
        not_attributable: f.not_attributable,
        reasons: &f.reasons,
        failing_cases: f
            .failures
            .iter()
            .map(|c| FailingCase {
                result_id: c.result_id,
                case: &c.case_id,
                dtype: crate::model::name_or_empty(c.dtype),
                reason: c.reason,
                everywhere: c.everywhere,
                not_attributable: c.not_attributable,
                message: &c.message,
                full_message: &c.full_message,
            })
            .collect(),
    }
}

/// The summary and the per-function detail as one JSON document.
pub(super) fn bundle(report: &PortabilityReport) -> String {
    let parse = |text: String| serde_json::from_str::<serde_json::Value>(&text).expect("our own JSON parses");
    pretty(&serde_json::json!({
        "format": BUNDLE_FORMAT,
        "version": VERSION,
        "summary": parse(self::report(report)),
        "functions": parse(functions(report)),
    }))
}
