//! The one shape of every `mlport report` renderer: an analysis result implements
//! [`Report`], saying which [`Format`]s it has and writing itself in one of them; the reports
//! with an HTML page of their own (the paper's figures) also give [`Report::html`]. Renderers
//! format only: what they print was computed in [`crate::analysis`].

use std::io::{self, Write};

use super::Format;

/// Every text format: table, Markdown, JSON and CSV.
pub const ALL_FORMATS: &[Format] = &[Format::Table, Format::Markdown, Format::Json, Format::Csv];

/// A report that renders itself.
pub trait Report {
    /// The text formats this report is written in (default: all four); a caller asks
    /// [`Report::render`] for no other.
    fn formats(&self) -> &'static [Format] {
        ALL_FORMATS
    }

    /// Writes the report in `format` to `out`; every rendering ends with a newline.
    ///
    /// Errors: `out`'s write errors; [`io::ErrorKind::Unsupported`] for a format that is not
    /// one of [`Report::formats`] ([`unsupported`]).
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()>;

    /// The report's own self-contained HTML page (ending with a newline), for the reports
    /// that have one; `None` for the others (the run's page, [`super::html::Page`], holds
    /// several reports of one run).
    ///
    /// Errors: a template error, naming the template and line.
    fn html(&self) -> Option<anyhow::Result<String>> {
        None
    }
}

/// The error [`Report::render`] gives for a format the report does not have.
pub fn unsupported(format: Format) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, format!("this report has no {format} form"))
}

/// `report` rendered in `format` as a string (rendering into memory cannot fail but for a
/// format the report does not have, which is a caller's bug: it checks
/// [`Report::formats`] first).
///
/// # Panics
/// When `format` is not one of `report.formats()`.
pub fn to_text(report: &(impl Report + ?Sized), format: Format) -> String {
    let mut out = Vec::new();
    report.render(format, &mut out).unwrap_or_else(|e| panic!("rendering as {format}: {e}"));
    String::from_utf8(out).expect("renderers write UTF-8")
}
