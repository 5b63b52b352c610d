//! What a run's store holds, without what differs between two runs of the same plan (ids,
//! times, latency samples, file paths): every (case, target) outcome, every comparison and
//! every float64 reference, for the fault tests to assert "the faulted run's store equals an
//! unfaulted run of the same plan" (issue 23).

use std::collections::BTreeMap;
use std::path::Path;

use mlport::store::Store;

/// A run's outcomes, comparisons and references, keyed and in key order.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    /// The run's state (`finished`, `interrupted`, ...).
    pub state: String,
    /// Planned cases.
    pub planned: u64,
    /// (case key, target) → outcome, reason, error type, message and output descriptions.
    pub results: BTreeMap<(String, String), String>,
    /// (case key, target, against, output) → verdict and the comparison's numbers.
    pub comparisons: BTreeMap<(String, String, String, u32), String>,
    /// Reference key → outcome, message and output descriptions.
    pub references: BTreeMap<String, String>,
}

/// The output descriptions without their paths (which name the run folder).
fn outputs(v: &serde_json::Value) -> String {
    let mut v = v.clone();
    if let Some(list) = v.as_array_mut() {
        for o in list {
            if let Some(o) = o.as_object_mut() {
                o.remove("path");
            }
        }
    }
    v.to_string()
}

/// The latest run of the SQLite store at `db`.
pub fn of(db: &Path) -> Snapshot {
    let store = Store::open(db).unwrap();
    let run = store.latest_run().unwrap().expect("a run").id;
    of_run(&store, run)
}

/// Run `run` of `store`.
pub fn of_run(store: &Store, run: i64) -> Snapshot {
    let summary = store.run(run).unwrap();
    let results = store
        .results(run)
        .unwrap()
        .into_iter()
        .map(|r| {
            let c = &r.result;
            let value = format!(
                "{} {:?} {:?} {:?} compared={} {}",
                c.outcome,
                c.reason,
                c.error_type,
                c.message,
                r.compared,
                outputs(&c.outputs)
            );
            ((r.case.key.clone(), c.device.to_string()), value)
        })
        .collect();
    let comparisons = store
        .comparisons(run)
        .unwrap()
        .into_iter()
        .map(|c| {
            let value = format!(
                "{:?} {:?} rtol={} atol={} n={} bad={} abs={:?} rel={:?} ulp={:?} nan={} inf={} shape={} dtype={}",
                c.verdict,
                c.rule,
                c.rtol,
                c.atol,
                c.elements,
                c.mismatched,
                c.max_abs,
                c.max_rel,
                c.max_ulp,
                c.nan_mismatch,
                c.inf_mismatch,
                c.shape_changed,
                c.dtype_changed
            );
            ((c.case_key, c.device.to_string(), c.against.to_string(), c.output_index), value)
        })
        .collect();
    let references = store
        .references(run)
        .unwrap()
        .into_iter()
        .map(|r| (r.key.clone(), format!("{:?} {:?} {}", r.outcome, r.message, outputs(&r.outputs))))
        .collect();
    Snapshot { state: summary.state.to_string(), planned: summary.cases_planned, results, comparisons, references }
}

/// Every difference between `got` and `want`, one line each (empty when they are equal).
pub fn differences(got: &Snapshot, want: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    if got.state != want.state {
        out.push(format!("run state {} (unfaulted: {})", got.state, want.state));
    }
    if got.planned != want.planned {
        out.push(format!("{} planned cases (unfaulted: {})", got.planned, want.planned));
    }
    fn same<K: std::fmt::Debug + Ord>(
        got: &BTreeMap<K, String>,
        want: &BTreeMap<K, String>,
        part: &str,
        out: &mut Vec<String>,
    ) {
        for (k, v) in want {
            match got.get(k) {
                Some(g) if g == v => {}
                Some(g) => out.push(format!("{part} {k:?}: {g} (unfaulted: {v})")),
                None => out.push(format!("{part} {k:?} is missing (unfaulted: {v})")),
            }
        }
        for (k, g) in got {
            if !want.contains_key(k) {
                out.push(format!("{part} {k:?}: {g} is not in the unfaulted run"));
            }
        }
    }
    same(&got.results, &want.results, "result", &mut out);
    same(&got.comparisons, &want.comparisons, "comparison", &mut out);
    same(&got.references, &want.references, "reference", &mut out);
    out
}

/// Panics listing every difference between `got` and `want`.
pub fn assert_same(got: &Snapshot, want: &Snapshot, what: &str) {
    let diff = differences(got, want);
    assert!(diff.is_empty(), "{what}: the store differs from an unfaulted run's:\n{}", diff.join("\n"));
}

/// The processes descending from `root` (by walking /proc's parent links), as (pid, command).
pub fn descendants(root: u32) -> Vec<(u32, String)> {
    let mut parent: BTreeMap<u32, (u32, String)> = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // pid (comm) state ppid ...: comm may hold spaces and parentheses; split after the last ')'.
        let Some(close) = stat.rfind(')') else { continue };
        let comm = stat[stat.find('(').map_or(0, |i| i + 1)..close].to_string();
        let ppid = stat[close + 1..].split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        parent.insert(pid, (ppid, comm));
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, (ppid, comm)) in &parent {
            if *ppid == p {
                out.push((*pid, comm.clone()));
                frontier.push(*pid);
            }
        }
    }
    out
}

/// Processes anywhere on the machine whose environment holds `var=value` (a tag the test set on
/// the mlport it started, which every worker and every process a case starts inherits): what a
/// killed mlport may have left behind, reparented away from the test, as (pid, command line).
pub fn processes_tagged(var: &str, value: &str) -> Vec<(u32, String)> {
    let tag = format!("{var}={value}");
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        if env.split(|b| *b == 0).any(|e| e == tag.as_bytes()) {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            out.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    out
}
