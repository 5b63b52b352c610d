//! Closing a run once the runner has returned: its state (`finished`, `incomplete` with cases
//! still pending, `interrupted`) and the end-of-run summary, read from the store once and
//! reported as [`Event::RunEnded`] for the terminal view to say.

use std::time::Duration;

use anyhow::Result;

use super::resume::pending;
use crate::analysis::coverage::missing_references_note;
use crate::model::{Outcome, Reason, RunSource, RunState};
use crate::runner::{Contention, Ending, Event, EventSink, RunEnd, Tally};
use crate::store::{Location, Store, StoreError};

/// How a closed run went, for the command's exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closed {
    /// Ctrl-C or SIGTERM: resumable.
    Interrupted,
    /// mlport's own file failed: resumable once the cause is gone.
    Stopped,
    /// Finished (or incomplete with cases pending), with this many results stored.
    Finished {
        /// Results the run holds.
        results: u64,
    },
}

/// Records how run `run_id` ended (`ending`, after `elapsed` of execution) and reports its
/// summary to `sink` ([`Event::RunEnded`]).
///
/// Errors: the store's (for a run stopped by its own I/O, a store that cannot be updated is
/// said in the summary instead).
pub fn close(
    store: &mut Store,
    run_id: i64,
    ending: Ending,
    elapsed: Duration,
    sink: &mut dyn EventSink,
) -> Result<Closed> {
    let (end, closed) = match ending {
        Ending::Interrupted => {
            store.finish_run(run_id, RunState::Interrupted)?;
            let recorded = store.run(run_id)?.results;
            let left = pending(store, run_id)?.results as u64;
            (RunEnd::Interrupted { recorded, pending: left }, Closed::Interrupted)
        }
        Ending::OwnIoFailed { case_key, error } => {
            // mlport's own file, not the function: nothing was recorded for the case, which stays
            // pending; the run is `interrupted`, never `finished`, until `--resume` completes it.
            let recorded = store
                .finish_run(run_id, RunState::Interrupted)
                .map_err(anyhow::Error::from)
                .and_then(|()| Ok((store.run(run_id)?.results, pending(store, run_id)?.results as u64)))
                .map_err(|e| e.to_string());
            (RunEnd::Stopped { case_key, error, recorded }, Closed::Stopped)
        }
        Ending::Finished => {
            let tally = tally(store, run_id)?;
            store.finish_run(run_id, if tally.pending == 0 { RunState::Finished } else { RunState::Incomplete })?;
            let results = tally.outcomes.values().sum::<u64>() + tally.dtype_changed;
            (RunEnd::Finished(tally), Closed::Finished { results })
        }
    };
    sink.event(&Event::RunEnded { run_id, elapsed, end: &end });
    Ok(closed)
}

/// The finished run's [`Tally`]: its results by outcome after the closing comparison pass, the
/// passes nothing could check, the references that could not be computed, CPU contention
/// and the cases still pending.
///
/// Errors: the store's.
fn tally(store: &Store, run_id: i64) -> Result<Tally> {
    let left = pending(store, run_id)?.cases;
    let results = store.results(run_id)?;
    let mut tally = Tally { pending: left, ..Tally::default() };
    for r in &results {
        if r.result.reason == Some(Reason::DtypeChanged) {
            tally.dtype_changed += 1;
        } else {
            *tally.outcomes.entry(r.result.outcome).or_default() += 1;
        }
    }
    tally.unchecked = results.iter().filter(|r| r.unchecked(RunSource::Live)).count();
    let references = store.references(run_id)?;
    tally.missing_references = missing_references_note(&references);
    // A crashed or timed-out reference may go through on a fresh worker; a failed one will not.
    tally.references_retryable =
        references.iter().any(|r| matches!(r.outcome, Some(Outcome::Crash | Outcome::Timeout)));
    let limit = crate::stats::StatsConfig::default().max_runqueue_wait;
    let shares: Vec<f64> = results.iter().filter_map(|r| r.result.runqueue_wait_share()).collect();
    let busy: Vec<f64> = shares.iter().copied().filter(|w| *w > limit).collect();
    if !busy.is_empty() {
        let median = crate::stats::median(&busy);
        tally.contention = Some(Contention { busy: busy.len(), timed: shares.len(), limit, median });
    }
    Ok(tally)
}

/// `e`, and when it says the store `db` stayed unreachable ([`StoreError::is_unreachable`]: the
/// PostgreSQL server went away longer than the store reconnects), what that means for run
/// `run_id` and how to finish it (`resume_hint`; a campaign's shard can also be run again).
pub fn store_gone(e: anyhow::Error, db: &Location, run_id: i64, campaign: Option<String>) -> anyhow::Error {
    let gone = e.chain().any(|c| c.downcast_ref::<StoreError>().is_some_and(StoreError::is_unreachable));
    if !gone {
        return e;
    }
    let shard = match campaign {
        Some(c) => format!(" (or run the same shard of campaign `{c}` again: it continues this run)"),
        None => String::new(),
    };
    e.context(format!(
        "{db}: run {run_id} stopped: the store is unreachable. Every case it finished before is stored; once the server \
         is back, finish the run with `mlport run --resume {run_id} --db {db}`{shard}"
    ))
}
