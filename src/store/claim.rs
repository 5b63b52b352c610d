//! Claiming a run for execution, so that two processes never execute one run at once — also on
//! two machines writing to one PostgreSQL database (two pods of one Kubernetes index, a Slurm
//! task requeued while the first still runs, a user's `--resume` beside a running shard). On
//! PostgreSQL the claim is a session-level advisory lock (`pg_try_advisory_lock`) on the run's
//! id, held by the connection until the process ends (or the store is dropped); a connection
//! lost and re-made takes its claims again, and when another process has claimed the run
//! meanwhile, this one stops. On SQLite (one machine) the run's lock file does this job
//! (`workspace::RunFolders::lock_run`), and a claim is only recorded.

use super::conn::Conn;
use super::error::{Ctx, OrStore, StoreError};
use super::open::Store;
use crate::params;

/// The first key of a run's advisory lock: "mlpr" in ASCII (the second is the run id).
const RUN_LOCK_CLASS: i32 = 0x6d6c_7072;

impl Store {
    /// Claims run `run` for this process until it ends.
    ///
    /// Errors: [`StoreError::Claimed`] when another process (on any machine) has claimed it;
    /// the engine's errors.
    pub fn claim_run(&self, run: i64) -> Result<(), StoreError> {
        self.read(|c, ctx| try_claim(c, ctx, run, false))?;
        self.claims.borrow_mut().push(run);
        Ok(())
    }

    /// Takes this store's claims again on a new connection (after the old one was lost).
    ///
    /// Errors: [`StoreError::Claimed`] when another process claimed one of the runs while the
    /// connection was lost.
    pub(super) fn reclaim(&self, conn: &mut Conn) -> Result<(), StoreError> {
        let ctx = Ctx(self.location());
        self.claims.borrow().iter().try_for_each(|run| try_claim(conn, ctx, *run, true))
    }
}

/// Takes run `run`'s advisory lock on PostgreSQL (nothing on SQLite).
fn try_claim(c: &mut Conn, ctx: Ctx<'_>, run: i64, again: bool) -> Result<(), StoreError> {
    if matches!(c, Conn::Sqlite(_)) {
        return Ok(());
    }
    let key = i32::try_from(run).map_err(|_| ctx.invalid(format!("run id {run} does not fit a lock key")))?;
    let got: bool =
        c.query_value("SELECT pg_try_advisory_lock($1::int4, $2::int4)", params![RUN_LOCK_CLASS, key]).or_store(ctx)?;
    if got {
        return Ok(());
    }
    // Who holds it, for the message (the holder may end meanwhile: then none is named).
    let holder: Option<String> = c
        .query_opt(
            "SELECT a.application_name || ' (connected from ' || COALESCE(host(a.client_addr), 'a local socket') || \
             ' since ' || to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') || \
             ', server process ' || a.pid || ')' \
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::int4::oid AND l.objid = $2::int4::oid",
            params![RUN_LOCK_CLASS, key],
            |r| r.get(0),
        )
        .or_store(ctx)?;
    Err(StoreError::Claimed { store: ctx.0.clone(), run, again, holder: holder.unwrap_or_default() })
}
