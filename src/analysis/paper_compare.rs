//! The paper, then and now: the statuses "The Grand Illusion" (Mince et al., arXiv 2309.07181)
//! recorded for PyTorch functions on TPU v3 in 2023 (the imported run `paper/torch/tpu_vm/tpu`,
//! target `tpu:0`), beside today's statuses of the same functions on PyTorch/XLA's `xla:0` (the
//! same XLA lowering TPUs use, on the host). Functions are matched by their catalogue name.
//! Each function's counting is [`super::portability`]'s (device-attributable by each run's rule).

use crate::model::{FunctionStatus, Reason, Target};

use super::portability::{FunctionSummary, TargetSummary};

/// The imported run holding the paper's PyTorch TPU v3 results (`mlport import paper`).
pub const PAPER_TPU_V3_LABEL: &str = "paper/torch/tpu_vm/tpu";

/// The paper's device in that run.
pub fn paper_device() -> Target {
    Target::tpu0()
}

/// How a function's status moved from the paper's TPU v3 to today's `xla:0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Change {
    /// Failed (partly or completely) in 2023 and still fails today, not only by falling back.
    StillFails,
    /// Failed in 2023; today it runs and falls back to the host for some operator
    /// (`silent_fallback`), with no other failure.
    NowFallsBack,
    /// Failed in 2023; every counted case passes today.
    Fixed,
    /// Passed in 2023, fails today.
    NewlyFails,
    /// Passed in 2023 and today.
    StillPasses,
    /// Not measured on one side: absent from today's run (not in the catalogue, or no case
    /// counted), or not counted in the paper's run.
    NotCompared,
}

impl Change {
    /// `still_fails`, `now_falls_back`, ...: as shown and in JSON.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One side of a function's comparison.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Side {
    /// The paper's status; `None` when no case was counted.
    pub status: Option<FunctionStatus>,
    /// Counted failing cases by reason, wrong results included as `wrong_result`.
    pub reasons: Vec<(Reason, usize)>,
}

impl Side {
    fn of(f: Option<&FunctionSummary>) -> Option<Side> {
        let f = f?;
        Some(Side { status: f.status, reasons: f.counted_reasons(false).into_iter().collect() })
    }

    fn fails(&self) -> Option<bool> {
        self.status.map(|s| s != FunctionStatus::Success)
    }

    /// Every counted failure is a silent fallback.
    fn only_falls_back(&self) -> bool {
        !self.reasons.is_empty() && self.reasons.iter().all(|(r, _)| *r == Reason::SilentFallback)
    }
}

/// One function: the paper's status on TPU v3 and today's on `xla:0`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Row {
    /// Catalogue name (`torch.argsort`).
    pub function: String,
    /// In the paper's run; `None` when the function is only in today's.
    pub then: Option<Side>,
    /// In today's run; `None` when it has no result there.
    pub now: Option<Side>,
    pub change: Change,
}

/// The comparison: every function of the paper's run, in its order, then today's functions
/// the paper did not test are left out (they have nothing to compare with).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PaperCompare {
    /// The paper's run id and today's.
    pub paper_run: i64,
    pub today_run: i64,
    /// Today's device (`xla:0`, or `tpu:0` on a TPU VM).
    pub today_device: Target,
    /// Versions today's side ran with (`torch 2.9.0, torch_xla 2.9.0`), as recorded.
    pub today_detail: String,
    pub rows: Vec<Row>,
    /// Functions that failed on TPU v3 (partial or complete): 29 in the paper's data.
    pub failed_then: usize,
    /// Of those, how many are in each change (still fails, falls back, fixed, not compared).
    pub still_fails: usize,
    pub now_falls_back: usize,
    pub fixed: usize,
    pub not_compared: usize,
    /// Passed then, fail now.
    pub newly_fails: usize,
}

/// Compares the paper's TPU v3 summary `then` with today's `now` (torch on `xla:0`).
pub fn build(
    paper_run: i64,
    then: &TargetSummary,
    today_run: i64,
    now: &TargetSummary,
    today_detail: &str,
) -> PaperCompare {
    let mut rows = Vec::new();
    for f in &then.functions {
        let t = Side::of(Some(f)).filter(|s| s.status.is_some());
        let n = Side::of(now.functions.iter().find(|g| g.name == f.name)).filter(|s| s.status.is_some());
        let change = match (t.as_ref().and_then(Side::fails), &n) {
            (Some(true), Some(n)) if n.fails() == Some(false) => Change::Fixed,
            (Some(true), Some(n)) if n.only_falls_back() => Change::NowFallsBack,
            (Some(true), Some(_)) => Change::StillFails,
            (Some(false), Some(n)) if n.fails() == Some(true) => Change::NewlyFails,
            (Some(false), Some(_)) => Change::StillPasses,
            _ => Change::NotCompared,
        };
        rows.push(Row { function: f.name.clone(), then: t, now: n, change });
    }
    let failed_then: Vec<&Row> = rows.iter().filter(|r| r.then.as_ref().and_then(Side::fails) == Some(true)).collect();
    let count = |c: Change| failed_then.iter().filter(|r| r.change == c).count();
    PaperCompare {
        paper_run,
        today_run,
        today_device: now.device.clone(),
        today_detail: today_detail.to_string(),
        failed_then: failed_then.len(),
        still_fails: count(Change::StillFails),
        now_falls_back: count(Change::NowFallsBack),
        fixed: count(Change::Fixed),
        not_compared: count(Change::NotCompared),
        newly_fails: rows.iter().filter(|r| r.change == Change::NewlyFails).count(),
        rows,
    }
}

