//! A campaign's portability ([`crate::analysis::campaign`]) in every format: one row group per
//! (machine, target) — a machine column before the summary's own — then, per machine, its
//! shards and runs (what is missing is said), then the counting rule with each machine's
//! reference device. JSON is versioned (`{"format": "mlport.campaign", "version": 3}`); CSV has
//! one row per machine × framework × target, counts as numbers and latency in ns.

use std::io::{self, Write};

use std::fmt::Write as _;

use serde::Serialize;

use super::Format;
use super::csv::Csv;
use super::grid::Grid;
use super::json::pretty;
use super::portability::words::{SUMMARY_COLUMNS, SUMMARY_NUMERIC, summary_cells, versions};
use super::report::Report;
use crate::analysis::campaign::{CampaignReport, MachineReport};
use crate::model::Target;

/// The `format` of the JSON document.
pub const JSON_FORMAT: &str = "mlport.campaign";
/// Its version; bumped on any incompatible change.
/// Version 2: each target's `cases` carries `unchecked` (passing cases nothing compared),
/// as `mlport.portability` version 2. Version 3: the targets as `mlport.portability` version 3
/// (issue 39's split: `wrong_result` the device's, `wrong_everywhere` and `dtype_changed` apart).
pub const JSON_VERSION: u32 = 3;

/// Renders `report`. Ends with a newline.
fn render(report: &CampaignReport, format: Format) -> String {
    match format {
        Format::Table => text(report, false),
        Format::Markdown => text(report, true),
        Format::Json => json(report),
        Format::Csv => csv(report),
    }
}

fn title(r: &CampaignReport) -> String {
    let runs: usize = r.machines.iter().map(|m| m.runs.len()).sum();
    format!(
        "mlport campaign `{}` — {} machine{}, {} run{}",
        r.campaign,
        r.machines.len(),
        if r.machines.len() == 1 { "" } else { "s" },
        runs,
        if runs == 1 { "" } else { "s" }
    )
}

/// `gpu-box: shards 2 of 4 (missing 1, 3) · runs 5 (shard 0/4, finished, node-a), … · 52 cases planned`.
fn machine_line(m: &MachineReport) -> String {
    let present = m.shard_count as usize - m.missing_shards.len();
    let missing = if m.missing_shards.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = m.missing_shards.iter().map(u32::to_string).collect();
        format!(" (missing {})", list.join(", "))
    };
    let runs: Vec<String> =
        m.runs.iter().map(|r| format!("{} (shard {}, {}, {})", r.id, r.shard, r.state, r.host)).collect();
    let planned: u64 = m.runs.iter().map(|r| r.cases_planned).sum();
    format!(
        "{}: shards {present} of {}{missing} · run{} {} · {} cases planned",
        m.machine,
        m.shard_count,
        if m.runs.len() == 1 { "" } else { "s" },
        runs.join(", "),
        planned,
    )
}

fn rows(r: &CampaignReport) -> Vec<Vec<String>> {
    r.machines
        .iter()
        .flat_map(|m| {
            m.report
                .targets
                .iter()
                .map(move |t| std::iter::once(m.machine.clone()).chain(summary_cells(&m.report, t)).collect())
        })
        .collect()
}

fn text(r: &CampaignReport, markdown: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}{}\n", if markdown { "## " } else { "" }, title(r));
    let columns: Vec<&str> = std::iter::once("machine").chain(SUMMARY_COLUMNS).collect();
    let rows = rows(r);
    if rows.is_empty() {
        out.push_str("No results to report.\n");
    } else {
        let numeric: Vec<bool> = std::iter::once(false).chain(SUMMARY_NUMERIC).collect();
        let mut grid = Grid::new(columns).right_aligned_where(&numeric);
        for row in rows {
            grid.push(row);
        }
        let _ = writeln!(out, "{}", if markdown { grid.markdown() } else { grid.table() });
    }
    out.push('\n');
    for m in &r.machines {
        let bullet = if markdown { "- " } else { "" };
        let _ = writeln!(out, "{bullet}{}", machine_line(m));
        let _ = writeln!(out, "  {}", versions(&m.report));
    }
    let _ = writeln!(out, "\nRule: {}", r.rule);
    out
}

