//! Planning: catalogue × selected frameworks × functions × dtypes → the ordered list
//! of cases a run executes on each device. Pure: no processes, no I/O.

use anyhow::{Result, bail};

use crate::catalogue::Catalogue;
use crate::model::{CaseRow, CaseSpec, Dtype, Framework, FunctionRow, ReferenceRow, Spec};

/// What to run, from the command line.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Empty means every framework in the catalogue.
    pub frameworks: Vec<Framework>,
    /// Fully qualified function names; empty means all.
    pub functions: Vec<String>,
    /// Restricts each case's dtype sweep; empty means the declared sweep.
    pub dtypes: Vec<Dtype>,
}

/// The planned functions and cases, in catalogue order.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// One row per function with at least one planned case.
    pub functions: Vec<FunctionRow>,
    /// One row per (case, dtype), keyed by [`case_key`], in the order workers run them.
    pub cases: Vec<CaseRow>,
    /// The float64 references the planned cases are compared with: one per (canonical op,
    /// case id, dtype) that the catalogue's NumPy file has a function and case for, whether or
    /// not NumPy itself is selected.
    pub references: Vec<ReferenceRow>,
}

impl Plan {
    /// Frameworks with at least one planned case, in report order.
    pub fn frameworks(&self) -> Vec<Framework> {
        let mut v: Vec<Framework> = self.cases.iter().map(|c| c.framework).collect();
        v.sort();
        v.dedup();
        v
    }
}

/// The key that names a case at one dtype within a run: `framework/function/case/dtype`.
pub fn case_key(fw: Framework, function: &str, case_id: &str, dtype: Dtype) -> String {
    format!("{fw}/{function}/{case_id}/{dtype}")
}

/// The name of a case's input arrays at one dtype and seed: the first 16 hex digits of the
/// SHA-256 of `inputs` (the case spec's JSON, keys sorted), the dtype and the seed. Aligned
/// cases of different frameworks have identical inputs and seeds (the catalogue checks it), so
/// they share the key, and the worker makes their arrays once
/// (`<run folder>/inputs/<key>.in<i>.npy`).
pub fn input_key(inputs: &[serde_json::Value], dtype: Dtype, seed: u64) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    // The compact JSON of the input list, as earlier versions hashed it.
    h.update(serde_json::Value::from(inputs.to_vec()).to_string().as_bytes());
    h.update([0]);
    h.update(dtype.as_str().as_bytes());
    h.update([0]);
    h.update(seed.to_le_bytes());
    hex::encode(&h.finalize()[..8])
}

/// Builds the plan. The input seed of a case is `case.seed + run_seed` (wrapping), so
/// the same run seed gives every framework the same inputs for the same case seed.
///
/// Errors: a framework with no catalogue, a function name no catalogue file lists.
pub fn plan(catalogue: &Catalogue, sel: &Selection, run_seed: u64) -> Result<Plan> {
    for fw in &sel.frameworks {
        if catalogue.file(*fw).is_none() {
            bail!("framework {fw} has no catalogue file");
        }
    }
    for name in &sel.functions {
        if catalogue.find(name).is_none() {
            let hint = catalogue
                .files
                .iter()
                .flat_map(|f| f.functions.iter())
                .find(|f| f.name.ends_with(&format!(".{}", name.rsplit('.').next().unwrap_or(name))))
                .map(|f| format!(" (did you mean {}?)", f.name))
                .unwrap_or_default();
            bail!("unknown function `{name}`: no catalogue file lists it{hint}");
        }
    }
    let mut out = Plan::default();
    for file in &catalogue.files {
        if !sel.frameworks.is_empty() && !sel.frameworks.contains(&file.framework) {
            continue;
        }
        for f in &file.functions {
            if !sel.functions.is_empty() && !sel.functions.contains(&f.name) {
                continue;
            }
            let before = out.cases.len();
            for c in &f.cases {
                for dtype in &c.dtypes {
                    if !sel.dtypes.is_empty() && !sel.dtypes.contains(dtype) {
                        continue;
                    }
                    let mut spec = c.spec.clone();
                    if let Some(why) = &c.skip {
                        spec.skip = Some(why.clone());
                    }
                    if let Some(t) = c.timeout_s {
                        spec.timeout_s = Some(t);
                    }
                    out.cases.push(CaseRow {
                        key: case_key(file.framework, &f.name, &c.id, *dtype),
                        framework: file.framework,
                        function: f.name.clone(),
                        case_id: c.id.clone(),
                        dtype: Some(*dtype),
                        seed: c.seed.wrapping_add(run_seed),
                        spec: Spec::from(spec),
                    });
                }
            }
            if out.cases.len() > before {
                out.functions.push(f.row(file.framework));
            }
        }
    }
    if out.cases.is_empty() {
        bail!("nothing to run: the selection matches no case");
    }
    out.references = references(catalogue, &out.functions, &out.cases);
    Ok(out)
}

