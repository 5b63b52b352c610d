//! The store's runs: each run's planned functions and cases, the devices each framework saw,
//! and one result (with its latency samples) per (case, target). Every write is its own
//! transaction, committed before the call returns, so an interrupted run loses at most the
//! case in flight; a write repeated after a lost PostgreSQL connection replaces what it wrote
//! (upserts on the row's unique key), never doubles it.
//!
//! The SQL is written once, with `$N` parameters, in the subset SQLite and PostgreSQL both
//! accept (`INSERT … RETURNING`, `ON CONFLICT … DO UPDATE`); [`super::conn`] runs it on either.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use serde::de::DeserializeOwned;

use super::conn::Conn;
use super::error::{Ctx, OrStore, StoreError};
use super::open::{Store, ensure_run, now};
use super::schema::{self, Dialect};
use super::value::{ColumnError, Row, Value};
use crate::model::{
    CaseResult, CaseRow, DeviceInfo, Dtype, Framework, FunctionRow, ResultRow, RunData, RunInfo, RunOrigin, RunState,
    RunSummary, Shard, Target,
};
use crate::params;

impl Store {
    /// Records a new run with its origin (live runs: [`RunOrigin::default`], or a campaign and
    /// shard), planned functions and cases (cases keep their order) in one transaction, with a
    /// new [`schema::new_run_uid`]; the run starts in state `running`. Returns the run id.
    ///
    /// Safe to repeat after a lost PostgreSQL connection: when the transaction did commit before
    /// the connection went, the repeat finds the run by its uid instead of adding a second.
    ///
    /// Errors: [`StoreError::Invalid`] for a function or case key listed twice or a
    /// case whose function is not among `functions`; the engine's error (a unique constraint)
    /// when the campaign already has a run for this machine and shard.
    pub fn create_run(
        &mut self,
        info: &RunInfo,
        origin: &RunOrigin,
        functions: &[FunctionRow],
        cases: &[CaseRow],
    ) -> Result<i64, StoreError> {
        self.create_run_with(info, origin, functions, cases, |_, _, _| Ok(()))
    }

