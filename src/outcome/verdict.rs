//! The verdict of a comparison: a result whose outputs disagree with a reference is
//! `wrong_result` (docs/architecture.md: "ran, but the answer disagrees beyond tolerance"). The comparisons
//! themselves are [`crate::agreement`]'s; this decides what they mean for the outcome.

use super::Decision;
use crate::model::{ComparisonRow, ComparisonVerdict, Outcome, Reason};

/// The outcome of a result whose outputs were compared with one reference in `rows`:
/// - when an output's dtype changed ([`ComparisonRow::dtype_changed`]; crate::outcome's dtype
///   module says what is expected), `wrong_result` with reason `dtype_changed` and the message
///   `dtype changed against numpy.argmax in float64 (output 0): <summary>` — the change is
///   named even when the values also disagree (a truncation to int32 is the change's doing);
/// - else when any output disagrees, `wrong_result` (reason `wrong_result`) with the message
///   `disagrees with numpy.cumsum in float64 (output 0): <summary>`;
///
/// with `(and N more outputs)` when several do; `None` when none disagrees (agreeing and
/// incomparable outputs leave the outcome as it is).
pub fn wrong_result(rows: &[ComparisonRow]) -> Option<Decision> {
    if let Some(d) = dtype_changed(rows) {
        return Some(d);
    }
    let bad: Vec<&ComparisonRow> = rows.iter().filter(|r| r.verdict == ComparisonVerdict::Disagree).collect();
    let first = bad.first()?;
    let more = if bad.len() > 1 { format!(" (and {} more outputs)", bad.len() - 1) } else { String::new() };
    let message =
        format!("disagrees with {} (output {}): {}{more}", first.reference, first.output_index, first.summary);
    Some(Decision::with(Outcome::WrongResult, Some(Reason::WrongResult), message))
}

/// `wrong_result`, reason `dtype_changed`, when an output of `rows` changed its dtype.
fn dtype_changed(rows: &[ComparisonRow]) -> Option<Decision> {
    let changed: Vec<&ComparisonRow> =
        rows.iter().filter(|r| r.dtype_changed && r.verdict == ComparisonVerdict::Disagree).collect();
    let first = changed.first()?;
    let more = if changed.len() > 1 { format!(" (and {} more outputs)", changed.len() - 1) } else { String::new() };
    let message =
        format!("dtype changed against {} (output {}): {}{more}", first.reference, first.output_index, first.summary);
    Some(Decision::with(Outcome::WrongResult, Some(Reason::DtypeChanged), message))
}

