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
//!    (`|c - g| <= atol + rtol * |g|`, each output at its own tolerance; the caller's per-output
//!    comparisons decide it, [`ModelOutputs::within`]);
//! 2. else pass when `RMSE(candidate, golden) <= multiplier * RMSE(floor, golden) + rtol / 10`
//!    with `multiplier` [`RMSE_MULTIPLIER`] (2), or [`RMSE_MULTIPLIER_NOISY`] (3) for outputs
//!    of fewer than [`SMALL_OUTPUT`] (1000) elements or bfloat16/float16 candidates, as in
//!    `same`: "In the presence of noise, noise might dominate our error metric for smaller
//!    tensors";
//! 3. where the floor cannot say what error to expect (it did not run, or its own error against
//!    the golden run is not finite), pass when the cosine similarity of candidate and golden run
//!    is at least [`COSINE_MIN`] (0.99); where float64 could not run (no golden run), pass when
//!    the candidate equals the floor within tolerance, else when their cosine similarity is at
//!    least 0.99 (`same(..., cos_similarity=True)`, after its `allclose` early exit);
//! 4. a model whose two calls on the same inputs differ (the worker's repeat check, on the
//!    candidate or its floor) is flagged non-deterministic; the rules above still judge it, and
//!    one that fails them still passes when its RMSE to the floor is at most
//!    [`RMSE_MULTIPLIER_NOISY`] times the calls' RMSE to each other (rule `spread`): judged
//!    statistically, not failed.
//!
//! The floor itself cannot be held to its own error: it is the baseline ([`ModelRule::Floor`]),
//! reported with its RMSE against the golden run, and fails only where its outputs are NaN or
//! infinite where the golden run's are not. Equal values (equal infinities included) and NaN on
//! both sides count as equal everywhere; a NaN or infinity on one side only makes an error
//! infinite (or NaN), which no rule passes.

/// The RMSE multiplier for float32 (and wider) candidates of at least [`SMALL_OUTPUT`] elements.
pub const RMSE_MULTIPLIER: f64 = 2.0;
/// The RMSE multiplier for small outputs and half-precision candidates (`same`'s 3.0).
pub const RMSE_MULTIPLIER_NOISY: f64 = 3.0;
/// Outputs with fewer elements than this use [`RMSE_MULTIPLIER_NOISY`] (`same`'s `numel() < 1000`).
pub const SMALL_OUTPUT: usize = 1000;
/// The least cosine similarity that passes when no float64 golden exists (`same`'s 0.99).
pub const COSINE_MIN: f64 = 0.99;

/// The floor's outputs, as the judgement sees them.
#[derive(Clone, Copy, Debug)]
pub enum FloorOutputs<'a> {
    /// The candidate is the floor (eager on its reference target).
    Itself,
    /// The floor's outputs, flattened like the candidate's.
    Values(&'a [f64]),
    /// The floor did not run to an answer.
    Missing,
}

/// The values a whole-model judgement reads, all flattened to float64 in the same order.
#[derive(Clone, Copy, Debug)]
pub struct ModelOutputs<'a> {
    /// The candidate run (any target, mode or backend).
    pub candidate: &'a [f64],
    /// The floor: eager on the candidate's reference target at the same dtype.
    pub floor: FloorOutputs<'a>,
    /// The larger of the floor's and the candidate's repeat RMSE (two calls on the same inputs,
    /// over the elements finite in both; [`crate::model::WorkloadMeasures::repeat_rmse`]).
    pub spread: Option<f64>,
    /// The calls' NaN/infinity pattern differed (the repeat check's `repeat_nan_mismatch`):
    /// non-deterministic, with no spread that bounds it.
    pub pattern_differs: bool,
    /// The float64 golden run, when the model could be cast to float64.
    pub golden: Option<&'a [f64]>,
    /// Whether every output is within its tolerance of the golden run, when the caller compared
    /// them output by output (each at its own dtype's tolerance); `None`: decided here with the
    /// judgement's one tolerance.
    pub within: Option<bool>,
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
    /// `rtol` and `atol` (the case's own, or its dtype's defaults) for a candidate swept at
    /// `dtype`, which says whether it is half precision.
    pub fn new(rtol: f64, atol: f64, dtype: crate::model::Dtype) -> ModelTolerance {
        use crate::model::Dtype;
        ModelTolerance { rtol, atol, half: matches!(dtype, Dtype::Float16 | Dtype::Bfloat16) }
    }
}