    /// [`Store::create_run`], with `more` writing the rest of the plan (the run's float64
    /// references: [`Store::create_planned_run`]) in the same transaction, given the new run id.
    pub(super) fn create_run_with(
        &mut self,
        info: &RunInfo,
        origin: &RunOrigin,
        functions: &[FunctionRow],
        cases: &[CaseRow],
        more: impl Fn(&mut Conn, Ctx<'_>, i64) -> Result<(), StoreError>,
    ) -> Result<i64, StoreError> {
        let uid = schema::new_run_uid();
        self.write(|tx, ctx| {
            let done: Option<i64> =
                tx.query_opt("SELECT id FROM runs WHERE uid = $1", params![uid], |r| r.get(0)).or_store(ctx)?;
            match done {
                Some(run) => Ok(run),
                None => {
                    let run = insert_plan(tx, ctx, RunKey::new(Some(&uid)), info, origin, functions, cases)?.0;
                    more(tx, ctx, run)?;
                    Ok(run)
                }
            }
        })
    }

    /// Writes whole runs (environment, origin, functions, cases, devices, results with
    /// their samples) in ONE transaction: either every run is stored, finished, or nothing
    /// is. Returns the new run ids in the order given.
    ///
    /// Errors: those of [`Store::create_run`], and [`StoreError::Invalid`] for a result
    /// naming a case its run does not plan, two results for one (case, device), or a
    /// duration beyond `i64` ns. Nothing is written on any error.
    pub fn import_runs(&mut self, runs: &[RunData]) -> Result<Vec<i64>, StoreError> {
        self.write(|tx, ctx| {
            let mut ids = Vec::with_capacity(runs.len());
            for data in runs {
                let run = insert_run(tx, ctx, data, None)?;
                tx.execute(
                    "UPDATE runs SET state = $1, finished_at = $2 WHERE id = $3",
                    params![RunState::Finished.as_str(), now(), run],
                )
                .or_store(ctx)?;
                ids.push(run);
            }
            Ok(ids)
        })
    }

    /// Replaces a run's environment description (framework versions become known only
    /// after the workers start). Errors: [`StoreError::UnknownRun`].
    pub fn update_run_info(&mut self, run: i64, info: &RunInfo) -> Result<(), StoreError> {
        self.write(|tx, ctx| {
            let mut values = run_values(ctx, info)?;
            values.push(Value::Int(run));
            let changed = tx
                .execute(
                    "UPDATE runs SET started_at = $1, host = $2, os = $3, cpu_model = $4, cpu_cores = $5, \
                     accelerators = $6, python_version = $7, python_executable = $8, frameworks = $9, \
                     catalogue_version = $10, command_line = $11, seed = $12, reference_device = $13, \
                     mlport_version = $14 WHERE id = $15",
                    &values,
                )
                .or_store(ctx)?;
            if changed == 0 {
                return Err(ctx.unknown_run(run));
            }
            set_switches(tx, ctx, run, info)
        })
    }

    /// Records the devices each framework saw; a (framework, device) already recorded
    /// for the run is updated. Errors: [`StoreError::UnknownRun`].
    pub fn record_devices(&mut self, run: i64, devices: &[DeviceInfo]) -> Result<(), StoreError> {
        self.write(|tx, ctx| {
            ensure_run(tx, ctx, run)?;
            devices.iter().try_for_each(|d| upsert_device(tx, ctx, run, d))
        })
    }

    /// Records one case's result and its samples in one transaction, committed on
    /// return. Recording the same (case, device) again replaces the earlier result.
    ///
    /// Cost: the case's id comes from [`Store::case_id`] (one query per run); on PostgreSQL the
    /// result and its samples are one statement, its own transaction — one round trip to the
    /// server ([`insert_result`]); on SQLite a transaction of a few statements.
    ///
    /// Errors: [`StoreError::UnknownRun`], [`StoreError::UnknownCase`] when the key was
    /// not planned in this run, [`StoreError::Invalid`] for a duration beyond `i64` ns.
    pub fn record_result(&mut self, run: i64, r: &CaseResult) -> Result<(), StoreError> {
        check_result(Ctx(self.location()), r)?;
        let case = self.case_id(run, &r.case_key)?;
        match self.dialect() {
            // A single statement is atomic and committed when it returns.
            Dialect::Postgres => self.read(|c, ctx| insert_result(c, ctx, run, case, r)),
            Dialect::Sqlite => self.write(|tx, ctx| insert_result(tx, ctx, run, case, r)),
        }
    }

    /// Ends a run: `state` is [`RunState::Finished`], [`RunState::Interrupted`] (stopped by a
    /// signal) or [`RunState::Incomplete`] (cases left that could not run); sets `finished_at`
    /// to now (UTC). Errors: [`StoreError::Invalid`] for [`RunState::Running`],
    /// [`StoreError::UnknownRun`].
    pub fn finish_run(&mut self, run: i64, state: RunState) -> Result<(), StoreError> {
        if state == RunState::Running {
            return Err(Ctx(self.location())
                .invalid(format!("run state `{state}` is not `finished`, `interrupted` or `incomplete`")));
        }
        self.write(|tx, ctx| {
            let changed = tx
                .execute(
                    "UPDATE runs SET state = $1, finished_at = $2 WHERE id = $3",
                    params![state.as_str(), now(), run],
                )
                .or_store(ctx)?;
            if changed == 0 {
                return Err(ctx.unknown_run(run));
            }
            Ok(())
        })
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.read(|c, ctx| c.query(&format!("{RUN_SELECT} ORDER BY r.id"), &[], run_from_row).or_store(ctx))
    }

    /// One run. Errors: [`StoreError::UnknownRun`] when no run has this id.
    pub fn run(&self, id: i64) -> Result<RunSummary, StoreError> {
        self.read(|c, ctx| {
            c.query_opt(&format!("{RUN_SELECT} WHERE r.id = $1"), params![id], run_from_row)
                .or_store(ctx)?
                .ok_or_else(|| ctx.unknown_run(id))
        })
    }

    /// The most recently created run, `None` for an empty store.
    pub fn latest_run(&self) -> Result<Option<RunSummary>, StoreError> {
        self.read(|c, ctx| {
            c.query_opt(&format!("{RUN_SELECT} ORDER BY r.id DESC LIMIT 1"), &[], run_from_row).or_store(ctx)
        })
    }

    /// The newest run labelled `label` (see [`RunOrigin::label`]), `None` when no run is.
    pub fn run_by_label(&self, label: &str) -> Result<Option<RunSummary>, StoreError> {
        self.read(|c, ctx| {
            c.query_opt(
                &format!("{RUN_SELECT} WHERE r.label = $1 ORDER BY r.id DESC LIMIT 1"),
                params![label],
                run_from_row,
            )
            .or_store(ctx)
        })
    }

    /// The run whose globally unique id is `uid`, `None` when this store has none.
    pub fn run_by_uid(&self, uid: &str) -> Result<Option<RunSummary>, StoreError> {
        self.read(|c, ctx| {
            c.query_opt(&format!("{RUN_SELECT} WHERE r.uid = $1"), params![uid], run_from_row).or_store(ctx)
        })
    }

    /// The runs of campaign `campaign` (see [`RunOrigin::campaign`]), oldest first; empty when
    /// no run belongs to it.
    pub fn campaign_runs(&self, campaign: &str) -> Result<Vec<RunSummary>, StoreError> {
        self.read(|c, ctx| {
            c.query(&format!("{RUN_SELECT} WHERE r.campaign = $1 ORDER BY r.id"), params![campaign], run_from_row)
                .or_store(ctx)
        })
    }

    /// The run's planned functions, in the order given to [`Store::create_run`].
    /// Errors: [`StoreError::UnknownRun`].
    pub fn functions(&self, run: i64) -> Result<Vec<FunctionRow>, StoreError> {
        self.read(|c, ctx| {
            ensure_run(c, ctx, run)?;
            c.query(
                "SELECT framework, name, paper, decile, top20, op, moved, note FROM functions WHERE run_id = $1 \
                 ORDER BY id",
                params![run],
                |row| function_from_row(row, 0),
            )
            .or_store(ctx)
        })
    }

    /// The run's planned cases, in planned order. Errors: [`StoreError::UnknownRun`].
    pub fn cases(&self, run: i64) -> Result<Vec<CaseRow>, StoreError> {
        self.read(|c, ctx| {
            ensure_run(c, ctx, run)?;
            c.query(
                "SELECT c.key, f.framework, f.name, c.case_id, c.dtype, c.seed, c.spec \
                 FROM cases c JOIN functions f ON f.id = c.function_id WHERE c.run_id = $1 ORDER BY c.ordinal",
                params![run],
                |row| case_from_row(row, 0),
            )
            .or_store(ctx)
        })
    }

    /// The devices recorded for the run, ordered by framework (report order) then device.
    /// Errors: [`StoreError::UnknownRun`].
    pub fn devices(&self, run: i64) -> Result<Vec<DeviceInfo>, StoreError> {
        let mut devices = self.read(|c, ctx| {
            ensure_run(c, ctx, run)?;
            c.query("SELECT framework, device, available, detail FROM devices WHERE run_id = $1", params![run], |row| {
                Ok(DeviceInfo {
                    framework: parse(row, 0)?,
                    device: parse(row, 1)?,
                    available: row.get(2)?,
                    detail: row.get(3)?,
                })
            })
            .or_store(ctx)
        })?;
        devices.sort_by(|a, b| (a.framework, &a.device).cmp(&(b.framework, &b.device)));
        Ok(devices)
    }

    /// Keys of the cases that already have a result (any outcome) on `device`, for
    /// `run --resume`. Errors: [`StoreError::UnknownRun`].
    pub fn done_keys(&self, run: i64, device: &Target) -> Result<HashSet<String>, StoreError> {
        self.read(|c, ctx| {
            ensure_run(c, ctx, run)?;
            let keys: Vec<String> = c
                .query(
                    "SELECT c.key FROM results r JOIN cases c ON c.id = r.case_id WHERE r.run_id = $1 AND r.device = $2",
                    params![run, device.as_str()],
                    |row| row.get(0),
                )
                .or_store(ctx)?;
            Ok(keys.into_iter().collect())
        })
    }

    /// Every result of the run joined with its case and function, in planned case order
    /// then device; samples in the order taken. Errors: [`StoreError::UnknownRun`].
    pub fn results(&self, run: i64) -> Result<Vec<ResultRow>, StoreError> {
        self.read(|c, ctx| {
            ensure_run(c, ctx, run)?;
            let mut samples: HashMap<i64, Vec<u64>> = HashMap::new();
            let mut calls: HashMap<i64, Vec<u64>> = HashMap::new();
            c.query(
                "SELECT s.result_id, s.ns, s.calls FROM samples s JOIN results r ON r.id = s.result_id \
                 WHERE r.run_id = $1 ORDER BY s.result_id, s.idx",
                params![run],
                |row| {
                    let id: i64 = row.get(0)?;
                    samples.entry(id).or_default().push(row.get(1)?);
                    if let Some(n) = row.get::<Option<u64>>(2)? {
                        calls.entry(id).or_default().push(n);
                    }
                    Ok(())
                },
            )
            .or_store(ctx)?;
            c.query(
                "SELECT f.framework, f.name, f.paper, f.decile, f.top20, f.op, f.moved, f.note, \
                 c.key, f.framework, f.name, c.case_id, c.dtype, c.seed, c.spec, \
                 r.id, r.device, r.outcome, r.reason, r.error_type, r.message, r.traceback, r.phase, r.signal, \
                 r.stderr_tail, r.first_call_ns, r.wall_ms, r.outputs, r.finished_at, r.compiles, \
                 r.runqueue_wait_ns, r.steady_wall_ns, r.graph_breaks, r.session_first_calls, \
                 EXISTS (SELECT 1 FROM comparisons m WHERE m.result_id = r.id AND m.verdict <> 'incomparable'), \
                 r.steady_stop, r.measures \
                 FROM results r JOIN cases c ON c.id = r.case_id JOIN functions f ON f.id = c.function_id \
                 WHERE r.run_id = $1 ORDER BY c.ordinal, r.device",
                params![run],
                |row| {
                    let function = function_from_row(row, 0)?;
                    let case = case_from_row(row, 8)?;
                    let id: i64 = row.get(15)?;
                    let result = CaseResult {
                        case_key: case.key.clone(),
                        device: parse(row, 16)?,
                        outcome: parse(row, 17)?,
                        reason: parse_opt(row, 18)?,
                        error_type: row.get(19)?,
                        message: row.get(20)?,
                        traceback: row.get(21)?,
                        phase: row.get(22)?,
                        signal: row.get(23)?,
                        stderr_tail: row.get(24)?,
                        first_call_ns: row.get(25)?,
                        wall_ms: row.get(26)?,
                        outputs: json(row, 27)?,
                        finished_at: row.get(28)?,
                        compiles: row.get(29)?,
                        runqueue_wait_ns: row.get(30)?,
                        steady_wall_ns: row.get(31)?,
                        graph_breaks: row.get(32)?,
                        steady_stop: parse_opt(row, 35)?,
                        measures: match row.get::<Option<String>>(36)? {
                            Some(t) => Some(serde_json::from_str(&t).map_err(|e| row.error(36, e))?),
                            None => None,
                        },
                        session_first_calls_ns: match row.get::<Option<String>>(33)? {
                            Some(t) => serde_json::from_str(&t).map_err(|e| row.error(33, e))?,
                            None => Vec::new(),
                        },
                        samples_ns: samples.remove(&id).unwrap_or_default(),
                        block_sizes: calls.remove(&id).unwrap_or_default(),
                    };
                    Ok(ResultRow { id, function, case, result, compared: row.get(34)? })
                },
            )
            .or_store(ctx)
        })
    }
}

/// Inserts a whole run (state `running`): its plan ([`insert_plan`]), devices, and results with
/// their samples. `id`: the run id to give it (one a replaced copy of the run had), else a new
/// one. Returns the run id.
///
/// Errors: [`insert_plan`]'s, and [`StoreError::Invalid`] for a result naming a case the run
/// does not plan or two results for one (case, device).
pub(super) fn insert_run(tx: &mut Conn, ctx: Ctx<'_>, data: &RunData, id: Option<i64>) -> Result<i64, StoreError> {
    let key = RunKey { uid: data.uid.as_deref(), id };
    let (run, case_ids) = insert_plan(tx, ctx, key, &data.info, &data.origin, &data.functions, &data.cases)?;
    for d in &data.devices {
        tx.execute(
            "INSERT INTO devices (run_id, framework, device, available, detail) VALUES ($1, $2, $3, $4, $5)",
            params![run, d.framework.as_str(), d.device.as_str(), d.available, d.detail],
        )
        .or_store(ctx)?;
    }
    let mut seen = HashSet::new();
    let mut results = Vec::with_capacity(data.results.len());
    for r in &data.results {
        let case = *case_ids.get(r.case_key.as_str()).ok_or_else(|| {
            ctx.invalid(format!("a result names case `{}`, which the imported run does not plan", r.case_key))
        })?;
        if !seen.insert((case, r.device.as_str())) {
            return Err(ctx.invalid(format!("case `{}` has two results on {}", r.case_key, r.device)));
        }
        results.push((case, r));
    }
    insert_new_results(tx, ctx, run, &results)?;
    Ok(run)
}

/// What identifies a run being inserted: its uid (a new one when `None`) and its id (a new one
/// from the engine when `None`).
#[derive(Clone, Copy)]
struct RunKey<'a> {
    uid: Option<&'a str>,
    id: Option<i64>,
}

