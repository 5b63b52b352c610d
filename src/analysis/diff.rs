//! What changed from one set of runs (A, the baseline) to another (B): per function × target,
//! the cases whose counted outcome changed (newly failing, fixed, newly wrong, a different
//! failure reason, counted on one side only), the outputs whose agreement with the float64
//! reference changed (verdict, or the largest error moved by `error_factor` or more), and the
//! functions whose steady-state slowdown B/A has a bootstrap interval wholly beyond
//! `threshold` (or wholly below its inverse: a speed-up) — with both sides' versions.
//!
//! Outcomes are counted by the portability report's rules ([`super::portability::counted`]:
//! device-attributable within each run); slowdowns are [`super::slowdown`]'s per-function
//! median ratios with their bootstrap intervals ([`crate::stats::ratio_of_medians`]), seeded
//! with run A's stored seed. Cases are matched by their key (`framework/function/case/dtype`)
//! and target, so two runs of the same catalogue line up whatever their ids. Nothing is
//! guessed: a case on one side only is listed as added or removed, never as a change of
//! outcome. Rendered by [`crate::render::diff`].

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use super::campaign::machine_of;
use super::portability::{Counted, ReportOptions, counted, failure_message};
use super::slowdown::{self, Measure, SlowdownOptions, fmt_threshold};
use crate::model::{Against, ComparisonRow, ComparisonVerdict, Dtype, Framework, FunctionStatus, Reason};
use crate::model::{ResultRow, RunState, RunSummary, Target};
use crate::stats::{Estimate, StatsConfig};

/// What changed for one function on one target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::EnumString, strum::VariantArray, strum::EnumCount)]
#[strum(serialize_all = "snake_case", parse_err_ty = String, parse_err_fn = unknown_change_kind)]
pub enum ChangeKind {
    /// A case that passed on A fails on B (an error, timeout or crash).
    NewFailure,
    /// A case that passed (or failed with an error) on A ran on B but disagreed with its
    /// reference (`wrong_result`).
    NewWrongResult,
    /// A case that failed or was wrong on A passes on B.
    Fixed,
    /// A case that failed on both sides, for different reasons (`wrong_result` counts as one).
    ReasonChanged,
    /// A case counted on one side and not on the other (skipped, a harness error, or a failure
    /// excused by the device-attributable rule).
    CountingChanged,
    /// An output's verdict against the float64 reference changed (agree, disagree, incomparable).
    AgreementChanged,
    /// An output agrees on both sides, but its largest error (in ULPs; absolute where the dtype
    /// has none) moved by the error factor or more.
    ErrorMoved,
    /// An output of a case that passes on both sides was compared with the float64 reference on
    /// A and with nothing on B (its reference could not be computed there, say SciPy was
    /// missing): checked → "ran, unchecked", a loss of coverage `--fail-on now_unchecked` gates.
    NowUnchecked,
    /// The reverse: unchecked on A, compared with the float64 reference on B.
    NowChecked,
    /// The function's median steady-state time on B over A has a bootstrap interval wholly above
    /// the threshold.
    Slowdown,
    /// The interval lies wholly below 1 / threshold: faster on B.
    Speedup,
    /// Cases of the function on this target that only B has.
    Added,
    /// Cases that only A has.
    Removed,
}

impl ChangeKind {
    /// Every kind, in the order rows are sorted and counted.
    pub const ALL: [ChangeKind; <ChangeKind as strum::EnumCount>::COUNT] =
        *<ChangeKind as strum::VariantArray>::VARIANTS.first_chunk().expect("every variant");

    /// The spelling in every rendering and in `--fail-on`: `new_failure`, `slowdown`, ...
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The error of parsing an unknown [`ChangeKind`], listing the kinds.
fn unknown_change_kind(s: &str) -> String {
    let all: Vec<&str> = ChangeKind::ALL.iter().map(|k| k.as_str()).collect();
    format!("unknown change `{s}` (expected one of {})", all.join(", "))
}

/// How to compare. Defaults: slowdowns beyond 1.5×, errors moved by 2× or more,
/// device-attributable counting, the default [`StatsConfig`].
#[derive(Clone, Debug, PartialEq)]
pub struct DiffOptions {
    /// A function is slower on B when the bootstrap interval of its median ratio B/A lies
    /// wholly above this (and faster when wholly below its inverse).
    pub threshold: f64,
    /// An agreeing output's largest error "moved" when it grew or shrank by this factor.
    pub error_factor: f64,
    /// How failures are counted on each side (the portability report's options).
    pub report: ReportOptions,
    /// Bootstrap settings; callers seed them with run A's stored seed.
    pub stats: StatsConfig,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            threshold: 1.5,
            error_factor: 2.0,
            report: ReportOptions::default(),
            stats: StatsConfig::default(),
        }
    }
}

/// One run of a side, as it is shown.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunRef {
    /// The run's id in the store.
    pub id: i64,
    /// The run's label.
    pub label: Option<String>,
    /// The machine it was measured on (its recorded machine, else its host).
    pub machine: String,
    /// When it started (RFC 3339 UTC).
    pub started_at: String,
    /// Where it stands: a run that is not `finished` is compared as it stands
    /// ([`DiffReport::incomplete`]).
    pub state: RunState,
}

/// One side of the diff: its runs and the versions they ran with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffSide {
    /// What the user named (`3`, `torch-2.15`).
    pub name: String,
    /// The runs the side is made of, oldest first.
    pub runs: Vec<RunRef>,
    /// Each framework's version (`not importable` when it failed to import); several runs
    /// with different versions are joined with `, `.
    pub frameworks: BTreeMap<Framework, String>,
    /// The workers' Python version(s).
    pub python: String,
    /// The mlport version(s) that made the runs.
    pub mlport: String,
}

/// One case's (or output's) state on both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CaseChange {
    /// The case's id within its function.
    pub case_id: String,
    /// The case's dtype; `None` for imported tests.
    pub dtype: Option<Dtype>,
    /// The output compared, for agreement changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<u32>,
    /// On A, in words: `pass`, `dtype_unsupported: NotImplementedError: ...`, `agree, 0.5 ULP`;
    /// `—` when A has no such case.
    pub before: String,
    /// On B, in words.
    pub after: String,
    /// A's result id (for `mlport repro`), when A has the case.
    pub result_a: Option<i64>,
    /// B's result id.
    pub result_b: Option<i64>,
}

/// A function's slowdown from A to B, for slowdown and speed-up rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimingChange {
    /// Cases timed on both sides.
    pub cases: usize,
    /// Median steady-state time per call on A, ns.
    pub a_median_ns: f64,
    /// On B, ns.
    pub b_median_ns: f64,
    /// B / A with its bootstrap interval.
    pub ratio: Estimate,
    /// Some case on either side had an unstable summary (noisy timings, CPUs held by others).
    pub unstable: bool,
}

