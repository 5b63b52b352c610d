//! What changed between two runs ([`crate::analysis::diff`]) as a terminal table, GitHub
//! Markdown, CSV (one record per case, output or timing) or versioned JSON
//! (`{"format": "mlport.diff", "version": 3}`). Each rendering opens with both sides and their
//! versions (a framework whose version differs is marked) and the machines compared, names the
//! machine(s) of every change, and ends with the rule.

use std::fmt::Write as _;

use super::csv::Csv;
use super::grid::Grid;
use super::json::versioned;
use super::markdown::escape;
use super::units::{interval, latency, ratio};
use crate::analysis::diff::{Change, DiffReport, DiffSide};
use crate::model::name_or_empty;

/// The JSON document's format name.
pub const JSON_FORMAT: &str = "mlport.diff";
/// The JSON document's version.
/// The JSON document's version: 2 names the machines of every change (`machine_a`,
/// `machine_b`) and lists the machine pairs compared (`machines`, `only_a`, `only_b`); 3 adds
/// the change kinds `now_unchecked` and `now_checked`; 4 counts a framework × target only one
/// side ran in `only_one_side` (side, machine, framework, target, functions, cases) instead of
/// listing each of its cases as `added` or `removed`.
pub const JSON_VERSION: u32 = 4;

/// `run 3 (torch-2.15, gpu-box)`; several runs joined with `+`.
fn runs_of(s: &DiffSide) -> String {
    let runs: Vec<String> = s
        .runs
        .iter()
        .map(|r| {
            let label = r.label.as_ref().map(|l| format!("{l}, ")).unwrap_or_default();
            format!("run {} ({label}{})", r.id, r.machine)
        })
        .collect();
    runs.join(" + ")
}

/// `torch 2.15.0 · jax 0.10.2 · python 3.11.7 · mlport 0.1.0`, each version that differs from
/// the other side's followed by `*`.
fn versions(s: &DiffSide, other: &DiffSide) -> String {
    let mark = |mine: &str, theirs: Option<&str>| if theirs.is_some_and(|t| t != mine) { "*" } else { "" };
    let mut parts: Vec<String> = s
        .frameworks
        .iter()
        .map(|(fw, v)| format!("{fw} {v}{}", mark(v, other.frameworks.get(fw).map(String::as_str))))
        .collect();
    parts.push(format!("python {}{}", s.python, mark(&s.python, Some(&other.python))));
    parts.push(format!("mlport {}{}", s.mlport, mark(&s.mlport, Some(&other.mlport))));
    parts.join(" · ")
}

/// `gpu-box`, or `gpu-box → tpu-box` when the two sides' machines differ.
fn machine_cell(a: &str, b: &str) -> String {
    if a == b { a.to_string() } else { format!("{a} → {b}") }
}

/// Which machines were compared with which, and those one side lacks.
fn machines_line(r: &DiffReport) -> String {
    let pairs: Vec<String> = r.machines.iter().map(|p| machine_cell(&p.a, &p.b)).collect();
    let mut line = match pairs.as_slice() {
        [] => "Machines: none in common, nothing compared".to_string(),
        [one] => format!("Machine: {one}"),
        _ => format!("Machines, each with itself: {}", pairs.join(", ")),
    };
    for (side, lone) in [("A", &r.only_a), ("B", &r.only_b)] {
        if !lone.is_empty() {
            let names: Vec<&str> = lone.iter().map(|m| m.machine.as_str()).collect();
            let _ = write!(line, "; only on {side} (not compared): {}", names.join(", "));
        }
    }
    line
}

