//! `mlport scan`: the framework functions a code base calls; throughput on stderr. Also the
//! scan `audit` and `mine` start from.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;

use super::ExitStatus;
use super::output::emit;
use crate::cli::{ScanArgs, ScanFormatArg};
use crate::render;
use crate::scan::{self, ScanOptions, ScanReport};

/// One stderr line per file the scan could not parse.
fn warn_unparsable(rep: &ScanReport) {
    for u in &rep.unparsable {
        eprintln!("mlport: unparsable, skipped: {}: {}", u.location(), u.error);
    }
}

/// Scans `paths` on `threads` threads (0: all cores) with a progress line, warning of the
/// files that could not be parsed.
pub fn scan_with(paths: &[PathBuf], threads: usize) -> Result<ScanReport> {
    let opts = ScanOptions { threads, progress: true, ..Default::default() };
    let rep = scan::scan(paths, &opts).map_err(|e| anyhow::anyhow!(e))?;
    warn_unparsable(&rep);
    Ok(rep)
}

/// `mlport scan`.
pub fn scan(args: ScanArgs) -> Result<ExitStatus> {
    let opts = ScanOptions { threads: args.threads, full_parse: args.full_parse, progress: true, ..Default::default() };
    let started = Instant::now();
    let rep = scan::scan(&args.paths, &opts).map_err(|e| anyhow::anyhow!(e))?;
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "mlport: scanned {} files ({:.1} MB, {:.1} MB parsed) in {secs:.2} s: {:.0} files/s, {:.1} MB/s",
        rep.files,
        rep.bytes as f64 / 1e6,
        rep.parsed_bytes as f64 / 1e6,
        rep.files as f64 / secs,
        rep.bytes as f64 / 1e6 / secs
    );
    emit(&match args.format {
        ScanFormatArg::Table => render::scan::render_table(&rep),
        ScanFormatArg::Json => render::scan::render_json(&rep),
        ScanFormatArg::Csv => {
            // CSV has no place for them; the table and JSON list them.
            warn_unparsable(&rep);
            render::scan::render_csv(&rep)
        }
    })?;
    Ok(ExitStatus::Ok)
}
