//! The stacked bars of one run, drawn as SVG with `plotters` (its SVG backend only): per
//! framework × target the functions that succeeded, were partial or failed completely, and
//! beneath them a thin bar of the functions with a wrong result (they are also counted in
//! partial or complete failure). Colours are Okabe-Ito's, chosen to differ in lightness too
//! (greyscale and red-green colour blindness), and each segment carries its count as text.

use plotters::prelude::*;

use crate::analysis::portability::TargetSummary;

/// Okabe-Ito blue (dark): functions that passed on every case.
pub const SUCCESS: RGBColor = RGBColor(0x00, 0x72, 0xB2);
/// Okabe-Ito yellow (light): functions that passed on some cases.
pub const PARTIAL: RGBColor = RGBColor(0xF0, 0xE4, 0x42);
/// Okabe-Ito reddish purple (middle): functions that passed on no case.
pub const COMPLETE_FAILURE: RGBColor = RGBColor(0xCC, 0x79, 0xA7);
/// Black: functions with at least one wrong result.
pub const WRONG: RGBColor = RGBColor(0x00, 0x00, 0x00);

const WIDTH: u32 = 720;
const LABEL: i32 = 170;
const ROW: i32 = 44;
const TOP: i32 = 10;

/// One stacked bar: its label and its functions by status.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// What the bar shows, written left of it (`torch cuda:0`).
    pub label: String,
    /// The functions the bar spans (100 %).
    pub functions: usize,
    /// Functions that passed on every case.
    pub success: usize,
    /// Functions that passed on some cases.
    pub partial: usize,
    /// Functions that passed on no case.
    pub complete_failure: usize,
    /// Functions with at least one wrong result (a thin bar beneath; also counted above).
    pub wrong: usize,
}

impl Bar {
    /// The bar of one run's target.
    pub fn of(t: &TargetSummary) -> Bar {
        Bar {
            label: format!("{} {}", t.framework, t.device),
            functions: t.functions_run,
            success: t.success,
            partial: t.partial,
            complete_failure: t.complete_failure,
            wrong: t.wrong_result_functions,
        }
    }
}

/// The SVG of the stacked bars, one row per target, each bar spanning its functions run
/// (100 %). An empty report gives a small SVG saying so.
pub fn svg(targets: &[TargetSummary]) -> String {
    stacked(&targets.iter().map(Bar::of).collect::<Vec<_>>(), LABEL)
}

/// The SVG of `bars`, one row each, the labels in the `label_width` pixels left of the bars.
/// No bar gives a small SVG saying there are no results.
pub fn stacked(bars: &[Bar], label_width: i32) -> String {
    let height = (TOP * 2 + ROW * bars.len().max(1) as i32) as u32;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let font = ("sans-serif", 16).into_font().color(&BLACK);
        if bars.is_empty() {
            let _ = root.draw(&Text::new("No results to report.", (10, TOP + 14), font.clone()));
        }
        let span = WIDTH as i32 - label_width - 20;
        for (i, b) in bars.iter().enumerate() {
            let y = TOP + ROW * i as i32;
            let _ = root.draw(&Text::new(b.label.clone(), (6, y + 10), font.clone()));
            let total = b.functions.max(1) as f64;
            let mut x = label_width;
            for (count, colour, text) in [
                (b.success, SUCCESS, WHITE),
                (b.partial, PARTIAL, BLACK),
                (b.complete_failure, COMPLETE_FAILURE, BLACK),
            ] {
                let w = (span as f64 * count as f64 / total).round() as i32;
                if w > 0 {
                    let _ = root.draw(&Rectangle::new([(x, y), (x + w, y + 24)], colour.filled()));
                    let _ = root.draw(&Rectangle::new([(x, y), (x + w, y + 24)], BLACK.stroke_width(1)));
                    if w >= 22 {
                        let style = ("sans-serif", 15).into_font().color(&text);
                        let _ = root.draw(&Text::new(count.to_string(), (x + 4, y + 6), style));
                    }
                }
                x += w;
            }
            let w = (span as f64 * b.wrong as f64 / total).round() as i32;
            if w > 0 {
                let _ = root.draw(&Rectangle::new([(label_width, y + 28), (label_width + w, y + 34)], WRONG.filled()));
            }
        }
        let _ = root.present();
    }
    out
}

/// The text alternative of [`svg`]: one sentence per target.
pub fn alt(targets: &[TargetSummary]) -> String {
    if targets.is_empty() {
        return "No results to report.".into();
    }
    targets
        .iter()
        .map(|t| {
            format!(
                "{} on {}: {} functions run, {} success, {} partial, {} complete failure, {} with a wrong result on the device.",
                t.framework,
                t.device,
                t.functions_run,
                t.success,
                t.partial,
                t.complete_failure,
                t.wrong_result_functions
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}
