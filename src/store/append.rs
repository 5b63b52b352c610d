//! Growing a run as its results arrive: `mlport pytest` learns a suite's tests one by one from
//! its plugin's stream, so each test's function, case and result are written together, in one
//! transaction committed before the call returns — a crash of the suite (or of mlport) loses at
//! most the test in flight.

use super::error::{OrStore, StoreError};
use super::open::{Store, ensure_run};
use super::runs::{case_values, insert_result, upsert_device};
use crate::model::RunData;
use crate::params;

impl Store {
    /// Adds `piece`'s functions and cases to run `run` (those it already has are kept as they
    /// are; new cases are ordered after the run's others), records its devices (updating a known
    /// one) and writes its results (replacing an earlier result of the same case and device), all
    /// in one transaction. `piece`'s info and origin are ignored.
    ///
    /// Errors: [`StoreError::UnknownRun`]; [`StoreError::Invalid`] for a result naming a case
    /// neither the run nor `piece` plans, or a case whose function is not planned.
    pub fn append_to_run(&mut self, run: i64, piece: &RunData) -> Result<(), StoreError> {
        self.forget_case_ids();
        let out = self.write(|tx, ctx| {
            ensure_run(tx, ctx, run)?;
            for f in &piece.functions {
                tx.execute(
                    "INSERT INTO functions (run_id, framework, name, paper, decile, top20, op, moved, note) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (run_id, framework, name) DO NOTHING",
                    params![run, f.framework.as_str(), f.name, f.paper, f.decile, f.top20, f.op, f.moved, f.note],
                )
                .or_store(ctx)?;
            }
            for c in &piece.cases {
                let function: Option<i64> = tx
                    .query_opt(
                        "SELECT id FROM functions WHERE run_id = $1 AND framework = $2 AND name = $3",
                        params![run, c.framework.as_str(), c.function],
                        |r| r.get(0),
                    )
                    .or_store(ctx)?;
                let function = function.ok_or_else(|| {
                    ctx.invalid(format!(
                        "case `{}` names function {} ({}), which is not planned",
                        c.key, c.function, c.framework
                    ))
                })?;
                let ordinal: i64 = tx
                    .query_value("SELECT COALESCE(MAX(ordinal) + 1, 0) FROM cases WHERE run_id = $1", params![run])
                    .or_store(ctx)?;
                tx.execute(
                    "INSERT INTO cases (run_id, function_id, key, case_id, dtype, seed, spec, ordinal) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (run_id, key) DO NOTHING",
                    &case_values(ctx, run, function, c, ordinal)?,
                )
                .or_store(ctx)?;
            }
            for d in &piece.devices {
                upsert_device(tx, ctx, run, d)?;
            }
            for r in &piece.results {
                let case: Option<i64> = tx
                    .query_opt("SELECT id FROM cases WHERE run_id = $1 AND key = $2", params![run, r.case_key], |row| {
                        row.get(0)
                    })
                    .or_store(ctx)?;
                let case = case.ok_or_else(|| {
                    ctx.invalid(format!("a result names case `{}`, which the run does not plan", r.case_key))
                })?;
                insert_result(tx, ctx, run, case, r)?;
            }
            Ok(())
        });
        self.forget_case_ids();
        out
    }

    /// Replaces run `run`'s notes (printed with its reports). Errors: [`StoreError::UnknownRun`].
    pub fn set_run_notes(&mut self, run: i64, notes: &[String]) -> Result<(), StoreError> {
        self.write(|tx, ctx| {
            let json = ctx.json(&notes, "run notes")?;
            if tx.execute("UPDATE runs SET notes = $1 WHERE id = $2", params![json, run]).or_store(ctx)? == 0 {
                return Err(ctx.unknown_run(run));
            }
            Ok(())
        })
    }
}
