//! What every command shares to write its results: stdout (a closed pipe ends mlport
//! quietly), the format flag turned into a renderer's [`Format`], counts in words, and the
//! command line recorded with a run.

use std::io::Write;

use anyhow::Result;

use crate::cli::FormatArg;
use crate::render::Format;

/// Stdout was closed by the reader (`mlport report | head`): the command stops, and `main`
/// exits 0 without a message (its results are already committed).
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed")]
pub struct StdoutClosed;

/// Writes `text` to stdout.
///
/// Errors: [`StdoutClosed`] on a broken pipe; any other write error (a full disk).
pub fn emit(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::anyhow!("cannot write to stdout: {e}")),
    }
}

/// The renderer's format for `--format`.
pub fn format_of(f: FormatArg) -> Format {
    match f {
        FormatArg::Table => Format::Table,
        FormatArg::Markdown => Format::Markdown,
        FormatArg::Json => Format::Json,
        FormatArg::Csv => Format::Csv,
    }
}

/// `1 case`, `2 cases`.
pub fn plural(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

/// The command line as typed, recorded with each run.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

/// Now, UTC, to the second (RFC 3339), as runs record their start.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals() {
        assert_eq!(plural(1, "case"), "1 case");
        assert_eq!(plural(0, "case"), "0 cases");
        assert_eq!(plural(3, "function"), "3 functions");
    }
}
