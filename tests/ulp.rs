//! The ULP rule with the real frameworks: PyTorch's float32 `log` on this CPU is not correctly
//! rounded. Under the default float32 tolerance it passes; under `ulp = 0.5` (correctly
//! rounded) it is a `wrong_result`. The stored ULP figures and the correctly-rounded flag are
//! checked against an independent NumPy count of the float32 values between output and
//! reference (from `np.frexp`, not mlport's bit arithmetic).

mod common;

use mlport::model::{Against, Outcome};
use mlport::store::Store;

/// NumPy's count, over all elements, of the largest number of float32 values between the
/// output (`actual`, float32) and the float64 reference (`expected`), fractionally, and how
/// many elements are more than 0.5 apart.
fn numpy_ulps(actual: &str, expected: &str) -> (f64, u64) {
    let code = format!(
        "import numpy as np\n\
         a = np.load({actual:?}).astype(np.float64); e = np.load({expected:?})\n\
         def ord32(x):\n\
         \x20   m, E = np.frexp(np.abs(x))          # |x| = m 2^E, m in [0.5, 1)\n\
         \x20   normal = np.abs(x) >= 2.0**-126\n\
         \x20   o = np.where(normal, 2.0**23 * ((E - 1) + 126 + 1 + (2 * m - 1)), np.abs(x) / 2.0**-149)\n\
         \x20   return np.sign(x) * o\n\
         u = np.abs(ord32(a) - ord32(e))\n\
         print(repr(float(u.max())), int((u > 0.5).sum()))"
    );
    let out = std::process::Command::new(common::python()).args(["-c", &code]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut it = text.split_whitespace();
    (it.next().unwrap().parse().unwrap(), it.next().unwrap().parse().unwrap())
}

#[test]
fn an_error_below_one_ulp_passes_the_default_tolerance_and_fails_half_an_ulp() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("ulp.db");
    common::run_catalogue(&db, "ulp", &["--device", "cpu", "--framework", "torch"]);
    let store = Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let results = store.results(run).unwrap();
    let comparisons = store.comparisons(run).unwrap();
    let references = store.references(run).unwrap();
    let mut ulps = Vec::new();
    for id in ["default_rule", "half_ulp"] {
        let r = results.iter().find(|r| r.case.case_id == id).unwrap();
        let c = comparisons.iter().find(|c| c.case_key == r.case.key && c.against == Against::Float64).unwrap();
        let reference = references.iter().find(|x| x.case_id == id).unwrap();
        let (max_ulp, beyond_half) =
            numpy_ulps(r.result.outputs[0]["path"].as_str().unwrap(), reference.outputs[0]["path"].as_str().unwrap());
        // Not correctly rounded, by less than one ULP and more than half.
        assert!(max_ulp > 0.5 && max_ulp < 1.0, "{id}: NumPy counts {max_ulp} ULP");
        let stored = c.max_ulp.unwrap();
        // NumPy's ordinals near 2^30 are float64s, good to about 2^-22 of a ULP; mlport's are exact.
        assert!((stored - max_ulp).abs() <= 1e-6, "{id}: stored {stored}, NumPy {max_ulp}");
        assert_eq!(c.detail["correctly_rounded"], serde_json::json!(false), "{id}");
        ulps.push((r, c.clone(), beyond_half));
    }
    let (default, d, _) = &ulps[0];
    assert_eq!(default.result.outcome, Outcome::Pass, "{:?}", default.result.message);
    assert_eq!((d.rule.as_str(), d.mismatched), ("allclose", 0));
    let (strict, s, beyond_half) = &ulps[1];
    assert_eq!(strict.result.outcome, Outcome::WrongResult);
    assert_eq!(s.rule.as_str(), "ulp");
    assert_eq!(s.mismatched, *beyond_half, "the elements beyond 0.5 ULP, as NumPy counts them");
    let message = strict.result.message.as_deref().unwrap();
    assert!(message.contains(&format!("{beyond_half} of 4096 elements")), "{message}");
    assert!(message.contains("beyond 5e-1 ULP"), "{message}");
}
