//! A slowdown's distribution (`--slowdown A..B`) as two SVG plots drawn with `plotters`' SVG
//! backend, both on a log-scaled ratio axis (B's median time over A's, per function): a
//! histogram (four bins a decade) and the empirical CDF, the intolerable threshold drawn as a
//! vertical line in both; and the caption's numbers (medians, geometric means with their
//! bootstrap intervals), read from the [`SlowdownReport`].

use plotters::prelude::*;

use super::bars::SUCCESS;
use crate::analysis::slowdown::SlowdownReport;

/// Okabe-Ito vermillion: the threshold line.
const THRESHOLD: RGBColor = RGBColor(0xD5, 0x5E, 0x00);
const W: i32 = 760;
const H: i32 = 240;
const LEFT: i32 = 50;
const BOTTOM: i32 = 30;
const BINS_PER_DECADE: f64 = 4.0;

/// The decades the axis spans: from below the smallest ratio (and the threshold) to above the largest.
fn decades(ratios: &[f64], threshold: f64) -> (f64, f64) {
    let logs = ratios.iter().chain([&threshold, &1.0]).map(|r| r.log10());
    let lo = logs.clone().fold(f64::INFINITY, f64::min).floor();
    let hi = logs.fold(f64::NEG_INFINITY, f64::max).ceil();
    (lo, if hi > lo { hi } else { lo + 1.0 })
}

/// Draws the frame shared by both plots: the axis, its decade labels and the threshold line;
/// returns the x of a ratio.
fn frame(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    (lo, hi): (f64, f64),
    threshold: f64,
    y_label: &str,
) -> impl Fn(f64) -> i32 + use<> {
    let x_of = move |r: f64| LEFT + (((r.log10() - lo) / (hi - lo)) * (W - LEFT - 60) as f64).round() as i32;
    let font = ("sans-serif", 15).into_font().color(&BLACK);
    let _ = root.fill(&WHITE);
    let _ = root.draw(&PathElement::new(vec![(LEFT, H - BOTTOM), (W - 60, H - BOTTOM)], BLACK));
    let _ = root.draw(&PathElement::new(vec![(LEFT, 10), (LEFT, H - BOTTOM)], BLACK));
    let mut d = lo;
    while d <= hi {
        let x = x_of(10f64.powf(d));
        let _ = root.draw(&PathElement::new(vec![(x, H - BOTTOM), (x, H - BOTTOM + 4)], BLACK));
        let _ = root.draw(&Text::new(
            format!("{:.*}×", (-d).max(0.0) as usize, 10f64.powf(d)),
            (x - 10, H - BOTTOM + 8),
            font.clone(),
        ));
        d += 1.0;
    }
    let tx = x_of(threshold);
    let _ = root.draw(&PathElement::new(vec![(tx, 10), (tx, H - BOTTOM)], THRESHOLD.stroke_width(2)));
    let _ = root.draw(&Text::new(format!("threshold {threshold}×"), (tx + 4, 12), font.clone()));
    let _ = root.draw(&Text::new(y_label.to_string(), (4, 12), font));
    x_of
}

/// The histogram's SVG: functions per bin of the ratio (log scale).
pub fn histogram(sd: &SlowdownReport) -> String {
    let ratios: Vec<f64> = sd.functions.iter().map(|f| sd.ratio_of(f)).filter(|r| *r > 0.0).collect();
    let (lo, hi) = decades(&ratios, sd.options.threshold);
    let bins = ((hi - lo) * BINS_PER_DECADE) as usize;
    let mut counts = vec![0usize; bins.max(1)];
    for r in &ratios {
        let i = ((r.log10() - lo) * BINS_PER_DECADE).floor() as usize;
        let last = counts.len() - 1;
        counts[i.min(last)] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (W as u32, H as u32)).into_drawing_area();
        let x_of = frame(&root, (lo, hi), sd.options.threshold, &format!("functions (max {top})"));
        for (i, n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            let (a, b) = (lo + i as f64 / BINS_PER_DECADE, lo + (i + 1) as f64 / BINS_PER_DECADE);
            let y = H - BOTTOM - ((*n as f64 / top) * (H - BOTTOM - 30) as f64).round() as i32;
            let rect = [(x_of(10f64.powf(a)) + 1, y), (x_of(10f64.powf(b)) - 1, H - BOTTOM)];
            let _ = root.draw(&Rectangle::new(rect, SUCCESS.filled()));
        }
        let _ = root.present();
    }
    out
}

/// The empirical CDF's SVG: the share of functions with a ratio at most x (log scale).
pub fn cdf(sd: &SlowdownReport) -> String {
    let mut ratios: Vec<f64> = sd.functions.iter().map(|f| sd.ratio_of(f)).filter(|r| *r > 0.0).collect();
    ratios.sort_by(f64::total_cmp);
    let (lo, hi) = decades(&ratios, sd.options.threshold);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (W as u32, H as u32)).into_drawing_area();
        let x_of = frame(&root, (lo, hi), sd.options.threshold, "share of functions (0–1)");
        let y_of = |p: f64| H - BOTTOM - (p * (H - BOTTOM - 30) as f64).round() as i32;
        let mut points = vec![(LEFT, y_of(0.0))];
        for (i, r) in ratios.iter().enumerate() {
            let x = x_of(*r);
            points.push((x, y_of(i as f64 / ratios.len() as f64)));
            points.push((x, y_of((i + 1) as f64 / ratios.len() as f64)));
        }
        points.push((W - 60, y_of(if ratios.is_empty() { 0.0 } else { 1.0 })));
        let _ = root.draw(&PathElement::new(points, SUCCESS.stroke_width(2)));
        let _ = root.present();
    }
    out
}

/// The caption: per framework the functions compared, the median ratio, the geometric mean
/// with its bootstrap interval, how many are faster on B and how many past the threshold.
pub fn caption(sd: &SlowdownReport) -> Vec<String> {
    let num = |v: Option<f64>| v.map(|v| format!("{v:.3}×")).unwrap_or_else(|| "–".into());
    sd.frameworks
        .iter()
        .map(|f| {
            let d = sd.headline(f);
            let ci = d
                .geometric_mean_ci
                .as_ref()
                .map(|e| format!(" ({:.0}% interval {:.3}×–{:.3}×)", e.level * 100.0, e.lower, e.upper))
                .unwrap_or_default();
            format!(
                "{}: {} functions compared, median {}, geometric mean {}{ci}, {} faster on B, {} past {}×.",
                f.framework,
                d.functions,
                num(d.median),
                num(d.geometric_mean),
                d.faster,
                d.intolerable,
                sd.options.threshold
            )
        })
        .collect()
}
