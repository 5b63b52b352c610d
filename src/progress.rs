//! The terminal view of a run: an indicatif progress bar on stderr (hidden when stderr
//! is not a terminal), one line per notable event, and the end-of-run summary
//! ([`Event::RunEnded`]).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::Outcome;
use crate::render::units::plural;
use crate::runner::{Event, EventSink, RunEnd, Tally, schedule};

/// Draws run progress on stderr.
pub struct Progress {
    bar: ProgressBar,
    /// Cases planned per framework, to grow the bar when a framework has several devices.
    per_framework: std::collections::BTreeMap<crate::model::Framework, u64>,
    /// The store, as the user named it (`--db`): said with the counts and the resume hint.
    store: String,
    /// The (device, reason) pairs already said unavailable: a machine-wide reason (no Vulkan
    /// driver) is said once, not once per framework and route.
    unavailable_said: std::cell::RefCell<std::collections::BTreeSet<(String, String)>>,
}

impl Progress {
    /// `total` is the number of pending cases on one device per framework; `store` the store
    /// as the user named it.
    pub fn new(
        total: u64,
        per_framework: std::collections::BTreeMap<crate::model::Framework, u64>,
        store: String,
    ) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        Progress { bar, per_framework, store, unavailable_said: Default::default() }
    }

    /// Prints a line above the bar (or plainly when there is no terminal).
    fn say(&self, line: String) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// Clears the bar from the terminal (the run has ended).
    fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// The command that continues run `run_id`.
    fn resume_hint(&self, run_id: i64) -> String {
        format!("`mlport run --resume {run_id} --db {}`", self.store)
    }

    /// The end-of-run summary of run `run_id`, after `elapsed` of execution.
    fn ended(&self, run_id: i64, elapsed: std::time::Duration, end: &RunEnd) {
        self.finish();
        let resume = self.resume_hint(run_id);
        let store = &self.store;
        match end {
            RunEnd::Interrupted { recorded, pending } => eprintln!(
                "mlport: interrupted after {elapsed:.0?}: {} in {store}; continue with {resume}",
                crate::runner::recorded_of_planned(*recorded, *pending)
            ),
            RunEnd::Stopped { case_key, error, recorded } => {
                let counts = match recorded {
                    Ok((recorded, pending)) => {
                        format!("{} in {store}", crate::runner::recorded_of_planned(*recorded, *pending))
                    }
                    Err(e) => format!("the store could not be updated either ({e})"),
                };
                eprintln!(
                    "error: mlport stopped run {run_id}: it {error} (its own file, while running {case_key}); that is \
                     no outcome of any function, so nothing was recorded for {case_key}, which stays pending. \
                     {counts}. Free space (or fix the folder) and continue with {resume}"
                );
            }
            RunEnd::Finished(tally) => finished(run_id, elapsed, tally, &resume),
        }
    }
}

/// A finished run's summary lines: counts by outcome, passes nothing checked, references that
/// could not be computed, CPU contention, cases still pending.
fn finished(run_id: i64, elapsed: std::time::Duration, t: &Tally, resume: &str) {
    let mut counts: Vec<String> = t.outcomes.iter().map(|(o, n)| format!("{n} {o}")).collect();
    if t.dtype_changed > 0 {
        counts.push(format!("{} dtype_changed", t.dtype_changed));
    }
    let counts = if counts.is_empty() { "no case ran".to_string() } else { counts.join(", ") };
    let unchecked = match t.unchecked {
        0 => String::new(),
        n => format!("; {n} ran unchecked: passed, with nothing to compare the answer with"),
    };
    eprintln!("mlport: run {run_id} ended after {:.1} s ({counts}{unchecked})", elapsed.as_secs_f64());
    // The note itself is among the report's notes, printed next (it was said twice); only what
    // the report cannot know is said here.
    if t.missing_references.is_some() && t.references_retryable {
        eprintln!("mlport: `--resume` computes a crashed or timed-out float64 reference again");
    }
    if let Some(c) = &t.contention {
        eprintln!(
            "mlport: {} of the run's {} timed cases waited for a CPU more than {:.0}% of their steady state (median {:.0}%): \
             other processes were using the cores, so their latencies are the machine's load as much as the \
             framework's (flagged unstable in `report --slowdown`); time them again on a quieter machine",
            c.busy,
            c.timed,
            100.0 * c.limit,
            100.0 * c.median,
        );
    }
    if t.pending > 0 {
        eprintln!(
            "mlport: {} still pending (a device was unavailable or a worker could not be restarted: see \
             above); continue with {resume} once it is",
            plural(t.pending, "case")
        );
    }
}