#[derive(Serialize)]
struct Document<'a> {
    format: &'static str,
    version: u32,
    campaign: &'a str,
    machines: Vec<Machine<'a>>,
    rule: &'a str,
}

#[derive(Serialize)]
struct Machine<'a> {
    machine: &'a str,
    reference_device: &'a Target,
    shard_count: u32,
    missing_shards: &'a [u32],
    runs: Vec<Run<'a>>,
    /// The machine's portability, as `mlport.portability`'s `targets`.
    targets: Vec<serde_json::Value>,
}

#[derive(Serialize)]
struct Run<'a> {
    id: i64,
    uid: &'a str,
    host: &'a str,
    shard: String,
    state: &'a str,
    cases_planned: u64,
    results: u64,
}

fn json(r: &CampaignReport) -> String {
    let machines = r
        .machines
        .iter()
        .map(|m| {
            let portability: serde_json::Value = serde_json::from_str(&super::report::to_text(&m.report, Format::Json))
                .expect("the portability JSON parses");
            Machine {
                machine: &m.machine,
                reference_device: &m.report.reference,
                shard_count: m.shard_count,
                missing_shards: &m.missing_shards,
                runs: m
                    .runs
                    .iter()
                    .map(|x| Run {
                        id: x.id,
                        uid: &x.uid,
                        host: &x.host,
                        shard: x.shard.to_string(),
                        state: x.state.as_str(),
                        cases_planned: x.cases_planned,
                        results: x.results,
                    })
                    .collect(),
                targets: portability["targets"].as_array().cloned().unwrap_or_default(),
            }
        })
        .collect();
    pretty(&Document { format: JSON_FORMAT, version: JSON_VERSION, campaign: &r.campaign, machines, rule: &r.rule })
}

fn csv(r: &CampaignReport) -> String {
    let mut out = Csv::new();
    out.row([
        "campaign",
        "machine",
        "framework",
        "device",
        "functions",
        "success",
        "partial",
        "complete_failure",
        "wrong_result",
        "wrong_everywhere",
        "cases_dtype_changed",
        "cases_unchecked",
        "reasons",
        "median_latency_ns",
    ]);
    for m in &r.machines {
        for t in &m.report.targets {
            let reasons: Vec<String> = t.reasons.iter().map(|(x, n)| format!("{x}={n}")).collect();
            out.row([
                r.campaign.clone(),
                m.machine.clone(),
                t.framework.to_string(),
                t.device.to_string(),
                t.functions_run.to_string(),
                t.success.to_string(),
                t.partial.to_string(),
                t.complete_failure.to_string(),
                t.wrong_result_functions.to_string(),
                t.wrong_everywhere_functions.to_string(),
                t.cases_dtype_changed.to_string(),
                t.cases_unchecked.to_string(),
                reasons.join(";"),
                t.median_latency_ns.map(|ns| format!("{ns}")).unwrap_or_default(),
            ]);
        }
    }
    out.finish()
}

/// A campaign's portability in every text format.
impl Report for CampaignReport {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render(self, format).as_bytes())
    }
}

/// A campaign's table followed by each machine's failing functions
/// (`report campaign NAME --functions`): table or Markdown only.
pub struct CampaignWithFunctions<'a>(pub &'a CampaignReport);

impl Report for CampaignWithFunctions<'_> {
    fn formats(&self) -> &'static [Format] {
        &[Format::Table, Format::Markdown]
    }

    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        if !self.formats().contains(&format) {
            return Err(super::report::unsupported(format));
        }
        self.0.render(format, out)?;
        for m in &self.0.machines {
            out.write_all(b"\n")?;
            super::portability::Functions(&m.report).render(format, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::campaign::tests::campaign;

    #[test]
    fn campaign_table_snapshot() {
        insta::assert_snapshot!(render(&campaign(), Format::Table));
    }

    #[test]
    fn campaign_markdown_snapshot() {
        insta::assert_snapshot!(render(&campaign(), Format::Markdown));
    }

    #[test]
    fn campaign_json_snapshot() {
        let text = render(&campaign(), Format::Json);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!((v["format"].as_str(), v["version"].as_u64()), (Some(JSON_FORMAT), Some(3)));
        insta::assert_snapshot!(text);
    }

    #[test]
    fn campaign_csv_snapshot() {
        insta::assert_snapshot!(render(&campaign(), Format::Csv));
    }
}
