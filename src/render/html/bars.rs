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

/// The SVG of the stacked bars, one row per target, each bar spanning its functions run
/// (100 %). An empty report gives a small SVG saying so.
pub fn svg(targets: &[TargetSummary]) -> String {
    let height = (TOP * 2 + ROW * targets.len().max(1) as i32) as u32;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let font = ("sans-serif", 16).into_font().color(&BLACK);
        if targets.is_empty() {
            let _ = root.draw(&Text::new("No results to report.", (10, TOP + 14), font.clone()));
        }
        let span = WIDTH as i32 - LABEL - 20;
        for (i, t) in targets.iter().enumerate() {
            let y = TOP + ROW * i as i32;
            let label = format!("{} {}", t.framework, t.device);
            let _ = root.draw(&Text::new(label, (6, y + 10), font.clone()));
            let total = t.functions_run.max(1) as f64;
            let mut x = LABEL;
            for (count, colour, text) in [
                (t.success, SUCCESS, WHITE),
                (t.partial, PARTIAL, BLACK),
                (t.complete_failure, COMPLETE_FAILURE, BLACK),
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
            let w = (span as f64 * t.wrong_result_functions as f64 / total).round() as i32;
            if w > 0 {
                let _ = root.draw(&Rectangle::new([(LABEL, y + 28), (LABEL + w, y + 34)], WRONG.filled()));
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
                "{} on {}: {} functions run, {} success, {} partial, {} complete failure, {} with a wrong result.",
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
