//! The [`Report`]s of a [`PortabilityReport`]: the summary (the report itself), the
//! per-function detail ([`Functions`]), or both ([`WithFunctions`], one JSON document); each
//! picks the file of its format (`table`, `markdown`, `json`, `csv`).

use std::io::{self, Write};

use super::{csv, json, markdown, table};
use crate::analysis::PortabilityReport;
use crate::render::Format;
use crate::render::report::Report;

/// The summary in every format.
impl Report for PortabilityReport {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render(self, format).as_bytes())
    }
}

/// A run's failing functions: per target the partial and complete failures with their
/// reasons (`report portability --functions` prints them after the summary).
pub struct Functions<'a>(pub &'a PortabilityReport);

impl Report for Functions<'_> {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render_functions(self.0, format).as_bytes())
    }
}

/// The summary followed by the failing functions (`report portability --functions`).
pub struct WithFunctions<'a>(pub &'a PortabilityReport);

impl Report for WithFunctions<'_> {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render_with_functions(self.0, format).as_bytes())
    }
}

/// The summary: one row per (framework, device), then unavailable devices, harness
/// errors and the counting rule. Ends with a newline.
fn render(report: &PortabilityReport, format: Format) -> String {
    match format {
        Format::Table => table::report(report),
        Format::Markdown => markdown::report(report),
        Format::Json => json::report(report),
        Format::Csv => csv::report(report),
    }
}

/// Per-function detail: for each target, the functions that are partial or complete
/// failures, with their failure reasons. Ends with a newline.
fn render_functions(report: &PortabilityReport, format: Format) -> String {
    match format {
        Format::Table => table::functions(report, true),
        Format::Markdown => markdown::functions(report, true),
        Format::Json => json::functions(report),
        Format::Csv => csv::functions(report),
    }
}