/// How a whole-model comparison was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelRule {
    /// Every element within the dtype's tolerance of the float64 golden run.
    WithinTolerance,
    /// RMSE against the golden run at most the multiplier times the eager float32 RMSE.
    RmseRatio,
    /// No golden run, or no usable floor: equality within tolerance, else cosine similarity
    /// (with the floor, or with the golden run when the floor is unusable).
    Cosine,
    /// Failed the rules above, but within the spread of the model's repeated calls.
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
    /// when either is unknown or not finite).
    pub ratio: f64,
    /// The model's two calls on the same inputs differed (on the candidate or its floor).
    pub non_deterministic: bool,
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
    /// Neither a float64 golden run nor a floor to judge against.
    #[error("nothing to judge against: no float64 golden run and no floor")]
    NothingToJudge,
}

/// Root mean square of `a - b`; equal values (equal infinities included) and NaN on both sides
/// count as equal, so a NaN or infinity on one side only makes it NaN or infinite.
pub fn rmse(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().max(1) as f64;
    let sum: f64 =
        a.iter().zip(b).map(|(x, y)| if x == y || (x.is_nan() && y.is_nan()) { 0.0 } else { (x - y) * (x - y) }).sum();
    (sum / n).sqrt()
}

/// Cosine similarity of `a` and `b` (`same`'s eps of 1e-6 on the norms' product); NaN when
/// either holds a NaN or an infinity.
pub fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (na * nb).max(1e-6)
}

/// Every element of `a` within `tol` of `b` (`|a - b| <= atol + rtol * |b|`), equal values and
/// NaN on both sides counting as equal.
pub fn close(a: &[f64], b: &[f64], tol: ModelTolerance) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol.atol + tol.rtol * y.abs())
}