/// The lines above the table: both sides, their versions, the machines compared, and the counts.
pub fn header_lines(r: &DiffReport) -> Vec<String> {
    let mut lines = vec![
        format!("A = {}: {}", runs_of(&r.a), versions(&r.a, &r.b)),
        format!("B = {}: {}", runs_of(&r.b), versions(&r.b, &r.a)),
        machines_line(r),
    ];
    let compared = format!(
        "{} functions × targets, {} cases, {} outputs against the float64 reference and {} timed functions compared",
        r.compared.functions, r.compared.cases, r.compared.outputs, r.compared.timed
    );
    if r.changes.is_empty() {
        lines.push(format!("No changes: {compared}."));
    } else {
        let counts: Vec<String> = r.counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let changes =
            if r.changes.len() == 1 { "1 change".to_string() } else { format!("{} changes", r.changes.len()) };
        lines.push(format!("{changes} ({}): {compared}.", counts.join(", ")));
    }
    lines.extend(r.incomplete.iter().map(|note| format!("Incomplete: {note}.")));
    for side in ["A", "B"] {
        let lone: Vec<String> = r
            .only_one_side
            .iter()
            .filter(|l| l.side == side)
            .map(|l| {
                let machine = if r.machines.len() > 1 { format!(" ({})", l.machine) } else { String::new() };
                format!(
                    "{} on {}{machine}: {}, {}",
                    l.framework,
                    l.target,
                    crate::render::units::plural(l.functions, "function"),
                    crate::render::units::plural(l.cases, "case")
                )
            })
            .collect();
        if !lone.is_empty() {
            lines.push(format!("Only on {side} (not compared, not listed as changes): {}.", lone.join("; ")));
        }
    }
    lines
}

fn status(s: Option<crate::model::FunctionStatus>) -> &'static str {
    s.map_or("—", |s| s.as_str())
}

