//! `mlport mine` and `mlport sample`: usage frequencies of one framework's functions over
//! a corpus (from [`crate::scan`]), and a catalogue sample drawn the paper's way ("The Grand
//! Illusion", section 3: the most used functions plus a random draw from each usage decile),
//! seeded with a portable generator (SplitMix64) so the same seed gives the same sample on
//! every machine — the paper's draw was not reproducible.

use serde::Serialize;

use crate::model::Framework;
use crate::scan::ScanReport;
use crate::stats::SplitMix64;

/// One function's usage.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Canonical name.
    pub function: String,
    /// Calls in the corpus.
    pub calls: usize,
    /// Files calling it.
    pub files: usize,
    /// Usage decile: 10 (rarest tenth) .. 100 (most used tenth), by rank.
    pub decile: u32,
}

/// The frequencies of `framework`'s functions in a scan, most used first.
pub fn frequencies(scan: &ScanReport, framework: Framework) -> Vec<Usage> {
    let mut v: Vec<Usage> = scan
        .functions
        .iter()
        .filter(|f| f.framework == Some(framework))
        .map(|f| Usage { function: f.name.clone(), calls: f.calls, files: f.files, decile: 0 })
        .collect();
    v.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.function.cmp(&b.function)));
    let n = v.len();
    for (i, u) in v.iter_mut().enumerate() {
        // Rank from the rarest: the last row is rank 0.
        let from_rarest = n - 1 - i;
        u.decile = 10 * (1 + (10 * from_rarest / n.max(1)) as u32).min(10);
    }
    v
}

/// Reads frequencies from CSV (RFC 4180: quoted fields, CRLF and a UTF-8 BOM as spreadsheets
/// write them) with at least `function` and `calls` columns; deciles are recomputed from the
/// calls. Errors name the line.
pub fn read_csv(text: &str) -> Result<Vec<Usage>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader =
        csv::ReaderBuilder::new().has_headers(false).flexible(true).trim(csv::Trim::All).from_reader(text.as_bytes());
    let mut records = reader.records();
    let bad = |e: csv::Error| {
        let line = e.position().map_or(0, |p| p.line());
        format!("line {line}: not CSV: {e}")
    };
    let header = records.next().ok_or("empty frequency file")?.map_err(bad)?;
    let cols: Vec<&str> = header.iter().collect();
    if cols.contains(&"kind") {
        return Err("line 1: this is `mlport scan`'s CSV (all frameworks, unresolved calls); `mlport mine CORPUS \
                    --framework F --format csv` writes the frequencies `sample` reads"
            .into());
    }
    let fi = cols.iter().position(|c| *c == "function").ok_or("line 1: no `function` column")?;
    let ci = cols.iter().position(|c| *c == "calls").ok_or("line 1: no `calls` column")?;
    let mut v = Vec::new();
    for record in records {
        let f = record.map_err(bad)?;
        if f.iter().all(str::is_empty) {
            continue;
        }
        let line = f.position().map_or(0, |p| p.line());
        let name = f.get(fi).ok_or(format!("line {line}: too few columns"))?;
        if name.starts_with("?.")
            || name.ends_with('?')
            || crate::scan::framework_of(&crate::scan::canonical(name)).is_none()
        {
            return Err(format!("line {line}: `{name}` is not a framework function's qualified name"));
        }
        let calls: usize =
            f.get(ci).and_then(|c| c.parse().ok()).ok_or(format!("line {line}: `calls` is not a count"))?;
        v.push(Usage { function: name.to_string(), calls, files: 0, decile: 0 });
    }
    let scan = ScanReport {
        functions: v
            .iter()
            .map(|u| crate::scan::FunctionUse {
                name: u.function.clone(),
                framework: Some(Framework::Numpy),
                calls: u.calls,
                files: 0,
                sites: Vec::new(),
            })
            .collect(),
        ..Default::default()
    };
    Ok(frequencies(&scan, Framework::Numpy))
}

