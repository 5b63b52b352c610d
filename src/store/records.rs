//! Whole runs in and out of the store as [`RunRecord`]s, what bundles carry: read with
//! everything the run's reports need (in one snapshot, so a run still being written reads as
//! it stood at one moment), and written — several in one transaction — keeping each run's uid,
//! state and end. A run whose uid the store already holds is skipped (so importing the same
//! runs twice changes nothing), unless the store's copy is an earlier state of it — not
//! finished, and the record finished or holding more results — which the record then replaces,
//! under the same run id.

use std::collections::HashMap;

use super::agreement::{compare_in, plan_in, record_in};
use super::conn::Conn;
use super::error::{Ctx, OrStore, StoreError};
use super::open::Store;
use super::runs::{insert_run, parse};
use crate::model::{ComparisonRow, RunData, RunRecord, RunState, Target};
use crate::params;

/// What [`Store::import_records`] did with one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Imported {
    /// Written as a new run with this id.
    New(i64),
    /// The store already holds a run with the record's uid (this id), as complete as the
    /// record or more: nothing was written.
    Present(i64),
    /// The store held an earlier state of the run (exported while it was running, or before it
    /// was resumed): not finished, and the record finished or holding more results. The
    /// record replaced it, keeping its run id.
    Replaced {
        /// The run's id (unchanged).
        id: i64,
        /// The replaced copy's state.
        was: RunState,
        /// The replaced copy's number of results.
        results_before: u64,
    },
}

/// Whether a record (`state`, `results`) is a later state of a stored copy of the same run
/// (`stored_state`, `stored_results`): the stored copy is not finished, and the record is
/// finished or holds more results.
pub fn supersedes(state: RunState, results: u64, stored_state: RunState, stored_results: u64) -> bool {
    stored_state != RunState::Finished && (state == RunState::Finished || results > stored_results)
}

impl Store {
    /// The whole run `id` as a [`RunRecord`]: its uid, environment, origin, plan, devices,
    /// results with samples, state, references and comparisons — all read in one
    /// [`Store::snapshot`], so a run another process is still writing reads as it stood at one
    /// moment (its state then, every comparison naming a result the record holds).
    ///
    /// Errors: [`StoreError::UnknownRun`].
    pub fn run_record(&self, id: i64) -> Result<RunRecord, StoreError> {
        self.snapshot(|store| store.run_record_now(id))
    }

