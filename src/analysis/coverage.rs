//! What will judge each planned case's answer, before anything runs (`mlport list
//! --references`): per framework, how many cases get the float64 reference of their canonical
//! op, their own catalogue `reference`, a float64 self-reference, or nothing — the cases that,
//! if they pass, pass "ran, unchecked" (docs/catalogue.md, "References"). Computed from the
//! plan alone ([`crate::plan::Plan::references`]): a reference that fails to compute at run
//! time leaves its cases unchecked too, which only a run can tell.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::agreement::reference_keys;
use crate::model::{CaseRow, Framework, ReferenceRow};
use crate::plan::Plan;

/// The note every report of a run carries when some of its planned float64 references could
/// not be computed (they failed, timed out, or their worker died twice), `None` when none is
/// missing: how many, why (by outcome), and the first few keys with their message. The cases
/// that needed them ran unchecked; a crashed one is computed again by `mlport run --resume`.
/// References not attempted yet (a run still going) are not counted, nor are those recorded
/// `skip`: self-references of functions the installed framework lacks, whose cases are
/// `api_missing` (they need no reference).
pub fn missing_references_note(refs: &[ReferenceRow]) -> Option<String> {
    use crate::model::Outcome;
    // `skip`: a self-reference of a function the installed framework lacks, whose cases are
    // `api_missing`: nothing needed it (runner/reference.rs).
    let missing: Vec<&ReferenceRow> =
        refs.iter().filter(|r| r.outcome.is_some_and(|o| o != Outcome::Pass && o != Outcome::Skip)).collect();
    if missing.is_empty() {
        return None;
    }
    let mut by: BTreeMap<String, usize> = BTreeMap::new();
    for r in &missing {
        *by.entry(r.outcome.map(|o| o.to_string()).unwrap_or_default()).or_default() += 1;
    }
    let why: Vec<String> = by.iter().map(|(o, n)| format!("{n} {o}")).collect();
    let first: Vec<String> = missing
        .iter()
        .take(3)
        .map(|r| {
            let m = r.message.as_deref().and_then(|m| m.lines().next()).unwrap_or("");
            let m: String = m.chars().take(120).collect();
            format!("{} ({m})", r.key)
        })
        .collect();
    let more = if missing.len() > 3 { format!(", and {} more", missing.len() - 3) } else { String::new() };
    Some(format!(
        "{} of {} float64 references could not be computed ({}): the cases that need them ran unchecked — {}{more}",
        missing.len(),
        refs.len(),
        why.join(", "),
        first.join(", ")
    ))
}

/// Where a planned case's float64 reference comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Judge {
    /// Its canonical op's NumPy/SciPy function (`numpy.cumsum`).
    Op,
    /// Its own catalogue `reference = "scipy.special.expit"`.
    Own,
    /// The same function at float64 on the reference device (the reference of last resort).
    SelfReference,
    /// Nothing: if it passes, it passes unchecked.
    Nothing,
}

/// Counts of one framework's planned, not skipped, cases.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    /// Planned cases (case × dtype), skipped ones excluded.
    pub cases: usize,
    /// Of those, at a floating-point dtype (float16, bfloat16, float32, float64, complex64,
    /// complex128).
    pub floating: usize,
    /// Judged by their op's reference.
    pub op: usize,
    /// Judged by their own `reference`.
    pub own: usize,
    /// Judged by a float64 self-reference.
    pub self_reference: usize,
    /// Floating cases nothing judges.
    pub unchecked_floating: usize,
    /// All cases nothing judges (integer and bool included).
    pub unchecked: usize,
}

/// The plan's coverage by references.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Coverage {
    /// Per framework, in report order.
    pub frameworks: BTreeMap<Framework, Counts>,
    /// The floating cases nothing judges, as `(case key, function)`, in plan order.
    pub unchecked_floating: Vec<String>,
}

/// What judges `case` under the plan's `references` (`None` for a skipped case, which is
/// never run). `ops` maps (framework, function) to the function's canonical op.
pub fn judge(
    case: &CaseRow,
    ops: &HashMap<(Framework, &str), &str>,
    references: &HashMap<&str, &ReferenceRow>,
) -> Option<Judge> {
    let spec = case.spec.catalogue()?;
    if spec.skip.is_some() {
        return None;
    }
    let op = ops.get(&(case.framework, case.function.as_str())).copied();
    let found = reference_keys(op, case).into_iter().find_map(|k| references.get(k.as_str()).copied());
    Some(match found {
        None => Judge::Nothing,
        Some(r) if !r.op.is_empty() => Judge::Op,
        Some(r) if r.function == case.function => Judge::SelfReference,
        Some(_) => Judge::Own,
    })
}

