//! The join of scanned calls with stored results. Names meet in canonical form
//! ([`crate::scan::canonical`]: `tf.linalg.svd` ≡ `tensorflow.linalg.svd`); the paper's
//! imported runs name functions through the catalogue's `paper` stems, so they join the
//! same way (a paper test file the catalogue lacks keeps its stem and joins nothing).
//!
//! Per called function: the status on the target device from the latest run (highest id;
//! runs imported from the paper after all others) that has it there, counted device-attributably against the reference device, with its
//! failure reasons; the slowdown (median steady-state latency on the target over the
//! reference, [`crate::analysis::slowdown`]) from the first run pair that times it on both
//! devices: the same run first, then runs of the same machine; never across machines.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::analysis::{self, ReportOptions, SlowdownOptions};
use crate::model::{Framework, FunctionStatus, Reason, Target};
use crate::model::{ResultRow, RunSource, RunSummary};
use crate::scan::{ScanReport, canonical};
use crate::stats::StatsConfig;
use crate::store::{Store, StoreError};

/// What a called function's measurement says, for `--fail-on`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// Every counted case failed on the target.
    CompleteFailure,
    /// Some counted cases failed on the target.
    Partial,
    /// A counted failure on the target is a numeric mismatch.
    WrongResult,
    /// More than the threshold times slower on the target than on the reference.
    Slowdown,
    /// No run measured it on the target.
    Unknown,
}

impl std::str::FromStr for Finding {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "complete_failure" => Finding::CompleteFailure,
            "partial" => Finding::Partial,
            "wrong_result" => Finding::WrongResult,
            "slowdown" => Finding::Slowdown,
            "unknown" => Finding::Unknown,
            _ => {
                return Err(format!(
                    "unknown finding `{s}` (expected complete_failure, partial, wrong_result, slowdown or unknown)"
                ));
            }
        })
    }
}

/// How to audit.
#[derive(Clone, Debug)]
pub struct AuditOptions {
    /// The target device.
    pub device: Target,
    /// The device the target is compared with (default cpu).
    pub reference: Target,
    /// Slowdown above this is flagged (default 10, the paper's mark).
    pub threshold: f64,
}

/// One function the code calls.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditRow {
    /// Canonical name.
    pub function: String,
    /// Its framework.
    pub framework: Framework,
    /// Calls in the code.
    pub calls: usize,
    /// Files calling it.
    pub files: usize,
    /// Status on the target; `None` when unknown.
    pub status: Option<FunctionStatus>,
    /// Counted failure reasons on the target.
    pub reasons: BTreeMap<Reason, usize>,
    /// Median latency on the target over the reference.
    pub slowdown: Option<f64>,
    /// The run the status comes from (label, else id).
    pub run: Option<String>,
    /// Findings for `--fail-on`.
    pub findings: Vec<Finding>,
}

/// The audit of a code base on a device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditReport {
    /// The target device.
    pub device: Target,
    /// The reference device.
    pub reference: Target,
    /// The slowdown threshold.
    pub threshold: f64,
    /// Runs consulted (label or id).
    pub runs: Vec<String>,
    /// Files scanned.
    pub files: usize,
    /// Per called framework function: failures first, then slowdowns, successes, unknowns.
    pub rows: Vec<AuditRow>,
    /// Calls the scan could not resolve, most called first: methods of receivers it could not
    /// type (`?.reshape`) and names a star import may bind (`torch.sqrt?`). Not counted in
    /// `rows`, but each may be a framework function that fails on the target.
    pub unresolved: Vec<UnresolvedUse>,
}

/// A name the scan could not resolve, with its calls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnresolvedUse {
    /// As the scan lists it: `?.reshape`, or `torch.sqrt?` for a name a star import may bind.
    pub name: String,
    /// Calls in the code.
    pub calls: usize,
    /// Files calling it.
    pub files: usize,
}

impl AuditReport {
    /// Functions with `finding`.
    pub fn count(&self, finding: Finding) -> usize {
        self.rows.iter().filter(|r| r.findings.contains(&finding)).count()
    }

    /// The summary sentence.
    pub fn summary(&self) -> String {
        let failing = self.rows.iter().filter(|r| r.status.is_some_and(|s| s != FunctionStatus::Success)).count();
        let slow_only = self
            .rows
            .iter()
            .filter(|r| r.findings.contains(&Finding::Slowdown) && r.status == Some(FunctionStatus::Success))
            .count();
        let slow = if self.device == self.reference {
            String::new()
        } else if self.rows.iter().any(|r| r.slowdown.is_some()) {
            format!("; {slow_only} more run >{}× slower than on {}", self.threshold, self.reference)
        } else {
            format!("; slowdown against {} unknown (no run timed a function on both on one machine)", self.reference)
        };
        let mut s = format!(
            "{failing} of {} functions this code calls fail on {} ({} completely, {} partly){slow}; {} not measured \
             on {} by any run (unknown)",
            self.rows.len(),
            self.device,
            self.count(Finding::CompleteFailure),
            self.count(Finding::Partial),
            self.count(Finding::Unknown),
            self.device
        );
        if !self.unresolved.is_empty() {
            let calls: usize = self.unresolved.iter().map(|u| u.calls).sum();
            let _ =
                write!(s, "; not counted: {calls} calls the scan could not resolve ({})", self.unresolved_examples(3));
        }
        s
    }