/// One change: a kind of change of one function on one target of one pair of machines, with
/// the cases it concerns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// What changed.
    pub kind: ChangeKind,
    /// The machine of A's side of the change ([`crate::analysis::campaign::machine_of`]).
    pub machine_a: String,
    /// The machine of B's side: the same name as `machine_a`, except when each side has one
    /// machine of its own ([`MachinePair`]).
    pub machine_b: String,
    /// The function's framework.
    pub framework: Framework,
    /// The function's name.
    pub function: String,
    /// The target (device in a mode).
    pub target: Target,
    /// The function's status on this target on A (`None`: nothing counted, or not run).
    pub status_a: Option<FunctionStatus>,
    /// On B.
    pub status_b: Option<FunctionStatus>,
    /// The cases (or outputs) concerned, in planned order; empty for slowdowns.
    pub cases: Vec<CaseChange>,
    /// The timing, for slowdowns and speed-ups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<TimingChange>,
}

/// How much was compared.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Compared {
    /// (function, target) pairs present on both sides.
    pub functions: usize,
    /// Cases (case × dtype × target) present on both sides.
    pub cases: usize,
    /// Outputs compared with the float64 reference on both sides.
    pub outputs: usize,
    /// Functions whose timings were compared (steady state, on a target both sides have).
    pub timed: usize,
}

/// Two machines whose results are compared: the same name on both sides, or each side's only
/// machine (two runs, or two one-machine campaigns, on different machines).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MachinePair {
    /// A's machine.
    pub a: String,
    /// B's machine.
    pub b: String,
    /// A's runs on it (ids).
    pub runs_a: Vec<i64>,
    /// B's runs on it.
    pub runs_b: Vec<i64>,
}

/// A machine that only one side has (when a side spans several machines), with its runs; its
/// results are compared with nothing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoneMachine {
    /// The machine's name.
    pub machine: String,
    /// Its runs (ids).
    pub runs: Vec<i64>,
}

/// A framework on a target that only one side of a machine pair ran (a run of NumPy alone
/// against a run of every framework, a device one side lacked): its cases are counted here, not
/// listed one by one as added or removed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoneTarget {
    /// `A` or `B`: the side that ran it.
    pub side: &'static str,
    /// The machine it ran on.
    pub machine: String,
    pub framework: Framework,
    pub target: Target,
    /// Functions with a result there.
    pub functions: usize,
    /// Their results (case × dtype).
    pub cases: usize,
}

/// The whole diff.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffReport {
    /// The baseline.
    pub a: DiffSide,
    /// What is compared with it.
    pub b: DiffSide,
    /// The pairs of machines compared, by name.
    pub machines: Vec<MachinePair>,
    /// Machines of A that B does not have.
    pub only_a: Vec<LoneMachine>,
    /// Machines of B that A does not have.
    pub only_b: Vec<LoneMachine>,
    /// Frameworks × targets of a machine pair that one side has and the other does not, with their
    /// counts (not compared, not listed as changes).
    pub only_one_side: Vec<LoneTarget>,
    /// The slowdown threshold.
    pub threshold: f64,
    /// The error factor.
    pub error_factor: f64,
    /// How much was compared.
    pub compared: Compared,
    /// One sentence per run of either side that has not finished (still running, killed,
    /// interrupted, or left incomplete): how many of its planned cases have a result, and that
    /// the others show as added or removed rather than as changes. Empty when every run finished.
    pub incomplete: Vec<String>,
    /// Changes by kind (only kinds present).
    pub counts: BTreeMap<ChangeKind, usize>,
    /// Sorted by kind, then framework, function, target and machine.
    pub changes: Vec<Change>,
    /// How it was computed: the footer of every rendering.
    pub rule: String,
}

impl DiffReport {
    /// Whether any change is of one of `kinds` (`--fail-on`).
    pub fn has_any(&self, kinds: &[ChangeKind]) -> bool {
        self.changes.iter().any(|c| kinds.contains(&c.kind))
    }
}

/// One side's input: its runs, each with its results and its comparisons, as
/// [`crate::store::Store::results`] and [`crate::store::Store::comparisons`] return them.
pub struct SideData<'a> {
    /// What the user named.
    pub name: String,
    /// The runs, each with its rows and comparisons.
    pub runs: Vec<(&'a RunSummary, &'a [ResultRow], &'a [ComparisonRow])>,
}

/// A case's counted state on one side.
#[derive(Clone, Debug, PartialEq)]
enum State {
    Pass,
    Fail(Reason, String),
    Wrong(String),
    NotCounted(&'static str),
}

impl State {
    fn words(&self) -> String {
        match self {
            State::Pass => "pass".into(),
            State::Fail(r, m) => format!("{r}: {m}"),
            State::Wrong(m) => format!("wrong_result: {m}"),
            State::NotCounted(why) => format!("not counted ({why})"),
        }
    }

    fn failing(&self) -> bool {
        matches!(self, State::Fail(..) | State::Wrong(_))
    }
}

/// `(framework, function, target)`.
type FnKey = (Framework, String, Target);

/// One case on one side: its id, dtype, result id and state.
struct CaseState {
    case_id: String,
    dtype: Option<Dtype>,
    result: i64,
    state: State,
    /// Whether a failing state counts toward the function's status: not for the reference
    /// target's own wrong answer or dtype change outside the strict view ([`Counted::counts`]).
    counts: bool,
}

/// One side, indexed: per function × target its cases by key (planned order kept), and its
/// float64 comparisons by (case key, target, output).
struct Indexed<'a> {
    order: Vec<FnKey>,
    cases: HashMap<FnKey, Vec<(String, CaseState)>>,
    comparisons: HashMap<(String, Target, u32), &'a ComparisonRow>,
}

fn index<'a>(side: &SideData<'a>, opts: &ReportOptions) -> Indexed<'a> {
    let mut ix = Indexed { order: Vec::new(), cases: HashMap::new(), comparisons: HashMap::new() };
    for (run, rows, comparisons) in &side.runs {
        for (row, c) in rows.iter().zip(counted(run, rows, opts)) {
            let r = &row.result;
            let state = match c {
                Counted::Pass => State::Pass,
                Counted::Fail(Reason::WrongResult) | Counted::Everywhere(Reason::WrongResult) => {
                    State::Wrong(failure_message(r))
                }
                Counted::Fail(reason) | Counted::Everywhere(reason) => State::Fail(reason, failure_message(r)),
                Counted::Skipped => State::NotCounted("skipped"),
                Counted::NotAttributable => State::NotCounted("not attributable"),
                Counted::Harness => State::NotCounted("harness_error"),
                Counted::Flaky => State::NotCounted("flaky"),
            };
            let key = (row.function.framework, row.function.name.clone(), r.device.clone());
            let cases = ix.cases.entry(key.clone()).or_insert_with(|| {
                ix.order.push(key);
                Vec::new()
            });
            cases.push((
                r.case_key.clone(),
                CaseState {
                    case_id: row.case.case_id.clone(),
                    dtype: row.case.dtype,
                    result: row.id,
                    state,
                    counts: c.counts(opts.strict),
                },
            ));
        }
        for c in comparisons.iter().filter(|c| c.against == Against::Float64) {
            ix.comparisons.insert((c.case_key.clone(), c.device.clone(), c.output_index), c);
        }
    }
    ix
}