/// Counts what judges each planned case, per framework.
pub fn build(plan: &Plan) -> Coverage {
    let ops: HashMap<(Framework, &str), &str> =
        plan.functions.iter().filter_map(|f| f.op.as_deref().map(|op| ((f.framework, f.name.as_str()), op))).collect();
    let references: HashMap<&str, &ReferenceRow> = plan.references.iter().map(|r| (r.key.as_str(), r)).collect();
    let mut out = Coverage::default();
    for c in &plan.cases {
        let Some(judge) = judge(c, &ops, &references) else { continue };
        let floating = c.dtype.is_some_and(|d| d.is_inexact());
        let n = out.frameworks.entry(c.framework).or_default();
        n.cases += 1;
        n.floating += usize::from(floating);
        match judge {
            Judge::Op => n.op += 1,
            Judge::Own => n.own += 1,
            Judge::SelfReference => n.self_reference += 1,
            Judge::Nothing => {
                n.unchecked += 1;
                if floating {
                    n.unchecked_floating += 1;
                    out.unchecked_floating.push(c.key.clone());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{Catalogue, parse};
    use crate::plan::{Selection, plan};

    const NUMPY: &str = r#"format = 1
framework = "numpy"
version = "t"
[[function]]
name = "numpy.cumsum"
op = "cumsum"
reference_only = true
[[function.case]]
dtypes = ["float16", "float64", "int32"]
inputs = [{ shape = [4] }]
[[function]]
name = "numpy.sum"
op = "sum"
[[function.case]]
dtypes = ["float32"]
inputs = [{ shape = [4] }]
skip = "only the reference"
[[function]]
name = "numpy.nansum"
op = "sum"
reference_only = true
[[function.case]]
id = "rows"
inputs = [{ shape = [2, 4] }]
"#;

    const TORCH: &str = r#"format = 1
framework = "torch"
version = "t"
[[function]]
name = "torch.cumsum"
op = "cumsum"
[[function.case]]
dtypes = ["float16", "float64", "int32"]
inputs = [{ shape = [4] }]
[[function]]
name = "torch.sum"
op = "sum"
[[function.case]]
dtypes = ["float32"]
inputs = [{ shape = [4] }]
[[function.case]]
id = "rows"
inputs = [{ shape = [2, 4] }]
[[function]]
name = "torch.sigmoid"
[[function.case]]
dtypes = ["float32", "float64"]
inputs = [{ shape = [4] }]
reference = "scipy.special.expit"
[[function]]
name = "torch.exp"
[[function.case]]
dtypes = ["bfloat16", "complex64", "float64", "complex128", "int64"]
inputs = [{ shape = [4] }]
[[function.case]]
id = "skipped"
dtypes = ["float64"]
skip = "why"
[[function]]
name = "torch.rand"
[[function.case]]
dtypes = ["float32"]
compare = "none"
"#;

    fn coverage() -> (Plan, Coverage) {
        let cat =
            Catalogue::new(vec![parse("numpy.toml", NUMPY).unwrap(), parse("torch.toml", TORCH).unwrap()]).unwrap();
        let p = plan(&cat, &Selection::default(), 0).unwrap();
        let c = build(&p);
        (p, c)
    }

    #[test]
    fn every_case_is_counted_by_what_judges_it() {
        let (p, c) = coverage();
        // numpy.cumsum is reference_only and numpy.sum's one case is skipped: NumPy plans one
        // skipped case and no test.
        assert!(p.cases.iter().all(|c| c.framework == Framework::Torch || c.spec.catalogue().unwrap().skip.is_some()));
        assert!(!c.frameworks.contains_key(&Framework::Numpy));
        let torch = &c.frameworks[&Framework::Torch];
        // cumsum ×3 and sum ×2 by op (the skipped NumPy case still supplies sum's, and a second,
        // reference_only NumPy function of the op its `rows`); sigmoid ×2 by
        // its own; exp at bfloat16 and complex64 by self-reference; exp at float64,
        // complex128 and int64 and rand (compare = "none") by nothing.
        assert_eq!(
            *torch,
            Counts { cases: 13, floating: 11, op: 5, own: 2, self_reference: 2, unchecked_floating: 3, unchecked: 4 }
        );
        assert_eq!(
            c.unchecked_floating,
            [
                "torch/torch.exp/default/float64",
                "torch/torch.exp/default/complex128",
                "torch/torch.rand/default/float32"
            ]
        );
    }

    #[test]
    fn the_built_in_catalogue_leaves_under_5_percent_of_its_floating_cases_unchecked() {
        // Issue 15: what is left are random samplers compared by shape and dtype, functions that
        // return nothing (assertions, print, summaries), outputs that depend on the dtype itself
        // (tf.as_dtype, data_ptr offsets) and torch modules with randomly initialised weights.
        let p = plan(&crate::catalogue::builtin().unwrap(), &Selection::default(), 0).unwrap();
        let c = build(&p);
        let floating: usize = c.frameworks.values().map(|n| n.floating).sum();
        let unchecked: usize = c.frameworks.values().map(|n| n.unchecked_floating).sum();
        assert_eq!(unchecked, c.unchecked_floating.len());
        assert!(floating > 2500, "the built-in catalogue plans {floating} floating cases");
        assert!(
            unchecked * 20 < floating,
            "{unchecked} of {floating} floating cases unchecked: {:?}",
            c.unchecked_floating
        );
    }

    #[test]
    fn references_are_planned_once_by_the_right_worker() {
        let (p, _) = coverage();
        let got: Vec<(&str, Framework, &str)> =
            p.references.iter().map(|r| (r.key.as_str(), r.framework, r.function.as_str())).collect();
        assert_eq!(
            got,
            [
                ("reference/cumsum/default/float16", Framework::Numpy, "numpy.cumsum"),
                ("reference/cumsum/default/float64", Framework::Numpy, "numpy.cumsum"),
                ("reference/cumsum/default/int32", Framework::Numpy, "numpy.cumsum"),
                ("reference/sum/default/float32", Framework::Numpy, "numpy.sum"),
                ("reference/sum/rows/float32", Framework::Numpy, "numpy.nansum"),
                ("reference/case/torch/torch.sigmoid/default/float32", Framework::Numpy, "scipy.special.expit"),
                ("reference/case/torch/torch.sigmoid/default/float64", Framework::Numpy, "scipy.special.expit"),
                ("reference/case/torch/torch.exp/default/bfloat16", Framework::Torch, "torch.exp"),
                ("reference/case/torch/torch.exp/default/complex64", Framework::Torch, "torch.exp"),
            ]
        );
        // The skipped NumPy case's reference is computed, not skipped.
        assert_eq!(p.references[3].spec.skip, None);
        // A self-reference is the case itself; an own reference the callable on its inputs.
        let own = &p.references[5].spec;
        assert_eq!((own.function.as_str(), own.inputs.len(), own.kwargs.len()), ("scipy.special.expit", 1, 0));
    }

    #[test]
    fn missing_references_are_counted_by_outcome_and_named() {
        let row = |key: &str, outcome: Option<crate::model::Outcome>, message: Option<&str>| ReferenceRow {
            key: key.into(),
            framework: Framework::Numpy,
            op: String::new(),
            case_id: "c".into(),
            dtype: crate::model::Dtype::Float32,
            function: "numpy.exp".into(),
            seed: 0,
            spec: crate::model::CaseSpec::new("numpy.exp", "c"),
            outcome,
            message: message.map(str::to_string),
            outputs: serde_json::json!([]),
        };
        use crate::model::Outcome::{Crash, Fail, Pass};
        let refs = [
            row("r/a", Some(Pass), None),
            row("r/b", Some(Crash), Some("crash: killed by signal 9\nstderr")),
            row("r/c", None, None),
        ];
        assert_eq!(
            missing_references_note(&refs).unwrap(),
            "1 of 3 float64 references could not be computed (1 crash): the cases that need them ran unchecked — \
             r/b (crash: killed by signal 9)"
        );
        let more: Vec<ReferenceRow> =
            (0..5).map(|i| row(&format!("r/{i}"), Some(if i % 2 == 0 { Fail } else { Crash }), Some("x"))).collect();
        let note = missing_references_note(&more).unwrap();
        assert!(note.starts_with("5 of 5 float64 references could not be computed (2 crash, 3 fail)"), "{note}");
        assert!(note.ends_with("r/2 (x), and 2 more"), "{note}");
        assert_eq!(missing_references_note(&refs[..1]), None);
        assert_eq!(missing_references_note(&refs[2..]), None, "not attempted yet is not missing");
        // A self-reference of a function the framework lacks is not missing: nothing needs it.
        let lacking = [row("r/gone", Some(crate::model::Outcome::Skip), Some("not needed: …"))];
        assert_eq!(missing_references_note(&lacking), None);
    }
}
