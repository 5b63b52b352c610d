//! The store's side of numeric agreement (schema 4): planned float64 references, their
//! results, and the comparisons of results with them; the outcome [`crate::outcome`] decided
//! from a result's comparisons is written in the same transaction as they are.

use std::collections::HashSet;

use super::conn::Conn;
use super::error::{Ctx, OrStore, StoreError};
use super::open::Store;
use super::open::ensure_run;
use super::runs::{json, parse, parse_column, parse_opt, spec_column};
use crate::model::{Against, CaseRow, ComparisonRow, FunctionRow, Outcome, ReferenceRow, RunInfo, RunOrigin, Target};
use crate::outcome::Decision;
use crate::params;

impl Store {
    /// [`Store::create_run`] with the run's float64 references planned in the SAME transaction
    /// (what `mlport run` does): a run is never stored without the references its plan has, so
    /// no kill can leave one that resumes to `finished` with every check lost (issue 23, fault 2).
    ///
    /// Errors: those of [`Store::create_run`]; nothing is written on any error.
    pub fn create_planned_run(
        &mut self,
        info: &RunInfo,
        origin: &RunOrigin,
        functions: &[FunctionRow],
        cases: &[CaseRow],
        references: &[ReferenceRow],
    ) -> Result<i64, StoreError> {
        self.create_run_with(info, origin, functions, cases, |tx, ctx, run| plan_in(tx, ctx, run, references))
    }

    /// Plans float64 references for a run; keys already planned are left as they are (so a
    /// resumed run keeps what it computed). Errors: [`StoreError::UnknownRun`].
    pub fn plan_references(&mut self, run: i64, refs: &[ReferenceRow]) -> Result<(), StoreError> {
        self.write(|tx, ctx| {
            ensure_run(tx, ctx, run)?;
            plan_in(tx, ctx, run, refs)
        })
    }

    /// Stores a computed reference (or why it could not be computed), committed on return.
    /// Errors: [`StoreError::Invalid`] when the key was not planned in this run.
    pub fn record_reference(
        &mut self,
        run: i64,
        key: &str,
        outcome: Outcome,
        message: Option<&str>,
        outputs: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.write(|tx, ctx| record_in(tx, ctx, run, key, outcome, message, outputs))
    }

    /// Every planned reference of the run, computed or not, in key order.
    /// Errors: [`StoreError::UnknownRun`].
    pub fn references(&self, run: i64) -> Result<Vec<ReferenceRow>, StoreError> {
        self.read(|c, ctx| {
            ensure_run(c, ctx, run)?;
            c.query(
                "SELECT key, op, case_id, dtype, function, seed, spec, outcome, message, outputs, framework \
                 FROM reference_outputs WHERE run_id = $1 ORDER BY key",
                params![run],
                |row| {
                    let key: String = row.get(0)?;
                    Ok(ReferenceRow {
                        framework: parse_column(row, 10, "reference_outputs.framework")?,
                        op: row.get(1)?,
                        case_id: row.get(2)?,
                        dtype: parse_column(row, 3, "reference_outputs.dtype")?,
                        function: row.get(4)?,
                        seed: parse(row, 5)?,
                        spec: spec_column(row, 6, "reference_outputs.spec", &key)?,
                        key,
                        outcome: parse_opt(row, 7)?,
                        message: row.get(8)?,
                        outputs: json(row, 9)?,
                    })
                },
            )
            .or_store(ctx)
        })
    }

    /// Stores the comparisons of one result (all against one reference, usually) and, when
    /// `verdict` is given (the outcome [`crate::outcome::wrong_result`] decided from them),
    /// writes its outcome, reason and message into the result, in one transaction. A comparison
    /// already stored for the same (result, against, output) is replaced.
    ///
    /// Errors: [`StoreError::Invalid`] when the run has no result for the case on the device.
    pub fn record_comparisons(
        &mut self,
        run: i64,
        case_key: &str,
        device: &Target,
        rows: &[ComparisonRow],
        verdict: Option<&Decision>,
    ) -> Result<(), StoreError> {
        self.write(|tx, ctx| {
            let result: i64 = tx
                .query_opt(
                    "SELECT r.id FROM results r JOIN cases c ON c.id = r.case_id \
                     WHERE c.run_id = $1 AND c.key = $2 AND r.device = $3",
                    params![run, case_key, device.as_str()],
                    |r| r.get(0),
                )
                .or_store(ctx)?
                .ok_or_else(|| ctx.invalid(format!("run {run} has no result for `{case_key}` on {device}")))?;
            compare_in(tx, ctx, result, rows)?;
            if let Some(d) = verdict {
                tx.execute(
                    "UPDATE results SET outcome = $1, reason = $2, message = $3 WHERE id = $4",
                    params![d.outcome.as_str(), d.reason.map(|r| r.as_str()), d.message, result],
                )
                .or_store(ctx)?;
            }
            Ok(())
        })
    }