/// The paper's status of a function from its cases' states: a failing case that does not count
/// (the reference target's own, outside the strict view) ran without the device's failure and
/// counts with the passes, as in the portability report.
fn status<'x>(cases: impl IntoIterator<Item = &'x CaseState>) -> Option<FunctionStatus> {
    let (mut passed, mut failed) = (0, 0);
    for c in cases {
        let counted_failure = c.state.failing() && c.counts;
        passed += usize::from(c.state == State::Pass || (c.state.failing() && !counted_failure));
        failed += usize::from(counted_failure);
    }
    FunctionStatus::from_counts(passed, failed)
}

/// A function's statuses on A and B. Where both sides have it, over the cases both have: a
/// failing case that only A ran must not make A `partial` and B `success`, which would read as
/// a fix (the case is listed as removed instead). Where one side lacks it, that side's is `None`.
fn statuses(
    ca: &[(String, CaseState)],
    cb: &[(String, CaseState)],
) -> (Option<FunctionStatus>, Option<FunctionStatus>) {
    if ca.is_empty() || cb.is_empty() {
        return (status(ca.iter().map(|(_, c)| c)), status(cb.iter().map(|(_, c)| c)));
    }
    let keys_a: std::collections::HashSet<&str> = ca.iter().map(|(k, _)| k.as_str()).collect();
    let keys_b: std::collections::HashSet<&str> = cb.iter().map(|(k, _)| k.as_str()).collect();
    if keys_a.is_disjoint(&keys_b) {
        // No case in common (other dtypes swept): each side's own status.
        return (status(ca.iter().map(|(_, c)| c)), status(cb.iter().map(|(_, c)| c)));
    }
    (
        status(ca.iter().filter(|(k, _)| keys_b.contains(k.as_str())).map(|(_, c)| c)),
        status(cb.iter().filter(|(k, _)| keys_a.contains(k.as_str())).map(|(_, c)| c)),
    )
}

/// What a change of state is, `None` when it is none.
fn kind_of(a: &State, b: &State) -> Option<ChangeKind> {
    Some(match (a, b) {
        (State::Pass, State::Pass) => return None,
        (State::Pass, State::Fail(..)) => ChangeKind::NewFailure,
        (State::Pass | State::Fail(..), State::Wrong(_)) => ChangeKind::NewWrongResult,
        (State::Fail(..) | State::Wrong(_), State::Pass) => ChangeKind::Fixed,
        (State::Fail(ra, _), State::Fail(rb, _)) if ra == rb => return None,
        (State::Wrong(_), State::Wrong(_)) => return None,
        (State::Fail(..) | State::Wrong(_), State::Fail(..)) => ChangeKind::ReasonChanged,
        (State::NotCounted(x), State::NotCounted(y)) if x == y => return None,
        _ => ChangeKind::CountingChanged,
    })
}

/// A comparison in words: `agree, max 0.5 ULP`, `disagree: 150 of 512 elements ...`.
fn verdict_words(c: &ComparisonRow) -> String {
    match c.verdict {
        ComparisonVerdict::Agree => format!("agree, {}", error_words(c)),
        _ if c.summary.is_empty() => c.verdict.to_string(),
        _ => format!("{}: {}", c.verdict, c.summary),
    }
}

/// The largest error of a comparison: in ULPs when known, else absolute.
fn error_of(c: &ComparisonRow) -> Option<(f64, bool)> {
    c.max_ulp.map(|u| (u, true)).or(c.max_abs.map(|a| (a, false)))
}

fn error_words(c: &ComparisonRow) -> String {
    match error_of(c) {
        Some((u, true)) => format!("max {} ULP", short(u)),
        Some((a, false)) => format!("max abs {}", short(a)),
        None => "no error measured".into(),
    }
}

/// A number in 3 significant digits.
fn short(x: f64) -> String {
    if x == 0.0 || (1e-3..1e4).contains(&x.abs()) {
        format!("{}", (x * 1000.0).round() / 1000.0)
    } else {
        format!("{x:.2e}")
    }
}

/// Whether an agreeing output's largest error moved by `factor` or more (growing or shrinking):
/// both in ULPs (the larger at least 1 ULP) or both absolute (the larger above 0).
fn error_moved(a: &ComparisonRow, b: &ComparisonRow, factor: f64) -> bool {
    match (error_of(a), error_of(b)) {
        (Some((ea, ua)), Some((eb, ub))) if ua == ub => {
            let (lo, hi) = if ea <= eb { (ea, eb) } else { (eb, ea) };
            let floor = if ua { 1.0 } else { 0.0 };
            hi > floor && hi >= factor * lo
        }
        _ => false,
    }
}