impl EventSink for Progress {
    fn event(&mut self, e: &Event) {
        match e {
            Event::RunStarting { run_id, cases, functions, layout, quick } => {
                self.say(format!(
                    "mlport: run {run_id}: {} of {}, store {}",
                    plural(*cases, "case"),
                    plural(*functions, "function"),
                    self.store
                ));
                if layout.jobs() > 1 {
                    let sets: Vec<String> = layout.sets.iter().map(|s| schedule::describe(s)).collect();
                    self.say(format!(
                        "mlport: {} workers at once, pinned to cores {} ({} each)",
                        layout.jobs(),
                        sets.join(" | "),
                        plural(layout.threads.unwrap_or(1) as usize, "thread")
                    ));
                }
                if *quick {
                    self.say(
                        "mlport: --quick: portability only, no steady-state timing (timings are absent from this run)"
                            .into(),
                    );
                }
            }
            Event::RunEnded { run_id, elapsed, end } => self.ended(*run_id, *elapsed, end),
            Event::FrameworkStarting { framework } => {
                self.bar.set_message(format!("importing {framework}"));
            }
            Event::FrameworkReady { framework, version, devices, stacks } => {
                // A device on another stack says its own versions (torch on xla:0).
                let names: Vec<String> = devices
                    .iter()
                    .map(|d| match stacks.iter().find(|s| s.device == *d) {
                        Some(s) => format!("{d} ({})", s.versions),
                        None => d.to_string(),
                    })
                    .collect();
                if names.is_empty() {
                    self.say(format!("mlport: {framework} {version}: none of the devices asked for is available"));
                } else {
                    self.say(format!("mlport: {framework} {version} on {}", names.join(", ")));
                }
                if devices.len() > 1 {
                    let n = self.per_framework.get(framework).copied().unwrap_or(0);
                    self.bar.inc_length(n * (devices.len() as u64 - 1));
                }
            }
            Event::FrameworkFailed { framework, error } => {
                let n = self.per_framework.get(framework).copied().unwrap_or(0);
                self.bar.set_length(self.bar.length().unwrap_or(0).saturating_sub(n));
                let first = error.lines().next().unwrap_or("");
                self.say(format!("mlport: {framework} is not usable, its cases do not run: {first}"));
                tracing::info!("{framework} failure: {error}");
            }
            Event::DeviceUnavailable { framework, device, detail, machine_wide } => {
                if *machine_wide {
                    // The machine's reason, whichever framework or route met it: said once per device.
                    if self.unavailable_said.borrow_mut().insert((device.base().to_string(), detail.clone())) {
                        self.say(format!(
                            "mlport: {} is unavailable: {detail} (its targets are reported, not counted)",
                            device.base()
                        ));
                    }
                    return;
                }
                let why = if detail.is_empty() { String::new() } else { format!(": {detail}") };
                self.say(format!(
                    "mlport: {device} is unavailable to {framework}{why} (reported, not counted as a failure)"
                ));
            }
            Event::ReferencesStarting { count } => {
                self.bar.set_message(format!("computing {count} float64 references (numpy)"));
            }
            Event::ReferencesDone { passed, failed, not_needed } => {
                let not = if *failed > 0 { format!(", {failed} could not be computed") } else { String::new() };
                let unneeded = match not_needed {
                    0 => String::new(),
                    n => format!(
                        ", {n} not needed (functions the installed framework lacks: their cases are api_missing)"
                    ),
                };
                self.say(format!("mlport: float64 references: {passed} computed{not}{unneeded}"));
            }
            Event::CaseStarted { case } => {
                self.bar.set_message(format!(
                    "{} {}[{}]",
                    case.framework,
                    case.function,
                    crate::model::name_or_empty(case.dtype)
                ));
            }
            Event::CaseFinished { case, result } => {
                self.bar.inc(1);
                if matches!(result.outcome, Outcome::Timeout | Outcome::Crash) {
                    self.say(format!(
                        "mlport: {} on {}: {} — {}",
                        case.key,
                        result.device,
                        result.outcome,
                        result.message.as_deref().unwrap_or("")
                    ));
                }
            }
            Event::WorkerRestarted { framework, device } => {
                tracing::info!("restarting the {framework} worker on {device}");
            }
            Event::WorkerLost { framework, device, why } => {
                self.say(format!("mlport: the {framework} worker on {device} could not be restarted; its remaining cases stay pending (resume later): {why}"));
            }
        }
    }
}