/// The summary followed by the per-function detail; in JSON one document holding both
/// (`mlport.portability.bundle`), so the output stays a single parseable value.
fn render_with_functions(report: &PortabilityReport, format: Format) -> String {
    match format {
        Format::Json => json::bundle(report),
        // The summary has the title, versions and rule: the detail follows without them.
        Format::Table => render(report, format) + "\n" + &table::functions(report, false),
        Format::Markdown => render(report, format) + "\n" + &markdown::functions(report, false),
        Format::Csv => render(report, format) + &render_functions(report, format),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::portability::tests::{devices, report, results, run_summary};
    use crate::analysis::{ReportOptions, build};
    use crate::model::{ResultRow, RunSource};
    use crate::render::portability::words;

    #[test]
    fn a_device_on_another_stack_says_its_own_versions() {
        use crate::model::{DeviceInfo, Framework};
        let mut devs = devices();
        let detail = "xla:0 torch_xla 2.9.0, PJRT_DEVICE=CPU; torch 2.9.0+cu128; python /envs/torch-xla/bin/python";
        devs.push(DeviceInfo {
            framework: Framework::Torch,
            device: "xla:0".parse().unwrap(),
            available: true,
            detail: detail.into(),
        });
        // An unavailable xla:0 (another framework's) and a plain device say nothing of the kind.
        devs.push(DeviceInfo {
            framework: Framework::Jax,
            device: "xla:0".parse().unwrap(),
            available: false,
            detail: "torch only".into(),
        });
        let report = build(&run_summary(), &devs, &results(), &ReportOptions::default());
        let line = words::versions(&report);
        assert!(
            line.contains("torch 2.5.1 (xla:0 ran torch_xla 2.9.0, PJRT_DEVICE=CPU; torch 2.9.0+cu128) · "),
            "{line}"
        );
        assert!(
            !line.contains("/envs/") && !line.contains("ran xla:0"),
            "the path and native name are left out: {line}"
        );
        let json: serde_json::Value = serde_json::from_str(&render(&report, Format::Json)).unwrap();
        assert_eq!(
            json["run"]["device_stacks"],
            serde_json::json!([{"framework": "torch", "device": "xla:0", "versions": "torch_xla 2.9.0, PJRT_DEVICE=CPU; torch 2.9.0+cu128"}])
        );
        let plain: serde_json::Value = serde_json::from_str(&render(
            &build(&run_summary(), &devices(), &results(), &ReportOptions::default()),
            Format::Json,
        ))
        .unwrap();
        assert!(plain["run"].get("device_stacks").is_none());
    }

    #[test]
    fn the_summary_with_functions_says_its_title_and_rule_once() {
        for format in [Format::Table, Format::Markdown] {
            let text = render_with_functions(&report(), format);
            let title = text.lines().next().unwrap().trim_start_matches("# ").to_string();
            assert!(title.starts_with("mlport portability report"), "{text}");
            assert_eq!(text.matches(title.as_str()).count(), 1, "{format:?}: {text}");
            assert_eq!(text.matches(&report().rule).count(), 1, "{format:?}: {text}");
            // Both parts are there.
            assert!(text.contains("failing cases"), "{text}");
        }
    }

    #[test]
    fn table_snapshot() {
        insta::assert_snapshot!("table", render(&report(), Format::Table));
        insta::assert_snapshot!("table_functions", render_functions(&report(), Format::Table));
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!("markdown", render(&report(), Format::Markdown));
        insta::assert_snapshot!("markdown_functions", render_functions(&report(), Format::Markdown));
    }

    #[test]
    fn json_snapshot() {
        let text = render(&report(), Format::Json);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!((doc["format"].as_str(), doc["version"].as_u64()), (Some("mlport.portability"), Some(3)));
        insta::assert_snapshot!("json", text);
        let text = render_functions(&report(), Format::Json);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["format"], "mlport.portability.functions");
        insta::assert_snapshot!("json_functions", text);
        // With --functions, JSON stays one document: the two above, bundled.
        let bundle: serde_json::Value = serde_json::from_str(&render_with_functions(&report(), Format::Json)).unwrap();
        assert_eq!(bundle["format"], "mlport.portability.bundle");
        assert_eq!(
            bundle["summary"],
            serde_json::from_str::<serde_json::Value>(&render(&report(), Format::Json)).unwrap()
        );
        assert_eq!(bundle["functions"]["format"], "mlport.portability.functions");
    }

    #[test]
    fn unattributed_table_snapshot() {
        let opts = ReportOptions { attributable: false, ..Default::default() };
        let report = build(&run_summary(), &devices(), &results(), &opts);
        insta::assert_snapshot!("table_unattributed", render(&report, Format::Table));
    }

    #[test]
    fn imported_run_table_snapshot() {
        let mut run = run_summary();
        run.origin = crate::model::RunOrigin {
            source: RunSource::ImportPaper,
            label: Some("paper/torch/tpu_vm/tpu".into()),
            machine: Some("tpu_vm".into()),
            notes: vec![
                "imported from the paper's data: 3 sessions merged (tpu_1.json, tpu_2.json, tpu_3.json)".into(),
            ],
            ..Default::default()
        };
        run.info.python_version = String::new();
        run.info.frameworks.get_mut(&crate::model::Framework::Torch).unwrap().version = None;
        let report = build(&run, &devices(), &results(), &ReportOptions::default());
        let text = render(&report, Format::Table);
        assert!(text.contains("torch version unknown") && text.contains("python unknown"), "{text}");
        assert!(text.contains("not attributable (failed on cpu)"), "{text}");
        insta::assert_snapshot!("table_imported", text);
        let json = render(&report, Format::Json);
        assert!(json.contains("\"source\": \"import:paper\"") && json.contains("\"machine\": \"tpu_vm\""), "{json}");
    }

    #[test]
    fn every_format_ends_with_the_rule() {
        let report = report();
        for format in [Format::Table, Format::Markdown, Format::Json] {
            for text in [render(&report, format), render_functions(&report, format)] {
                let tail: String = text.lines().rev().take(3).collect();
                assert!(tail.contains(&report.rule), "{format}: {text}");
            }
        }
    }

    #[test]
    fn an_empty_run_renders() {
        let report = build(&run_summary(), &[], &[], &ReportOptions::default());
        for format in [Format::Table, Format::Markdown, Format::Json] {
            assert!(render(&report, format).contains(&report.rule));
            assert!(render_functions(&report, format).contains(&report.rule));
        }
        assert!(render(&report, Format::Table).contains("No results to report."));
    }

    #[test]
    fn functions_csv_snapshot() {
        insta::assert_snapshot!("functions_csv", csv::functions(&crate::render::overview::tests::reports()[1]));
    }

    #[test]
    fn frameworks_that_did_not_import_are_named_apart() {
        let notes = words::notes(&report());
        assert!(notes.iter().any(|l| l == "jax: not usable (ImportError) — its functions did not run"), "{notes:?}");
    }

    #[test]
    fn without_results_on_the_reference_every_failure_counts() {
        // Only the cuda:0 rows: the reference cpu never ran, so nothing can be attributed.
        let rows: Vec<ResultRow> = results().into_iter().filter(|r| r.result.device.as_str() != "cpu").collect();
        let report = build(&run_summary(), &devices(), &rows, &ReportOptions::default());
        let notes = words::notes(&report);
        assert!(notes.iter().any(|l| l.contains("torch: no result on the reference cpu")), "{notes:?}");
    }
}