/// The "what changed" cell of a change: one line per case (`float32 [rows]: pass → ...`), or
/// the timing.
fn detail(c: &Change) -> String {
    if let Some(t) = &c.timing {
        let unstable = if t.unstable { " (unstable)" } else { "" };
        return format!(
            "{} {} over {}: {} → {}{unstable}",
            ratio(t.ratio.point),
            interval(&t.ratio),
            if t.cases == 1 { "1 case".to_string() } else { format!("{} cases", t.cases) },
            latency(t.a_median_ns),
            latency(t.b_median_ns)
        );
    }
    c.cases
        .iter()
        .map(|k| {
            let output = k.output.map(|o| format!(" output {o}")).unwrap_or_default();
            let id = k.result_b.or(k.result_a).map(|i| format!(" #{i}")).unwrap_or_default();
            format!("{} [{}]{output}{id}: {} → {}", name_or_empty(k.dtype), k.case_id, k.before, k.after)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn grid(r: &DiffReport) -> Grid {
    let mut g =
        Grid::new(["change", "machine", "function", "target", "status A → B", "cases (dtype [case] #result: A → B)"]);
    for c in &r.changes {
        g.push([
            c.kind.to_string(),
            machine_cell(&c.machine_a, &c.machine_b),
            c.function.clone(),
            c.target.to_string(),
            format!("{} → {}", status(c.status_a), status(c.status_b)),
            detail(c),
        ]);
    }
    g
}

/// A terminal table, with the header lines above and the rule below.
pub fn render_table(r: &DiffReport) -> String {
    let mut out = header_lines(r).join("\n") + "\n";
    if !r.changes.is_empty() {
        out += &grid(r).table();
        out.push('\n');
    }
    let _ = writeln!(out, "\n{}", r.rule);
    out
}

/// GitHub Markdown: the header lines as a list, the table, the rule.
pub fn render_markdown(r: &DiffReport) -> String {
    let mut out: String = header_lines(r).iter().map(|l| format!("- {}\n", escape(l))).collect();
    if !r.changes.is_empty() {
        out.push('\n');
        out += &grid(r).markdown();
    }
    let _ = writeln!(out, "\n{}", escape(&r.rule));
    out
}

/// CSV: one record per case or output of each change, and one per slowdown or speed-up.
pub fn render_csv(r: &DiffReport) -> String {
    let mut out = Csv::new();
    out.row([
        "change",
        "machine_a",
        "machine_b",
        "framework",
        "function",
        "target",
        "status_a",
        "status_b",
        "case",
        "dtype",
        "output",
        "a",
        "b",
        "result_a",
        "result_b",
        "ratio",
        "ratio_lower",
        "ratio_upper",
        "a_median_ns",
        "b_median_ns",
    ]);
    let opt = |x: Option<i64>| x.map(|v| v.to_string()).unwrap_or_default();
    for c in &r.changes {
        let head = [
            c.kind.to_string(),
            c.machine_a.clone(),
            c.machine_b.clone(),
            c.framework.to_string(),
            c.function.clone(),
            c.target.to_string(),
            status(c.status_a).to_string(),
            status(c.status_b).to_string(),
        ];
        if let Some(t) = &c.timing {
            let mut cells = head.to_vec();
            cells.extend(["", "", "", "", "", "", ""].map(String::from));
            cells.extend(
                [t.ratio.point, t.ratio.lower, t.ratio.upper, t.a_median_ns, t.b_median_ns].map(|x| format!("{x}")),
            );
            out.row(cells);
        }
        for k in &c.cases {
            let mut cells = head.to_vec();
            cells.extend([
                k.case_id.clone(),
                name_or_empty(k.dtype).to_string(),
                k.output.map(|o| o.to_string()).unwrap_or_default(),
                k.before.clone(),
                k.after.clone(),
                opt(k.result_a),
                opt(k.result_b),
            ]);
            cells.extend(["", "", "", "", ""].map(String::from));
            out.row(cells);
        }
    }
    out.finish()
}

/// Versioned JSON: both sides, what was compared, counts by kind, the changes and the rule.
pub fn render_json(r: &DiffReport) -> String {
    versioned(JSON_FORMAT, JSON_VERSION, r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::diff::tests::{campaigns_example, example};

    #[test]
    fn table_snapshot() {
        insta::assert_snapshot!(render_table(&example()));
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(render_markdown(&example()));
    }

    #[test]
    fn csv_snapshot() {
        insta::assert_snapshot!(render_csv(&example()));
    }

    #[test]
    fn json_snapshot() {
        let json = render_json(&example());
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!((v["format"].as_str(), v["version"].as_u64()), (Some("mlport.diff"), Some(JSON_VERSION as u64)));
        insta::assert_snapshot!(json);
    }

    #[test]
    fn campaigns_snapshots_name_each_machine() {
        let r = campaigns_example();
        let table = render_table(&r);
        assert!(
            table.contains("Machines, each with itself: box-1, box-2; only on A (not compared): old-box; only on B (not compared): new-box"),
            "{table}"
        );
        insta::assert_snapshot!("campaigns_table", table);
        insta::assert_snapshot!("campaigns_markdown", render_markdown(&r));
        insta::assert_snapshot!("campaigns_csv", render_csv(&r));
        insta::assert_snapshot!("campaigns_json", render_json(&r));
    }

    #[test]
    fn one_machine_each_names_both() {
        let mut r = example();
        for c in &mut r.changes {
            c.machine_b = "tpu-box".into();
        }
        r.machines[0].b = "tpu-box".into();
        let t = render_table(&r);
        assert!(t.contains("Machine: gpu-box → tpu-box") && t.contains("┆ gpu-box → tpu-box ┆ torch.a"), "{t}");
    }

    #[test]
    fn no_change_says_so() {
        let mut r = example();
        r.changes.clear();
        r.counts.clear();
        let t = render_table(&r);
        assert!(t.contains("No changes: 6 functions × targets, 6 cases"), "{t}");
        assert!(t.contains("torch 2.5.1* ·"), "A's differing torch version is marked: {t}");
    }

    #[test]
    fn what_only_one_side_ran_is_one_line() {
        let r = crate::analysis::diff::tests::lone_example();
        let header = header_lines(&r).join("\n");
        assert!(
            header.contains(
                "Only on A (not compared, not listed as changes): jax on cpu: 2 functions, 3 cases; torch on cuda:0: \
                 1 function, 1 case."
            ),
            "{header}"
        );
    }

    #[test]
    fn one_change_is_singular_and_an_incomplete_side_is_said() {
        let mut r = example();
        r.changes.truncate(1);
        r.counts = [(r.changes[0].kind, 1)].into();
        let kind = r.changes[0].kind;
        r.incomplete = vec!["B's run 8 was interrupted: 2 of its 6 planned cases have a result".into()];
        let t = render_table(&r);
        assert!(t.contains(&format!("1 change ({kind} 1): ")), "{t}");
        assert!(t.contains("Incomplete: B's run 8 was interrupted: 2 of its 6 planned cases have a result."), "{t}");
        assert!(render_markdown(&r).contains("- Incomplete: B's run 8 was interrupted"), "{}", render_markdown(&r));
        assert!(!render_table(&example()).contains("Incomplete"), "complete sides: no note");
    }
}