fn side_of(side: &SideData<'_>) -> DiffSide {
    let join = |values: Vec<String>| {
        let mut seen: Vec<String> = Vec::new();
        for v in values {
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        seen.join(", ")
    };
    let mut frameworks: BTreeMap<Framework, Vec<String>> = BTreeMap::new();
    for (run, _, _) in &side.runs {
        for (fw, info) in &run.info.frameworks {
            let v = info.version.clone().unwrap_or_else(|| "not importable".into());
            frameworks.entry(*fw).or_default().push(v);
        }
    }
    DiffSide {
        name: side.name.clone(),
        runs: side
            .runs
            .iter()
            .map(|(r, _, _)| RunRef {
                id: r.id,
                label: r.origin.label.clone(),
                machine: r.origin.machine.clone().unwrap_or_else(|| r.info.host.clone()),
                started_at: r.info.started_at.clone(),
                state: r.state,
            })
            .collect(),
        frameworks: frameworks.into_iter().map(|(f, v)| (f, join(v))).collect(),
        python: join(side.runs.iter().map(|(r, _, _)| r.info.python_version.clone()).collect()),
        mlport: join(side.runs.iter().map(|(r, _, _)| r.info.mlport_version.clone()).collect()),
    }
}

/// A side's runs grouped by machine ([`crate::analysis::campaign::machine_of`]), by name.
fn by_machine<'s, 'a>(side: &'s SideData<'a>) -> BTreeMap<&'s str, SideData<'a>> {
    let mut out: BTreeMap<&str, SideData<'a>> = BTreeMap::new();
    for run in &side.runs {
        out.entry(machine_of(run.0))
            .or_insert_with(|| SideData { name: side.name.clone(), runs: Vec::new() })
            .runs
            .push(*run);
    }
    out
}

/// Compares B with A, machine by machine: a machine's results on A with the same machine's on
/// B (a campaign's (machine, target) pairs are never merged across machines); when each side
/// has exactly one machine, those two are compared whatever their names (two runs on a GPU box
/// and a TPU box). Machines one side lacks are listed in `only_a`/`only_b`, their results
/// compared with nothing. Each side's runs are read as [`crate::store::Store`] returns them; a
/// side must hold at least one run.
pub fn diff(a: &SideData<'_>, b: &SideData<'_>, opts: &DiffOptions) -> DiffReport {
    let (ma, mb) = (by_machine(a), by_machine(b));
    let ids = |s: &SideData<'_>| s.runs.iter().map(|(r, _, _)| r.id).collect::<Vec<i64>>();
    let pairs: Vec<(&str, &SideData<'_>, &str, &SideData<'_>)> = if ma.len() == 1 && mb.len() == 1 {
        let ((na, sa), (nb, sb)) = (ma.iter().next().unwrap(), mb.iter().next().unwrap());
        vec![(*na, sa, *nb, sb)]
    } else {
        ma.iter().filter_map(|(n, sa)| mb.get(n).map(|sb| (*n, sa, *n, sb))).collect()
    };
    let lone = |side: &BTreeMap<&str, SideData<'_>>, paired: &dyn Fn(&str) -> bool| -> Vec<LoneMachine> {
        side.iter()
            .filter(|(n, _)| !paired(n))
            .map(|(n, s)| LoneMachine { machine: n.to_string(), runs: ids(s) })
            .collect()
    };
    let only_a = lone(&ma, &|n| pairs.iter().any(|p| p.0 == n));
    let only_b = lone(&mb, &|n| pairs.iter().any(|p| p.2 == n));
    let mut compared = Compared::default();
    let mut changes: Vec<Change> = Vec::new();
    let mut machines = Vec::new();
    let mut only_one_side = Vec::new();
    for (na, sa, nb, sb) in &pairs {
        let (c, mut ch, lone) = diff_pair(sa, sb, opts);
        for x in &mut ch {
            (x.machine_a, x.machine_b) = (na.to_string(), nb.to_string());
        }
        only_one_side.extend(lone.into_iter().map(|mut l| {
            l.machine = if l.side == "A" { na.to_string() } else { nb.to_string() };
            l
        }));
        changes.extend(ch);
        compared.functions += c.functions;
        compared.cases += c.cases;
        compared.outputs += c.outputs;
        compared.timed += c.timed;
        machines.push(MachinePair { a: na.to_string(), b: nb.to_string(), runs_a: ids(sa), runs_b: ids(sb) });
    }
    changes.sort_by(|x, y| {
        (x.kind, x.framework, &x.function, &x.target, &x.machine_a, &x.machine_b).cmp(&(
            y.kind,
            y.framework,
            &y.function,
            &y.target,
            &y.machine_a,
            &y.machine_b,
        ))
    });
    let mut counts = BTreeMap::new();
    for c in &changes {
        *counts.entry(c.kind).or_insert(0) += 1;
    }
    DiffReport {
        a: side_of(a),
        b: side_of(b),
        machines,
        only_a,
        only_b,
        only_one_side,
        threshold: opts.threshold,
        error_factor: opts.error_factor,
        compared,
        incomplete: [("A", a, "added"), ("B", b, "removed")]
            .into_iter()
            .flat_map(|(name, side, shown_as)| incomplete(name, side, shown_as))
            .collect(),
        counts,
        changes,
        rule: rule_text(opts),
    }
}

