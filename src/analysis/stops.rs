//! What ended the steady states of a run ([`crate::model::SteadyStop`]): how many cases the
//! timing stopped because it knew enough (precision) and how many it stopped at the budget or
//! the block limit — and the note `run` and `report` print from it.

use crate::model::{CaseResult, SteadyStop};

/// Counts of steady-state endings over a run's results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stops {
    /// Ended by precision (spread or bootstrap interval under `--target-spread`).
    pub precision: usize,
    /// Ended at `--budget-ms`.
    pub budget: usize,
    /// Ended at the block limit.
    pub max_blocks: usize,
}

impl Stops {
    /// Counts the endings recorded in `results` (results without a steady state are not counted).
    pub fn count<'a>(results: impl IntoIterator<Item = &'a CaseResult>) -> Stops {
        let mut s = Stops::default();
        for r in results {
            match r.steady_stop {
                Some(SteadyStop::Precision) => s.precision += 1,
                Some(SteadyStop::Budget) => s.budget += 1,
                Some(SteadyStop::MaxBlocks) => s.max_blocks += 1,
                None => {}
            }
        }
        s
    }

    /// Cases with a recorded ending.
    pub fn total(&self) -> usize {
        self.precision + self.budget + self.max_blocks
    }

    /// `steady states: 812 of 1,204 ended by precision (67%), 392 at the budget, 0 at the block
    /// limit`; `None` when no result recorded one.
    pub fn note(&self) -> Option<String> {
        let n = self.total();
        (n > 0).then(|| {
            format!(
                "steady states: {} of {n} ended by precision ({:.0}%), {} at the budget, {} at the block limit",
                self.precision,
                100.0 * self.precision as f64 / n as f64,
                self.budget,
                self.max_blocks
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Outcome, Target};

    #[test]
    fn endings_are_counted_and_described() {
        let with = |s: Option<SteadyStop>| {
            let mut r = CaseResult::new("k", Target::cpu(), Outcome::Pass);
            r.steady_stop = s;
            r
        };
        let rs = [
            with(Some(SteadyStop::Precision)),
            with(Some(SteadyStop::Precision)),
            with(Some(SteadyStop::Precision)),
            with(Some(SteadyStop::Budget)),
            with(None),
        ];
        let s = Stops::count(&rs);
        assert_eq!(s, Stops { precision: 3, budget: 1, max_blocks: 0 });
        assert_eq!(
            s.note().unwrap(),
            "steady states: 3 of 4 ended by precision (75%), 1 at the budget, 0 at the block limit"
        );
        assert_eq!(Stops::count(&[with(None)]).note(), None);
    }
}