    /// The `n` most called unresolved names with their calls: `?.reshape 444, ?.to 175`.
    pub fn unresolved_examples(&self, n: usize) -> String {
        let mut v: Vec<String> = self.unresolved.iter().take(n).map(|u| format!("{} {}", u.name, u.calls)).collect();
        if self.unresolved.len() > n {
            v.push("…".into());
        }
        v.join(", ")
    }
}

/// A function's status on the target, its reasons and the run they come from.
type Measured = (Option<FunctionStatus>, BTreeMap<Reason, usize>, String);

fn run_name(r: &RunSummary) -> String {
    r.origin.label.clone().unwrap_or_else(|| format!("run {}", r.id))
}

/// Joins `scan` with the results of `runs` in `store`.
pub fn audit(
    store: &Store,
    runs: &[RunSummary],
    scan: &ScanReport,
    opts: &AuditOptions,
) -> Result<AuditReport, StoreError> {
    // Status per canonical name on the target: the latest run first, the paper's imported data
    // after every run of the user's own (a 2023 TPU result must not hide today's measurement).
    let mut runs: Vec<&RunSummary> = runs.iter().collect();
    runs.sort_by_key(|r| (r.origin.source == RunSource::ImportPaper, std::cmp::Reverse(r.id)));
    let rows_of: Vec<(&RunSummary, Vec<ResultRow>)> =
        runs.iter().map(|r| Ok((*r, store.results(r.id)?))).collect::<Result<_, StoreError>>()?;
    let mut status: BTreeMap<String, Measured> = BTreeMap::new();
    // Runs that gave a status or a reference timing (ids), for "runs consulted".
    let mut consulted: BTreeSet<i64> = BTreeSet::new();
    let ropts = ReportOptions {
        attributable: true,
        reference: Some(opts.reference.clone()),
        strict: false,
        list_not_attributable: false,
    };
    for (run, rows) in &rows_of {
        if !rows.iter().any(|r| r.result.device == opts.device) {
            continue;
        }
        consulted.insert(run.id);
        let rep = analysis::build(run, &store.devices(run.id)?, rows, &ropts);
        for t in rep.targets.iter().filter(|t| t.device == opts.device) {
            for f in &t.functions {
                if f.status.is_some() {
                    status.entry(canonical(&f.name)).or_insert((f.status, f.counted_reasons(false), run_name(run)));
                }
            }
        }
    }
    // Slowdowns: pairs of (reference side, target side), the same run first, then same machine.
    let mut slow: BTreeMap<String, f64> = BTreeMap::new();
    let machine = |r: &RunSummary| r.origin.machine.clone().unwrap_or_else(|| r.info.host.clone());
    // On the reference device itself a slowdown is 1 by definition: none is given.
    let target_is_reference = opts.device == opts.reference;
    // The audit reads each function's point median ratio, never an interval: no bootstrap
    // resamples (with the default 10,000 per function and run pair they were nearly all of an
    // audit's time: 5 s of 5.3 s against the paper's imported data, release build).
    let point_ratios_only = SlowdownOptions {
        threshold: opts.threshold,
        stats: StatsConfig { resamples: 0, ..Default::default() },
        ..Default::default()
    };
    for (b_run, b_rows) in rows_of
        .iter()
        .filter(|_| !target_is_reference)
        .filter(|(_, rows)| rows.iter().any(|r| r.result.device == opts.device))
    {
        // Ratios only within one machine: another machine's reference timing says nothing
        // about this device.
        let mut sides: Vec<&(&RunSummary, Vec<ResultRow>)> = rows_of
            .iter()
            .filter(|(r, _)| r.id == b_run.id || machine(r) == machine(b_run))
            .filter(|(_, rows)| rows.iter().any(|r| r.result.device == opts.reference))
            .collect();
        sides.sort_by_key(|(r, _)| (r.id != b_run.id, machine(r) != machine(b_run), std::cmp::Reverse(r.id)));
        for (a_run, a_rows) in sides {
            let sd = analysis::slowdown::slowdown(
                (a_run, &opts.reference, a_rows),
                (b_run, &opts.device, b_rows),
                &point_ratios_only,
            );
            if !sd.functions.is_empty() {
                consulted.insert(a_run.id);
            }
            for f in sd.functions {
                slow.entry(canonical(&f.name)).or_insert(f.median_ratio);
            }
        }
    }
    let mut rows: Vec<AuditRow> = scan
        .functions
        .iter()
        .filter_map(|f| {
            let framework = f.framework?;
            let (st, reasons, run) = match status.get(&f.name) {
                Some((s, r, run)) => (*s, r.clone(), Some(run.clone())),
                None => (None, BTreeMap::new(), None),
            };
            let slowdown = slow.get(&f.name).copied();
            let mut findings = Vec::new();
            match st {
                Some(FunctionStatus::CompleteFailure) => findings.push(Finding::CompleteFailure),
                Some(FunctionStatus::Partial) => findings.push(Finding::Partial),
                Some(FunctionStatus::Success) => {}
                None => findings.push(Finding::Unknown),
            }
            if reasons.contains_key(&Reason::WrongResult) {
                findings.push(Finding::WrongResult);
            }
            if slowdown.is_some_and(|s| s > opts.threshold) {
                findings.push(Finding::Slowdown);
            }
            Some(AuditRow {
                function: f.name.clone(),
                framework,
                calls: f.calls,
                files: f.files,
                status: st,
                reasons,
                slowdown,
                run,
                findings,
            })
        })
        .collect();
    let rank = |r: &AuditRow| match (r.status, r.findings.contains(&Finding::Slowdown)) {
        (Some(FunctionStatus::CompleteFailure), _) => 0,
        (Some(FunctionStatus::Partial), _) => 1,
        (Some(FunctionStatus::Success), true) => 2,
        (Some(FunctionStatus::Success), false) => 3,
        (None, _) => 4,
    };
    rows.sort_by(|a, b| rank(a).cmp(&rank(b)).then(b.calls.cmp(&a.calls)).then(a.function.cmp(&b.function)));
    Ok(AuditReport {
        device: opts.device.clone(),
        reference: opts.reference.clone(),
        threshold: opts.threshold,
        runs: rows_of.iter().filter(|(r, _)| consulted.contains(&r.id)).map(|(r, _)| run_name(r)).collect(),
        files: scan.files,
        rows,
        unresolved: scan
            .unresolved
            .iter()
            .map(|u| UnresolvedUse { name: u.name.clone(), calls: u.calls, files: u.files })
            .collect(),
    })
}