    /// Every comparison of the run, in planned case order, device, reference, output.
    /// Errors: [`StoreError::UnknownRun`].
    pub fn comparisons(&self, run: i64) -> Result<Vec<ComparisonRow>, StoreError> {
        self.read(|c, ctx| {
            ensure_run(c, ctx, run)?;
            c.query(
                "SELECT c.key, r.device, m.against, m.reference, m.output_index, m.rule, m.rtol, m.atol, m.verdict, \
                 m.elements, m.mismatched, m.max_abs, m.max_rel, m.max_ulp, m.nan_mismatch, m.inf_mismatch, \
                 m.shape_changed, m.dtype_changed, m.summary, m.detail \
                 FROM comparisons m JOIN results r ON r.id = m.result_id JOIN cases c ON c.id = r.case_id \
                 WHERE r.run_id = $1 ORDER BY c.ordinal, r.device, m.against, m.output_index",
                params![run],
                |row| {
                    Ok(ComparisonRow {
                        case_key: row.get(0)?,
                        device: parse(row, 1)?,
                        against: parse_column(row, 2, "comparisons.against")?,
                        reference: row.get(3)?,
                        output_index: row.get(4)?,
                        rule: parse_column(row, 5, "comparisons.rule")?,
                        rtol: row.get(6)?,
                        atol: row.get(7)?,
                        verdict: parse_column(row, 8, "comparisons.verdict")?,
                        elements: row.get(9)?,
                        mismatched: row.get(10)?,
                        max_abs: row.get(11)?,
                        max_rel: row.get(12)?,
                        max_ulp: row.get(13)?,
                        nan_mismatch: row.get(14)?,
                        inf_mismatch: row.get(15)?,
                        shape_changed: row.get(16)?,
                        dtype_changed: row.get(17)?,
                        summary: row.get(18)?,
                        detail: json(row, 19)?,
                    })
                },
            )
            .or_store(ctx)
        })
    }

    /// `(case key, device, against)` of every comparison stored for the run: what a
    /// comparison pass can skip. Errors: [`StoreError::UnknownRun`].
    pub fn compared(&self, run: i64) -> Result<HashSet<(String, Target, Against)>, StoreError> {
        self.read(|c, ctx| {
            ensure_run(c, ctx, run)?;
            let rows = c
                .query(
                    "SELECT DISTINCT c.key, r.device, m.against FROM comparisons m \
                     JOIN results r ON r.id = m.result_id JOIN cases c ON c.id = r.case_id WHERE r.run_id = $1",
                    params![run],
                    |r| Ok((r.get(0)?, parse(r, 1)?, parse_column(r, 2, "comparisons.against")?)),
                )
                .or_store(ctx)?;
            Ok(rows.into_iter().collect())
        })
    }

    /// The run a result belongs to, `None` for an unknown id.
    pub fn run_of_result(&self, result: i64) -> Result<Option<i64>, StoreError> {
        self.read(|c, ctx| {
            c.query_opt("SELECT run_id FROM results WHERE id = $1", params![result], |r| r.get(0)).or_store(ctx)
        })
    }
}

