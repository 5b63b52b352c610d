//! The whole-model agreement rule: when a workload's output (a model's forward output, or a
//! train step's loss and updated parameters, flattened to one vector of float64 values) agrees
//! with its reference.
//!
//! Elementwise `allclose` is too strict for a whole model: rounding accumulates through tens
//! of layers, so a correct float32 run can miss float32's tolerance against a float64 golden
//! run on a few elements. The rule here is the one PyTorch's dynamo benchmark runner uses to
//! judge compiled models (`torch._dynamo.utils.same`, called with `fp64_ref` from
//! `benchmarks/dynamo/common.py`'s `check_accuracy`, which builds the golden run by casting the
//! model and inputs to float64 with `cast_to(torch.float64, ...)`):
//!
//! The candidate is judged against the **floor**: the same case eager on the run's reference
//! device at the same dtype (`same`'s `ref`, the eager model whose error the compiled one is
//! held to; for a float32 workload, eager float32):
//!
//! 1. pass when the candidate is within its dtype's tolerance of the golden run, elementwise
//!    (`|c - g| <= atol + rtol * |g|`, the case's tolerance, [`crate::compare::Tolerance`]);
//! 2. else pass when `RMSE(candidate, golden) <= multiplier * RMSE(floor, golden) + rtol / 10`
//!    with `multiplier` [`RMSE_MULTIPLIER`] (2), or [`RMSE_MULTIPLIER_NOISY`] (3) for outputs
//!    of fewer than [`SMALL_OUTPUT`] (1000) elements or bfloat16/float16 candidates, as in
//!    `same`: "In the presence of noise, noise might dominate our error metric for smaller
//!    tensors";
//! 3. where float64 cannot run (no golden), pass when the cosine similarity of candidate and
//!    floor is at least [`COSINE_MIN`] (0.99; `same(..., cos_similarity=True)`);
//! 4. a model whose two calls on the same inputs differ (the worker's repeat check, on the
//!    floor or the candidate) is non-deterministic: [`ModelVerdict::NonDeterministic`] when the
//!    candidate stays within the spread (RMSE to the floor at most [`RMSE_MULTIPLIER_NOISY`]
//!    times the larger repeat RMSE), else wrong: judged statistically rather than failed.
//!
//! The floor itself cannot be held to its own error: it is the baseline ([`ModelRule::Floor`]),
//! reported with its RMSE against the golden run, and fails only where its outputs are NaN or
//! infinite where the golden run's are not (a comparison with NaN never passes).

/// The RMSE multiplier for float32 (and wider) candidates of at least [`SMALL_OUTPUT`] elements.
pub const RMSE_MULTIPLIER: f64 = 2.0;
/// The RMSE multiplier for small outputs and half-precision candidates (`same`'s 3.0).
pub const RMSE_MULTIPLIER_NOISY: f64 = 3.0;
/// Outputs with fewer elements than this use [`RMSE_MULTIPLIER_NOISY`] (`same`'s `numel() < 1000`).
pub const SMALL_OUTPUT: usize = 1000;
/// The least cosine similarity that passes when no float64 golden exists (`same`'s 0.99).
pub const COSINE_MIN: f64 = 0.99;

/// The values a whole-model judgement reads, all flattened to float64 in the same order.
#[derive(Clone, Copy, Debug)]
pub struct ModelOutputs<'a> {
    /// The candidate run (any target, mode or backend).
    pub candidate: &'a [f64],
    /// The floor: eager on the reference device at the same dtype; `None` when the candidate
    /// is the floor.
    pub floor: Option<&'a [f64]>,
    /// The larger of the floor's and the candidate's repeat RMSE (two calls on the same
    /// inputs; [`crate::model::WorkloadMeasures::repeat_rmse`]); `None` when not measured.
    pub spread: Option<f64>,
    /// The float64 golden run, when the model could be cast to float64.
    pub golden: Option<&'a [f64]>,
}

/// The tolerance of the candidate's dtype (`rtol`, `atol`: torch.testing.assert_close's
/// defaults, [`crate::compare::Tolerance::for_dtype`]) and whether it is a half-precision dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelTolerance {
    /// Relative tolerance (a fraction of `|golden|`); also `same`'s `tol`.
    pub rtol: f64,
    /// Absolute tolerance (in the output's units).
    pub atol: f64,
    /// bfloat16 or float16: the RMSE multiplier is [`RMSE_MULTIPLIER_NOISY`].
    pub half: bool,
}

impl ModelTolerance {
    /// The tolerance for a candidate of dtype `name` (`float32`, `bfloat16`, ...).
    pub fn for_dtype(name: &str) -> ModelTolerance {
        let t = crate::compare::Tolerance::for_dtype(name);
        ModelTolerance { rtol: t.rtol, atol: t.atol, half: matches!(name, "float16" | "bfloat16") }
    }
}

