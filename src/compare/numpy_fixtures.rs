//! Tests against real NumPy: the `.npy` files and the values NumPy and SciPy computed for them
//! by `fixtures/make.py` (read back exactly; `np.isclose` mismatch counts, max abs/rel error,
//! `np.spacing`-based ULPs, worst index; sign/phase-aligned SVD and eigenvector outputs;
//! `scipy.stats.ks_2samp` statistics and `kstwobign` p-values).

use std::path::PathBuf;

use serde_json::Value;

use super::element::{self, Element};
use super::npy::{Data, NpyArray, read_npy, with_data};
use super::{Rule, Tolerance, Verdict, compare, ks_2samp};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/compare/fixtures")
}

fn expected() -> Value {
    serde_json::from_str(include_str!("fixtures/expected.json")).expect("expected.json parses")
}

fn read(sub: &str, name: &str) -> NpyArray {
    read_npy(&dir().join(sub).join(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// `x` within `rel` of `want` (relative; absolute below 1e-300).
fn close(x: f64, want: f64, rel: f64) -> bool {
    x == want || (x - want).abs() <= rel * want.abs().max(1e-300)
}

fn shape_of(v: &Value) -> Vec<usize> {
    v.as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect()
}

/// The dtype a fixture's `key` names.
fn dtype_of(case: &serde_json::Value, key: &str) -> super::dtype::DtypeName {
    super::dtype::DtypeName::parse(case[key].as_str().unwrap())
}

#[test]
fn reads_every_numpy_file_exactly() {
    let doc = expected();
    let arrays = doc["arrays"].as_object().unwrap();
    assert!(arrays.len() >= 20);
    for (name, want) in arrays {
        let a = read("read", &format!("{name}.npy"));
        assert_eq!(a.shape(), shape_of(&want["shape"]).as_slice(), "{name}");
        assert_eq!(a.dtype().as_str(), want["dtype"].as_str().unwrap(), "{name}");
        if let Some(ints) = want["ints"].as_array() {
            let got: Vec<i128> = (0..a.len()).map(|i| with_data!(a.data(), v => v[i].int().unwrap())).collect();
            let want: Vec<i128> =
                ints.iter().map(|x| x.as_i64().map_or_else(|| i128::from(x.as_u64().unwrap()), i128::from)).collect();
            assert_eq!(got, want, "{name}");
        } else {
            let want: Vec<f64> =
                want["bits"].as_array().unwrap().iter().map(|b| f64::from_bits(b.as_u64().unwrap())).collect();
            let complex = a.dtype().is_complex();
            let got: Vec<f64> = (0..a.len())
                .flat_map(|i| {
                    let (re, im) = element::get(a.data(), i);
                    if complex { vec![re, im] } else { vec![re] }
                })
                .collect();
            assert_eq!(got.len(), want.len(), "{name}");
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{name}[{k}]: {g} vs {w}");
            }
        }
    }
    // Spot checks of what the JSON describes.
    assert_eq!(read("read", "scalar.npy").data(), &Data::Float64(vec![3.5]));
    assert_eq!(read("read", "fortran_i16_be.npy").data(), &Data::Int16(vec![0, 1, 2, 3, 4, 5]));
    assert!(read("read", "empty.npy").is_empty());
}

#[test]
fn refused_files_name_themselves() {
    let doc = expected();
    for (name, needle) in doc["errors"].as_object().unwrap() {
        let file = format!("{name}.npy");
        let err = read_npy(&dir().join("read").join(&file)).unwrap_err().to_string();
        assert!(err.contains(&file) && err.contains(needle.as_str().unwrap()), "{file}: {err}");
    }
}

#[test]
fn metrics_equal_numpys() {
    let doc = expected();
    for case in doc["comparisons"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let a = read("cmp", case["actual"].as_str().unwrap());
        let e = read("cmp", case["expected"].as_str().unwrap());
        let tol = Tolerance::close(case["rtol"].as_f64().unwrap(), case["atol"].as_f64().unwrap());
        let (ad, ed) = (dtype_of(case, "actual_dtype"), dtype_of(case, "expected_dtype"));
        assert_eq!(tol, Tolerance::for_name(&ad), "{name}: torch's default tolerance");
        let c = compare(&a, &ad, &e, &ed, Rule::AllClose, tol, false);
        let u = |k: &str| case[k].as_u64().unwrap();
        assert_eq!(c.elements, u("elements"), "{name}");
        assert_eq!(c.mismatched, u("mismatched"), "{name}: {}", c.summary());
        assert_eq!(c.nan_mismatch, u("nan_mismatch"), "{name}");
        assert_eq!(c.inf_mismatch, u("inf_mismatch"), "{name}");
        for (got, key) in [(c.max_abs, "max_abs"), (c.max_rel, "max_rel"), (c.max_ulp, "max_ulp")] {
            let want = case[key].as_f64().unwrap();
            assert!(close(got, want, 1e-14), "{name} {key}: {got} vs NumPy's {want}");
        }
        assert_eq!(c.worst_index, Some(shape_of(&case["worst_index"])), "{name}");
        let want_verdict = if u("mismatched") > 0 { Verdict::Disagree } else { Verdict::Agree };
        assert_eq!(c.verdict, want_verdict, "{name}");
    }
}

#[test]
fn rules_give_numpys_verdicts() {
    let doc = expected();
    for case in doc["rules"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let a = read("cmp", case["actual"].as_str().unwrap());
        let e = read("cmp", case["expected"].as_str().unwrap());
        let (ad, ed) = (dtype_of(case, "actual_dtype"), dtype_of(case, "expected_dtype"));
        for (rule, verdict) in case["verdicts"].as_object().unwrap() {
            let rule: Rule = rule.parse().unwrap();
            let c = compare(&a, &ad, &e, &ed, rule, Tolerance::for_name(&ad), true);
            let want = if verdict == "agree" { Verdict::Agree } else { Verdict::Disagree };
            assert_eq!(c.verdict, want, "{name} under {rule}: {}", c.summary());
            if want == Verdict::Agree && rule != Rule::AllClose {
                let aligned = case["aligned_max_abs"].as_f64().unwrap();
                assert!((c.max_abs - aligned).abs() <= 1e-15, "{name} under {rule}: {} vs {aligned}", c.max_abs);
            }
        }
    }
}

#[test]
fn kolmogorov_smirnov_equals_scipys() {
    let doc = expected();
    let mut checked = 0;
    for case in doc["ks"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let a = read("cmp", case["actual"].as_str().unwrap());
        let e = read("cmp", case["expected"].as_str().unwrap());
        let d = case["statistic"].as_f64().unwrap();
        let p = case["p_value"].as_f64().unwrap();
        let values = |x: &NpyArray| (0..x.len()).map(|i| element::get(x.data(), i).0).collect::<Vec<f64>>();
        let t = ks_2samp(&mut values(&a), &mut values(&e));
        assert!(close(t.statistic, d, 1e-14), "{name}: D {} vs {d}", t.statistic);
        assert!(close(t.p_value, p, 1e-10), "{name}: p {} vs {p}", t.p_value);
        // scipy's own asymptotic mode uses the finite-n distribution: the same order of magnitude.
        let scipy_p = case["scipy_asymp_p_value"].as_f64().unwrap();
        assert!(close(t.p_value, scipy_p, 1.5), "{name}: p {p} vs scipy's {scipy_p}");
        // Through `compare`: samples of one shape get the test; of different shapes, a shape change.
        let (ad, ed) = (a.dtype().into(), e.dtype().into());
        let c = compare(&a, &ad, &e, &ed, Rule::Statistical, Tolerance::EXACT, true);
        if a.shape() == e.shape() {
            assert_eq!((c.ks_statistic, c.ks_p_value), (Some(t.statistic), Some(t.p_value)), "{name}");
            let want = if case["verdict"] == "agree" { Verdict::Agree } else { Verdict::Disagree };
            assert_eq!(c.verdict, want, "{name}");
            checked += 1;
        } else {
            assert!(c.shape_changed && c.verdict == Verdict::Disagree && c.ks_statistic.is_none(), "{name}");
        }
    }
    assert_eq!(checked, 2, "ks_far and ks_same go through compare");
}