/// Catalogue drafts (docs/catalogue.md format) for the called functions no run measured and
/// `known` (a catalogue's functions by canonical name: those need only a run) lacks: one TOML
/// text per framework, each function with a skipped case to fill in.
pub fn catalogue_drafts(r: &AuditReport, known: &BTreeMap<String, String>) -> BTreeMap<Framework, String> {
    let mut by_fw: BTreeMap<Framework, Vec<&AuditRow>> = BTreeMap::new();
    for row in r.rows.iter().filter(|row| row.status.is_none() && !known.contains_key(&row.function)) {
        by_fw.entry(row.framework).or_default().push(row);
    }
    let mut seen = BTreeSet::new();
    by_fw
        .into_iter()
        .map(|(fw, rows)| {
            let mut s = format!(
                "# Drafted by `mlport audit`: functions the audited code calls that no run has measured on {}.\n\
                 # Fill in each case's inputs and code (docs/catalogue.md), then remove its `skip`.\n\
                 format = 1\nframework = \"{fw}\"\nversion = \"draft\"\n",
                r.device
            );
            for row in rows {
                let name = match row.function.strip_prefix("tensorflow.") {
                    Some(rest) => format!("tf.{rest}"),
                    None => row.function.clone(),
                };
                if !seen.insert(name.clone()) {
                    continue;
                }
                let _ = write!(
                    s,
                    "\n[[function]]\nname = \"{name}\"\nnote = \"called {} times in {} files\"\n\n  [[function.case]]\n  id = \"todo\"\n  skip = \"to be written\"\n  code = '''\ndef build(ctx):\n    return lambda: None\n'''\n",
                    row.calls, row.files
                );
            }
            (fw, s)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(function: &str, status: Option<FunctionStatus>, slowdown: Option<f64>) -> AuditRow {
        AuditRow {
            function: function.into(),
            framework: Framework::Torch,
            calls: 1,
            files: 1,
            status,
            reasons: BTreeMap::new(),
            slowdown,
            run: None,
            findings: if status.is_none() { vec![Finding::Unknown] } else { vec![] },
        }
    }

    fn report(rows: Vec<AuditRow>, unresolved: Vec<UnresolvedUse>) -> AuditReport {
        AuditReport {
            device: "tpu:0".parse().unwrap(),
            reference: "cuda:0".parse().unwrap(),
            threshold: 10.0,
            runs: vec![],
            files: 1,
            rows,
            unresolved,
        }
    }

    #[test]
    fn the_summary_says_when_no_slowdown_is_known_and_what_it_did_not_count() {
        let rows = vec![row("torch.cat", Some(FunctionStatus::Success), None), row("torch.sum", None, None)];
        let u = |name: &str, calls| UnresolvedUse { name: name.into(), calls, files: 1 };
        let r = report(rows.clone(), vec![u("?.to", 7), u("?.size", 2), u("?.sum", 1), u("?.max", 1)]);
        assert_eq!(
            r.summary(),
            "0 of 2 functions this code calls fail on tpu:0 (0 completely, 0 partly); slowdown against cuda:0 unknown \
             (no run timed a function on both on one machine); 1 not measured on tpu:0 by any run (unknown); not \
             counted: 11 calls the scan could not resolve (?.to 7, ?.size 2, ?.sum 1, …)"
        );
        let mut timed = rows;
        timed[0].slowdown = Some(2.0);
        assert!(report(timed, vec![]).summary().contains("; 0 more run >10× slower than on cuda:0;"));
    }
}