/// Compares one machine's runs of B with one machine's runs of A; the changes' and lone targets'
/// machines are left empty for [`diff`] to fill. A framework × target only one side ran is counted
/// in a [`LoneTarget`] instead of listing each of its cases as added or removed.
fn diff_pair(a: &SideData<'_>, b: &SideData<'_>, opts: &DiffOptions) -> (Compared, Vec<Change>, Vec<LoneTarget>) {
    let (ia, ib) = (index(a, &opts.report), index(b, &opts.report));
    let mut compared = Compared::default();
    let mut changes: Vec<Change> = Vec::new();
    let mut order = ia.order.clone();
    order.extend(ib.order.iter().filter(|k| !ia.cases.contains_key(*k)).cloned());
    let ran =
        |ix: &Indexed<'_>| -> HashSet<(Framework, Target)> { ix.order.iter().map(|k| (k.0, k.2.clone())).collect() };
    let (ran_a, ran_b) = (ran(&ia), ran(&ib));
    let mut lone: Vec<LoneTarget> = Vec::new();
    let none = Vec::new();
    for key in &order {
        let (ca, cb) = (ia.cases.get(key).unwrap_or(&none), ib.cases.get(key).unwrap_or(&none));
        let pair = (key.0, key.2.clone());
        let side = match (ran_a.contains(&pair), ran_b.contains(&pair)) {
            (true, false) => Some(("A", ca.len())),
            (false, true) => Some(("B", cb.len())),
            _ => None,
        };
        if let Some((side, cases)) = side {
            match lone.iter_mut().find(|l| l.side == side && l.framework == key.0 && l.target == key.2) {
                Some(l) => (l.functions, l.cases) = (l.functions + 1, l.cases + cases),
                None => lone.push(LoneTarget {
                    side,
                    machine: String::new(),
                    framework: key.0,
                    target: key.2.clone(),
                    functions: 1,
                    cases,
                }),
            }
            continue;
        }
        let (status_a, status_b) = statuses(ca, cb);
        if !ca.is_empty() && !cb.is_empty() {
            compared.functions += 1;
        }
        let mut by_kind: BTreeMap<ChangeKind, Vec<CaseChange>> = BTreeMap::new();
        let b_by_key: HashMap<&str, &CaseState> = cb.iter().map(|(k, c)| (k.as_str(), c)).collect();
        let a_keys: HashMap<&str, &CaseState> = ca.iter().map(|(k, c)| (k.as_str(), c)).collect();
        for (case_key, sa) in ca {
            let change = |kind, before: String, after: String, result_b| {
                (
                    kind,
                    CaseChange {
                        case_id: sa.case_id.clone(),
                        dtype: sa.dtype,
                        output: None,
                        before,
                        after,
                        result_a: Some(sa.result),
                        result_b,
                    },
                )
            };
            let (kind, c) = match b_by_key.get(case_key.as_str()) {
                None => change(ChangeKind::Removed, sa.state.words(), "—".into(), None),
                Some(sb) => {
                    compared.cases += 1;
                    match kind_of(&sa.state, &sb.state) {
                        Some(k) => change(k, sa.state.words(), sb.state.words(), Some(sb.result)),
                        None => continue,
                    }
                }
            };
            by_kind.entry(kind).or_default().push(c);
        }
        for (_, sb) in cb.iter().filter(|(k, _)| !a_keys.contains_key(k.as_str())) {
            by_kind.entry(ChangeKind::Added).or_default().push(CaseChange {
                case_id: sb.case_id.clone(),
                dtype: sb.dtype,
                output: None,
                before: "—".into(),
                after: sb.state.words(),
                result_a: None,
                result_b: Some(sb.result),
            });
        }
        // Agreement with the float64 reference, output by output, of the cases both sides have.
        for (case_key, sa) in ca {
            let Some(sb) = b_by_key.get(case_key.as_str()) else { continue };
            let both_pass = sa.state == State::Pass && sb.state == State::Pass;
            let mut outputs: Vec<u32> = ia
                .comparisons
                .keys()
                .chain(ib.comparisons.keys())
                .filter(|(k, t, _)| k == case_key && *t == key.2)
                .map(|(_, _, o)| *o)
                .collect();
            outputs.sort();
            outputs.dedup();
            for o in outputs {
                let ck = (case_key.clone(), key.2.clone(), o);
                let (xa, xb) = (ia.comparisons.get(&ck), ib.comparisons.get(&ck));
                let kind = match (xa, xb) {
                    (Some(xa), Some(xb)) => {
                        compared.outputs += 1;
                        if xa.verdict != xb.verdict {
                            ChangeKind::AgreementChanged
                        } else if xa.verdict == ComparisonVerdict::Agree && error_moved(xa, xb, opts.error_factor) {
                            ChangeKind::ErrorMoved
                        } else {
                            continue;
                        }
                    }
                    // Compared on one side only, and the case passed on both: a check lost or
                    // gained (a case that did not pass on one side has nothing to compare there).
                    // Only where the other side compared anything with float64 at all (a run
                    // stopped before its closing comparisons, or imported, compared nothing).
                    (Some(_), None) if both_pass && !ib.comparisons.is_empty() => ChangeKind::NowUnchecked,
                    (None, Some(_)) if both_pass && !ia.comparisons.is_empty() => ChangeKind::NowChecked,
                    _ => continue,
                };
                let unchecked = || "ran, unchecked (no float64 reference)".to_string();
                by_kind.entry(kind).or_default().push(CaseChange {
                    case_id: sa.case_id.clone(),
                    dtype: sa.dtype,
                    output: Some(o),
                    before: xa.map_or_else(unchecked, |x| verdict_words(x)),
                    after: xb.map_or_else(unchecked, |x| verdict_words(x)),
                    result_a: Some(sa.result),
                    result_b: Some(sb.result),
                });
            }
        }
        for (kind, cases) in by_kind {
            changes.push(Change {
                kind,
                machine_a: String::new(),
                machine_b: String::new(),
                framework: key.0,
                function: key.1.clone(),
                target: key.2.clone(),
                status_a,
                status_b,
                cases,
                timing: None,
            });
        }
    }

    // Slowdowns, per target both sides have, through the slowdown analysis.
    let mut targets: Vec<Target> = ia.order.iter().map(|k| k.2.clone()).collect();
    targets.sort();
    targets.dedup();
    targets.retain(|t| ib.order.iter().any(|k| &k.2 == t));
    let rows_of = |side: &SideData<'_>| -> Vec<ResultRow> {
        side.runs.iter().flat_map(|(_, rows, _)| rows.iter().cloned()).collect()
    };
    let (rows_a, rows_b) = (rows_of(a), rows_of(b));
    let (run_a, run_b) = (a.runs[0].0, b.runs[0].0);
    let sd_opts = SlowdownOptions {
        measure: Measure::Steady,
        threshold: opts.threshold,
        stats: opts.stats,
        ..SlowdownOptions::default()
    };
    for t in &targets {
        let sd = slowdown::slowdown((run_a, t, &rows_a), (run_b, t, &rows_b), &sd_opts);
        for f in &sd.functions {
            compared.timed += 1;
            let ci = f.median_ratio_ci;
            let kind = if ci.lower > opts.threshold {
                ChangeKind::Slowdown
            } else if ci.upper < 1.0 / opts.threshold {
                ChangeKind::Speedup
            } else {
                continue;
            };
            let key = (f.framework, f.name.clone(), t.clone());
            let none = Vec::new();
            let (status_a, status_b) =
                statuses(ia.cases.get(&key).unwrap_or(&none), ib.cases.get(&key).unwrap_or(&none));
            changes.push(Change {
                kind,
                machine_a: String::new(),
                machine_b: String::new(),
                framework: f.framework,
                function: f.name.clone(),
                target: t.clone(),
                status_a,
                status_b,
                cases: Vec::new(),
                timing: Some(TimingChange {
                    cases: f.cases,
                    a_median_ns: f.a_median_ns,
                    b_median_ns: f.b_median_ns,
                    ratio: ci,
                    unstable: f.unstable,
                }),
            });
        }
    }
    (compared, changes, lone)
}

/// A sentence for each run of `side` (named `name`) that has not finished: what it is, how many
/// of its planned cases have a result (on any target), and that the cases it has not run are
/// listed as `shown_as` (`added` for A, `removed` for B) instead of compared.
fn incomplete(name: &str, side: &SideData<'_>, shown_as: &str) -> Vec<String> {
    side.runs
        .iter()
        .filter(|(run, _, _)| run.state != RunState::Finished)
        .map(|(run, rows, _)| {
            let what = match run.state {
                RunState::Interrupted => "was interrupted",
                RunState::Incomplete => "ended incomplete (a device or worker was unavailable)",
                _ => "has not finished (it is still running, or its process was killed)",
            };
            let with_result: std::collections::HashSet<&str> = rows.iter().map(|r| r.case.key.as_str()).collect();
            format!(
                "{name}'s run {} {what}: {} of its {} planned cases have a result; the cases it has not run are \
                 listed as {shown_as} (a framework or target it has not reached: counted as only on the other \
                 side), not compared (continue it with `mlport run --resume {}`, then diff again)",
                run.id,
                with_result.len(),
                run.cases_planned,
                run.id
            )
        })
        .collect()
}