/// How a whole-model comparison was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelRule {
    /// Every element within the dtype's tolerance of the float64 golden run.
    WithinTolerance,
    /// RMSE against the golden run at most the multiplier times the eager float32 RMSE.
    RmseRatio,
    /// No golden run: cosine similarity with the eager run.
    Cosine,
    /// The model's repeated calls differ: compared with their spread.
    Spread,
    /// The candidate is the floor: the baseline, judged only for non-finite values.
    Floor,
}

impl ModelRule {
    /// The rule's name in reports: `tolerance`, `rmse_ratio`, `cosine`, `spread`.
    pub fn name(self) -> &'static str {
        match self {
            ModelRule::WithinTolerance => "tolerance",
            ModelRule::RmseRatio => "rmse_ratio",
            ModelRule::Cosine => "cosine",
            ModelRule::Spread => "spread",
            ModelRule::Floor => "floor",
        }
    }
}

/// The verdict of a whole-model comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelVerdict {
    /// The candidate agrees.
    Agrees,
    /// The candidate is a `wrong_result`.
    Wrong,
    /// The model's eager runs differ; the candidate is within their spread (flagged, not failed).
    NonDeterministic,
}

/// The judgement with the numbers that decided it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelJudgement {
    /// Agrees, wrong, or non-deterministic.
    pub verdict: ModelVerdict,
    /// The rule that decided.
    pub rule: ModelRule,
    /// The candidate's error: RMSE against the golden run (against the floor for `spread`), in
    /// the output's units; for `cosine`, 1 − similarity; `NaN` when nothing measures it.
    pub error: f64,
    /// The floor's error against the same golden run (RMSE; the repeat spread for `spread`;
    /// `NaN` for `cosine` and without a golden run).
    pub floor_error: f64,
    /// `error / floor_error` (infinite when the floor's error is 0 and the error is not; `NaN`
    /// when either is unknown).
    pub ratio: f64,
}

/// Why two model outputs cannot be compared.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelCompareError {
    /// The flattened outputs have different lengths.
    #[error("whole-model outputs differ in length: candidate {candidate}, {other_name} {other}")]
    Length {
        /// The candidate's element count.
        candidate: usize,
        /// Which other output (`floor`, `golden`).
        other_name: &'static str,
        /// Its element count.
        other: usize,
    },
    /// An output has no elements.
    #[error("whole-model output is empty")]
    Empty,
}

/// Root mean square of `a - b`, NaN pairs that are NaN on both sides counted as equal.
pub fn rmse(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().max(1) as f64;
    let sum: f64 = a.iter().zip(b).map(|(x, y)| if x.is_nan() && y.is_nan() { 0.0 } else { (x - y) * (x - y) }).sum();
    (sum / n).sqrt()
}

/// Cosine similarity of `a` and `b` (`same`'s eps of 1e-6 on the norms' product).
pub fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (na * nb).max(1e-6)
}