impl<'a> RunKey<'a> {
    fn new(uid: Option<&'a str>) -> RunKey<'a> {
        RunKey { uid, id: None }
    }
}

/// Inserts a run (state `running`) with its [`RunKey`], origin, functions and cases inside
/// `tx`. Returns the run id and each case key's id.
fn insert_plan<'k>(
    tx: &mut Conn,
    ctx: Ctx<'_>,
    key: RunKey<'_>,
    info: &RunInfo,
    origin: &RunOrigin,
    functions: &[FunctionRow],
    cases: &'k [CaseRow],
) -> Result<(i64, HashMap<&'k str, i64>), StoreError> {
    let mut values = run_values(ctx, info)?;
    let notes = ctx.json(&origin.notes, "run notes")?;
    let uid = key.uid.map_or_else(schema::new_run_uid, str::to_string);
    values.extend_from_slice(params![
        origin.source.as_str(),
        origin.label,
        origin.machine,
        notes,
        RunState::Running.as_str(),
        uid,
        origin.campaign,
        origin.shard.map(|s| s.index),
        origin.shard.map(|s| s.count),
        origin.plan_digest
    ]);
    // An explicit id (a replaced copy's) is the 25th value; the engine's identity otherwise.
    let (id_column, id_value) = match key.id {
        Some(id) => {
            values.push(Value::Int(id));
            (", id", ", $25")
        }
        None => ("", ""),
    };
    let run: i64 = tx
        .query_value(
            &format!(
                "INSERT INTO runs (started_at, host, os, cpu_model, cpu_cores, accelerators, python_version, \
                 python_executable, frameworks, catalogue_version, command_line, seed, reference_device, \
                 mlport_version, source, label, machine, notes, state, uid, campaign, shard_index, shard_count, \
                 plan_digest{id_column}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, \
                 $20, $21, $22, $23, $24{id_value}) \
                 RETURNING id"
            ),
            &values,
        )
        .or_store(ctx)?;
    set_switches(tx, ctx, run, info)?;

    let mut planned: HashSet<(Framework, &str)> = HashSet::with_capacity(functions.len());
    let mut function_rows = Vec::with_capacity(functions.len());
    for f in functions {
        if !planned.insert((f.framework, f.name.as_str())) {
            return Err(ctx.invalid(format!("function {} ({}) is listed twice", f.name, f.framework)));
        }
        function_rows.push(
            params![run, f.framework.as_str(), f.name, f.paper, f.decile, f.top20, f.op, f.moved, f.note].to_vec(),
        );
    }
    // Multi-row inserts: on PostgreSQL a plan of thousands of cases costs a few round trips.
    let inserted: HashMap<(String, String), i64> = tx
        .insert_rows(
            "INSERT INTO functions (run_id, framework, name, paper, decile, top20, op, moved, note)",
            "RETURNING framework, name, id",
            &function_rows,
            |r| Ok(((r.get(0)?, r.get(1)?), r.get(2)?)),
        )
        .or_store(ctx)?
        .into_iter()
        .collect();
    let function_id =
        |framework: Framework, name: &str| inserted.get(&(framework.as_str().to_string(), name.to_string())).copied();
    let mut case_rows = Vec::with_capacity(cases.len());
    let mut keys: HashSet<&str> = HashSet::with_capacity(cases.len());
    for (ordinal, c) in cases.iter().enumerate() {
        let function = function_id(c.framework, &c.function).ok_or_else(|| {
            ctx.invalid(format!(
                "case `{}` names function {} ({}), which is not planned",
                c.key, c.function, c.framework
            ))
        })?;
        if !keys.insert(c.key.as_str()) {
            return Err(ctx.invalid(format!("case `{}` is listed twice", c.key)));
        }
        let ordinal = ctx.int(ordinal as u64, "case ordinal")?;
        case_rows.push(case_values(ctx, run, function, c, ordinal)?);
    }
    let ids: HashMap<String, i64> = tx
        .insert_rows(
            "INSERT INTO cases (run_id, function_id, key, case_id, dtype, seed, spec, ordinal)",
            "RETURNING key, id",
            &case_rows,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .or_store(ctx)?
        .into_iter()
        .collect();
    let mut case_ids: HashMap<&str, i64> = HashMap::with_capacity(cases.len());
    for c in cases {
        let id = ids.get(&c.key).copied().ok_or_else(|| ctx.invalid(format!("case `{}` was not inserted", c.key)))?;
        case_ids.insert(c.key.as_str(), id);
    }
    Ok((run, case_ids))
}

/// Checks that a result's durations fit the store's signed 64-bit nanoseconds.
fn check_result(ctx: Ctx<'_>, r: &CaseResult) -> Result<(), StoreError> {
    r.first_call_ns.map(|ns| ctx.int(ns, "first_call_ns")).transpose()?;
    r.compiles.map(|n| ctx.int(n, "compiles")).transpose()?;
    r.graph_breaks.map(|n| ctx.int(n, "graph_breaks")).transpose()?;
    r.runqueue_wait_ns.map(|n| ctx.int(n, "runqueue_wait_ns")).transpose()?;
    r.steady_wall_ns.map(|n| ctx.int(n, "steady_wall_ns")).transpose()?;
    if !r.block_sizes.is_empty() && r.block_sizes.len() != r.samples_ns.len() {
        return Err(ctx.invalid(format!(
            "result {}: {} block sizes for {} samples",
            r.case_key,
            r.block_sizes.len(),
            r.samples_ns.len()
        )));
    }
    r.block_sizes.iter().try_for_each(|&n| ctx.int(n, "block size").map(|_| ()))?;
    r.samples_ns.iter().try_for_each(|&ns| ctx.int(ns, "sample").map(|_| ()))
}

/// Records one device a framework saw for `run`, updating a (framework, device) already there.
pub(super) fn upsert_device(tx: &mut Conn, ctx: Ctx<'_>, run: i64, d: &DeviceInfo) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO devices (run_id, framework, device, available, detail) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (run_id, framework, device) \
         DO UPDATE SET available = excluded.available, detail = excluded.detail",
        params![run, d.framework.as_str(), d.device.as_str(), d.available, d.detail],
    )
    .or_store(ctx)
    .map(|_| ())
}

/// The values of a `cases` row, in the order of its insert's columns: `run_id, function_id,
/// key, case_id, dtype, seed, spec, ordinal`.
///
/// Errors: the case's spec cannot be written as JSON ([`StoreError::Invalid`]).
pub(super) fn case_values(
    ctx: Ctx<'_>,
    run: i64,
    function: i64,
    c: &CaseRow,
    ordinal: i64,
) -> Result<Vec<Value>, StoreError> {
    Ok(params![
        run,
        function,
        c.key,
        c.case_id,
        crate::model::name_or_empty(c.dtype),
        c.seed.to_string(),
        ctx.json(&c.spec, "case spec")?,
        ordinal
    ]
    .to_vec())
}

/// The insert of a `results` row and its columns, in the order of [`result_values`] (`$1..$22`).
macro_rules! result_insert {
    () => {
        "INSERT INTO results (run_id, case_id, device, outcome, reason, error_type, message, \
         traceback, phase, signal, stderr_tail, first_call_ns, wall_ms, outputs, finished_at, compiles, \
         runqueue_wait_ns, steady_wall_ns, graph_breaks, steady_stop, session_first_calls, measures)"
    };
}

/// [`result_insert!`] as a constant, for multi-row inserts of new results.
const RESULT_COLUMNS: &str = result_insert!();

/// The upsert of a result (`$1..$22`), returning its id: run by both engines.
const RESULT_UPSERT: &str = concat!(
    result_insert!(),
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22) \
     ON CONFLICT (case_id, device) DO UPDATE SET \
     outcome = excluded.outcome, reason = excluded.reason, error_type = excluded.error_type, \
     message = excluded.message, traceback = excluded.traceback, phase = excluded.phase, \
     signal = excluded.signal, stderr_tail = excluded.stderr_tail, \
     first_call_ns = excluded.first_call_ns, wall_ms = excluded.wall_ms, \
     outputs = excluded.outputs, finished_at = excluded.finished_at, compiles = excluded.compiles, \
     runqueue_wait_ns = excluded.runqueue_wait_ns, steady_wall_ns = excluded.steady_wall_ns, \
     graph_breaks = excluded.graph_breaks, steady_stop = excluded.steady_stop, \
     session_first_calls = excluded.session_first_calls, measures = excluded.measures \
     RETURNING id"
);

/// PostgreSQL: a result and its samples in one statement (so one round trip, and atomic on its
/// own): the result's upsert, the samples beyond the new count deleted (a replaced result may
/// have had more), and the new samples — `$24` (ns) and `$25` (calls per sample) as `BIGINT[]`,
/// numbered from 0 — inserted or replacing those at the same index. `$23` is the sample count.
static RESULT_WITH_SAMPLES_PG: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "WITH r AS ({RESULT_UPSERT}), \
         gone AS (DELETE FROM samples WHERE result_id IN (SELECT id FROM r) AND idx >= $23) \
         INSERT INTO samples (result_id, idx, ns, calls) \
         SELECT r.id, s.idx - 1, s.ns, s.calls FROM r, \
         unnest($24::bigint[], $25::bigint[]) WITH ORDINALITY AS s (ns, calls, idx) \
         ON CONFLICT (result_id, idx) DO UPDATE SET ns = excluded.ns, calls = excluded.calls"
    )
});

/// One sample of a result as stored: (ns per call, calls in its block; NULL for single calls).
type SampleRow = (i64, Option<i64>);

/// A result's row values (`$1..$22` of [`RESULT_UPSERT`]) and its samples as (ns, calls per
/// sample), each checked to fit the store's signed 64-bit integers.
///
/// Errors: [`StoreError::Invalid`] for a duration or count beyond `i64`, or outputs that cannot
/// be written as JSON.
fn result_values(
    ctx: Ctx<'_>,
    run: i64,
    case: i64,
    r: &CaseResult,
) -> Result<(Vec<Value>, Vec<SampleRow>), StoreError> {
    let first_call = r.first_call_ns.map(|ns| ctx.int(ns, "first_call_ns")).transpose()?;
    let compiles = r.compiles.map(|n| ctx.int(n, "compiles")).transpose()?;
    let graph_breaks = r.graph_breaks.map(|n| ctx.int(n, "graph_breaks")).transpose()?;
    let runqueue_wait = r.runqueue_wait_ns.map(|n| ctx.int(n, "runqueue_wait_ns")).transpose()?;
    let steady_wall = r.steady_wall_ns.map(|n| ctx.int(n, "steady_wall_ns")).transpose()?;
    let calls = |idx: usize| r.block_sizes.get(idx).map(|&n| n as i64);
    let samples = r
        .samples_ns
        .iter()
        .enumerate()
        .map(|(idx, &ns)| Ok((ctx.int(ns, "sample")?, calls(idx))))
        .collect::<Result<Vec<_>, StoreError>>()?;
    let outputs = ctx.json(&r.outputs, "outputs")?;
    r.session_first_calls_ns.iter().try_for_each(|&ns| ctx.int(ns, "session first call").map(|_| ()))?;
    let session_first_calls = (!r.session_first_calls_ns.is_empty())
        .then(|| serde_json::to_string(&r.session_first_calls_ns).expect("a list of integers serialises"));
    let measures = r.measures.as_ref().map(|m| serde_json::to_string(m).expect("numbers serialise"));
    let values = params![
        run,
        case,
        r.device.as_str(),
        r.outcome.as_str(),
        r.reason.map(|x| x.as_str()),
        r.error_type,
        r.message,
        r.traceback,
        r.phase,
        r.signal,
        r.stderr_tail,
        first_call,
        r.wall_ms,
        outputs,
        r.finished_at,
        compiles,
        runqueue_wait,
        steady_wall,
        graph_breaks,
        r.steady_stop.map(|x| x.as_str()),
        session_first_calls,
        measures
    ]
    .to_vec();
    Ok((values, samples))
}

