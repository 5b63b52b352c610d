//! What the functions of [`crate::outcome`] return: an outcome with its reason and message.

use crate::model::{CaseResult, Outcome, Reason, Target};

/// A decided outcome: what a result's `outcome`, `reason` and `message` become.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// How the case ended.
    pub outcome: Outcome,
    /// Why, for `fail`, `timeout`, `crash` and `wrong_result`; `None` otherwise.
    pub reason: Option<Reason>,
    /// The message stored with the result: the exception's, the skip's why, or one written here.
    pub message: Option<String>,
}

impl Decision {
    /// An outcome without reason or message (a pass).
    pub fn of(outcome: Outcome) -> Decision {
        Decision { outcome, reason: None, message: None }
    }

    /// `outcome` for `reason`, with `message`.
    pub fn with(outcome: Outcome, reason: Option<Reason>, message: impl Into<String>) -> Decision {
        Decision { outcome, reason, message: Some(message.into()) }
    }

    /// Writes the decision into `result`: its outcome, reason and message are replaced.
    pub fn apply(self, result: &mut CaseResult) {
        result.outcome = self.outcome;
        result.reason = self.reason;
        result.message = self.message;
    }

    /// A result of the case `case_key` on `device` with this decision and nothing else set.
    pub fn into_result(self, case_key: &str, device: Target) -> CaseResult {
        let mut r = CaseResult::new(case_key, device, self.outcome);
        self.apply(&mut r);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_replaces_outcome_reason_and_message() {
        let mut r = CaseResult::new("k", Target::cpu(), Outcome::Pass);
        r.message = Some("old".into());
        r.samples_ns = vec![3];
        Decision::with(Outcome::WrongResult, Some(Reason::WrongResult), "new").apply(&mut r);
        assert_eq!(
            (r.outcome, r.reason, r.message.as_deref(), r.samples_ns.as_slice()),
            (Outcome::WrongResult, Some(Reason::WrongResult), Some("new"), &[3][..])
        );
        let fresh = Decision::of(Outcome::Pass).into_result("k", Target::cpu());
        assert_eq!(fresh, CaseResult::new("k", Target::cpu(), Outcome::Pass));
    }
}
