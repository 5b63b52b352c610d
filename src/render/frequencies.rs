//! `mlport mine` (usage frequencies, `mlport.frequencies` v1 in JSON) and `mlport sample`
//! (the paper's draw, `mlport.sample` v1) as tables, versioned JSON or CSV.

use super::Format;
use super::csv::Csv;
use super::grid::Grid;
use crate::mine::{Sampled, Usage};
use crate::model::Framework;

/// The frequencies of `framework`'s functions over a corpus of `files` files.
pub fn frequencies(freq: &[Usage], framework: Framework, files: usize, format: Format) -> String {
    match format {
        Format::Csv => frequencies_csv(freq),
        Format::Json => {
            let v = serde_json::json!({"format": "mlport.frequencies", "version": 1, "framework": framework,
                "files": files, "functions": freq});
            format!("{}\n", serde_json::to_string_pretty(&v).expect("JSON of plain data"))
        }
        Format::Table | Format::Markdown => {
            let mut t = Grid::new(["function", "calls", "files", "decile"]);
            for u in freq {
                t.push([u.function.clone(), u.calls.to_string(), u.files.to_string(), u.decile.to_string()]);
            }
            format!("{} {framework} functions called in {} files\n{}\n", freq.len(), files, t.table())
        }
    }
}

/// A drawn sample, with the draw's parameters.
pub fn sample(drawn: &[Sampled], top: usize, per_decile: usize, seed: u64, format: Format) -> String {
    match format {
        Format::Csv => {
            let mut csv = Csv::crlf();
            csv.row(["function", "calls", "decile", "why"]);
            for d in drawn {
                csv.row([d.function.clone(), d.calls.to_string(), d.decile.to_string(), d.why.to_string()]);
            }
            csv.finish()
        }
        Format::Json => {
            let v = serde_json::json!({"format": "mlport.sample", "version": 1, "seed": seed, "top": top,
                "per_decile": per_decile, "sample": drawn});
            format!("{}\n", serde_json::to_string_pretty(&v).expect("JSON of plain data"))
        }
        Format::Table | Format::Markdown => {
            let mut t = Grid::new(["function", "calls", "decile", "why"]);
            for d in drawn {
                t.push([d.function.clone(), d.calls.to_string(), d.decile.to_string(), d.why.to_string()]);
            }
            format!(
                "{} functions drawn (top {top}, {per_decile} per decile, seed {seed})\n{}\n",
                drawn.len(),
                t.table()
            )
        }
    }
}

/// Frequencies as CSV (`function,calls,files,decile`), what [`crate::mine::read_csv`] reads.
/// Records end with `\r\n`, as they always did ([`super::csv`]).
pub fn frequencies_csv(v: &[Usage]) -> String {
    let mut out = Csv::crlf();
    out.row(["function", "calls", "files", "decile"]);
    for u in v {
        out.row([u.function.clone(), u.calls.to_string(), u.files.to_string(), u.decile.to_string()]);
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mine_reads_back_what_it_writes() {
        let freq = [
            Usage { function: "numpy.sum".into(), calls: 12, files: 3, decile: 100 },
            Usage { function: "numpy.linalg.svd".into(), calls: 1, files: 1, decile: 10 },
        ];
        let text = frequencies_csv(&freq);
        assert!(text.starts_with("function,calls,files,decile\r\nnumpy.sum,12,3,100\r\n"), "{text}");
        let back = crate::mine::read_csv(&text).unwrap();
        let names: Vec<(&str, usize)> = back.iter().map(|u| (u.function.as_str(), u.calls)).collect();
        assert_eq!(names, [("numpy.sum", 12), ("numpy.linalg.svd", 1)]);
        // A field the format cannot hold as it is gets quoted (RFC 4180).
        let odd = frequencies_csv(&[Usage { function: "a,\"b\"".into(), calls: 1, files: 1, decile: 10 }]);
        assert!(odd.contains("\r\n\"a,\"\"b\"\"\",1,1,10\r\n"), "{odd}");
    }
}