/// Inserts (or replaces) one result and its samples for the case with id `case`: on
/// PostgreSQL one statement ([`RESULT_WITH_SAMPLES_PG`]); on SQLite, inside the caller's
/// transaction, the upsert, the old samples deleted and the new ones inserted one by one
/// (statements on a local file cost microseconds).
pub(super) fn insert_result(
    tx: &mut Conn,
    ctx: Ctx<'_>,
    run: i64,
    case: i64,
    r: &CaseResult,
) -> Result<(), StoreError> {
    let (mut values, samples) = result_values(ctx, run, case, r)?;
    if tx.dialect() == Dialect::Postgres {
        values.push(Value::Int(samples.len() as i64));
        values.push(Value::Ints(samples.iter().map(|&(ns, _)| Some(ns)).collect()));
        values.push(Value::Ints(samples.iter().map(|&(_, calls)| calls).collect()));
        tx.execute(&RESULT_WITH_SAMPLES_PG, &values).or_store(ctx)?;
        return Ok(());
    }
    let result: i64 = tx.query_value(RESULT_UPSERT, &values).or_store(ctx)?;
    tx.execute("DELETE FROM samples WHERE result_id = $1", params![result]).or_store(ctx)?;
    for (idx, (ns, calls)) in samples.into_iter().enumerate() {
        tx.execute(
            "INSERT INTO samples (result_id, idx, ns, calls) VALUES ($1, $2, $3, $4)",
            params![result, idx as i64, ns, calls],
        )
        .or_store(ctx)?;
    }
    Ok(())
}

/// Inserts the results of a run being created (so none exists yet: plain inserts, no upsert,
/// no samples to delete), each `(case id, result)`, and their samples, with
/// [`Conn::insert_rows`]: on PostgreSQL 256 rows per round trip, on SQLite one cached statement
/// per row. Importing 100,000 tests spends most of its store time here
/// (`benches/import_pytest.rs`).
///
/// Errors: [`result_values`]'s, and the engine's (a (case, device) given twice).
fn insert_new_results(tx: &mut Conn, ctx: Ctx<'_>, run: i64, results: &[(i64, &CaseResult)]) -> Result<(), StoreError> {
    let mut rows = Vec::with_capacity(results.len());
    let mut samples_of: HashMap<(i64, String), Vec<SampleRow>> = HashMap::new();
    for &(case, r) in results {
        let (values, samples) = result_values(ctx, run, case, r)?;
        rows.push(values);
        if !samples.is_empty() {
            samples_of.insert((case, r.device.to_string()), samples);
        }
    }
    let ids: Vec<((i64, String), i64)> = tx
        .insert_rows(RESULT_COLUMNS, "RETURNING case_id, device, id", &rows, |row| {
            Ok(((row.get(0)?, row.get(1)?), row.get(2)?))
        })
        .or_store(ctx)?;
    let mut sample_rows = Vec::new();
    for (key, id) in ids {
        for (idx, (ns, calls)) in samples_of.remove(&key).unwrap_or_default().into_iter().enumerate() {
            sample_rows.push(params![id, idx as i64, ns, calls].to_vec());
        }
    }
    tx.insert_rows("INSERT INTO samples (result_id, idx, ns, calls)", "", &sample_rows, |_| Ok(())).or_store(ctx)?;
    Ok(())
}

/// A recorded command line with every URL password replaced by `***`
/// ([`super::location::redact`] word by word). Applied when a run is written (so an imported
/// bundle made by an older mlport stores none) and when one is read (so a store written before
/// the command line was redacted never shows or exports one).
fn redact_line(line: &str) -> String {
    line.split(' ').map(super::location::redact).collect::<Vec<_>>().join(" ")
}

/// `$1..$14` of the run inserts and updates.
fn run_values(ctx: Ctx<'_>, info: &RunInfo) -> Result<Vec<Value>, StoreError> {
    Ok(params![
        info.started_at,
        info.host,
        info.os,
        info.cpu_model,
        info.cpu_cores,
        ctx.json(&info.accelerators, "accelerators")?,
        info.python_version,
        info.python_executable,
        ctx.json(&info.frameworks, "framework infos")?,
        ctx.json(&info.catalogue_version, "catalogue versions")?,
        redact_line(&info.command_line),
        info.seed.to_string(),
        info.reference_device.to_string(),
        info.mlport_version
    ]
    .to_vec())
}

/// A run row and its counts; `run_from_row` reads the columns in this order.
const RUN_SELECT: &str = "SELECT r.id, r.started_at, r.host, r.os, r.cpu_model, r.cpu_cores, r.accelerators, \
    r.python_version, r.python_executable, r.frameworks, r.catalogue_version, r.command_line, r.seed, \
    r.reference_device, r.mlport_version, r.state, r.finished_at, \
    (SELECT COUNT(*) FROM cases c WHERE c.run_id = r.id), \
    (SELECT COUNT(*) FROM results x WHERE x.run_id = r.id), \
    r.source, r.label, r.machine, r.notes, r.uid, r.campaign, r.shard_index, r.shard_count, r.plan_digest, \
    r.jax_x64, r.switches \
    FROM runs r";

/// Records whether JAX ran with 64-bit mode on (schema 8) and the run's other switches that
/// change results (schema 10).
fn set_switches(tx: &mut Conn, ctx: Ctx<'_>, run: i64, info: &RunInfo) -> Result<(), StoreError> {
    let switches = info.switches.as_ref().map(|s| ctx.json(s, "run switches")).transpose()?;
    tx.execute(
        "UPDATE runs SET jax_x64 = $1, switches = $2 WHERE id = $3",
        params![i64::from(info.jax_x64), switches, run],
    )
    .or_store(ctx)
    .map(|_| ())
}

fn run_from_row(row: &Row) -> Result<RunSummary, ColumnError> {
    Ok(RunSummary {
        id: row.get(0)?,
        info: RunInfo {
            started_at: row.get(1)?,
            host: row.get(2)?,
            os: row.get(3)?,
            cpu_model: row.get(4)?,
            cpu_cores: row.get(5)?,
            accelerators: json(row, 6)?,
            python_version: row.get(7)?,
            python_executable: row.get(8)?,
            frameworks: json(row, 9)?,
            catalogue_version: json(row, 10)?,
            command_line: redact_line(&row.get::<String>(11)?),
            seed: parse(row, 12)?,
            reference_device: parse(row, 13)?,
            mlport_version: row.get(14)?,
            // NULL: stored before schema 8, when JAX's workers always turned 64-bit mode on.
            jax_x64: row.get::<Option<i64>>(28)?.is_none_or(|v| v != 0),
            // NULL: stored before schema 10, or imported.
            switches: row
                .get::<Option<String>>(29)?
                .map(|s| serde_json::from_str(&s).map_err(|e| row.error(29, e)))
                .transpose()?,
        },
        origin: RunOrigin {
            source: parse(row, 19)?,
            label: row.get(20)?,
            machine: row.get(21)?,
            notes: json(row, 22)?,
            campaign: row.get(24)?,
            shard: shard_columns(row, 25)?,
            plan_digest: row.get(27)?,
        },
        uid: row.get(23)?,
        state: parse_column(row, 15, "runs.state")?,
        finished_at: row.get(16)?,
        cases_planned: row.get(17)?,
        results: row.get(18)?,
    })
}

/// `runs.shard_index` and `runs.shard_count` at `at` and `at + 1`: both NULL, or a valid shard.
fn shard_columns(row: &Row, at: usize) -> Result<Option<Shard>, ColumnError> {
    let (Some(index), Some(count)) = (row.get::<Option<u32>>(at)?, row.get::<Option<u32>>(at + 1)?) else {
        return Ok(None);
    };
    Shard::new(index, count).map(Some).map_err(|e| row.error(at, format!("runs.shard_index: {e}")))
}

fn function_from_row(row: &Row, at: usize) -> Result<FunctionRow, ColumnError> {
    Ok(FunctionRow {
        framework: parse(row, at)?,
        name: row.get(at + 1)?,
        paper: row.get(at + 2)?,
        decile: row.get(at + 3)?,
        top20: row.get(at + 4)?,
        op: row.get(at + 5)?,
        moved: row.get(at + 6)?,
        note: row.get(at + 7)?,
    })
}

fn case_from_row(row: &Row, at: usize) -> Result<CaseRow, ColumnError> {
    let key: String = row.get(at)?;
    Ok(CaseRow {
        framework: parse(row, at + 1)?,
        function: row.get(at + 2)?,
        case_id: row.get(at + 3)?,
        dtype: dtype_column(row, at + 4, "cases.dtype")?,
        seed: parse(row, at + 5)?,
        spec: spec_column(row, at + 6, "cases.spec", &key)?,
        key,
    })
}

/// A TEXT column holding an `as_str` spelling (framework, device, outcome, reason) or a decimal u64.
pub(super) fn parse<T>(row: &Row, idx: usize) -> Result<T, ColumnError>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    row.get::<String>(idx)?.parse().map_err(|e| row.error(idx, e))
}

