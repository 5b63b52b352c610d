//! `mlport sample`: the paper's draw from mined frequencies, seeded.

use anyhow::{Context, Result};

use super::ExitStatus;
use super::output::{emit, format_of};
use crate::cli::SampleArgs;
use crate::render;

/// `mlport sample`.
pub fn sample(args: SampleArgs) -> Result<ExitStatus> {
    let text = std::fs::read_to_string(&args.frequencies)
        .with_context(|| format!("cannot read {}", args.frequencies.display()))?;
    let freq = crate::mine::read_csv(&text).map_err(|e| anyhow::anyhow!("{}: {e}", args.frequencies.display()))?;
    let drawn = crate::mine::sample(&freq, args.top, args.per_decile, args.seed);
    emit(&render::frequencies::sample(&drawn, args.top, args.per_decile, args.seed, format_of(args.format)?))?;
    Ok(ExitStatus::Ok)
}