/// How the diff was computed, in words.
pub fn rule_text(opts: &DiffOptions) -> String {
    let strict = if opts.report.strict {
        " (strict: a wrong answer or dtype change on the reference device itself counts toward them)"
    } else {
        ", where a wrong answer or dtype change on the reference device itself is listed as a change but does \
         not make a function partial (--strict counts it)"
    };
    let counting = if opts.report.attributable {
        "device-attributable, as in `mlport report`, within each run"
    } else {
        "every failure counted (--all-failures)"
    };
    format!(
        "Changes from A to B per machine, function and target. Machines are paired by name (a run's --machine, \
         else its host): a machine's results on A are compared with the same machine's on B, never merged with \
         another's; when each side has one machine, those two are compared. Cases are matched by key (framework/function/case/dtype) \
         and target, and counted as in the portability report ({counting}): new_failure (passed on A, fails on \
         B), new_wrong_result (ran on B but disagreed with its reference), fixed (failed or was wrong on A, \
         passes on B), reason_changed (fails on both, for another reason), counting_changed (counted on one side \
         only: skipped, a harness error, or excused), added/removed (on one side only); a function's statuses A → B \
         are over the cases both sides have{strict}. Agreement: each output's \
         verdict against the float64 reference (agreement_changed), or its largest error, in ULPs (absolute where \
         the dtype has none), growing or shrinking {}× or more while agreeing on both sides (error_moved); an \
         output of a case passing on both sides compared with the float64 reference on A and with nothing on B \
         (now_unchecked: its reference could not be computed), or the reverse (now_checked). \
         Timing: per function the median steady-state time on B over A with a bootstrap {:.0}% interval \
         ({} resamples, seed {}); slowdown when the whole interval lies above {}×, speedup when below 1/{}×.",
        fmt_threshold(opts.error_factor),
        100.0 * opts.stats.level,
        opts.stats.resamples,
        opts.stats.seed,
        fmt_threshold(opts.threshold),
        fmt_threshold(opts.threshold),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::portability::tests::{row, run_summary};
    use crate::model::Outcome::{Fail, Pass, WrongResult};

    fn side<'a>(name: &str, run: &'a RunSummary, rows: &'a [ResultRow], cmp: &'a [ComparisonRow]) -> SideData<'a> {
        SideData { name: name.into(), runs: vec![(run, rows, cmp)] }
    }

    /// Torch on cpu: a passes on A and fails on B (dtype_unsupported); b passes on A and is wrong
    /// on B; c fails on A and passes on B; d fails on both for different reasons; e is the same
    /// on both; f only on A, g only on B; h is 100× slower on B (tight samples).
    pub(crate) fn rows() -> (Vec<ResultRow>, Vec<ResultRow>) {
        let t = Framework::Torch;
        let slow: Vec<u64> = (0..30).map(|i| 100 + i % 3).collect();
        let slower: Vec<u64> = (0..30).map(|i| 10_000 + i % 3).collect();
        let mut a = vec![
            row(t, "a", 1, "cpu", Pass, None, &[10]),
            row(t, "b", 1, "cpu", Pass, None, &[10]),
            row(t, "c", 1, "cpu", Fail, Some(Reason::NotImplemented), &[]),
            row(t, "d", 1, "cpu", Fail, Some(Reason::NotImplemented), &[]),
            row(t, "e", 1, "cpu", Pass, None, &[10]),
            row(t, "f", 1, "cpu", Pass, None, &[10]),
            row(t, "h", 1, "cpu", Pass, None, &slow),
        ];
        let mut b = vec![
            row(t, "a", 1, "cpu", Fail, Some(Reason::DtypeUnsupported), &[]),
            row(t, "b", 1, "cpu", WrongResult, Some(Reason::WrongResult), &[10]),
            row(t, "c", 1, "cpu", Pass, None, &[10]),
            row(t, "d", 1, "cpu", Fail, Some(Reason::ApiMissing), &[]),
            row(t, "e", 1, "cpu", Pass, None, &[10]),
            row(t, "g", 1, "cpu", Pass, None, &[10]),
            row(t, "h", 1, "cpu", Pass, None, &slower),
        ];
        for (i, r) in a.iter_mut().chain(b.iter_mut()).enumerate() {
            r.id = i as i64 + 1;
        }
        (a, b)
    }

    fn kinds(r: &DiffReport) -> Vec<(ChangeKind, String)> {
        r.changes.iter().map(|c| (c.kind, c.function.clone())).collect()
    }

    pub(crate) fn example() -> DiffReport {
        let (ra, rb) = rows();
        let run_a = run_summary();
        let mut run_b = run_summary();
        run_b.id = 8;
        run_b.origin.label = Some("torch-next".into());
        run_b.info.frameworks.get_mut(&Framework::Torch).unwrap().version = Some("2.6.0".into());
        diff(&side("7", &run_a, &ra, &[]), &side("torch-next", &run_b, &rb, &[]), &DiffOptions::default())
    }

    /// [`rows`] with A also running jax on cpu (two functions, three cases) and torch on cuda:0,
    /// which B ran neither of.
    pub(crate) fn lone_example() -> DiffReport {
        let (mut ra, rb) = rows();
        ra.push(row(Framework::Jax, "a", 1, "cpu", Pass, None, &[10]));
        ra.push(row(Framework::Jax, "a", 2, "cpu", Fail, Some(Reason::NotImplemented), &[]));
        ra.push(row(Framework::Jax, "b", 1, "cpu", Pass, None, &[10]));
        ra.push(row(Framework::Torch, "a", 1, "cuda:0", Pass, None, &[10]));
        let (run_a, run_b) = (run_summary(), RunSummary { id: 8, ..run_summary() });
        diff(&side("7", &run_a, &ra, &[]), &side("8", &run_b, &rb, &[]), &DiffOptions::default())
    }

    #[test]
    fn a_framework_only_one_side_ran_is_counted_not_listed_case_by_case() {
        let r = lone_example();
        let lone: Vec<(&str, Framework, String, usize, usize)> =
            r.only_one_side.iter().map(|l| (l.side, l.framework, l.target.to_string(), l.functions, l.cases)).collect();
        assert_eq!(lone, [("A", Framework::Jax, "cpu".into(), 2, 3), ("A", Framework::Torch, "cuda:0".into(), 1, 1)]);
        assert!(r.changes.iter().all(|c| c.framework != Framework::Jax && c.target.to_string() == "cpu"), "{r:#?}");
        // The torch functions both ran are compared as before: f is still removed, g added.
        assert_eq!(kinds(&r), kinds(&example()));
    }

    #[test]
    fn every_kind_of_change_is_found_and_nothing_else() {
        let r = example();
        let got = kinds(&r);
        let want: Vec<(ChangeKind, String)> = [
            (ChangeKind::NewFailure, "torch.a"),
            (ChangeKind::NewWrongResult, "torch.b"),
            (ChangeKind::Fixed, "torch.c"),
            (ChangeKind::ReasonChanged, "torch.d"),
            (ChangeKind::Slowdown, "torch.h"),
            (ChangeKind::Added, "torch.g"),
            (ChangeKind::Removed, "torch.f"),
        ]
        .into_iter()
        .map(|(k, f)| (k, f.to_string()))
        .collect();
        assert_eq!(got, want);
        let a = &r.changes[0];
        assert_eq!((a.status_a, a.status_b), (Some(FunctionStatus::Success), Some(FunctionStatus::CompleteFailure)));
        assert_eq!(a.cases[0].before, "pass");
        assert!(a.cases[0].after.starts_with("dtype_unsupported"), "{}", a.cases[0].after);
        let h = r.changes.iter().find(|c| c.kind == ChangeKind::Slowdown).unwrap();
        let t = h.timing.as_ref().unwrap();
        assert!((t.ratio.point - 10_001.0 / 101.0).abs() < 1e-9, "{t:?}");
        assert!(t.ratio.lower > 1.5);
        assert_eq!(r.a.frameworks[&Framework::Torch], "2.5.1");
        assert_eq!(r.b.frameworks[&Framework::Torch], "2.6.0");
        assert_eq!(r.b.frameworks[&Framework::Jax], "not importable");
        assert_eq!(r.compared.functions, 6);
        assert_eq!(r.compared.cases, 6);
        assert!(r.has_any(&[ChangeKind::NewFailure]));
        assert!(!r.has_any(&[ChangeKind::Speedup]));
    }

    #[test]
    fn a_side_that_has_not_finished_is_said_with_its_cases_that_have_a_result() {
        let (ra, rb) = rows();
        let mut run_a = run_summary();
        run_a.state = RunState::Running;
        run_a.cases_planned = 9;
        let mut run_b = run_summary();
        run_b.id = 8;
        run_b.state = RunState::Interrupted;
        run_b.cases_planned = 12;
        // Two rows of one case (two targets) count as one case with a result.
        let mut rb2 = rb.clone();
        let mut other_target = rb2[0].clone();
        other_target.result.device = "cuda:0".parse().unwrap();
        rb2.push(other_target);
        let r = diff(&side("7", &run_a, &ra, &[]), &side("8", &run_b, &rb2, &[]), &DiffOptions::default());
        assert_eq!(
            r.incomplete,
            [
                "A's run 7 has not finished (it is still running, or its process was killed): 7 of its 9 planned cases \
                 have a result; the cases it has not run are listed as added (a framework or target it has not \
                 reached: counted as only on the other side), not compared (continue it with \
                 `mlport run --resume 7`, then diff again)",
                "B's run 8 was interrupted: 7 of its 12 planned cases have a result; the cases it has not run are \
                 listed as removed (a framework or target it has not reached: counted as only on the other side), \
                 not compared (continue it with `mlport run --resume 8`, then diff again)",
            ]
        );
        assert_eq!((r.a.runs[0].state, r.b.runs[0].state), (RunState::Running, RunState::Interrupted));
        assert!(example().incomplete.is_empty(), "finished runs: no note");
    }

    #[test]
    fn a_run_against_itself_has_no_change() {
        let (ra, _) = rows();
        let run = run_summary();
        let r = diff(&side("7", &run, &ra, &[]), &side("7", &run, &ra, &[]), &DiffOptions::default());
        assert!(r.changes.is_empty(), "{:?}", kinds(&r));
        assert_eq!((r.compared.functions, r.compared.cases, r.compared.timed), (7, 7, 5));
    }

    #[test]
    fn noisy_timings_within_the_threshold_are_not_slowdowns() {
        let (ra, mut rb) = rows();
        // 1.3× slower: its interval lies under 1.5×.
        rb[6].result.samples_ns = (0..30).map(|i| 130 + i % 3).collect();
        let run = run_summary();
        let r = diff(&side("a", &run, &ra, &[]), &side("b", &run, &rb, &[]), &DiffOptions::default());
        assert!(!r.has_any(&[ChangeKind::Slowdown]), "{:?}", kinds(&r));
        let tight = DiffOptions { threshold: 1.2, ..Default::default() };
        let r = diff(&side("a", &run, &ra, &[]), &side("b", &run, &rb, &[]), &tight);
        assert!(r.has_any(&[ChangeKind::Slowdown]));
    }

    fn comparison(case_key: &str, verdict: ComparisonVerdict, ulp: f64) -> ComparisonRow {
        let mut c = ComparisonRow::incomparable(
            case_key,
            &Target::cpu(),
            &Against::Float64,
            "numpy.x in float64",
            0,
            crate::compare::Rule::AllClose,
            crate::compare::Tolerance::close(1e-3, 1e-5),
        );
        c.verdict = verdict;
        c.max_ulp = Some(ulp);
        c.summary = format!("{verdict} at {ulp} ULP");
        c
    }

    #[test]
    fn agreement_changes_and_moved_errors() {
        let (ra, _) = rows();
        let key_e = ra[4].result.case_key.clone();
        let key_a = ra[0].result.case_key.clone();
        let key_b = ra[1].result.case_key.clone();
        let ca = vec![
            comparison(&key_e, ComparisonVerdict::Agree, 0.5),
            comparison(&key_a, ComparisonVerdict::Agree, 0.5),
            comparison(&key_b, ComparisonVerdict::Agree, 1.0),
        ];
        let cb = vec![
            comparison(&key_e, ComparisonVerdict::Agree, 0.9), // under 1 ULP: not moved
            comparison(&key_a, ComparisonVerdict::Disagree, 50.0),
            comparison(&key_b, ComparisonVerdict::Agree, 2.0), // doubled, at least 1 ULP: moved
        ];
        let run = run_summary();
        let r = diff(&side("a", &run, &ra, &ca), &side("b", &run, &ra, &cb), &DiffOptions::default());
        assert_eq!(
            kinds(&r),
            vec![
                (ChangeKind::AgreementChanged, "torch.a".to_string()),
                (ChangeKind::ErrorMoved, "torch.b".to_string())
            ]
        );
        let c = &r.changes[0].cases[0];
        assert_eq!((c.before.as_str(), c.after.as_str()), ("agree, max 0.5 ULP", "disagree: disagree at 50 ULP"));
        assert_eq!(r.compared.outputs, 3);
    }

    #[test]
    fn a_case_only_one_side_ran_does_not_read_as_a_fix() {
        // torch.c's case 1 fails on both sides; case 2 passes on A and B did not run it. Over
        // what both have it is a complete failure on both, not "partial → success".
        let t = Framework::Torch;
        let mut a = vec![
            row(t, "c", 1, "cpu", Fail, Some(Reason::NotImplemented), &[]),
            row(t, "c", 2, "cpu", Pass, None, &[10]),
        ];
        let mut b = vec![row(t, "c", 1, "cpu", Fail, Some(Reason::NotImplemented), &[])];
        for (i, r) in a.iter_mut().chain(b.iter_mut()).enumerate() {
            r.id = i as i64 + 1;
        }
        let run = run_summary();
        let r = diff(&side("a", &run, &a, &[]), &side("b", &run, &b, &[]), &DiffOptions::default());
        let removed = r.changes.iter().find(|c| c.kind == ChangeKind::Removed).expect("case 2 is removed");
        assert_eq!(
            (removed.status_a, removed.status_b),
            (Some(FunctionStatus::CompleteFailure), Some(FunctionStatus::CompleteFailure))
        );
    }

    #[test]
    fn a_check_lost_or_gained_is_a_change() {
        // B's environment could not compute e's float64 reference (it once said "No changes");
        // a's is computed only on B. b fails on B: nothing to compare there, no check lost.
        let (ra, rb) = rows();
        let (key_e, key_a, key_b) =
            (ra[4].result.case_key.clone(), ra[0].result.case_key.clone(), ra[1].result.case_key.clone());
        let ca =
            vec![comparison(&key_e, ComparisonVerdict::Agree, 0.5), comparison(&key_b, ComparisonVerdict::Agree, 1.0)];
        let cb = vec![comparison(&key_a, ComparisonVerdict::Agree, 0.5)];
        let run = run_summary();
        let same = diff(&side("a", &run, &ra, &ca), &side("b", &run, &ra, &cb), &DiffOptions::default());
        let checks: Vec<_> = kinds(&same)
            .into_iter()
            .filter(|(k, _)| matches!(k, ChangeKind::NowUnchecked | ChangeKind::NowChecked))
            .collect();
        // b and e pass on both sides and were compared on A only; a only on B.
        assert_eq!(
            checks,
            vec![
                (ChangeKind::NowUnchecked, "torch.b".to_string()),
                (ChangeKind::NowUnchecked, "torch.e".to_string()),
                (ChangeKind::NowChecked, "torch.a".to_string())
            ]
        );
        let lost = same.changes.iter().find(|c| c.kind == ChangeKind::NowUnchecked && c.function == "torch.e").unwrap();
        assert_eq!(lost.cases[0].before, "agree, max 0.5 ULP");
        assert_eq!(lost.cases[0].after, "ran, unchecked (no float64 reference)");
        assert!(same.has_any(&[ChangeKind::NowUnchecked]), "--fail-on now_unchecked finds it");
        // Where b is a wrong result on B (rows of B), its comparison on A alone is no lost check.
        let failing = diff(&side("a", &run, &ra, &ca), &side("b", &run, &rb, &cb), &DiffOptions::default());
        let lost: Vec<_> = kinds(&failing).into_iter().filter(|(k, _)| *k == ChangeKind::NowUnchecked).collect();
        assert_eq!(lost, vec![(ChangeKind::NowUnchecked, "torch.e".to_string())]);
        // A side that compared nothing with float64 (stopped before its closing comparisons,
        // imported) loses no check: it never made any.
        let none = diff(&side("a", &run, &ra, &ca), &side("b", &run, &ra, &[]), &DiffOptions::default());
        assert!(!none.has_any(&[ChangeKind::NowUnchecked]), "{:?}", kinds(&none));
    }

    /// A run of `rows` on `machine` with id `id`.
    fn run_on(machine: &str, id: i64) -> RunSummary {
        let mut run = run_summary();
        run.id = id;
        run.origin.machine = Some(machine.into());
        run
    }

    /// Two campaigns of two machines each plus one machine of their own: A on box-1, box-2 and
    /// old-box; B on box-1, box-2 and new-box. On box-1 B is the changed rows; on box-2 B has
    /// A's rows; old-box and new-box are compared with nothing.
    pub(crate) fn campaigns_example() -> DiffReport {
        let (ra, rb) = rows();
        let runs: Vec<RunSummary> =
            [("box-1", 1), ("box-2", 2), ("old-box", 3), ("box-1", 4), ("box-2", 5), ("new-box", 6)]
                .into_iter()
                .map(|(m, id)| run_on(m, id))
                .collect();
        let a = SideData {
            name: "nightly-1".into(),
            runs: vec![(&runs[0], &ra[..], &[][..]), (&runs[1], &ra[..], &[][..]), (&runs[2], &rb[..], &[][..])],
        };
        let b = SideData {
            name: "nightly-2".into(),
            runs: vec![(&runs[3], &rb[..], &[][..]), (&runs[4], &ra[..], &[][..]), (&runs[5], &ra[..], &[][..])],
        };
        diff(&a, &b, &DiffOptions::default())
    }

    #[test]
    fn campaigns_are_compared_machine_by_machine_never_merged() {
        let r = campaigns_example();
        // Exactly the single-run diff's changes, all on box-1: box-2 is unchanged, and neither
        // old-box (whose rows are B's) nor new-box is compared with anything.
        let single = example();
        let on = |r: &DiffReport| -> Vec<(ChangeKind, String, String, String)> {
            r.changes.iter().map(|c| (c.kind, c.function.clone(), c.machine_a.clone(), c.machine_b.clone())).collect()
        };
        let want: Vec<_> =
            single.changes.iter().map(|c| (c.kind, c.function.clone(), "box-1".into(), "box-1".into())).collect();
        assert_eq!(on(&r), want);
        let pairs: Vec<(&str, &str, &[i64], &[i64])> =
            r.machines.iter().map(|p| (p.a.as_str(), p.b.as_str(), &p.runs_a[..], &p.runs_b[..])).collect();
        assert_eq!(pairs, [("box-1", "box-1", &[1][..], &[4][..]), ("box-2", "box-2", &[2][..], &[5][..])]);
        assert_eq!(r.only_a, [LoneMachine { machine: "old-box".into(), runs: vec![3] }]);
        assert_eq!(r.only_b, [LoneMachine { machine: "new-box".into(), runs: vec![6] }]);
        // Both machines' cases were compared: box-1's 6 (as in the single diff) and box-2's 7
        // (A's rows with themselves).
        assert_eq!((r.compared.functions, r.compared.cases), (6 + 7, 6 + 7));
    }

    #[test]
    fn one_machine_on_each_side_is_compared_whatever_its_name() {
        let (ra, rb) = rows();
        let (gpu, tpu) = (run_on("gpu-box", 1), run_on("tpu-box", 2));
        let r = diff(&side("1", &gpu, &ra, &[]), &side("2", &tpu, &rb, &[]), &DiffOptions::default());
        assert_eq!(kinds(&r), kinds(&example()));
        assert!(r.changes.iter().all(|c| (c.machine_a.as_str(), c.machine_b.as_str()) == ("gpu-box", "tpu-box")));
        assert!(r.only_a.is_empty() && r.only_b.is_empty());
        // Two machines on A, none of them B's: nothing in common, nothing compared.
        let other = run_on("cpu-box", 3);
        let a = SideData { name: "c".into(), runs: vec![(&gpu, &ra[..], &[][..]), (&other, &ra[..], &[][..])] };
        let r = diff(&a, &side("2", &tpu, &rb, &[]), &DiffOptions::default());
        assert!(r.machines.is_empty() && r.changes.is_empty());
        assert_eq!(r.only_a.len(), 2);
        assert_eq!(r.only_b[0].machine, "tpu-box");
    }

    #[test]
    fn kinds_round_trip() {
        for k in ChangeKind::ALL {
            assert_eq!(k.as_str().parse::<ChangeKind>().unwrap(), k);
        }
        assert!("broken".parse::<ChangeKind>().unwrap_err().contains("new_failure"));
    }
}