/// A TEXT column holding the stored spelling of a closed set (run state, comparison reference,
/// rule, verdict): a value that spells none of it is an error naming the column (`table.column`)
/// and the value.
pub(super) fn parse_column<T>(row: &Row, idx: usize, column: &str) -> Result<T, ColumnError>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    let text: String = row.get(idx)?;
    text.parse().map_err(|e| row.error(idx, format!("{column}: {e}")))
}

/// A dtype column where `""` stands for none (`cases.dtype` of an imported case); any other
/// value that names no [`Dtype`] is an error naming the column and the value.
fn dtype_column(row: &Row, idx: usize, column: &str) -> Result<Option<Dtype>, ColumnError> {
    let text: String = row.get(idx)?;
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|e| row.error(idx, format!("{column}: {e}")))
}

/// A JSON column holding a case's spec (`cases.spec`, `reference_outputs.spec`): one that does
/// not read as a spec is an error naming the column and the case's key.
pub(super) fn spec_column<T: DeserializeOwned>(
    row: &Row,
    idx: usize,
    column: &str,
    key: &str,
) -> Result<T, ColumnError> {
    serde_json::from_str(&row.get::<String>(idx)?).map_err(|e| row.error(idx, format!("{column} of case `{key}`: {e}")))
}

pub(super) fn parse_opt<T>(row: &Row, idx: usize) -> Result<Option<T>, ColumnError>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    row.get::<Option<String>>(idx)?.map(|s| s.parse().map_err(|e| row.error(idx, e))).transpose()
}