/// Plans `refs` for `run` inside the transaction `tx`; keys already planned are left as they are.
pub(super) fn plan_in(tx: &mut Conn, ctx: Ctx<'_>, run: i64, refs: &[ReferenceRow]) -> Result<(), StoreError> {
    let rows = refs
        .iter()
        .map(|r| {
            let spec = ctx.json(&r.spec, "reference spec")?;
            Ok(params![
                run,
                r.key,
                r.op,
                r.case_id,
                r.dtype.as_str(),
                r.function,
                r.seed.to_string(),
                spec,
                "[]",
                r.framework.as_str()
            ]
            .to_vec())
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    // Multi-row inserts (one round trip per 256 references on PostgreSQL).
    tx.insert_rows(
        "INSERT INTO reference_outputs (run_id, key, op, case_id, dtype, function, seed, spec, outputs, framework)",
        "ON CONFLICT (run_id, key) DO NOTHING",
        &rows,
        |_| Ok(()),
    )
    .or_store(ctx)?;
    Ok(())
}

/// Stores a computed reference's outcome, message and outputs inside `tx`. Errors:
/// [`StoreError::Invalid`] when the key was not planned in this run.
pub(super) fn record_in(
    tx: &mut Conn,
    ctx: Ctx<'_>,
    run: i64,
    key: &str,
    outcome: Outcome,
    message: Option<&str>,
    outputs: &serde_json::Value,
) -> Result<(), StoreError> {
    let outputs = ctx.json(outputs, "reference outputs")?;
    let changed = tx
        .execute(
            "UPDATE reference_outputs SET outcome = $1, message = $2, outputs = $3 WHERE run_id = $4 AND key = $5",
            params![outcome.as_str(), message, outputs, run, key],
        )
        .or_store(ctx)?;
    if changed == 0 {
        return Err(ctx.invalid(format!("reference `{key}` is not planned in run {run}")));
    }
    Ok(())
}

/// Stores the comparisons of the result with id `result` inside `tx`; one already stored for
/// the same (result, against, output) is replaced.
pub(super) fn compare_in(tx: &mut Conn, ctx: Ctx<'_>, result: i64, rows: &[ComparisonRow]) -> Result<(), StoreError> {
    for c in rows {
        let detail = ctx.json(&c.detail, "comparison detail")?;
        let count = |v: u64, what: &str| i64::try_from(v).map_err(|_| ctx.invalid(format!("{what} {v} is beyond i64")));
        tx.execute(
            "INSERT INTO comparisons (result_id, against, reference, output_index, rule, rtol, atol, verdict, \
             elements, mismatched, max_abs, max_rel, max_ulp, nan_mismatch, inf_mismatch, shape_changed, \
             dtype_changed, summary, detail) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) \
             ON CONFLICT (result_id, against, output_index) DO UPDATE SET reference = excluded.reference, \
             rule = excluded.rule, rtol = excluded.rtol, atol = excluded.atol, verdict = excluded.verdict, \
             elements = excluded.elements, mismatched = excluded.mismatched, max_abs = excluded.max_abs, \
             max_rel = excluded.max_rel, max_ulp = excluded.max_ulp, nan_mismatch = excluded.nan_mismatch, \
             inf_mismatch = excluded.inf_mismatch, shape_changed = excluded.shape_changed, \
             dtype_changed = excluded.dtype_changed, summary = excluded.summary, detail = excluded.detail",
            params![
                result,
                c.against.to_string(),
                c.reference,
                c.output_index,
                c.rule.to_string(),
                c.rtol,
                c.atol,
                c.verdict.as_str(),
                count(c.elements, "elements")?,
                count(c.mismatched, "mismatched")?,
                c.max_abs,
                c.max_rel,
                c.max_ulp,
                count(c.nan_mismatch, "nan_mismatch")?,
                count(c.inf_mismatch, "inf_mismatch")?,
                c.shape_changed,
                c.dtype_changed,
                c.summary,
                detail
            ],
        )
        .or_store(ctx)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::compare::{Rule, Tolerance};
    use crate::model::{
        Against, CaseResult, CaseRow, ComparisonRow, ComparisonVerdict, Framework, FunctionRow, Outcome, Reason,
        ReferenceRow, RunInfo, Target,
    };
    use crate::outcome::Decision;
    use crate::store::Store;

    fn comparison(key: &str, against: Against, verdict: ComparisonVerdict) -> ComparisonRow {
        let (rule, tol) = (Rule::UpToSign { axis: -1 }, Tolerance::for_dtype(crate::model::Dtype::Float32));
        let row = ComparisonRow::incomparable(key, &Target::cpu(), &against, "numpy.exp in float64", 0, rule, tol);
        ComparisonRow { verdict, elements: 4, mismatched: 1, max_abs: Some(0.5), summary: "1 of 4".into(), ..row }
    }

    /// torch.exp's case `c` at float32.
    fn exp_case() -> CaseRow {
        CaseRow {
            key: "torch/torch.exp/c/float32".into(),
            framework: Framework::Torch,
            function: "torch.exp".into(),
            case_id: "c".into(),
            dtype: Some(crate::model::Dtype::Float32),
            seed: 0,
            spec: crate::model::Spec::from(crate::model::CaseSpec::new("torch.exp", "c")),
        }
    }

    #[test]
    fn comparisons_and_the_decided_outcome_round_trip_and_unknown_spellings_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let case = exp_case();
        let f = FunctionRow::new(Framework::Torch, "torch.exp");
        let run = store
            .create_run(&RunInfo::blank("test", Target::cpu()), &Default::default(), &[f], std::slice::from_ref(&case))
            .unwrap();
        store.record_result(run, &CaseResult::new(&case.key, Target::cpu(), Outcome::Pass)).unwrap();
        let rows = [
            comparison(&case.key, Against::Float64, ComparisonVerdict::Disagree),
            comparison(&case.key, Against::Target("cuda:0".parse().unwrap()), ComparisonVerdict::Agree),
        ];
        let wrong = Decision::with(Outcome::WrongResult, Some(Reason::WrongResult), "disagrees");
        store.record_comparisons(run, &case.key, &Target::cpu(), &rows, Some(&wrong)).unwrap();
        let stored = store.comparisons(run).unwrap();
        assert_eq!(stored.len(), 2);
        assert!(rows.iter().all(|r| stored.contains(r)), "{stored:#?}");
        let raw: Vec<(String, String, String)> = store
            .sqlite()
            .prepare("SELECT against, rule, verdict FROM comparisons ORDER BY against")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            raw,
            [
                ("device:cuda:0".to_string(), "up_to_sign_rows".to_string(), "agree".to_string()),
                ("float64".into(), "up_to_sign_rows".into(), "disagree".into())
            ],
            "the stored spellings"
        );
        let r = &store.results(run).unwrap()[0].result;
        assert_eq!(
            (r.outcome, r.reason, r.message.as_deref()),
            (Outcome::WrongResult, Some(Reason::WrongResult), Some("disagrees"))
        );
        let compared = store.compared(run).unwrap();
        assert!(compared.contains(&(case.key.clone(), Target::cpu(), Against::Float64)), "{compared:?}");

        for (column, value, says) in [
            ("verdict", "maybe", "comparisons.verdict: unknown comparison verdict `maybe`"),
            ("rule", "roughly", "comparisons.rule: unknown comparison rule \"roughly\""),
            ("against", "float32", "comparisons.against: unknown comparison reference `float32`"),
        ] {
            store.sqlite().execute_batch("SAVEPOINT bad").unwrap();
            let bad = format!("UPDATE comparisons SET {column} = ?1 WHERE against = 'float64'");
            store.sqlite().execute(&bad, [value]).unwrap();
            let err = crate::store::runs::tests::chain(&store.comparisons(run).unwrap_err());
            store.sqlite().execute_batch("ROLLBACK TO bad; RELEASE bad").unwrap();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn a_planned_run_stores_its_references_with_it_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let case = exp_case();
        let reference = ReferenceRow {
            key: "reference/exp/c/float32".into(),
            framework: Framework::Numpy,
            op: "exp".into(),
            case_id: "c".into(),
            dtype: crate::model::Dtype::Float32,
            function: "numpy.exp".into(),
            seed: 0,
            spec: crate::model::CaseSpec::new("numpy.exp", "c"),
            outcome: None,
            message: None,
            outputs: serde_json::json!([]),
        };
        let f = FunctionRow::new(Framework::Torch, "torch.exp");
        let info = RunInfo::blank("test", Target::cpu());
        let refs = std::slice::from_ref(&reference);
        let run = store
            .create_planned_run(&info, &Default::default(), std::slice::from_ref(&f), std::slice::from_ref(&case), refs)
            .unwrap();
        let stored = store.references(run).unwrap();
        assert_eq!((stored.len(), stored[0].key.as_str(), stored[0].outcome), (1, "reference/exp/c/float32", None));
        // A plan the store refuses (a case listed twice) leaves no run and no reference behind.
        let twice = [case.clone(), case];
        assert!(store.create_planned_run(&info, &Default::default(), &[f], &twice, refs).is_err());
        assert_eq!(store.runs().unwrap().len(), 1);
        let orphans: i64 = store
            .sqlite()
            .query_row("SELECT count(*) FROM reference_outputs WHERE run_id <> ?1", [run], |r| r.get(0))
            .unwrap();
        assert_eq!(orphans, 0);
    }
}
