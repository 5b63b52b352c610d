//! `mlport mine` (usage frequencies, `mlport.frequencies` v1 in JSON) and `mlport sample`
//! (the paper's draw, `mlport.sample` v1) as tables, versioned JSON or CSV.

use comfy_table::{Table, presets};

use crate::mine::{Sampled, Usage};
use crate::model::Framework;
use crate::report::Format;

/// The frequencies of `framework`'s functions over a corpus of `files` files.
pub fn frequencies(freq: &[Usage], framework: Framework, files: usize, format: Format) -> String {
    match format {
        Format::Csv => crate::mine::to_csv(freq),
        Format::Json => {
            let v = serde_json::json!({"format": "mlport.frequencies", "version": 1, "framework": framework,
                "files": files, "functions": freq});
            format!("{}\n", serde_json::to_string_pretty(&v).expect("JSON of plain data"))
        }
        Format::Table | Format::Markdown => {
            let mut t = Table::new();
            t.load_preset(presets::UTF8_FULL_CONDENSED);
            t.set_header(["function", "calls", "files", "decile"]);
            for u in freq {
                t.add_row([u.function.clone(), u.calls.to_string(), u.files.to_string(), u.decile.to_string()]);
            }
            format!("{} {framework} functions called in {} files\n{t}\n", freq.len(), files)
        }
    }
}

/// A drawn sample, with the draw's parameters.
pub fn sample(drawn: &[Sampled], top: usize, per_decile: usize, seed: u64, format: Format) -> String {
    match format {
        Format::Csv => {
            let mut s = String::from("function,calls,decile,why\r\n");
            for d in drawn {
                s.push_str(&format!("{},{},{},{}\r\n", d.function, d.calls, d.decile, d.why));
            }
            s
        }
        Format::Json => {
            let v = serde_json::json!({"format": "mlport.sample", "version": 1, "seed": seed, "top": top,
                "per_decile": per_decile, "sample": drawn});
            format!("{}\n", serde_json::to_string_pretty(&v).expect("JSON of plain data"))
        }
        Format::Table | Format::Markdown => {
            let mut t = Table::new();
            t.load_preset(presets::UTF8_FULL_CONDENSED);
            t.set_header(["function", "calls", "decile", "why"]);
            for d in drawn {
                t.add_row([d.function.clone(), d.calls.to_string(), d.decile.to_string(), d.why.to_string()]);
            }
            format!("{} functions drawn (top {top}, {per_decile} per decile, seed {seed})\n{t}\n", drawn.len())
        }
    }
}