    fn run_record_now(&self, id: i64) -> Result<RunRecord, StoreError> {
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
    /// left alone ([`Imported::Present`]) unless the record [`supersedes`] it: then the stored
    /// copy is deleted and the record written under its id ([`Imported::Replaced`]). Either
    /// every new or replacing run is written or none is.
    ///
    /// Errors: [`StoreError::Invalid`] for a record without a uid, a comparison naming a result
    /// the run does not have, and the errors of [`Store::import_runs`]; nothing is written.
    pub fn import_records(&mut self, records: &[RunRecord]) -> Result<Vec<Imported>, StoreError> {
        // A replaced run's cases get new ids.
        self.forget_case_ids();
        self.write(|tx, ctx| {
            let mut done = Vec::with_capacity(records.len());
            for rec in records {
                let uid = rec.run.uid.as_deref().ok_or_else(|| ctx.invalid("a run to import has no uid"))?;
                let present: Option<(i64, RunState, u64)> = tx
                    .query_opt(
                        "SELECT id, state, (SELECT COUNT(*) FROM results WHERE run_id = runs.id) FROM runs \
                         WHERE uid = $1",
                        params![uid],
                        |r| Ok((r.get(0)?, parse(r, 1)?, r.get(2)?)),
                    )
                    .or_store(ctx)?;
                let replaced = match present {
                    Some((id, was, n)) if supersedes(rec.state, rec.run.results.len() as u64, was, n) => {
                        tx.execute("DELETE FROM runs WHERE id = $1", params![id]).or_store(ctx)?;
                        Some(Imported::Replaced { id, was, results_before: n })
                    }
                    Some((id, ..)) => {
                        done.push(Imported::Present(id));
                        continue;
                    }
                    None => None,
                };
                if replaced.is_none() {
                    refuse_a_second_shard(tx, ctx, uid, rec)?;
                }
                let keep_id = match replaced {
                    Some(Imported::Replaced { id, .. }) => Some(id),
                    _ => None,
                };
                let run = insert_run(tx, ctx, &rec.run, keep_id)?;
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
                done.push(replaced.unwrap_or(Imported::New(run)));
            }
            Ok(done)
        })
    }
}

/// [`StoreError::Invalid`] when the store holds another run (another uid) of the same
/// campaign, machine and shard as `rec`: the store keeps one run per shard, and two of them
/// would count the shard's cases twice. Said before the engine's unique index would refuse it.
fn refuse_a_second_shard(tx: &mut Conn, ctx: Ctx<'_>, uid: &str, rec: &RunRecord) -> Result<(), StoreError> {
    let origin = &rec.run.origin;
    let (Some(campaign), Some(shard)) = (&origin.campaign, origin.shard) else { return Ok(()) };
    let other: Option<(i64, String)> = tx
        .query_opt(
            "SELECT id, uid FROM runs WHERE campaign = $1 AND COALESCE(machine, '') = $2 AND shard_index = $3 \
             AND shard_count = $4 AND uid <> $5",
            params![campaign, origin.machine.clone().unwrap_or_default(), shard.index, shard.count, uid],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .or_store(ctx)?;
    match other {
        None => Ok(()),
        Some((id, other_uid)) => Err(ctx.invalid(format!(
            "run {uid} is shard {shard} of campaign `{campaign}` on {}, which this store already holds as run {id} \
             (another run, {other_uid}): a store keeps one run per campaign, machine and shard. Were two machines \
             given the same --machine name (or none)? Import it into another store, or rerun it with its own \
             --machine",
            origin.machine.as_deref().map_or("no --machine".to_string(), |m| format!("machine `{m}`"))
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CaseResult, CaseRow, CaseSpec, Dtype, Framework, FunctionRow, Outcome, RunInfo, Spec};

    fn case(name: &str) -> CaseRow {
        CaseRow {
            key: format!("numpy/numpy.{name}/c/float32"),
            framework: Framework::Numpy,
            function: format!("numpy.{name}"),
            case_id: "c".into(),
            dtype: Some(Dtype::Float32),
            seed: 0,
            spec: Spec::from(CaseSpec::new(&format!("numpy.{name}"), "c")),
        }
    }

    /// A store with one run of two cases (`numpy.exp`, `numpy.log`) and a result for the first.
    fn store_with_a_run(path: &std::path::Path) -> (Store, i64, [CaseRow; 2]) {
        let mut store = Store::open(path).unwrap();
        let cases = [case("exp"), case("log")];
        let functions =
            [FunctionRow::new(Framework::Numpy, "numpy.exp"), FunctionRow::new(Framework::Numpy, "numpy.log")];
        let run =
            store.create_run(&RunInfo::blank("test", Target::cpu()), &Default::default(), &functions, &cases).unwrap();
        store.record_result(run, &CaseResult::new(&cases[0].key, Target::cpu(), Outcome::Pass)).unwrap();
        (store, run, cases)
    }

    #[test]
    fn a_snapshot_does_not_see_what_another_process_commits_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let (reader, run, cases) = store_with_a_run(&path);
        let mut writer = Store::open(&path).unwrap();
        let seen = reader
            .snapshot(|s| {
                let before = s.results(run)?.len();
                writer.record_result(run, &CaseResult::new(&cases[1].key, Target::cpu(), Outcome::Pass))?;
                writer.finish_run(run, RunState::Finished)?;
                Ok((before, s.results(run)?.len(), s.run(run)?.state))
            })
            .unwrap();
        assert_eq!(seen, (1, 1, RunState::Running), "inside the snapshot: the moment it began");
        assert_eq!((reader.results(run).unwrap().len(), reader.run(run).unwrap().state), (2, RunState::Finished));
    }

    #[test]
    fn a_later_state_of_a_run_replaces_an_unfinished_copy_under_its_id() {
        let dir = tempfile::tempdir().unwrap();
        let (source, run, cases) = store_with_a_run(&dir.path().join("source.db"));
        let part = source.run_record(run).unwrap();
        let mut source = source;
        source.record_result(run, &CaseResult::new(&cases[1].key, Target::cpu(), Outcome::Pass)).unwrap();
        source.finish_run(run, RunState::Finished).unwrap();
        let whole = source.run_record(run).unwrap();

        let mut copy = Store::open(&dir.path().join("copy.db")).unwrap();
        let import = |copy: &mut Store, r: &RunRecord| copy.import_records(std::slice::from_ref(r)).unwrap()[0];
        let Imported::New(id) = import(&mut copy, &part) else { panic!("the first import writes the run") };
        assert_eq!(import(&mut copy, &part), Imported::Present(id), "the same state again changes nothing");
        assert_eq!(import(&mut copy, &whole), Imported::Replaced { id, was: RunState::Running, results_before: 1 });
        assert_eq!(copy.run_record(id).unwrap(), whole, "the finished run, field for field, under the same id");
        assert_eq!(copy.runs().unwrap().len(), 1);
        // An earlier state never replaces a later one.
        assert_eq!(import(&mut copy, &part), Imported::Present(id));
        assert_eq!(copy.run_record(id).unwrap(), whole);
    }

    #[test]
    fn a_second_run_of_one_shard_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let origin = crate::model::RunOrigin {
            machine: Some("pool".into()),
            campaign: Some("night".into()),
            shard: Some(crate::model::Shard::new(0, 2).unwrap()),
            ..Default::default()
        };
        let functions = [FunctionRow::new(Framework::Numpy, "numpy.exp")];
        let info = RunInfo::blank("test", Target::cpu());
        let mut stores = ["a.db", "b.db"].map(|f| Store::open(&dir.path().join(f)).unwrap());
        let ids = stores.each_mut().map(|s| s.create_run(&info, &origin, &functions, &[case("exp")]).unwrap());
        let theirs = stores[1].run_record(ids[1]).unwrap();
        let e = stores[0].import_records(std::slice::from_ref(&theirs)).unwrap_err().to_string();
        assert!(
            e.contains("is shard 0/2 of campaign `night` on machine `pool`, which this store already holds as run 1")
                && e.contains("the same --machine name"),
            "{e}"
        );
        assert_eq!(stores[0].runs().unwrap().len(), 1, "nothing imported");
    }

    #[test]
    fn only_an_unfinished_copy_is_superseded_and_only_by_more() {
        use RunState::*;
        assert!(supersedes(Finished, 5, Running, 5));
        assert!(supersedes(Running, 6, Running, 5));
        assert!(supersedes(Interrupted, 6, Incomplete, 5));
        assert!(!supersedes(Running, 5, Running, 5));
        assert!(!supersedes(Running, 4, Running, 5));
        assert!(!supersedes(Finished, 9, Finished, 5), "a finished run is never replaced");
    }
}