/// The float64 references of planned cases (see [`Plan::references`]), in case order, each once.
fn references(catalogue: &Catalogue, functions: &[FunctionRow], cases: &[CaseRow]) -> Vec<ReferenceRow> {
    let ops: std::collections::HashMap<(Framework, &str), &str> =
        functions.iter().filter_map(|f| f.op.as_deref().map(|op| ((f.framework, f.name.as_str()), op))).collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for c in cases {
        let Some(op) = ops.get(&(c.framework, c.function.as_str())) else { continue };
        let Some((f, rc)) = catalogue.reference_for(op, &c.case_id) else { continue };
        let (Some(spec), Some(dtype)) = (c.spec.catalogue(), c.dtype) else { continue };
        if rc.skip.is_some() || spec.skip.is_some() {
            continue;
        }
        let key = crate::agreement::reference_key(op, &c.case_id, dtype);
        if !seen.insert(key.clone()) {
            continue;
        }
        out.push(ReferenceRow {
            key,
            op: op.to_string(),
            case_id: c.case_id.clone(),
            dtype,
            function: f.name.clone(),
            seed: c.seed,
            spec: CaseSpec { timeout_s: rc.timeout_s.or(rc.spec.timeout_s), ..rc.spec.clone() },
            outcome: None,
            message: None,
            outputs: serde_json::json!([]),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{Catalogue, parse};

    fn cat() -> Catalogue {
        let t = r#"format = 1
framework = "torch"
version = "1"
[[function]]
name = "torch.sum"
[[function.case]]
dtypes = ["float32", "int64"]
inputs = [{ shape = [3] }]
[[function]]
name = "torch.cos"
[[function.case]]
id = "a"
seed = 5
inputs = [{ shape = [3] }]
[[function.case]]
id = "b"
skip = "needs a GPU"
"#;
        Catalogue::new(vec![parse("t.toml", t).unwrap()]).unwrap()
    }

    #[test]
    fn expands_cases_by_dtype_in_order() {
        let p = plan(&cat(), &Selection::default(), 100).unwrap();
        let keys: Vec<&str> = p.cases.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "torch/torch.sum/default/float32",
                "torch/torch.sum/default/int64",
                "torch/torch.cos/a/float32",
                "torch/torch.cos/b/float32"
            ]
        );
        assert_eq!(p.cases[2].seed, 105);
        assert_eq!(p.cases[3].spec.catalogue().unwrap().skip.as_deref(), Some("needs a GPU"));
        assert_eq!(p.functions.len(), 2);
    }

    #[test]
    fn filters_and_errors() {
        let sel = Selection { dtypes: vec![Dtype::Int64], ..Default::default() };
        let p = plan(&cat(), &sel, 0).unwrap();
        assert_eq!(p.cases.len(), 1);
        assert_eq!(p.functions.len(), 1);
        let e = plan(&cat(), &Selection { functions: vec!["torch.sums".into()], ..Default::default() }, 0).unwrap_err();
        assert!(e.to_string().contains("unknown function `torch.sums`"), "{e}");
        let e =
            plan(&cat(), &Selection { functions: vec!["jax.numpy.cos".into()], ..Default::default() }, 0).unwrap_err();
        assert!(e.to_string().contains("did you mean torch.cos?"), "{e}");
        // A dtype is parsed before it reaches the plan (`--dtype` is a usage error).
        let e = "float8".parse::<Dtype>().unwrap_err();
        assert!(e.to_string().contains("unknown dtype `float8`"));
        let e = plan(&cat(), &Selection { frameworks: vec![Framework::Jax], ..Default::default() }, 0).unwrap_err();
        assert!(e.to_string().contains("jax has no catalogue"));
    }
}