/// The outcome of a result compared with the same case on its reference target (`rows`), where
/// the float64 reference already judged the outputs in `decided` (agree or disagree): the float64
/// reference says which side is right, so only the other outputs are judged here. When one of
/// them disagrees:
/// - an output whose dtype changed is [`wrong_result`]'s `dtype_changed` on any target (a
///   compiler that changes the dtype eager returns changed it);
/// - on a compiled target (judged against the same device eager) values that differ name no
///   side known to be right: the result stays `pass`, its message `differs from cpu (output 0), side unknown: no float64
///   reference says which is right: <summary>` — never a wrong result blamed on the compiler;
/// - on another device (judged against the reference device, the paper's baseline) it is
///   [`wrong_result`].
///
/// `None` when no undecided output disagrees.
pub fn against_target(rows: &[ComparisonRow], decided: &[u32], compiled: bool) -> Option<Decision> {
    let open: Vec<ComparisonRow> = rows.iter().filter(|r| !decided.contains(&r.output_index)).cloned().collect();
    if !compiled {
        return wrong_result(&open);
    }
    if let Some(d) = dtype_changed(&open) {
        return Some(d);
    }
    let bad: Vec<&ComparisonRow> = open.iter().filter(|r| r.verdict == ComparisonVerdict::Disagree).collect();
    let first = bad.first()?;
    let more = if bad.len() > 1 { format!(" (and {} more outputs)", bad.len() - 1) } else { String::new() };
    let message = format!(
        "differs from {} (output {}), side unknown: no float64 reference says which is right: {}{more}",
        first.reference, first.output_index, first.summary
    );
    Some(Decision::with(Outcome::Pass, None, message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Target;

    fn row(index: u32, verdict: ComparisonVerdict, summary: &str) -> ComparisonRow {
        let (against, rule) = (crate::model::Against::Float64, crate::compare::Rule::AllClose);
        let tol = crate::compare::Tolerance::for_dtype(crate::model::Dtype::Float32);
        let reference = "numpy.cumsum in float64";
        let row = ComparisonRow::incomparable("k", &Target::cpu(), &against, reference, index, rule, tol);
        ComparisonRow { verdict, summary: summary.into(), ..row }
    }

    #[test]
    fn a_disagreeing_output_makes_a_wrong_result() {
        use ComparisonVerdict::{Agree, Disagree};
        let rows = [row(0, Agree, "ok"), row(1, Disagree, "1 of 4 beyond tolerance"), row(2, Disagree, "x")];
        assert_eq!(
            wrong_result(&rows),
            Some(Decision::with(
                Outcome::WrongResult,
                Some(Reason::WrongResult),
                "disagrees with numpy.cumsum in float64 (output 1): 1 of 4 beyond tolerance (and 1 more outputs)"
            ))
        );
        let one = wrong_result(&rows[..2]).unwrap();
        assert_eq!(
            one.message.as_deref(),
            Some("disagrees with numpy.cumsum in float64 (output 1): 1 of 4 beyond tolerance")
        );
    }

    #[test]
    fn against_a_target_the_float64_verdict_wins_and_compilers_are_not_blamed_blind() {
        use ComparisonVerdict::{Agree, Disagree};
        let rows = [row(0, Disagree, "3 of 8 off"), row(1, Agree, "ok")];
        // Output 0 was judged by the float64 reference: its disagreement with eager is not news.
        assert_eq!(against_target(&rows, &[0], true), None);
        assert_eq!(against_target(&rows, &[0], false), None);
        // Not judged by float64: another device is wrong against the reference device ...
        let d = against_target(&rows, &[], false).unwrap();
        assert_eq!((d.outcome, d.reason), (Outcome::WrongResult, Some(Reason::WrongResult)));
        // ... but a compiled result differing from eager names no side.
        let d = against_target(&rows, &[1], true).unwrap();
        assert_eq!((d.outcome, d.reason), (Outcome::Pass, None));
        assert_eq!(
            d.message.as_deref(),
            Some(
                "differs from numpy.cumsum in float64 (output 0), side unknown: no float64 reference says which is \
                 right: 3 of 8 off"
            )
        );
    }

    #[test]
    fn a_changed_dtype_is_its_own_finding_on_every_target() {
        use ComparisonVerdict::{Agree, Disagree};
        let changed = ComparisonRow { dtype_changed: true, ..row(1, Disagree, "all 4 elements within exact equality") };
        let rows = [row(0, Disagree, "1 of 4 off"), changed];
        let expected = Decision::with(
            Outcome::WrongResult,
            Some(Reason::DtypeChanged),
            "dtype changed against numpy.cumsum in float64 (output 1): all 4 elements within exact equality",
        );
        assert_eq!(wrong_result(&rows), Some(expected.clone()), "named before the values' disagreement");
        assert_eq!(against_target(&rows, &[0], true), Some(expected.clone()), "a compiler changing the dtype");
        assert_eq!(against_target(&rows, &[0], false), Some(expected));
        assert_eq!(
            against_target(&rows, &[1], true).map(|d| (d.outcome, d.reason)),
            Some((Outcome::Pass, None)),
            "output 0: side unknown, a pass"
        );
        let agreeing = ComparisonRow { dtype_changed: true, ..row(0, Agree, "") };
        assert_eq!(wrong_result(&[agreeing]), None, "a dtype difference the comparison did not count");
    }

    #[test]
    fn agreeing_and_incomparable_outputs_decide_nothing() {
        assert_eq!(wrong_result(&[]), None);
        let fine = [row(0, ComparisonVerdict::Agree, ""), row(1, ComparisonVerdict::Incomparable, "not saved")];
        assert_eq!(wrong_result(&fine), None);
    }
}
