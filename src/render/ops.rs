//! The operator table of a suite run ([`crate::analysis::ops`]) as a table, Markdown, versioned
//! JSON (`mlport.ops`), CSV in the layout of llama.cpp's per-backend support files (one row per
//! entry × dtype × target; [`csv_for`] gives one target's file) and a standalone HTML page; and
//! what two device types declare differently (`mlport.ops.declared`).

use std::io::{self, Write};

use minijinja::context;

use super::Format;
use super::csv::Csv;
use super::grid::Grid;
use super::json::versioned;
use super::markdown::escape;
use super::report::Report;
use crate::analysis::ops::{DeclaredDiff, Finding, OpRow, OpsReport};
use crate::model::Target;

/// The `format` of the table's JSON document.
pub const JSON_FORMAT: &str = "mlport.ops";
/// Its version; bumped on any incompatible change.
pub const JSON_VERSION: u32 = 1;
/// The `format` of the declared-support comparison's JSON document.
pub const DECLARED_FORMAT: &str = "mlport.ops.declared";

/// How many rows of each list the table, Markdown and HTML forms show (CSV and JSON hold all).
pub const LIST_LIMIT: usize = 40;

/// What each level means, said under the title.
pub const LEVELS: &str = "registered: a kernel (the device's own or a composite one) is registered for the \
    operator's dispatch key; declared: the framework's own test data declares the dtype on the device type; \
    runs: every sample ran to an answer; agrees: and none disagreed with its float64 reference \
    (or, where there is none, the reference device); of which unchecked: pairs with a sample nothing compared \
    (an integer or bool sample on the reference device alone), where agrees says only that nothing disagreed.";

fn yes_no(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "?",
    }
}

fn totals_grid(r: &OpsReport) -> Grid {
    let mut columns: Vec<String> =
        ["target", "pairs", "samples", "registered", "declared", "runs", "agrees", "of which unchecked"]
            .map(String::from)
            .to_vec();
    columns.extend(<Finding as strum::VariantArray>::VARIANTS.iter().map(|f| f.title().to_string()));
    let mut g = Grid::new(columns).right_aligned(&(1..12).collect::<Vec<_>>());
    for t in &r.targets {
        let Some(x) = r.totals.get(t.as_str()) else { continue };
        let mut cells = vec![
            t.to_string(),
            x.pairs.to_string(),
            x.samples.to_string(),
            x.registered.to_string(),
            x.declared.to_string(),
            x.runs.to_string(),
            x.agrees.to_string(),
            x.agrees_unchecked.to_string(),
        ];
        cells.extend(
            <Finding as strum::VariantArray>::VARIANTS
                .iter()
                .map(|f| x.findings.get(f.as_str()).copied().unwrap_or(0).to_string()),
        );
        g.push(cells);
    }
    g
}

fn list_grid<'a>(rows: impl Iterator<Item = &'a OpRow>) -> Grid {
    let mut g = Grid::new(["entry", "function", "dtype", "target", "samples", "ran", "agreed", "why"])
        .right_aligned(&[4, 5, 6]);
    for r in rows {
        let why = match (r.reason, &r.message) {
            (Some(reason), Some(m)) => format!("{reason}: {m}"),
            (Some(reason), None) => reason.to_string(),
            (None, Some(m)) => m.clone(),
            (None, None) => String::new(),
        };
        g.push([
            r.entry.clone(),
            r.function.clone(),
            r.dtype.to_string(),
            r.target.to_string(),
            r.samples.to_string(),
            r.ran.to_string(),
            r.agreed.to_string(),
            why,
        ]);
    }
    g
}

fn meaning(f: Finding) -> &'static str {
    match f {
        Finding::DeclaredButFails => "The framework declares the dtype on the device, and a sample fails there.",
        Finding::WorksButUndeclared => {
            "The framework does not declare the dtype on the device, yet every sample runs and agrees (one at least \
             with a non-empty input: a 0×0 matrix shows only that the dtype is accepted)."
        }
        Finding::RegisteredButWrong => {
            "A kernel is registered for the device (or registration is unknown: registered `?`), and a sample's \
             answer disagrees with its reference."
        }
        Finding::NotRegistered => "No kernel, the device's own or a composite one, is registered for the device.",
    }
}

fn header(r: &OpsReport) -> String {
    format!(
        "Operators of run {}: {}",
        r.run_id,
        if r.suites.is_empty() { "no suite".into() } else { r.suites.join("; ") }
    )
}