pub(super) fn json<T: DeserializeOwned>(row: &Row, idx: usize) -> Result<T, ColumnError> {
    serde_json::from_str(&row.get::<String>(idx)?).map_err(|e| row.error(idx, e))
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;
    use tempfile::TempDir;

    use super::*;
    use crate::store::schema::{self, Dialect};
    use rusqlite::Connection;

    /// Names of an SQLite database's own tables.
    fn user_tables(conn: &Connection) -> rusqlite::Result<HashSet<String>> {
        let mut stmt =
            conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")?;
        stmt.query_map([], |r| r.get(0))?.collect()
    }
    use crate::model::{CaseSpec, FrameworkInfo, Mode, RunSource, RunSwitches, Spec};
    use crate::model::{Outcome, Reason};

    fn dev(s: &str) -> Target {
        s.parse().unwrap()
    }

    fn info() -> RunInfo {
        let torch = FrameworkInfo {
            version: Some("2.5.1+cu124".into()),
            import_error: None,
            packages: BTreeMap::from([("numpy".into(), "2.1.3".into()), ("triton".into(), "3.1.0".into())]),
            threads: Some(16),
            settings: BTreeMap::from([("jax_enable_x64".into(), serde_json::json!(false))]),
        };
        let jax = FrameworkInfo {
            version: None,
            import_error: Some("ImportError: no module named jaxlib".into()),
            packages: BTreeMap::new(),
            threads: None,
            settings: BTreeMap::new(),
        };
        RunInfo {
            started_at: "2026-12-01T10:00:00Z".into(),
            host: "gpu-box".into(),
            os: "Linux 6.1.0 x86_64".into(),
            cpu_model: "AMD EPYC 9454".into(),
            cpu_cores: 48,
            accelerators: vec!["NVIDIA H200, driver 560.35".into(), "second line".into()],
            python_version: "3.11.8".into(),
            python_executable: "/home/u/.cache/mlport/venv/bin/python".into(),
            frameworks: BTreeMap::from([(Framework::Torch, torch), (Framework::Jax, jax)]),
            catalogue_version: BTreeMap::from([(Framework::Torch, "2026.11.30".into())]),
            command_line: "mlport run --devices cpu,cuda:0".into(),
            seed: u64::MAX,
            reference_device: Target::cpu(),
            mlport_version: "0.1.0".into(),
            jax_x64: false,
            switches: Some(RunSwitches {
                devices: Some(vec![Target::cpu(), "cuda:0/compiled".parse().unwrap()]),
                modes: vec![Mode::Eager, Mode::Compiled],
                threads: Some(4),
                budget_ms: 0.25,
                target_spread: 0.05,
                timeout_s: 60.0,
                quick: false,
                jobs: Some(2),
            }),
        }
    }

    fn functions() -> Vec<FunctionRow> {
        vec![
            FunctionRow {
                framework: Framework::Torch,
                name: "torch.argsort".into(),
                paper: Some("test_argsort".into()),
                decile: Some(100),
                top20: true,
                op: Some("argsort".into()),
                moved: Some("torch.sort".into()),
                note: Some("stable kwarg".into()),
            },
            FunctionRow::new(Framework::Jax, "jax.numpy.argsort"),
        ]
    }

    fn case(key: &str, framework: Framework, function: &str, dtype: &str, seed: u64) -> CaseRow {
        CaseRow {
            key: key.into(),
            framework,
            function: function.into(),
            case_id: "basic".into(),
            dtype: Some(dtype.parse().unwrap()),
            seed,
            spec: Spec::from(CaseSpec {
                inputs: vec![json!({"shape": [4, 5], "dist": "normal"})],
                kwargs: json!({"dim": -1}).as_object().unwrap().clone(),
                ..CaseSpec::new(function, "basic")
            }),
        }
    }

    fn cases() -> Vec<CaseRow> {
        vec![
            case("torch/torch.argsort/basic/float32", Framework::Torch, "torch.argsort", "float32", 0),
            case("torch/torch.argsort/basic/bfloat16", Framework::Torch, "torch.argsort", "bfloat16", u64::MAX),
            case("jax/jax.numpy.argsort/basic/float32", Framework::Jax, "jax.numpy.argsort", "float32", 1 << 63),
        ]
    }

    fn full_result(key: &str, device: &str) -> CaseResult {
        CaseResult {
            case_key: key.into(),
            device: dev(device),
            outcome: Outcome::Fail,
            reason: Some(Reason::DtypeUnsupported),
            error_type: Some("RuntimeError".into()),
            message: Some("\"argsort_cuda\" not implemented for 'BFloat16'".into()),
            traceback: Some("Traceback (most recent call last):\n  ...".into()),
            phase: Some("first_call".into()),
            signal: Some(9),
            stderr_tail: Some("warning: x\nwarning: y".into()),
            first_call_ns: Some(1_234_567_890),
            samples_ns: vec![30, 10, 20, i64::MAX as u64],
            session_first_calls_ns: vec![1_234_567_890, 7],
            block_sizes: vec![1, 2, 3, 4],
            compiles: Some(2),
            graph_breaks: Some(1),
            steady_stop: Some(crate::model::SteadyStop::Budget),
            runqueue_wait_ns: Some(1_500_000),
            steady_wall_ns: Some(101_000_000),
            measures: Some(crate::model::WorkloadMeasures {
                peak_rss_bytes: Some(1 << 30),
                device_peak_bytes: None,
                repeat_rmse: Some(0.0),
                repeat_nan_mismatch: Some(0),
            }),
            outputs: json!([{"index": 0, "dtype": "int64", "shape": [4, 5], "path": "o/0.npy"}]),
            wall_ms: 12.75,
            finished_at: "2026-12-01T10:00:03Z".into(),
        }
    }

    fn bare_result(key: &str, device: &str) -> CaseResult {
        let mut r = CaseResult::new(key, dev(device), Outcome::Pass);
        r.finished_at = "2026-12-01T10:00:04Z".into();
        r
    }

    /// An error and its sources, as `main` prints them (`store::open::error_chain`).
    pub(in crate::store) fn chain(e: &dyn std::error::Error) -> String {
        crate::store::open::error_chain(e)
    }

    /// The schema versions recorded in an SQLite store, oldest first.
    fn schema_versions(store: &Store) -> Vec<i64> {
        store
            .sqlite()
            .prepare("SELECT version FROM schema_version ORDER BY version")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn new_store() -> (TempDir, Store) {
        let dir = TempDir::new().unwrap();
        let store = Store::open(&dir.path().join("mlport.db")).unwrap();
        (dir, store)
    }

    #[test]
    fn two_processes_can_write_one_store_at_once() {
        // Two connections (as two mlport processes would hold) each create a run and
        // record every case concurrently; immediate transactions wait instead of failing.
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("shared.db");
        Store::open(&path).unwrap();
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut store = Store::open(&path).unwrap();
                    let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
                    for _ in 0..20 {
                        for c in cases() {
                            store.record_result(run, &bare_result(&c.key, "cpu")).unwrap();
                        }
                    }
                    run
                })
            })
            .collect();
        let runs: Vec<i64> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        let store = Store::open(&path).unwrap();
        for run in runs {
            assert_eq!(store.results(run).unwrap().len(), cases().len());
        }
    }

    #[test]
    fn every_field_round_trips() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        let fresh = store.run(run).unwrap();
        assert_eq!(fresh.info, info());
        assert_eq!((fresh.state.as_str(), fresh.finished_at.as_deref()), ("running", None));
        assert_eq!((fresh.cases_planned, fresh.results), (3, 0));

        let mut later = info();
        later.frameworks.get_mut(&Framework::Jax).unwrap().version = Some("0.4.35".into());
        later.reference_device = dev("cuda:1");
        store.update_run_info(run, &later).unwrap();

        let devices = vec![
            DeviceInfo { framework: Framework::Torch, device: dev("cuda:0"), available: true, detail: "H200".into() },
            DeviceInfo { framework: Framework::Jax, device: dev("tpu:0"), available: false, detail: String::new() },
        ];
        store.record_devices(run, &devices).unwrap();

        let keys: Vec<String> = cases().into_iter().map(|c| c.key).collect();
        let full = full_result(&keys[1], "cuda:0");
        let bare = bare_result(&keys[1], "cpu");
        let jax = full_result(&keys[2], "cpu");
        for r in [&full, &bare, &jax] {
            store.record_result(run, r).unwrap();
        }
        store.finish_run(run, RunState::Finished).unwrap();

        let summary = store.run(run).unwrap();
        assert_eq!(summary.info, later);
        assert_eq!(summary.state, RunState::Finished);
        assert!(summary.finished_at.as_deref().is_some_and(|t| t.ends_with('Z')));
        assert_eq!((summary.cases_planned, summary.results), (3, 3));
        assert_eq!(store.runs().unwrap(), vec![summary.clone()]);
        assert_eq!(store.latest_run().unwrap(), Some(summary));

        assert_eq!(store.functions(run).unwrap(), functions());
        assert_eq!(store.cases(run).unwrap(), cases());
        // Ordered by framework in report order (torch before jax), then device.
        assert_eq!(store.devices(run).unwrap(), devices);

        let results = store.results(run).unwrap();
        let got: Vec<_> = results.iter().map(|r| (&r.function, &r.case, &r.result)).collect();
        let (fs, cs) = (functions(), cases());
        assert_eq!(got, vec![(&fs[0], &cs[1], &bare), (&fs[0], &cs[1], &full), (&fs[1], &cs[2], &jax)]);
    }

    #[test]
    fn resume_keys_are_per_device() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        let keys: Vec<String> = cases().into_iter().map(|c| c.key).collect();
        store.record_result(run, &bare_result(&keys[0], "cpu")).unwrap();
        store.record_result(run, &full_result(&keys[2], "cpu")).unwrap();
        store.record_result(run, &full_result(&keys[1], "cuda:0")).unwrap();
        store.record_result(run, &full_result(&keys[1], "cpu/compiled")).unwrap();

        let cpu = store.done_keys(run, &Target::cpu()).unwrap();
        assert_eq!(cpu, HashSet::from([keys[0].clone(), keys[2].clone()]));
        // A target is its own device: cpu and cpu/compiled resume apart.
        assert_eq!(store.done_keys(run, &dev("cpu/compiled")).unwrap(), HashSet::from([keys[1].clone()]));
        let compiled = store.results(run).unwrap().into_iter().find(|r| r.result.device.as_str() == "cpu/compiled");
        assert_eq!(compiled.unwrap().result, full_result(&keys[1], "cpu/compiled"));
        assert_eq!(store.done_keys(run, &dev("cuda:0")).unwrap(), HashSet::from([keys[1].clone()]));
        assert!(store.done_keys(run, &dev("tpu:0")).unwrap().is_empty());

        let other = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        assert!(store.done_keys(other, &Target::cpu()).unwrap().is_empty());
    }

    #[test]
    fn recording_again_replaces_the_result_and_its_samples() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        let key = &cases()[0].key;
        store.record_result(run, &full_result(key, "cpu")).unwrap();
        let mut again = bare_result(key, "cpu");
        again.samples_ns = vec![7, 5];
        store.record_result(run, &again).unwrap();

        let results = store.results(run).unwrap();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].result, again);
        let samples: i64 = store.sqlite().query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0)).unwrap();
        assert_eq!(samples, 2);
        assert_eq!(store.run(run).unwrap().results, 1);
    }

    #[test]
    fn devices_upsert() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        let mut d =
            DeviceInfo { framework: Framework::Torch, device: dev("cuda:0"), available: false, detail: "?".into() };
        store.record_devices(run, std::slice::from_ref(&d)).unwrap();
        d.available = true;
        d.detail = "NVIDIA H200".into();
        store.record_devices(run, std::slice::from_ref(&d)).unwrap();
        assert_eq!(store.devices(run).unwrap(), vec![d]);
    }

    #[test]
    fn unknown_ids_and_keys_are_clear_errors() {
        let (dir, mut store) = new_store();
        let path = dir.path().join("mlport.db").display().to_string();
        let err = store.run(42).unwrap_err();
        assert_eq!(err.to_string(), format!("{path}: no run with id 42"));
        assert!(matches!(store.results(42), Err(StoreError::UnknownRun { id: 42, .. })));
        assert!(matches!(store.finish_run(42, RunState::Finished), Err(StoreError::UnknownRun { .. })));
        assert!(matches!(store.update_run_info(42, &info()), Err(StoreError::UnknownRun { .. })));
        assert_eq!(store.latest_run().unwrap(), None);

        let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        let err = store.record_result(run, &bare_result("torch/nope/basic/float32", "cpu")).unwrap_err();
        assert_eq!(err.to_string(), format!("{path}: run {run} has no case `torch/nope/basic/float32`"));
        let err = store.finish_run(run, RunState::Running).unwrap_err();
        assert!(err.to_string().contains("`running` is not `finished`, `interrupted` or `incomplete`"), "{err}");
        store.finish_run(run, RunState::Incomplete).unwrap();
        assert_eq!(store.run(run).unwrap().state, RunState::Incomplete);
        // A state no mlport writes, read back: the error names the column and the value.
        store.sqlite().execute("UPDATE runs SET state = 'done' WHERE id = ?1", [run]).unwrap();
        let err = chain(&store.run(run).unwrap_err());
        assert!(err.contains("runs.state: unknown run state `done`"), "{err}");
    }

    #[test]
    fn stored_specs_and_dtypes_read_typed_and_bad_ones_name_the_column() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        let key = "torch/torch.argsort/basic/float32";
        // A spec as the previous version wrote it (/work/parity/store.db), and an import's.
        let old = r#"{"code":null,"compare":["up_to_sign","allclose","up_to_sign_rows"],"function":"torch.argsort","id":"basic","inputs":[{"shape":[32,16]}],"kwargs":{"full_matrices":false},"outputs":null,"tolerance":{"float32":{"atol":0.00005,"rtol":null}}}"#;
        store.sqlite().execute("UPDATE cases SET spec = ?1 WHERE key = ?2", [old, key]).unwrap();
        let rows = store.cases(run).unwrap();
        let c = rows[0].spec.catalogue().expect("a catalogue case");
        assert_eq!(c.tolerance[&Dtype::Float32].atol, Some(5e-5));
        assert_eq!(rows[0].dtype, Some(Dtype::Float32));
        store
            .sqlite()
            .execute("UPDATE cases SET spec = '{\"nodeid\":\"t.py::x\"}', dtype = '' WHERE key = ?1", [key])
            .unwrap();
        let rows = store.cases(run).unwrap();
        assert_eq!((rows[0].dtype, rows[0].spec.catalogue().is_none()), (None, true), "an imported case");

        store.sqlite().execute("UPDATE cases SET dtype = 'float8' WHERE key = ?1", [key]).unwrap();
        let err = chain(&store.cases(run).unwrap_err());
        assert!(err.contains("cases.dtype: unknown dtype `float8`"), "{err}");
        store
            .sqlite()
            .execute(
                "UPDATE cases SET dtype = 'float32', spec = ?1 WHERE key = ?2",
                [old.replace("exact", "x").replace("allclose", "roughly"), key.to_string()],
            )
            .unwrap();
        let err = chain(&store.cases(run).unwrap_err());
        assert!(err.contains(&format!("cases.spec of case `{key}`")) && err.contains("roughly"), "{err}");
    }

    #[test]
    fn bad_plans_are_rejected_whole() {
        let (_dir, mut store) = new_store();
        let mut twice = functions();
        twice.push(functions()[0].clone());
        let err = store.create_run(&info(), &RunOrigin::default(), &twice, &cases()).unwrap_err();
        assert!(err.to_string().contains("torch.argsort (torch) is listed twice"), "{err}");

        let mut orphan = cases();
        orphan.push(case("torch/torch.sort/basic/float32", Framework::Torch, "torch.sort", "float32", 3));
        let err = store.create_run(&info(), &RunOrigin::default(), &functions(), &orphan).unwrap_err();
        assert!(err.to_string().contains("names function torch.sort (torch), which is not planned"), "{err}");

        let mut dup = cases();
        dup.push(cases()[0].clone());
        assert!(matches!(
            store.create_run(&info(), &RunOrigin::default(), &functions(), &dup),
            Err(StoreError::Invalid { .. })
        ));
        // Nothing of the failed plans was kept.
        assert!(store.runs().unwrap().is_empty());
    }

    #[test]
    fn rejects_a_file_that_is_not_sqlite() {
        let dir = TempDir::new().unwrap();
        for (name, bytes) in [("notes.db", &b"just some text, not a database at all\n"[..]), ("tiny.db", b"SQL")] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let err = Store::open(&path).unwrap_err();
            assert_eq!(err.to_string(), format!("{} is not an SQLite database", path.display()));
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "the file must be left alone");
        }
    }

    #[test]
    fn rejects_a_foreign_sqlite_database_untouched() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("other.db");
        let other = Connection::open(&path).unwrap();
        other.execute_batch("CREATE TABLE meta (key TEXT, value TEXT); CREATE TABLE photos (id INTEGER);").unwrap();
        drop(other);
        let err = Store::open(&path).unwrap_err();
        assert_eq!(err.to_string(), format!("{} is an SQLite database but not an mlport store", path.display()));
        let other = Connection::open(&path).unwrap();
        let mode: String = other.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "delete", "journal mode must not have been changed");
        assert_eq!(user_tables(&other).unwrap(), HashSet::from(["meta".to_string(), "photos".to_string()]));
    }

    #[test]
    fn rejects_a_foreign_meta_table_of_another_shape() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("other.db");
        let other = Connection::open(&path).unwrap();
        other.execute_batch("CREATE TABLE meta (k TEXT, v TEXT); CREATE TABLE schema_version (n INTEGER);").unwrap();
        drop(other);
        assert!(matches!(Store::open(&path), Err(StoreError::NotMlport { .. })));
    }

    #[test]
    fn a_second_handle_sees_committed_results() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("mlport.db");
        let mut writer = Store::open(&path).unwrap();
        let reader = Store::open(&path).unwrap();
        let run = writer.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        writer.record_result(run, &bare_result(&cases()[0].key, "cpu")).unwrap();
        assert_eq!(reader.run(run).unwrap().results, 1);
        assert_eq!(reader.done_keys(run, &Target::cpu()).unwrap(), HashSet::from([cases()[0].key.clone()]));
    }

    #[test]
    fn a_store_opens_read_only_without_writing_beside_it() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("odd ?#% name.db");
        let mut store = Store::open(&path).unwrap();
        let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        store.record_result(run, &full_result(&cases()[0].key, "cpu")).unwrap();
        drop(store); // the last connection checkpoints the WAL and removes -wal and -shm
        let bytes = std::fs::read(&path).unwrap();
        let ro = Store::open_read_only(&path).unwrap();
        assert_eq!(ro.results(run).unwrap().len(), 1);
        assert_eq!(ro.run(run).unwrap().info, info());
        let mut ro = ro;
        assert!(ro.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap_err().is_read_only());
        drop(ro);
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "not a byte of the store changed");
        // A missing store is an error naming it, not a new empty store.
        let missing = dir.path().join("missing.db");
        let err = Store::open_read_only(&missing).unwrap_err().to_string();
        assert!(err.contains("missing.db"), "{err}");
        assert!(!missing.exists());
    }

    #[test]
    fn an_older_store_is_not_upgraded_read_only() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("old.db");
        Store::open(&path).unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.execute("DELETE FROM schema_version WHERE version > 1", []).unwrap();
        drop(conn);
        let err = Store::open_read_only(&path).unwrap_err().to_string();
        assert!(err.contains("old.db") && err.contains("schema version 1") && err.contains("read-only"), "{err}");
    }

    #[test]
    fn reopening_keeps_data_and_migrates_once() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("mlport.db");
        let mut store = Store::open(&path).unwrap();
        let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        store.record_result(run, &full_result(&cases()[0].key, "cpu")).unwrap();
        drop(store); // interrupted: never finished

        for _ in 0..2 {
            let store = Store::open(&path).unwrap();
            let versions = schema_versions(&store);
            assert_eq!(versions, (1..=schema::latest_version()).collect::<Vec<_>>());
            let summary = store.run(run).unwrap();
            assert_eq!((summary.state.as_str(), summary.results), ("running", 1));
            let mode: String = store.sqlite().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
            assert_eq!(mode, "wal");
            let fk: bool = store.sqlite().query_row("PRAGMA foreign_keys", [], |r| r.get(0)).unwrap();
            assert!(fk);
        }
    }

    #[test]
    fn an_empty_file_becomes_a_store() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("empty.db");
        std::fs::write(&path, b"").unwrap();
        let mut store = Store::open(&path).unwrap();
        assert!(store.create_run(&info(), &RunOrigin::default(), &[], &[]).is_ok());
    }

    #[test]
    fn rejects_a_store_from_a_newer_mlport() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("mlport.db");
        let store = Store::open(&path).unwrap();
        let newer = schema::latest_version() + 1;
        store
            .sqlite()
            .execute("INSERT INTO schema_version (version, name, applied_at) VALUES ($1, 'future', 'x')", [newer])
            .unwrap();
        drop(store);
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::TooNew { found, .. } if found == newer));
        let text = err.to_string();
        assert!(text.starts_with(&path.display().to_string()) && text.contains(&format!("version {newer}")), "{text}");
    }

    fn imported(label: &str) -> RunData {
        let keys: Vec<String> = cases().into_iter().map(|c| c.key).collect();
        let mut pass = bare_result(&keys[0], "tpu:0");
        pass.samples_ns = vec![3, 1, 2];
        pass.first_call_ns = Some(99);
        RunData {
            uid: None,
            info: info(),
            origin: RunOrigin {
                source: RunSource::ImportPaper,
                label: Some(label.into()),
                machine: Some("tpu_vm".into()),
                notes: vec!["no pytest report for cpu".into()],
                ..RunOrigin::default()
            },
            functions: functions(),
            cases: cases(),
            devices: vec![DeviceInfo {
                framework: Framework::Torch,
                device: dev("tpu:0"),
                available: true,
                detail: "TPU v3".into(),
            }],
            results: vec![bare_result(&keys[0], "cpu"), pass, full_result(&keys[2], "cpu")],
        }
    }

    #[test]
    fn imported_runs_round_trip_finished_with_their_origin() {
        let (_dir, mut store) = new_store();
        let live = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        let ids = store.import_runs(&[imported("paper/torch/tpu_vm/tpu"), imported("mine")]).unwrap();
        assert_eq!(ids.len(), 2);
        let run = store.run(ids[0]).unwrap();
        assert_eq!(run.origin, imported("paper/torch/tpu_vm/tpu").origin);
        assert_eq!((run.state.as_str(), run.cases_planned, run.results), ("finished", 3, 3));
        assert!(run.finished_at.is_some());
        assert_eq!(store.run(live).unwrap().origin, RunOrigin::default());
        assert_eq!(store.devices(ids[1]).unwrap(), imported("x").devices);
        let results: Vec<CaseResult> = store.results(ids[0]).unwrap().into_iter().map(|r| r.result).collect();
        let mut want = imported("x").results;
        want.sort_by(|a, b| (&a.case_key, &a.device).cmp(&(&b.case_key, &b.device)));
        let mut got = results.clone();
        got.sort_by(|a, b| (&a.case_key, &a.device).cmp(&(&b.case_key, &b.device)));
        assert_eq!(got, want);
        assert_eq!(store.run_by_label("mine").unwrap().map(|r| r.id), Some(ids[1]));
        assert_eq!(store.run_by_label("nobody").unwrap(), None);
        // The newest run wins a label used twice.
        let again = store.import_runs(&[imported("mine")]).unwrap();
        assert_eq!(store.run_by_label("mine").unwrap().map(|r| r.id), Some(again[0]));
    }

    #[test]
    fn an_import_is_all_or_nothing() {
        let (_dir, mut store) = new_store();
        let good = imported("good");
        let mut orphan = imported("bad");
        orphan.results.push(bare_result("torch/nope/basic/float32", "cpu"));
        let err = store.import_runs(&[good.clone(), orphan]).unwrap_err();
        assert!(err.to_string().contains("`torch/nope/basic/float32`, which the imported run does not plan"), "{err}");
        let mut twice = imported("bad");
        twice.results.push(twice.results[0].clone());
        let err = store.import_runs(&[good.clone(), twice]).unwrap_err();
        assert!(err.to_string().contains("has two results on cpu"), "{err}");
        let mut huge = imported("bad");
        huge.results[1].samples_ns.push(u64::MAX);
        assert!(matches!(store.import_runs(&[good, huge]), Err(StoreError::Invalid { .. })));
        assert!(store.runs().unwrap().is_empty(), "nothing of a failed import is kept");
        let samples: i64 = store.sqlite().query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0)).unwrap();
        assert_eq!(samples, 0);
    }

    #[test]
    fn a_version_1_store_upgrades_and_keeps_its_runs_as_live() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("v1.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(&schema::MIGRATIONS[0].sql(Dialect::Sqlite)).unwrap();
            conn.execute(
                "INSERT INTO schema_version (version, name, applied_at) VALUES (1, 'initial schema', 'then')",
                [],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO runs (started_at, host, os, cpu_model, cpu_cores, accelerators, python_version, \
                 python_executable, frameworks, catalogue_version, command_line, seed, reference_device, \
                 mlport_version, state) VALUES ('2026-01-01T00:00:00Z', 'old-box', 'Linux', 'cpu', 2, '[]', \
                 '3.11', '/py', '{}', '{}', 'mlport run', '7', 'cpu', '0.0.9', 'finished')",
                [],
            )
            .unwrap();
        }
        let mut store = Store::open(&path).unwrap();
        let versions = schema_versions(&store);
        assert_eq!(versions, (1..=schema::latest_version()).collect::<Vec<_>>());
        let old = store.latest_run().unwrap().unwrap();
        assert_eq!((old.info.host.as_str(), old.info.seed, old.state.as_str()), ("old-box", 7, "finished"));
        assert_eq!(old.origin, RunOrigin::default());
        // And the upgraded store takes imports.
        let ids = store.import_runs(&[imported("after upgrade")]).unwrap();
        assert_eq!(store.run(ids[0]).unwrap().origin.source, RunSource::ImportPaper);
    }

    #[test]
    fn a_password_recorded_by_an_older_mlport_is_never_read_back() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("old.db");
        drop(Store::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .execute(
                "INSERT INTO runs (uid, started_at, host, os, cpu_model, cpu_cores, accelerators, python_version, \
                 python_executable, frameworks, catalogue_version, command_line, seed, reference_device, \
                 mlport_version, state) VALUES ('00ff', '2026-01-01T00:00:00Z', 'box', 'Linux', 'cpu', 2, '[]', \
                 '3.11', '/py', '{}', '{}', 'mlport run --db postgresql://u:hunter2@h/db?password=pw2', '7', \
                 'cpu', '0.0.9', 'finished')",
                [],
            )
            .unwrap();
        let mut store = Store::open(&path).unwrap();
        let old = store.latest_run().unwrap().unwrap();
        assert_eq!(old.info.command_line, "mlport run --db postgresql://u:***@h/db?password=***");
        // And a run written from such a record (a bundle's import) stores none either.
        let mut info = old.info.clone();
        info.command_line = "mlport run --db postgresql://u:hunter2@h/db".into();
        let id = store.import_runs(&[RunData { info, ..imported("re-import") }]).unwrap()[0];
        let raw: String = Connection::open(&path)
            .unwrap()
            .query_row("SELECT command_line FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .unwrap();
        assert_eq!(raw, "mlport run --db postgresql://u:***@h/db");
    }

    #[test]
    fn a_version_6_store_gives_its_runs_distinct_uids() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("v6.db");
        {
            let conn = Connection::open(&path).unwrap();
            for m in &schema::MIGRATIONS[..6] {
                conn.execute_batch(&m.sql(Dialect::Sqlite)).unwrap();
                conn.execute(
                    "INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, 'then')",
                    rusqlite::params![m.version, m.name],
                )
                .unwrap();
            }
            for host in ["a", "b", "c"] {
                conn.execute(
                    "INSERT INTO runs (started_at, host, os, cpu_model, cpu_cores, accelerators, python_version, \
                     python_executable, frameworks, catalogue_version, command_line, seed, reference_device, \
                     mlport_version, state) VALUES ('2026-01-01T00:00:00Z', $1, 'Linux', 'cpu', 2, '[]', \
                     '3.11', '/py', '{}', '{}', 'mlport run', '7', 'cpu', '0.0.9', 'finished')",
                    [host],
                )
                .unwrap();
            }
        }
        let store = Store::open(&path).unwrap();
        let runs = store.runs().unwrap();
        let uids: HashSet<&str> = runs.iter().map(|r| r.uid.as_str()).collect();
        assert_eq!(uids.len(), 3, "{uids:?}");
        assert!(uids.iter().all(|u| u.len() == 32 && u.chars().all(|c| c.is_ascii_hexdigit())), "{uids:?}");
        assert!(runs.iter().all(|r| r.origin.campaign.is_none() && r.origin.shard.is_none()));
        assert_eq!(store.run_by_uid(&runs[1].uid).unwrap().unwrap().info.host, "b");
    }

    #[test]
    fn campaign_runs_keep_their_shard_and_one_run_per_machine_and_shard() {
        let dir = TempDir::new().unwrap();
        let mut store = Store::open(&dir.path().join("c.db")).unwrap();
        let origin = |machine: Option<&str>, index: u32| RunOrigin {
            machine: machine.map(str::to_string),
            campaign: Some("nightly".into()),
            shard: Some(Shard::new(index, 4).unwrap()),
            plan_digest: Some("abc".into()),
            ..RunOrigin::default()
        };
        let a = store.create_run(&info(), &origin(None, 0), &functions(), &cases()).unwrap();
        let b = store.create_run(&info(), &origin(None, 3), &functions(), &cases()).unwrap();
        let c = store.create_run(&info(), &origin(Some("tpu-box"), 0), &functions(), &cases()).unwrap();
        store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        // A second run for (campaign, machine, shard) is refused by the store itself.
        assert!(store.create_run(&info(), &origin(None, 3), &functions(), &cases()).is_err());
        assert!(store.create_run(&info(), &origin(Some("tpu-box"), 0), &functions(), &cases()).is_err());
        let runs = store.campaign_runs("nightly").unwrap();
        assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), [a, b, c]);
        assert_eq!(runs[1].origin, origin(None, 3));
        assert_eq!(runs[1].origin.shard.unwrap().to_string(), "3/4");
        assert!(store.campaign_runs("other").unwrap().is_empty());
        let uids: HashSet<String> = store.runs().unwrap().into_iter().map(|r| r.uid).collect();
        assert_eq!(uids.len(), 5);
    }

    #[test]
    fn an_import_keeps_a_given_uid() {
        let dir = TempDir::new().unwrap();
        let mut store = Store::open(&dir.path().join("u.db")).unwrap();
        let mut data = imported("with uid");
        data.uid = Some("00112233445566778899aabbccddeeff".into());
        let ids = store.import_runs(&[data.clone(), imported("without")]).unwrap();
        assert_eq!(store.run(ids[0]).unwrap().uid, "00112233445566778899aabbccddeeff");
        assert_ne!(store.run(ids[1]).unwrap().uid, "00112233445566778899aabbccddeeff");
        // The same uid twice is refused (bundles check before importing), and nothing is kept.
        assert!(store.import_runs(&[data]).is_err());
        assert_eq!(store.runs().unwrap().len(), 2);
    }

    #[test]
    fn a_version_2_store_upgrades_and_its_samples_read_as_single_calls() {
        let (dir, mut store) = new_store();
        let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        let mut r = full_result(&cases()[0].key, "cpu");
        r.block_sizes.clear();
        store.record_result(run, &r).unwrap();
        // Make it what mlport wrote before blocked timing: no `calls` column, version 2.
        store
            .sqlite()
            .execute_batch(
                "DROP TABLE comparisons; DROP TABLE reference_outputs; ALTER TABLE samples DROP COLUMN calls; \
                 ALTER TABLE results DROP COLUMN compiles; ALTER TABLE results DROP COLUMN runqueue_wait_ns; \
                 ALTER TABLE results DROP COLUMN steady_wall_ns; DROP INDEX runs_uid; DROP INDEX runs_campaign; \
                 DROP INDEX runs_campaign_shard; ALTER TABLE runs DROP COLUMN uid; \
                 ALTER TABLE runs DROP COLUMN campaign; ALTER TABLE runs DROP COLUMN shard_index; \
                 ALTER TABLE runs DROP COLUMN shard_count; ALTER TABLE runs DROP COLUMN plan_digest; \
                 ALTER TABLE runs DROP COLUMN jax_x64; ALTER TABLE results DROP COLUMN graph_breaks; \
                 ALTER TABLE runs DROP COLUMN switches; ALTER TABLE results DROP COLUMN steady_stop; \
                 ALTER TABLE results DROP COLUMN session_first_calls; ALTER TABLE results DROP COLUMN measures; \
                 DELETE FROM schema_version WHERE version >= 3;",
            )
            .unwrap();
        let path = dir.path().join("mlport.db");
        drop(store);
        let mut store = Store::open(&path).unwrap();
        let v: i64 = store.sqlite().query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0)).unwrap();
        assert_eq!(v, schema::latest_version());
        let got = &store.results(run).unwrap()[0].result;
        assert_eq!(got.samples_ns, vec![30, 10, 20, i64::MAX as u64]);
        assert!(got.block_sizes.is_empty(), "old samples are single calls");
        assert_eq!((got.runqueue_wait_ns, got.steady_wall_ns), (None, None), "not measured before version 6");
        assert_eq!(got.compiles, None, "old results were not compiled");
        assert!(store.run(run).unwrap().info.jax_x64, "before version 8 JAX's workers always turned 64-bit mode on");
        assert_eq!(store.run(run).unwrap().info.switches, None, "not recorded before version 10");
        assert_eq!(got.steady_stop, None, "not recorded before version 11");
        assert_eq!(got.measures, None, "not recorded before version 13");
        assert!(got.session_first_calls_ns.is_empty(), "not recorded before version 12");
        // New results keep their block sizes.
        let mut r = full_result(&cases()[1].key, "cpu");
        r.block_sizes = vec![64, 64, 64, 64];
        store.record_result(run, &r).unwrap();
        assert_eq!(store.results(run).unwrap()[1].result.block_sizes, vec![64, 64, 64, 64]);
        // Block sizes must match the samples one to one.
        r.block_sizes = vec![2];
        assert!(matches!(store.record_result(run, &r), Err(StoreError::Invalid { .. })));
    }

    #[test]
    fn a_version_8_store_reads_its_torch_compiled_targets_as_fullgraph() {
        let (dir, mut store) = new_store();
        let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        let devices = [("torch", Framework::Torch), ("jax", Framework::Jax)].map(|(_, fw)| DeviceInfo {
            framework: fw,
            device: dev("cpu/compiled"),
            available: true,
            detail: "".into(),
        });
        store.record_devices(run, &devices).unwrap();
        for (key, device) in
            [(&cases()[0].key, "cpu/compiled"), (&cases()[0].key, "cpu"), (&cases()[2].key, "cpu/compiled")]
        {
            store.record_result(run, &bare_result(key, device)).unwrap();
        }
        // What mlport wrote before torch had two compiled modes: `compiled` was fullgraph=True.
        store
            .sqlite()
            .execute_batch(
                "ALTER TABLE results DROP COLUMN graph_breaks; ALTER TABLE runs DROP COLUMN switches; \
                 ALTER TABLE results DROP COLUMN steady_stop; ALTER TABLE results DROP COLUMN session_first_calls; \
                 ALTER TABLE results DROP COLUMN measures; DELETE FROM schema_version WHERE version >= 9;",
            )
            .unwrap();
        drop(store);
        let store = Store::open(&dir.path().join("mlport.db")).unwrap();
        let targets: Vec<(String, String)> =
            store.results(run).unwrap().into_iter().map(|r| (r.function.name, r.result.device.to_string())).collect();
        assert_eq!(
            targets,
            [
                ("torch.argsort".to_string(), "cpu".to_string()),
                ("torch.argsort".into(), "cpu/compiled_fullgraph".into()),
                ("jax.numpy.argsort".into(), "cpu/compiled".into())
            ],
            "torch's old compiled results were fullgraph; jax.jit keeps its name"
        );
        let recorded: Vec<String> = store.devices(run).unwrap().into_iter().map(|d| d.device.to_string()).collect();
        assert_eq!(recorded, ["cpu/compiled_fullgraph", "cpu/compiled"]);
        assert!(store.results(run).unwrap().iter().all(|r| r.result.graph_breaks.is_none()), "not counted then");
    }

    #[test]
    fn out_of_range_durations_are_refused() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &RunOrigin::default(), &functions(), &cases()).unwrap();
        let mut r = bare_result(&cases()[0].key, "cpu");
        r.samples_ns = vec![u64::MAX];
        assert!(matches!(store.record_result(run, &r), Err(StoreError::Invalid { .. })));
        assert!(store.results(run).unwrap().is_empty());
    }
}
