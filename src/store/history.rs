//! What earlier runs in the store say about how long a case takes: the expected wall time
//! the parallel runner schedules longest-first by ([`crate::runner::schedule`]).

use std::collections::HashMap;

use super::error::{OrStore, StoreError};
use super::open::Store;
use crate::params;

impl Store {
    /// Mean wall time per case, ms, of every result stored for the same case key
    /// (`framework/function/case_id/dtype`) and target, over all runs but `except_run`; keyed by
    /// (case key, target). Cases never run before are absent.
    ///
    /// Errors: the store's.
    pub fn expected_wall_ms(&self, except_run: i64) -> Result<HashMap<(String, String), f64>, StoreError> {
        self.read(|c, ctx| {
            let rows: Vec<(String, String, f64)> = c
                .query(
                    "SELECT c.key, r.device, AVG(r.wall_ms) FROM results r JOIN cases c ON c.id = r.case_id \
                     WHERE r.run_id <> $1 GROUP BY c.key, r.device",
                    params![except_run],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )
                .or_store(ctx)?;
            Ok(rows.into_iter().map(|(k, d, ms)| ((k, d), ms)).collect())
        })
    }
}