fn text(r: &OpsReport, markdown: bool) -> String {
    let mut out = String::new();
    if markdown {
        out.push_str(&format!(
            "# {}\n\n{}\n\n## Per target\n\n{}",
            escape(&header(r)),
            escape(LEVELS),
            totals_grid(r).markdown()
        ));
    } else {
        out.push_str(&format!("{}\n{}\n{}\n", header(r), LEVELS, totals_grid(r).table()));
    }
    if r.rows.is_empty() {
        out.push_str("\nThe run has no case taken from a suite (`mlport run --suite opinfo`).\n");
        return out;
    }
    for f in <Finding as strum::VariantArray>::VARIANTS {
        let all: Vec<&OpRow> = r.with(*f).collect();
        let title = format!("{} ({})", capitalised(f.title()), all.len());
        let more = all.len().saturating_sub(LIST_LIMIT);
        let tail = if more > 0 {
            format!("… and {more} more (`mlport report ops --run {} --format csv` lists every row)\n", r.run_id)
        } else {
            String::new()
        };
        let grid = list_grid(all.iter().take(LIST_LIMIT).copied());
        if markdown {
            out.push_str(&format!("\n## {}\n\n{}\n\n", escape(&title), meaning(*f)));
            if !all.is_empty() {
                out.push_str(&grid.markdown());
            }
            out.push_str(&escape(&tail));
        } else {
            out.push_str(&format!("\n{title}: {}\n", meaning(*f)));
            if !all.is_empty() {
                out.push_str(&grid.table());
                out.push('\n');
            }
            out.push_str(&tail);
        }
    }
    out
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
}

/// The CSV columns: llama.cpp's per-backend support file (`backend_name`, `op_name`,
/// `op_params`, `test_mode`, `supported`, `error_message`, `backend_reg_name`), then mlport's
/// four levels and counts.
const CSV_COLUMNS: [&str; 17] = [
    "backend_name",
    "op_name",
    "op_params",
    "test_mode",
    "supported",
    "error_message",
    "backend_reg_name",
    "function",
    "registered",
    "declared",
    "runs",
    "agrees",
    "samples",
    "ran",
    "agreed",
    "unchecked",
    "findings",
];

/// `supported`: `yes` when every sample runs and agrees, `partly` when some ran, else `no`.
fn supported(r: &OpRow) -> &'static str {
    if r.agrees() {
        "yes"
    } else if r.ran > 0 {
        "partly"
    } else {
        "no"
    }
}

fn csv_rows<'a>(rows: impl Iterator<Item = &'a OpRow>) -> String {
    let mut out = Csv::new();
    out.row(CSV_COLUMNS);
    for r in rows {
        let error = match (r.reason, &r.message) {
            (Some(reason), Some(m)) => format!("{reason}: {m}"),
            (Some(reason), None) => reason.to_string(),
            (None, m) => m.clone().unwrap_or_default(),
        };
        let findings: Vec<&str> = r.findings().iter().map(|f| f.as_str()).collect();
        out.row([
            r.target.to_string(),
            r.entry.clone(),
            format!("dtype={}", r.dtype),
            "support".to_string(),
            supported(r).to_string(),
            error,
            r.target.base().to_string(),
            r.function.clone(),
            yes_no(r.registered).to_string(),
            yes_no(r.declared).to_string(),
            yes_no(Some(r.runs())).to_string(),
            yes_no(Some(r.agrees())).to_string(),
            r.samples.to_string(),
            r.ran.to_string(),
            r.agreed.to_string(),
            r.unchecked.to_string(),
            findings.join(";"),
        ]);
    }
    out.finish()
}

/// One target's CSV file (every row of that target), as llama.cpp keeps one file per backend.
pub fn csv_for(r: &OpsReport, target: &Target) -> String {
    csv_rows(r.rows.iter().filter(|x| &x.target == target))
}

