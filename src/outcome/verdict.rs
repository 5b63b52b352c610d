//! The verdict of a comparison: a result whose outputs disagree with a reference is
//! `wrong_result` (DESIGN.md: "ran, but the answer disagrees beyond tolerance"). The comparisons
//! themselves are [`crate::agreement`]'s; this decides what they mean for the outcome.

use super::Decision;
use crate::model::{ComparisonRow, ComparisonVerdict, Outcome, Reason};

/// The outcome of a result whose outputs were compared with one reference in `rows`: when any
/// output disagrees, `wrong_result` (reason `wrong_result`) with the message `disagrees with
/// numpy.cumsum in float64 (output 0): <summary>` (`(and N more outputs)` when several do);
/// `None` when none disagrees (agreeing and incomparable outputs leave the outcome as it is).
pub fn wrong_result(rows: &[ComparisonRow]) -> Option<Decision> {
    let bad: Vec<&ComparisonRow> = rows.iter().filter(|r| r.verdict == ComparisonVerdict::Disagree).collect();
    let first = bad.first()?;
    let more = if bad.len() > 1 { format!(" (and {} more outputs)", bad.len() - 1) } else { String::new() };
    let message =
        format!("disagrees with {} (output {}): {}{more}", first.reference, first.output_index, first.summary);
    Some(Decision::with(Outcome::WrongResult, Some(Reason::WrongResult), message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Target;

    fn row(index: u32, verdict: ComparisonVerdict, summary: &str) -> ComparisonRow {
        let (against, rule) = (crate::model::Against::Float64, crate::compare::Rule::AllClose);
        let tol = crate::compare::Tolerance::for_dtype("float32");
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
    fn agreeing_and_incomparable_outputs_decide_nothing() {
        assert_eq!(wrong_result(&[]), None);
        let fine = [row(0, ComparisonVerdict::Agree, ""), row(1, ComparisonVerdict::Incomparable, "not saved")];
        assert_eq!(wrong_result(&fine), None);
    }
}
