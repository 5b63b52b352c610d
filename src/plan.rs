//! Planning: catalogue × selected frameworks × functions × dtypes → the ordered list
//! of cases a run executes on each device, and its split into shards ([`shard_of`], [`shard`]).
//! Pure: no processes, no I/O.

use std::collections::HashMap;

use anyhow::{Result, bail};

use crate::agreement::case_reference_key;
use crate::catalogue::Catalogue;
use crate::compare::Rule;
use crate::model::{CaseRow, CaseSpec, Dtype, Framework, FunctionRow, ReferenceRow, Shard, Spec};

/// What to run, from the command line.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Empty means every framework in the catalogue whose [`Framework::in_default_run`] holds
    /// (an add-on such as onnxruntime runs only when named here or by `functions`).
    pub frameworks: Vec<Framework>,
    /// Fully qualified function names; empty means all.
    pub functions: Vec<String>,
    /// Restricts each case's dtype sweep; empty means the declared sweep.
    pub dtypes: Vec<Dtype>,
    /// Only API functions or only workloads (`--kind`); `None` plans both.
    pub kind: Option<Kind>,
}

/// What a catalogue function is: one API call per case, or a workload (a whole model or
/// composite computation per case, catalogue `kind = "workload"`; docs/workloads.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// Framework API functions (the paper's unit).
    Functions,
    /// Whole models, train steps and off-the-rut pairs.
    Workloads,
}

impl Kind {
    /// Whether a function (`workload`: its catalogue `kind` is `workload`) is of this kind.
    pub fn admits(self, workload: bool) -> bool {
        workload == (self == Kind::Workloads)
    }
}

/// The planned functions and cases, in catalogue order.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// One row per function with at least one planned case.
    pub functions: Vec<FunctionRow>,
    /// One row per (case, dtype), keyed by [`case_key`], in the order workers run them.
    pub cases: Vec<CaseRow>,
    /// The float64 references the planned cases are compared with, each planned once:
    /// - an op's: one per (canonical op, case id, dtype) that the catalogue's NumPy file has a
    ///   function and case for, whether or not NumPy itself is selected, and whether or not that
    ///   NumPy case is skipped as a test or its function is `reference_only`;
    /// - otherwise a case's own: its catalogue `reference` (a NumPy/SciPy callable), or, for a
    ///   float16, bfloat16, float32 or complex64 case, its **float64 self-reference**: the same
    ///   function and case run by the same framework on the reference device on the same inputs
    ///   upcast to float64 (complex128), the reference of last resort.
    ///
    /// Cases with none (integer, bool and float64 cases without an op reference) run unchecked.
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

    /// A fingerprint of the plan: the first 16 bytes, as hex, of the SHA-256 of every planned
    /// case's key, input seed and spec (JSON) in order. Two machines that plan the same cases
    /// from the same catalogue, selection and seed get the same digest; a changed catalogue
    /// file, selection or `--seed` changes it.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for c in &self.cases {
            h.update(c.key.as_bytes());
            h.update([0]);
            h.update(c.seed.to_le_bytes());
            h.update(serde_json::to_string(&c.spec).unwrap_or_default().as_bytes());
            h.update([0]);
        }
        hex::encode(&h.finalize()[..16])
    }
}

/// The shard (0-based, below `count`) that holds function `name`: the first 8 bytes of the
/// SHA-256 of the name's UTF-8 bytes, read as a big-endian `u64`, modulo `count`. Not Rust's
/// randomised hasher: every machine, build and mlport version computes the same split, so the
/// shards of a campaign run on different machines cover the plan exactly once. All cases and
/// targets of a function stay in one shard, so each shard's device-attributable rule sees the
/// function on the reference device.
///
/// Panics when `count` is 0 ([`Shard::new`] refuses it).
pub fn shard_of(name: &str, count: u32) -> u32 {
    use sha2::{Digest, Sha256};
    assert!(count > 0, "a shard count is at least 1");
    let digest = Sha256::digest(name.as_bytes());
    let head = u64::from_be_bytes(digest[..8].try_into().expect("SHA-256 has 32 bytes"));
    (head % u64::from(count)) as u32
}