fn page(r: &OpsReport) -> anyhow::Result<String> {
    #[derive(serde::Serialize)]
    struct List {
        id: &'static str,
        title: String,
        meaning: &'static str,
        count: usize,
        shown: usize,
        left: usize,
        grid: Grid,
    }
    let lists: Vec<List> = <Finding as strum::VariantArray>::VARIANTS
        .iter()
        .map(|f| {
            let count = r.with(*f).count();
            List {
                id: f.as_str(),
                title: capitalised(f.title()),
                meaning: meaning(*f),
                count,
                shown: count.min(LIST_LIMIT),
                left: count.saturating_sub(LIST_LIMIT),
                grid: list_grid(r.with(*f).take(LIST_LIMIT)),
            }
        })
        .collect();
    let env = super::html::environment()?;
    let page = env.get_template("ops.html")?.render(context! {
        format => format!("{JSON_FORMAT}.html"),
        version => JSON_VERSION,
        run_id => r.run_id,
        suites => r.suites.join("; "),
        levels => LEVELS,
        totals => totals_grid(r),
        lists,
    })?;
    Ok(page + "\n")
}

/// The operator table in every text format, and its page.
impl Report for OpsReport {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        let text = match format {
            Format::Json => versioned(JSON_FORMAT, JSON_VERSION, self),
            Format::Csv => csv_rows(self.rows.iter()),
            Format::Table => text(self, false),
            Format::Markdown => text(self, true),
        };
        out.write_all(text.as_bytes())
    }

    fn html(&self) -> Option<anyhow::Result<String>> {
        Some(page(self))
    }
}

fn declared_grid(d: &DeclaredDiff) -> Grid {
    let mut g = Grid::new(["entry", "function", &format!("only {}", d.a), &format!("only {}", d.b)]);
    let list = |v: &[crate::model::Dtype]| v.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(", ");
    for r in &d.rows {
        g.push([r.entry.clone(), r.function.clone(), list(&r.only_a), list(&r.only_b)]);
    }
    g
}

/// The declared-support comparison in every text format.
impl Report for DeclaredDiff {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        let entries = |n: usize| if n == 1 { "1 entry".to_string() } else { format!("{n} entries") };
        let head = format!(
            "Declared dtypes, {} against {}, from {}: {}; entry × dtype pairs: {} declared on {}, {} on {}; {} {}.",
            self.a,
            self.b,
            self.suite,
            entries(self.entries),
            self.declared_a,
            self.a,
            self.declared_b,
            self.b,
            entries(self.rows.len()),
            if self.rows.len() == 1 { "differs" } else { "differ" },
        );
        let text = match format {
            Format::Json => versioned(DECLARED_FORMAT, JSON_VERSION, self),
            Format::Csv => declared_grid(self).csv(),
            Format::Table => format!("{head}\n{}\n", declared_grid(self).table()),
            Format::Markdown => format!("# {}\n\n{}", escape(&head), declared_grid(self).markdown()),
        };
        out.write_all(text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::ops::tests::report;
    use crate::render::to_text;

    #[test]
    fn snapshots() {
        let r = report();
        insta::assert_snapshot!("ops_table", to_text(&r, Format::Table));
        insta::assert_snapshot!("ops_markdown", to_text(&r, Format::Markdown));
        insta::assert_snapshot!("ops_json", to_text(&r, Format::Json));
        insta::assert_snapshot!("ops_csv", to_text(&r, Format::Csv));
        insta::assert_snapshot!("ops_html", r.html().unwrap().unwrap());
    }

    #[test]
    fn one_csv_per_target_in_llama_cpp_columns() {
        let r = report();
        let cpu = csv_for(&r, &"cpu".parse().unwrap());
        let mut lines = cpu.lines();
        assert_eq!(
            lines.next().unwrap(),
            "backend_name,op_name,op_params,test_mode,supported,error_message,backend_reg_name,function,registered,\
             declared,runs,agrees,samples,ran,agreed,unchecked,findings"
        );
        assert!(lines.all(|l| l.starts_with("cpu,")), "{cpu}");
        assert_eq!(csv_for(&r, &"cuda:0".parse().unwrap()).lines().count(), 1, "no rows: the header only");
    }

    #[test]
    fn the_declared_comparison() {
        let l = crate::testdata::Listing::parse(
            r#"{"format": 1, "suite": "opinfo", "framework_version": "2.15.0", "samples": 1, "ops": [
              {"name": "sin", "function": "torch.sin",
               "declared": {"cpu": ["float32", "bfloat16"], "cuda": ["float32", "float16"]}}]}"#,
        )
        .unwrap();
        let d = crate::analysis::ops::declared_diff(&l, "cpu", "cuda").unwrap();
        insta::assert_snapshot!("ops_declared_table", to_text(&d, Format::Table));
        insta::assert_snapshot!("ops_declared_json", to_text(&d, Format::Json));
    }
}