/// Test doubles of portability's summaries, for this module's and the renderer's tests.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::model::Framework;
    use std::collections::BTreeMap;

    /// A test double: a function summary with a status and reasons, as portability builds them.
    pub(crate) fn fake_function(
        name: &str,
        status: Option<FunctionStatus>,
        reasons: &[(Reason, usize)],
    ) -> FunctionSummary {
        let count = |pick: &dyn Fn(Reason) -> bool| reasons.iter().filter(|(r, _)| pick(*r)).map(|r| r.1).sum();
        let failures = reasons
            .iter()
            .flat_map(|&(reason, n)| std::iter::repeat_n(reason, n))
            .map(|reason| crate::analysis::CaseFailure {
                result_id: 0,
                case_id: "c".into(),
                dtype: None,
                reason,
                everywhere: false,
                not_attributable: false,
                message: String::new(),
                full_message: String::new(),
            })
            .collect();
        let apart = |r: Reason| matches!(r, Reason::WrongResult | Reason::DtypeChanged);
        FunctionSummary {
            name: name.into(),
            status,
            passed: 1,
            unchecked: 0,
            failed: count(&|r| !apart(r)),
            wrong: count(&|r| r == Reason::WrongResult),
            wrong_everywhere: 0,
            dtype_changed: count(&|r| r == Reason::DtypeChanged),
            counted_failures: count(&|_| true),
            not_attributable: 0,
            reasons: reasons.iter().copied().filter(|(r, _)| !apart(*r)).collect::<BTreeMap<_, _>>(),
            failures,
        }
    }

    /// A test double: a target summary holding `functions`.
    pub(crate) fn fake_target(device: &str, functions: Vec<FunctionSummary>) -> TargetSummary {
        TargetSummary {
            framework: Framework::Torch,
            device: device.parse().unwrap(),
            functions_run: functions.len(),
            success: 0,
            partial: 0,
            complete_failure: 0,
            reasons: BTreeMap::new(),
            wrong_result_functions: 0,
            wrong_everywhere_functions: 0,
            cases_passed: 0,
            cases_unchecked: 0,
            cases_failed: 0,
            cases_wrong: 0,
            cases_wrong_everywhere: 0,
            cases_dtype_changed: 0,
            cases_skipped: 0,
            cases_not_attributable: 0,
            median_latency_ns: None,
            functions,
        }
    }

    pub(crate) fn example() -> PaperCompare {
        use FunctionStatus::*;
        let then = fake_target(
            "tpu:0",
            vec![
                fake_function("torch.argsort", Some(Partial), &[(Reason::NotImplemented, 2)]),
                fake_function("torch.nonzero", Some(CompleteFailure), &[(Reason::NotImplemented, 1)]),
                fake_function("torch.cumsum", Some(Partial), &[(Reason::DtypeChanged, 1)]),
                fake_function("torch.add", Some(Success), &[]),
                fake_function("torch.histc", Some(CompleteFailure), &[(Reason::Other, 1)]),
                fake_function("torch.sum", Some(Success), &[]),
            ],
        );
        let now = fake_target(
            "xla:0",
            vec![
                fake_function("torch.argsort", Some(Success), &[]),
                fake_function("torch.nonzero", Some(CompleteFailure), &[(Reason::SilentFallback, 1)]),
                fake_function("torch.cumsum", Some(Partial), &[(Reason::WrongResult, 1), (Reason::SilentFallback, 1)]),
                fake_function("torch.add", Some(Partial), &[(Reason::DtypeUnsupported, 1)]),
                fake_function("torch.sum", Some(Success), &[]),
            ],
        );
        build(4, &then, 1, &now, "torch 2.9.0+cu128, torch_xla 2.9.0")
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::example;
    use super::*;

    #[test]
    fn each_function_moves_by_the_rule() {
        let c = example();
        let changes: Vec<(&str, Change)> = c.rows.iter().map(|r| (r.function.as_str(), r.change)).collect();
        assert_eq!(
            changes,
            [
                ("torch.argsort", Change::Fixed),
                ("torch.nonzero", Change::NowFallsBack),
                // A wrong result beside the fallback: still a failure of its own.
                ("torch.cumsum", Change::StillFails),
                ("torch.add", Change::NewlyFails),
                ("torch.histc", Change::NotCompared),
                ("torch.sum", Change::StillPasses),
            ]
        );
        assert_eq!(
            (c.failed_then, c.still_fails, c.now_falls_back, c.fixed, c.not_compared, c.newly_fails),
            (4, 1, 1, 1, 1, 1)
        );
    }
}