fn ratio(error: f64, floor: f64) -> f64 {
    if !(error.is_finite() && floor.is_finite()) {
        f64::NAN
    } else if floor > 0.0 {
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

/// The RMSE multiplier the rule applies to a candidate of `elements` values (`half`: a
/// bfloat16 or float16 candidate).
pub fn multiplier(elements: usize, half: bool) -> f64 {
    if half || elements < SMALL_OUTPUT { RMSE_MULTIPLIER_NOISY } else { RMSE_MULTIPLIER }
}

/// Judges a candidate under the whole-model rule (the module's doc gives the rule and its
/// source). Errors when the outputs are empty or of different lengths, or when there is
/// nothing to judge against (no golden run and no floor).
pub fn judge(outputs: ModelOutputs<'_>, tol: ModelTolerance) -> Result<ModelJudgement, ModelCompareError> {
    let ModelOutputs { candidate, floor, spread, pattern_differs, golden, within } = outputs;
    if candidate.is_empty() {
        return Err(ModelCompareError::Empty);
    }
    if let FloorOutputs::Values(f) = floor {
        check_len(candidate, f, "floor")?;
    }
    if let Some(g) = golden {
        check_len(candidate, g, "golden")?;
    }
    let spread = spread.filter(|s| s.is_finite() && *s >= 0.0);
    let non_deterministic = pattern_differs || spread.is_some_and(|s| s > 0.0);
    let judged = |verdict, rule, error: f64, floor_error: f64| ModelJudgement {
        verdict,
        rule,
        error,
        floor_error,
        ratio: ratio(error, floor_error),
        non_deterministic,
    };
    let agrees = |ok: bool| if ok { ModelVerdict::Agrees } else { ModelVerdict::Wrong };
    let first = match (golden, floor) {
        (None, FloorOutputs::Missing) => return Err(ModelCompareError::NothingToJudge),
        (None, FloorOutputs::Itself) => judged(ModelVerdict::Agrees, ModelRule::Floor, f64::NAN, f64::NAN),
        (None, FloorOutputs::Values(f)) => {
            if close(candidate, f, tol) {
                judged(ModelVerdict::Agrees, ModelRule::Cosine, 0.0, f64::NAN)
            } else {
                let similarity = cosine(candidate, f);
                judged(agrees(similarity >= COSINE_MIN), ModelRule::Cosine, 1.0 - similarity, f64::NAN)
            }
        }
        (Some(g), floor) => {
            let error = rmse(candidate, g);
            let floor_error = match floor {
                FloorOutputs::Itself => error,
                FloorOutputs::Values(f) => rmse(f, g),
                FloorOutputs::Missing => f64::NAN,
            };
            if within.unwrap_or_else(|| close(candidate, g, tol)) {
                judged(ModelVerdict::Agrees, ModelRule::WithinTolerance, error, floor_error)
            } else if matches!(floor, FloorOutputs::Itself) {
                // The baseline: wrong only where it is NaN or infinite and the golden run is not.
                judged(agrees(error.is_finite()), ModelRule::Floor, error, floor_error)
            } else if !floor_error.is_finite() {
                let similarity = cosine(candidate, g);
                judged(agrees(error.is_finite() && similarity >= COSINE_MIN), ModelRule::Cosine, error, floor_error)
            } else {
                let passes = error <= multiplier(candidate.len(), tol.half) * floor_error + tol.rtol / 10.0;
                judged(agrees(passes), ModelRule::RmseRatio, error, floor_error)
            }
        }
    };
    // The spread of repeated calls rescues what the rules above failed, never the reverse.
    if first.verdict == ModelVerdict::Wrong
        && let (Some(spread), FloorOutputs::Values(f)) = (spread.filter(|s| *s > 0.0), floor)
    {
        let error = rmse(candidate, f);
        if error <= RMSE_MULTIPLIER_NOISY * spread {
            return Ok(judged(ModelVerdict::Agrees, ModelRule::Spread, error, spread));
        }
    }
    Ok(first)
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

    fn outputs<'a>(cand: &'a [f64], floor: FloorOutputs<'a>, golden: Option<&'a [f64]>) -> ModelOutputs<'a> {
        ModelOutputs { candidate: cand, floor, spread: None, pattern_differs: false, golden, within: None }
    }

    fn judge_vs(cand: &[f64], floor: Option<&[f64]>, golden: Option<&[f64]>) -> ModelJudgement {
        let floor = floor.map_or(FloorOutputs::Itself, FloorOutputs::Values);
        judge(outputs(cand, floor, golden), F32).unwrap()
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
    fn the_callers_per_output_verdict_decides_within_tolerance() {
        let g = golden();
        let eager = plus(&g, |i| if i % 2 == 0 { 1e-4 } else { -1e-4 });
        let o = ModelOutputs { within: Some(true), ..outputs(&eager, FloorOutputs::Values(&g), Some(&g)) };
        assert_eq!(judge(o, F32).unwrap().rule, ModelRule::WithinTolerance);
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
    fn infinities_and_nans_where_the_golden_run_has_them_are_equal() {
        // A masked softmax's -inf logits: deterministic, and a candidate equal to eager agrees.
        let mut g = golden();
        g[3] = f64::NEG_INFINITY;
        g[4] = f64::NAN;
        let mut eager = plus(&g, |i| if i % 2 == 0 { 1e-4 } else { -1e-4 });
        eager[3] = f64::NEG_INFINITY;
        eager[4] = f64::NAN;
        let j = judge_vs(&eager, Some(&eager), Some(&g));
        assert_eq!((j.verdict, j.rule), (ModelVerdict::Agrees, ModelRule::RmseRatio), "{j:?}");
        assert!(j.error.is_finite());
        // Replacing the -inf by a number is wrong.
        let mut finite = eager.clone();
        finite[3] = -1e30;
        assert_eq!(judge_vs(&finite, Some(&eager), Some(&g)).verdict, ModelVerdict::Wrong);
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
    fn an_unusable_floor_falls_back_to_cosine_with_the_golden_run() {
        let g = golden();
        let cand = plus(&g, |i| if i % 2 == 0 { 1e-4 } else { -1e-4 });
        let j = judge(outputs(&cand, FloorOutputs::Missing, Some(&g)), F32).unwrap();
        assert_eq!((j.verdict, j.rule), (ModelVerdict::Agrees, ModelRule::Cosine));
        assert!(j.ratio.is_nan(), "no floor, no ratio: {j:?}");
        // A floor with a NaN of its own: its error says nothing; cosine judges.
        let mut broken = g.clone();
        broken[0] = f64::NAN;
        let j = judge(outputs(&cand, FloorOutputs::Values(&broken), Some(&g)), F32).unwrap();
        assert_eq!((j.verdict, j.rule), (ModelVerdict::Agrees, ModelRule::Cosine));
        let negated: Vec<f64> = g.iter().map(|x| -x).collect();
        assert_eq!(
            judge(outputs(&negated, FloorOutputs::Missing, Some(&g)), F32).unwrap().verdict,
            ModelVerdict::Wrong
        );
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
        // Equal outputs agree whatever cosine says of them (zeros; NaN on both sides).
        let zeros = vec![0.0; 2000];
        assert_eq!(judge_vs(&zeros, Some(&zeros), None).verdict, ModelVerdict::Agrees);
        let mut nan = e.clone();
        nan[1] = f64::NAN;
        assert_eq!(judge_vs(&nan, Some(&nan), None).verdict, ModelVerdict::Agrees);
        // Nothing to judge against.
        assert_eq!(
            judge(outputs(&e, FloorOutputs::Missing, None), F32).unwrap_err(),
            ModelCompareError::NothingToJudge
        );
    }

    #[test]
    fn a_spread_rescues_but_never_fails_what_the_rules_pass() {
        let g = golden();
        let eager = plus(&g, |i| if i % 2 == 0 { 1e-3 } else { 0.0 });
        let cand = plus(&g, |i| if i % 2 == 0 { 0.0 } else { 1e-3 });
        // Two calls RMSE 7.07e-4 apart.
        let spread = Some(rmse(&eager, &cand));
        let o = |c| ModelOutputs { spread, ..outputs(c, FloorOutputs::Values(&eager), Some(&g)) };
        let j = judge(o(&cand), F32).unwrap();
        assert_eq!(j.verdict, ModelVerdict::Agrees);
        assert!(j.non_deterministic);
        let wild = plus(&g, |_| 1.0);
        assert_eq!(judge(o(&wild), F32).unwrap().verdict, ModelVerdict::Wrong);
        // A tiny spread (1e-9) must not fail a candidate the golden run passes.
        let close_to_golden = plus(&g, |i| if i % 2 == 0 { 1e-7 } else { -1e-7 });
        let tiny =
            ModelOutputs { spread: Some(1e-9), ..outputs(&close_to_golden, FloorOutputs::Values(&eager), Some(&g)) };
        let j = judge(tiny, F32).unwrap();
        assert_eq!((j.verdict, j.rule, j.non_deterministic), (ModelVerdict::Agrees, ModelRule::WithinTolerance, true));
        // The spread rescues a candidate the golden rules fail: two random dropout masks.
        let masked = plus(&g, |i| if i % 3 == 0 { 0.5 } else { 0.0 });
        let other = plus(&g, |i| if i % 3 == 1 { 0.5 } else { 0.0 });
        let spread = Some(rmse(&masked, &other));
        let o = ModelOutputs { spread, ..outputs(&other, FloorOutputs::Values(&masked), Some(&g)) };
        let j = judge(o, F32).unwrap();
        assert_eq!((j.verdict, j.rule), (ModelVerdict::Agrees, ModelRule::RmseRatio));
        // The floor itself, non-deterministic: flagged, judged as the floor.
        let o = ModelOutputs { spread, ..outputs(&masked, FloorOutputs::Itself, Some(&g)) };
        let j = judge(o, F32).unwrap();
        assert_eq!((j.verdict, j.rule, j.non_deterministic), (ModelVerdict::Agrees, ModelRule::Floor, true));
    }

    #[test]
    fn a_nan_pattern_that_changes_between_calls_flags_without_rescuing() {
        let g = golden();
        let cand = plus(&g, |_| 1.0);
        let o = ModelOutputs { pattern_differs: true, ..outputs(&cand, FloorOutputs::Values(&g), Some(&g)) };
        let j = judge(o, F32).unwrap();
        assert_eq!((j.verdict, j.non_deterministic), (ModelVerdict::Wrong, true));
    }

    #[test]
    fn length_mismatch_is_an_error() {
        let g = golden();
        let short = &g[..10];
        let e = judge(outputs(short, FloorOutputs::Values(&g), None), F32).unwrap_err();
        assert_eq!(e, ModelCompareError::Length { candidate: 10, other_name: "floor", other: 2000 });
    }

    #[test]
    fn half_precision_comes_from_the_dtype() {
        use crate::model::Dtype;
        let t = ModelTolerance::new(1.3e-6, 1e-5, Dtype::Float32);
        assert_eq!((t.rtol, t.atol, t.half), (1.3e-6, 1e-5, false));
        assert!(ModelTolerance::new(1.6e-2, 1e-5, Dtype::Bfloat16).half);
        assert!(ModelTolerance::new(1e-3, 1e-5, Dtype::Float16).half);
    }
}