/// The part of `full` that shard `part` holds: the functions with [`shard_of`] equal to its
/// index, with their cases (in the full plan's order) and the float64 references those cases
/// need. May be empty when the plan has fewer functions than shards.
pub fn shard(catalogue: &Catalogue, full: &Plan, part: Shard) -> Plan {
    let mine = |name: &str| shard_of(name, part.count) == part.index;
    let functions: Vec<FunctionRow> = full.functions.iter().filter(|f| mine(&f.name)).cloned().collect();
    let cases: Vec<CaseRow> = full.cases.iter().filter(|c| mine(&c.function)).cloned().collect();
    let references = references(catalogue, &functions, &cases);
    Plan { functions, cases, references }
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
/// Without `--framework` or `--function`, the files of frameworks not in the default run
/// ([`Framework::in_default_run`]: ONNX Runtime, an add-on) are left out; they run when selected.
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
    let by_default = sel.frameworks.is_empty() && sel.functions.is_empty();
    let mut opt_in = Vec::new();
    for file in &catalogue.files {
        if !sel.frameworks.is_empty() && !sel.frameworks.contains(&file.framework) {
            continue;
        }
        // A Keras backend's workloads run by default (Keras' ResNet-50 on three backends); its
        // ops only when it is selected.
        let workloads_only = by_default && Framework::KERAS.contains(&file.framework);
        if by_default && !file.framework.in_default_run() && !workloads_only {
            opt_in.push(file.framework.to_string());
            continue;
        }
        for f in &file.functions {
            if (workloads_only && !f.workload)
                || f.reference_only
                || (!sel.functions.is_empty() && !sel.functions.contains(&f.name))
                || sel.kind.is_some_and(|k| !k.admits(f.workload))
            {
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
    if out.cases.is_empty() && !opt_in.is_empty() {
        bail!("nothing to run: {} runs only when selected (--framework {})", opt_in.join(", "), opt_in.join(","));
    }
    if out.cases.is_empty() {
        bail!("nothing to run: the selection matches no case");
    }
    out.references = references(catalogue, &out.functions, &out.cases);
    Ok(out)
}

/// The float64 references of planned cases (see [`Plan::references`]), in case order, each once.
fn references(catalogue: &Catalogue, functions: &[FunctionRow], cases: &[CaseRow]) -> Vec<ReferenceRow> {
    let ops: HashMap<(Framework, &str), &str> =
        functions.iter().filter_map(|f| f.op.as_deref().map(|op| ((f.framework, f.name.as_str()), op))).collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for c in cases {
        let (Some(spec), Some(dtype)) = (c.spec.catalogue(), c.dtype) else { continue };
        if spec.skip.is_some() {
            continue;
        }
        let row = |key: String, framework: Framework, op: &str, function: &str, spec: CaseSpec| ReferenceRow {
            key,
            framework,
            op: op.to_string(),
            case_id: c.case_id.clone(),
            dtype,
            function: function.to_string(),
            seed: c.seed,
            spec,
            outcome: None,
            message: None,
            outputs: serde_json::json!([]),
        };
        match reference_source(catalogue, &ops, c, dtype) {
            Some(Source::Own(r)) => {
                let mut s = CaseSpec::new(&r.function, &c.case_id);
                s.inputs = spec.inputs.clone();
                s.kwargs = r.kwargs.clone();
                s.timeout_s = spec.timeout_s;
                out.push(row(case_reference_key(&c.key), Framework::Numpy, "", &r.function, s));
            }
            Some(Source::Op { op, function, case }) => {
                let key = crate::agreement::reference_key(op, &c.case_id, dtype);
                if seen.insert(key.clone()) {
                    let s = CaseSpec { timeout_s: case.timeout_s.or(case.spec.timeout_s), ..case.spec.clone() };
                    out.push(row(key, Framework::Numpy, op, &function.name, s));
                }
            }
            Some(Source::SelfReference) => {
                out.push(row(case_reference_key(&c.key), c.framework, "", &c.function, spec.clone()));
            }
            None => {}
        }
    }
    out
}

/// Where a planned case's float64 reference comes from ([`Plan::references`]).
enum Source<'a> {
    /// The case's own catalogue `reference` (wins over its op's).
    Own(&'a crate::catalogue::OwnReference),
    /// Its canonical op's NumPy function and aligned case.
    Op { op: &'a str, function: &'a crate::catalogue::Function, case: &'a crate::catalogue::Case },
    /// The same function at float64 on the reference device, the reference of last resort.
    SelfReference,
}

/// The dtypes a float64 self-reference is planned for: those below double precision.
pub const SELF_REFERENCE_DTYPES: [Dtype; 4] = [Dtype::Float16, Dtype::Bfloat16, Dtype::Float32, Dtype::Complex64];

/// Where case `c` at `dtype` gets its float64 reference, `None` when nothing can check it
/// (an integer, bool, float64 or complex128 case with neither an op reference nor its own, or
/// one whose `compare` checks no values: [`compares_values`]).
fn reference_source<'a>(
    catalogue: &'a Catalogue,
    ops: &HashMap<(Framework, &str), &'a str>,
    c: &CaseRow,
    dtype: Dtype,
) -> Option<Source<'a>> {
    let declared = catalogue
        .file(c.framework)
        .and_then(|f| f.functions.iter().find(|f| f.name == c.function))
        .and_then(|f| f.cases.iter().find(|k| k.id == c.case_id));
    if let Some(own) = declared.and_then(|k| k.reference.as_ref()) {
        return Some(Source::Own(own));
    }
    let op = ops.get(&(c.framework, c.function.as_str())).copied();
    if let Some((function, case)) = op.and_then(|op| catalogue.reference_for(op, &c.case_id)) {
        return Some(Source::Op { op: op.expect("found by it"), function, case });
    }
    let compares_values = c.spec.catalogue().is_some_and(|s| compares_values(&s.compare));
    (SELF_REFERENCE_DTYPES.contains(&dtype) && compares_values).then_some(Source::SelfReference)
}

/// Whether `compare` compares some output's values (`allclose`, `exact`, `sorted`,
/// `up_to_sign`, `ulp`) or distribution (`statistical`: a float64 draw of the same sampler is a
/// fair second sample): only then can the same function at float64 judge it. `shape_dtype` and
/// `none` are for answers with no values to check (a random shape, a side effect).
fn compares_values(compare: &crate::model::Compare) -> bool {
    let values = |r: &Rule| !matches!(r, Rule::ShapeDtype | Rule::None);
    match compare {
        crate::model::Compare::One(r) => values(r),
        crate::model::Compare::PerOutput(list) => list.iter().any(values),
    }
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
    fn onnxruntime_runs_only_when_selected() {
        let ort = r#"format = 1
framework = "onnxruntime"
version = "1"
[[function]]
name = "ai.onnx.Sin"
[[function.case]]
inputs = [{ shape = [3] }]
"#;
        let both = Catalogue::new(vec![parse("t.toml", ORT_TORCH).unwrap(), parse("o.toml", ort).unwrap()]).unwrap();
        let fws = |sel: &Selection| plan(&both, sel, 0).unwrap().frameworks();
        assert_eq!(fws(&Selection::default()), [Framework::Torch]);
        let chosen = Selection { frameworks: vec![Framework::Onnxruntime], ..Selection::default() };
        assert_eq!(fws(&chosen), [Framework::Onnxruntime]);
        let named = Selection { functions: vec!["ai.onnx.Sin".into()], ..Selection::default() };
        assert_eq!(fws(&named), [Framework::Onnxruntime]);
        let alone = Catalogue::new(vec![parse("o.toml", ort).unwrap()]).unwrap();
        let e = plan(&alone, &Selection::default(), 0).unwrap_err().to_string();
        assert!(e.contains("onnxruntime runs only when selected (--framework onnxruntime)"), "{e}");
    }

    const ORT_TORCH: &str =
        "format = 1\nframework = \"torch\"\nversion = \"1\"\n[[function]]\nname = \"torch.sin\"\n[[function.case]]\n";

    #[test]
    fn shard_of_is_a_fixed_function_of_the_name() {
        assert_eq!(shard_of("torch.add", 1), 0);
        // `printf %s torch.add | sha256sum` begins c575200cd7907d01; jax.numpy.cumsum's 6468f88fab3252af.
        assert_eq!((shard_of("torch.add", 4), shard_of("torch.add", 7)), (1, 5));
        assert_eq!((shard_of("jax.numpy.cumsum", 4), shard_of("jax.numpy.cumsum", 7)), (3, 1));
        // And for any count: the first 16 hex digits of the name's SHA-256, modulo the count.
        for name in ["torch.add", "jax.numpy.cumsum", "tf.math.cumsum", ""] {
            let head = {
                use sha2::{Digest, Sha256};
                u64::from_str_radix(&hex::encode(Sha256::digest(name.as_bytes()))[..16], 16).unwrap()
            };
            for n in [1, 2, 3, 4, 7, 64, u32::MAX] {
                assert_eq!(u64::from(shard_of(name, n)), head % u64::from(n), "{name} {n}");
            }
        }
    }

    #[test]
    fn shards_of_the_builtin_catalogue_cover_the_plan_exactly_once() {
        let catalogue = crate::catalogue::builtin().unwrap();
        let full = plan(&catalogue, &Selection::default(), 0).unwrap();
        let digest = full.digest();
        for count in 1..=16 {
            let mut seen: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
            let mut functions = 0;
            let mut references = std::collections::HashSet::new();
            let parts: Vec<Plan> =
                (0..count).map(|i| shard(&catalogue, &full, Shard::new(i, count).unwrap())).collect();
            for (i, part) in parts.iter().enumerate() {
                functions += part.functions.len();
                for c in &part.cases {
                    assert!(seen.insert(c.key.as_str(), i as u32).is_none(), "{} in two shards of {count}", c.key);
                    assert_eq!(shard_of(&c.function, count), i as u32);
                }
                for r in &part.references {
                    references.insert(r.key.clone());
                }
            }
            if count == 4 {
                // The balance docs/fleet.md quotes (`cargo test --lib shards_of_the_builtin -- --nocapture`).
                let sizes: Vec<String> = parts
                    .iter()
                    .enumerate()
                    .map(|(i, p)| format!("shard {i}: {} functions / {} cases", p.functions.len(), p.cases.len()))
                    .collect();
                eprintln!("built-in catalogue in 4 shards: {}", sizes.join("; "));
            }
            assert_eq!(seen.len(), full.cases.len(), "{count} shards cover every case");
            assert_eq!(functions, full.functions.len(), "{count} shards cover every function");
            let all: std::collections::HashSet<String> = full.references.iter().map(|r| r.key.clone()).collect();
            assert_eq!(references, all, "{count} shards plan every reference");
        }
        assert_eq!(plan(&catalogue, &Selection::default(), 0).unwrap().digest(), digest, "the digest is stable");
        assert_ne!(plan(&catalogue, &Selection::default(), 1).unwrap().digest(), digest, "a seed changes it");
    }

    #[test]
    fn shard_of_random_names_stays_below_the_count() {
        // A property over generated names (proptest-style, with the project's own seeded
        // generator): every name lands in exactly one shard below the count, the same each time.
        let mut rng = crate::stats::SplitMix64::new(7);
        for _ in 0..2000 {
            let len = (rng.next_u64() % 24) as usize;
            let name: String = (0..len).map(|_| char::from(b'a' + (rng.next_u64() % 26) as u8)).collect();
            let count = 1 + (rng.next_u64() % 100) as u32;
            let s = shard_of(&name, count);
            assert!(s < count);
            assert_eq!(shard_of(&name, count), s);
        }
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