/// Uniform in `0..n` (n > 0) from `rng` by rejection, so there is no modulo bias. The draw
/// `mine::sample` has always made (the bootstrap's `below` maps the same bits differently, so
/// it is kept apart: a sample's seed must keep giving the same sample).
fn below(rng: &mut SplitMix64, n: u64) -> u64 {
    let zone = u64::MAX - u64::MAX % n;
    loop {
        let x = rng.next_u64();
        if x < zone {
            return x % n;
        }
    }
}

/// One sampled function and why it is in the sample.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sampled {
    /// The function.
    pub function: String,
    /// Its calls in the corpus.
    pub calls: usize,
    /// Its usage decile.
    pub decile: u32,
    /// `top` (one of the k most used) or `decile`.
    pub why: &'static str,
}

/// The paper's draw: the `top` most used, then `per_decile` drawn uniformly without
/// replacement from each decile's remaining functions (fewer where a decile has fewer).
pub fn sample(freq: &[Usage], top: usize, per_decile: usize, seed: u64) -> Vec<Sampled> {
    let mut rng = SplitMix64::new(seed);
    let mut out: Vec<Sampled> = freq
        .iter()
        .take(top)
        .map(|u| Sampled { function: u.function.clone(), calls: u.calls, decile: u.decile, why: "top" })
        .collect();
    for decile in (1..=10).map(|d| d * 10) {
        let mut pool: Vec<&Usage> = freq.iter().skip(top).filter(|u| u.decile == decile).collect();
        for _ in 0..per_decile.min(pool.len()) {
            let i = below(&mut rng, pool.len() as u64) as usize;
            let u = pool.swap_remove(i);
            out.push(Sampled { function: u.function.clone(), calls: u.calls, decile, why: "decile" });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn freq(n: usize) -> Vec<Usage> {
        let csv: String = std::iter::once("function,calls".to_string())
            .chain((0..n).map(|i| format!("torch.f{i},{}", i + 1)))
            .collect::<Vec<_>>()
            .join("\n");
        read_csv(&csv).unwrap()
    }

    #[test]
    fn deciles_by_rank() {
        let f = freq(20);
        assert_eq!(f[0].function, "torch.f19");
        assert_eq!(f[0].decile, 100);
        assert_eq!(f[19].decile, 10);
        assert_eq!(f.iter().filter(|u| u.decile == 50).count(), 2);
    }

    #[test]
    fn the_draw_is_reproducible() {
        let f = freq(200);
        let a = sample(&f, 5, 3, 42);
        assert_eq!(a, sample(&f, 5, 3, 42));
        assert_ne!(a, sample(&f, 5, 3, 43));
        assert_eq!(a.len(), 5 + 30);
        assert_eq!(a.iter().filter(|s| s.why == "top").count(), 5);
        let mut names: Vec<&str> = a.iter().map(|s| s.function.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 35);
        // SplitMix64's reference output for seed 0 (the first value is fixed by its definition).
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn bad_csv_names_the_line() {
        assert!(read_csv("function,calls\ntorch.x,many\n").unwrap_err().contains("line 2"));
        assert!(read_csv("function,calls\ntf.x,1\n?.sum,3\n").unwrap_err().starts_with("line 3: `?.sum`"));
        let scan_csv = "kind,framework,function,calls,files,sites\r\nresolved,torch,torch.zeros,2,1,a.py:1\r\n";
        assert!(read_csv(scan_csv).unwrap_err().contains("`mlport scan`'s CSV"));
        assert!(read_csv("name,calls\n").unwrap_err().contains("function"));
        assert!(read_csv("function,calls\n\ntf.x,1\n  \n?.sum,3\n").unwrap_err().starts_with("line 5: `?.sum`"));
    }

    #[test]
    fn spreadsheet_csv_is_read() {
        // Quoted fields, CRLF and a UTF-8 BOM, as a spreadsheet saves the file.
        let text = "\u{feff}\"function\",\"calls\"\r\n\"torch.add\",\"5\"\r\n\"torch.mul\",4\r\n";
        let v = read_csv(text).unwrap();
        assert_eq!(
            v.iter().map(|u| (u.function.as_str(), u.calls)).collect::<Vec<_>>(),
            [("torch.add", 5), ("torch.mul", 4)]
        );
    }
}
