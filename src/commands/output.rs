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

/// A command line that is wrong in itself (a flag that needs another), found after clap parsed
/// it: the message is printed as an error and the exit code is clap's for usage errors (2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

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
///
/// Errors: a [`UsageError`] for `html`, which only `mlport report` writes (one page of a
/// run, with `-o FILE`); the text formats of every other command have no HTML form.
pub fn format_of(f: FormatArg) -> Result<Format> {
    Ok(match f {
        FormatArg::Table => Format::Table,
        FormatArg::Markdown => Format::Markdown,
        FormatArg::Json => Format::Json,
        FormatArg::Csv => Format::Csv,
        FormatArg::Html => {
            return Err(UsageError(
                "--format html is written by `mlport report --format html -o FILE` only (this output is table, markdown, json or csv)"
                    .into(),
            )
            .into());
        }
    })
}

pub use crate::render::units::plural;

pub use crate::lifecycle::{command_line, now};

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