fn ratio(error: f64, floor: f64) -> f64 {
    if floor > 0.0 {
        error / floor
    } else if error == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

fn check_len(candidate: &[f64], other: &[f64], other_name: &'static str) -> Result<(), ModelCompareError> {
    if candidate.len() != other.len() {
        return Err(ModelCompareError::Length { candidate: candidate.len(), other_name, other: other.len() });
    }
    Ok(())
}

/// Judges a candidate under the whole-model rule (the module's doc gives the rule and its
/// source). Errors when the outputs are empty or of different lengths.
pub fn judge(outputs: ModelOutputs<'_>, tol: ModelTolerance) -> Result<ModelJudgement, ModelCompareError> {
    let ModelOutputs { candidate, floor, spread, golden } = outputs;
    if candidate.is_empty() {
        return Err(ModelCompareError::Empty);
    }
    if let Some(f) = floor {
        check_len(candidate, f, "floor")?;
    }
    if let Some(g) = golden {
        check_len(candidate, g, "golden")?;
    }
    let floor_error = match (floor, golden) {
        (Some(f), Some(g)) => rmse(f, g),
        (None, Some(g)) => rmse(candidate, g),
        _ => f64::NAN,
    };
    if let Some(spread) = spread.filter(|s| *s > 0.0) {
        let error = floor.map_or(0.0, |f| rmse(candidate, f));
        let verdict =
            if error <= RMSE_MULTIPLIER_NOISY * spread { ModelVerdict::NonDeterministic } else { ModelVerdict::Wrong };
        return Ok(ModelJudgement {
            verdict,
            rule: ModelRule::Spread,
            error,
            floor_error: spread,
            ratio: ratio(error, spread),
        });
    }
    let Some(golden) = golden else {
        let Some(floor) = floor else {
            return Ok(ModelJudgement {
                verdict: ModelVerdict::Agrees,
                rule: ModelRule::Floor,
                error: f64::NAN,
                floor_error: f64::NAN,
                ratio: f64::NAN,
            });
        };
        let similarity = cosine(candidate, floor);
        let verdict = if similarity >= COSINE_MIN { ModelVerdict::Agrees } else { ModelVerdict::Wrong };
        return Ok(ModelJudgement {
            verdict,
            rule: ModelRule::Cosine,
            error: 1.0 - similarity,
            floor_error: f64::NAN,
            ratio: f64::NAN,
        });
    };
    let error = rmse(candidate, golden);
    let within = candidate
        .iter()
        .zip(golden)
        .all(|(c, g)| (c.is_nan() && g.is_nan()) || (c - g).abs() <= tol.atol + tol.rtol * g.abs());
    let judged = |verdict, rule| ModelJudgement { verdict, rule, error, floor_error, ratio: ratio(error, floor_error) };
    if within {
        return Ok(judged(ModelVerdict::Agrees, ModelRule::WithinTolerance));
    }
    if floor.is_none() {
        // The baseline: wrong only where it is NaN or infinite and the golden run is not.
        let verdict = if error.is_finite() { ModelVerdict::Agrees } else { ModelVerdict::Wrong };
        return Ok(judged(verdict, ModelRule::Floor));
    }
    let passes = error <= multiplier(candidate.len(), tol.half) * floor_error + tol.rtol / 10.0;
    Ok(judged(if passes { ModelVerdict::Agrees } else { ModelVerdict::Wrong }, ModelRule::RmseRatio))
}

/// The RMSE multiplier the rule applies to a candidate of `elements` values (`half`: a
/// bfloat16 or float16 candidate).
pub fn multiplier(elements: usize, half: bool) -> f64 {
    if half || elements < SMALL_OUTPUT { RMSE_MULTIPLIER_NOISY } else { RMSE_MULTIPLIER }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F32: ModelTolerance = ModelTolerance { rtol: 1.3e-6, atol: 1e-5, half: false };

    /// A golden vector of 2000 values of magnitude ~1, and `noise(i)` added to it.
    fn golden() -> Vec<f64> {
        (0..2000).map(|i| ((i as f64) * 0.37).sin()).collect()
    }

    fn plus(g: &[f64], noise: impl Fn(usize) -> f64) -> Vec<f64> {
        g.iter().enumerate().map(|(i, x)| x + noise(i)).collect()
    }

    fn judge_vs(cand: &[f64], floor: Option<&[f64]>, golden: Option<&[f64]>) -> ModelJudgement {
        judge(ModelOutputs { candidate: cand, floor, spread: None, golden }, F32).unwrap()
    }

    #[test]
    fn within_tolerance_agrees() {
        let g = golden();
        let eager = plus(&g, |i| if i % 2 == 0 { 1e-7 } else { -1e-7 });
        let j = judge_vs(&eager, Some(&eager), Some(&g));
        assert_eq!((j.verdict, j.rule), (ModelVerdict::Agrees, ModelRule::WithinTolerance));
        assert!((j.error - 1e-7).abs() < 1e-12, "{}", j.error);
    }

    #[test]
    fn accumulated_rounding_fails_allclose_but_agrees_by_rmse() {
        // The floor drifts 1e-4 from golden everywhere (RMSE 1e-4); the candidate drifts
        // 1.5e-4 (RMSE 1.5e-4 <= 2 * 1e-4 + 1.3e-7): beyond float32's atol 1e-5, within the rule.
        let g = golden();
        let eager = plus(&g, |i| if i % 2 == 0 { 1e-4 } else { -1e-4 });
        let cand = plus(&g, |i| if i % 3 == 0 { 1.5e-4 } else { -1.5e-4 });
        let j = judge_vs(&cand, Some(&eager), Some(&g));
        assert_eq!((j.verdict, j.rule), (ModelVerdict::Agrees, ModelRule::RmseRatio));
        assert!((j.ratio - 1.5).abs() < 1e-9, "{}", j.ratio);
    }

    #[test]
    fn perturbed_candidate_is_wrong() {
        // RMSE 2.5e-4 > 2 * 1e-4 + 1.3e-7.
        let g = golden();
        let eager = plus(&g, |i| if i % 2 == 0 { 1e-4 } else { -1e-4 });
        let cand = plus(&g, |i| if i % 2 == 0 { 2.5e-4 } else { -2.5e-4 });
        let j = judge_vs(&cand, Some(&eager), Some(&g));
        assert_eq!(j.verdict, ModelVerdict::Wrong);
        assert!((j.ratio - 2.5).abs() < 1e-9, "{}", j.ratio);
    }

    #[test]
    fn small_outputs_use_the_noisy_multiplier() {
        // 10 elements: multiplier 3, so a ratio of 2.5 agrees.
        let g: Vec<f64> = golden().into_iter().take(10).collect();
        let eager = plus(&g, |i| if i % 2 == 0 { 1e-4 } else { -1e-4 });
        let cand = plus(&g, |i| if i % 2 == 0 { 2.5e-4 } else { -2.5e-4 });
        assert_eq!(judge_vs(&cand, Some(&eager), Some(&g)).verdict, ModelVerdict::Agrees);
        assert_eq!(multiplier(10, false), 3.0);
        assert_eq!(multiplier(5000, true), 3.0);
        assert_eq!(multiplier(5000, false), 2.0);
    }

    #[test]
    fn the_floor_is_the_baseline_and_fails_only_when_not_finite() {
        let g = golden();
        let eager = plus(&g, |i| if i % 2 == 0 { 1e-3 } else { -1e-3 });
        let j = judge_vs(&eager, None, Some(&g));
        assert_eq!((j.verdict, j.rule), (ModelVerdict::Agrees, ModelRule::Floor));
        assert!((j.error - 1e-3).abs() < 1e-12 && (j.ratio - 1.0).abs() < 1e-12, "{j:?}");
        let mut nan = eager.clone();
        nan[7] = f64::NAN;
        assert_eq!(judge_vs(&nan, None, Some(&g)).verdict, ModelVerdict::Wrong);
        let mut inf = eager;
        inf[7] = f64::INFINITY;
        assert_eq!(judge_vs(&inf, None, Some(&g)).verdict, ModelVerdict::Wrong);
    }

    #[test]
    fn a_nan_where_the_golden_run_has_none_fails() {
        let g = golden();
        let eager = plus(&g, |i| if i % 2 == 0 { 1e-4 } else { -1e-4 });
        let mut cand = eager.clone();
        cand[3] = f64::NAN;
        assert_eq!(judge_vs(&cand, Some(&eager), Some(&g)).verdict, ModelVerdict::Wrong);
    }

    #[test]
    fn cosine_fallback_without_golden() {
        let e = golden();
        let near = plus(&e, |i| if i % 2 == 0 { 0.01 } else { -0.01 });
        let far: Vec<f64> = e.iter().map(|x| -x).collect();
        let ok = judge_vs(&near, Some(&e), None);
        assert_eq!((ok.verdict, ok.rule), (ModelVerdict::Agrees, ModelRule::Cosine));
        let bad = judge_vs(&far, Some(&e), None);
        assert_eq!(bad.verdict, ModelVerdict::Wrong);
        assert!((bad.error - 2.0).abs() < 1e-9, "{}", bad.error);
    }

    #[test]
    fn differing_repeats_are_flagged_not_failed() {
        let g = golden();
        let eager = plus(&g, |i| if i % 2 == 0 { 1e-3 } else { 0.0 });
        let cand = plus(&g, |i| if i % 2 == 0 { 0.0 } else { 1e-3 });
        // The spread: two calls 1e-3 apart on half the elements (RMSE 7.07e-4).
        let spread = Some(rmse(&eager, &cand));
        let j = judge(ModelOutputs { candidate: &cand, floor: Some(&eager), spread, golden: Some(&g) }, F32).unwrap();
        assert_eq!((j.verdict, j.rule), (ModelVerdict::NonDeterministic, ModelRule::Spread));
        let wild = plus(&g, |_| 1.0);
        let j = judge(ModelOutputs { candidate: &wild, floor: Some(&eager), spread, golden: Some(&g) }, F32).unwrap();
        assert_eq!(j.verdict, ModelVerdict::Wrong);
        // The floor itself, non-deterministic: flagged.
        let j = judge(ModelOutputs { candidate: &eager, floor: None, spread, golden: Some(&g) }, F32).unwrap();
        assert_eq!(j.verdict, ModelVerdict::NonDeterministic);
    }

    #[test]
    fn length_mismatch_is_an_error() {
        let g = golden();
        let short = &g[..10];
        let e = judge(ModelOutputs { candidate: short, floor: Some(&g), spread: None, golden: None }, F32).unwrap_err();
        assert_eq!(e, ModelCompareError::Length { candidate: 10, other_name: "floor", other: 2000 });
    }

    #[test]
    fn float32_tolerance_comes_from_compare() {
        let t = ModelTolerance::for_dtype("float32");
        assert_eq!((t.rtol, t.atol, t.half), (1.3e-6, 1e-5, false));
        assert!(ModelTolerance::for_dtype("bfloat16").half);
    }
}
