//! The terminal view of a run: an indicatif progress bar on stderr (hidden when stderr
//! is not a terminal) and one line per notable event.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::Outcome;
use crate::runner::{Event, EventSink};

/// Draws run progress on stderr.
pub struct Progress {
    bar: ProgressBar,
    /// Cases planned per framework, to grow the bar when a framework has several devices.
    per_framework: std::collections::BTreeMap<crate::model::Framework, u64>,
}

impl Progress {
    /// `total` is the number of pending cases on one device per framework.
    pub fn new(total: u64, per_framework: std::collections::BTreeMap<crate::model::Framework, u64>) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        Progress { bar, per_framework }
    }

    /// Prints a line above the bar (or plainly when there is no terminal).
    fn say(&self, line: String) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// Clears the bar from the terminal; call once the run has ended.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl EventSink for Progress {
    fn event(&mut self, e: &Event) {
        match e {
            Event::FrameworkStarting { framework } => {
                self.bar.set_message(format!("importing {framework}"));
            }
            Event::FrameworkReady { framework, version, devices } => {
                let names: Vec<&str> = devices.iter().map(|d| d.as_str()).collect();
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
            Event::DeviceUnavailable { framework, device } => {
                self.say(format!(
                    "mlport: {device} is unavailable to {framework} (reported, not counted as a failure)"
                ));
            }
            Event::ReferencesStarting { count } => {
                self.bar.set_message(format!("computing {count} float64 references (numpy)"));
            }
            Event::ReferencesDone { passed, failed } => {
                let not = if *failed > 0 { format!(", {failed} could not be computed") } else { String::new() };
                self.say(format!("mlport: float64 references: {passed} computed{not}"));
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
