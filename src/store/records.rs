//! Whole runs in and out of the store as [`RunRecord`]s, what bundles carry: read with
//! everything the run's reports need, and written — several in one transaction — keeping
//! each run's uid, state and end, and skipping a run whose uid the store already holds (so
//! importing the same runs twice changes nothing).

use std::collections::HashMap;

use super::agreement::{compare_in, plan_in, record_in};
use super::error::{OrStore, StoreError};
use super::open::Store;
use super::runs::{insert_run, parse};
use crate::model::{ComparisonRow, RunData, RunRecord, Target};
use crate::params;

/// What [`Store::import_records`] did with one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Imported {
    /// Written as a new run with this id.
    New(i64),
    /// The store already holds a run with the record's uid (this id): nothing was written.
    Present(i64),
}

impl Store {
    /// The whole run `id` as a [`RunRecord`]: its uid, environment, origin, plan, devices,
    /// results with samples, state, references and comparisons.
    ///
    /// Errors: [`StoreError::UnknownRun`].
    pub fn run_record(&self, id: i64) -> Result<RunRecord, StoreError> {
        let summary = self.run(id)?;
        Ok(RunRecord {
            run: RunData {
                uid: Some(summary.uid.clone()),
                info: summary.info,
                origin: summary.origin,
                functions: self.functions(id)?,
                cases: self.cases(id)?,
                devices: self.devices(id)?,
                results: self.results(id)?.into_iter().map(|r| r.result).collect(),
            },
            state: summary.state,
            finished_at: summary.finished_at,
            references: self.references(id)?,
            comparisons: self.comparisons(id)?,
        })
    }

    /// Writes `records` in ONE transaction, each as a new run with its own uid, state and end,
    /// references and comparisons — except a record whose uid the store already holds, which is
    /// left alone ([`Imported::Present`]). Either every new run is written or none is.
    ///
    /// Errors: [`StoreError::Invalid`] for a record without a uid, a comparison naming a result
    /// the run does not have, and the errors of [`Store::import_runs`]; nothing is written.
    pub fn import_records(&mut self, records: &[RunRecord]) -> Result<Vec<Imported>, StoreError> {
        self.write(|tx, ctx| {
            let mut done = Vec::with_capacity(records.len());
            for rec in records {
                let uid = rec.run.uid.as_deref().ok_or_else(|| ctx.invalid("a run to import has no uid"))?;
                let present: Option<i64> =
                    tx.query_opt("SELECT id FROM runs WHERE uid = $1", params![uid], |r| r.get(0)).or_store(ctx)?;
                if let Some(id) = present {
                    done.push(Imported::Present(id));
                    continue;
                }
                let run = insert_run(tx, ctx, &rec.run)?;
                plan_in(tx, ctx, run, &rec.references)?;
                for r in &rec.references {
                    if let Some(outcome) = r.outcome {
                        record_in(tx, ctx, run, &r.key, outcome, r.message.as_deref(), &r.outputs)?;
                    }
                }
                let results: Vec<((String, Target), i64)> = tx
                    .query(
                        "SELECT r.id, c.key, r.device FROM results r JOIN cases c ON c.id = r.case_id \
                         WHERE r.run_id = $1",
                        params![run],
                        |row| Ok(((row.get(1)?, parse(row, 2)?), row.get(0)?)),
                    )
                    .or_store(ctx)?;
                let results: HashMap<(String, Target), i64> = results.into_iter().collect();
                let mut by_result: HashMap<i64, Vec<ComparisonRow>> = HashMap::new();
                for c in &rec.comparisons {
                    let id = results.get(&(c.case_key.clone(), c.device.clone())).ok_or_else(|| {
                        ctx.invalid(format!(
                            "run {uid}: a comparison names the result of `{}` on {}, which it does not have",
                            c.case_key, c.device
                        ))
                    })?;
                    by_result.entry(*id).or_default().push(c.clone());
                }
                for (result, rows) in &by_result {
                    compare_in(tx, ctx, *result, rows)?;
                }
                tx.execute(
                    "UPDATE runs SET state = $1, finished_at = $2 WHERE id = $3",
                    params![rec.state.as_str(), rec.finished_at, run],
                )
                .or_store(ctx)?;
                done.push(Imported::New(run));
            }
            Ok(done)
        })
    }
}
