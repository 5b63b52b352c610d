//! The dtype matrix as an SVG heatmap (drawn with `plotters`' SVG backend): one row per
//! (framework, function, target), one column per dtype. A cell's colour and its symbol say
//! the same thing, so the map reads in greyscale and with red-green colour blindness:
//! `✓` every counted case passed (Okabe-Ito blue), `~` some failed (yellow), `✗` all failed
//! (vermillion), `W` a wrong result among them (black, white symbol), `·` nothing counted.

use plotters::prelude::*;

use super::bars::{PARTIAL, SUCCESS, WRONG};
use crate::analysis::dtypes::{Cell, DtypeMatrix};

/// Okabe-Ito vermillion: every counted case of the cell failed.
const FAILED: RGBColor = RGBColor(0xD5, 0x5E, 0x00);
const EMPTY: RGBColor = RGBColor(0xEE, 0xEE, 0xEE);

const LABEL: i32 = 300;
const COL: i32 = 64;
const ROW: i32 = 18;
const HEAD: i32 = 22;

/// A cell's symbol and colours (fill, text).
fn look(c: &Cell) -> (&'static str, RGBColor, RGBColor) {
    let failed: usize = c.failed.values().sum();
    let ok = c.passed; // unchecked passes are among them
    if c.wrong > 0 {
        ("W", WRONG, WHITE)
    } else if ok + failed == 0 {
        ("·", EMPTY, BLACK)
    } else if failed == 0 {
        ("✓", SUCCESS, WHITE)
    } else if ok == 0 {
        ("✗", FAILED, BLACK)
    } else {
        ("~", PARTIAL, BLACK)
    }
}

/// The SVG of the heatmap; a small SVG saying so when the matrix has no row.
pub fn svg(m: &DtypeMatrix) -> String {
    let rows = m.rows.len().max(1) as i32;
    let width = (LABEL + COL * m.dtypes.len().max(1) as i32 + 10) as u32;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, (HEAD + ROW * rows + 6) as u32)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let font = |c: &RGBColor| ("sans-serif", 15).into_font().color(c);
        if m.rows.is_empty() {
            let _ = root.draw(&Text::new("No dtype results.", (6, HEAD), font(&BLACK)));
        }
        for (j, d) in m.dtypes.iter().enumerate() {
            let _ = root.draw(&Text::new(d.to_string(), (LABEL + COL * j as i32 + 2, 4), font(&BLACK)));
        }
        for (i, r) in m.rows.iter().enumerate() {
            let y = HEAD + ROW * i as i32;
            let label = format!("{} {} {}", r.framework, r.function, r.device);
            let _ = root.draw(&Text::new(label, (4, y + 3), font(&BLACK)));
            for (j, d) in m.dtypes.iter().enumerate() {
                let x = LABEL + COL * j as i32;
                let Some(cell) = r.cells.get(&d.to_string()) else { continue };
                let (symbol, fill, ink) = look(cell);
                let _ = root.draw(&Rectangle::new([(x, y), (x + COL - 2, y + ROW - 2)], fill.filled()));
                let _ = root.draw(&Text::new(symbol, (x + COL / 2 - 4, y + 2), font(&ink)));
            }
        }
        let _ = root.present();
    }
    out
}

/// The text alternative of [`svg`]: how many cells are in each state.
pub fn alt(m: &DtypeMatrix) -> String {
    let mut n = [0usize; 5];
    for c in m.rows.iter().flat_map(|r| r.cells.values()) {
        let i = ["✓", "~", "✗", "W", "·"].iter().position(|s| *s == look(c).0).unwrap_or(4);
        n[i] += 1;
    }
    format!(
        "Dtype matrix of {} rows × {} dtypes: {} cells all passed, {} partial, {} all failed, {} with a wrong result, {} with nothing counted.",
        m.rows.len(),
        m.dtypes.len(),
        n[0],
        n[1],
        n[2],
        n[3],
        n[4]
    )
}
