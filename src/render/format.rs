//! The output formats every report is rendered in.

use std::fmt;
use std::str::FromStr;

/// An output format for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A terminal table (comfy-table, UTF-8 borders).
    Table,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// Versioned JSON (`{"format": "mlport.portability", "version": 1, ...}`).
    Json,
    /// CSV (RFC 4180) for spreadsheets and DuckDB: the overview's rows, or per function.
    Csv,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "table" => Ok(Format::Table),
            "markdown" | "md" => Ok(Format::Markdown),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            _ => Err(format!("unknown report format `{s}` (expected table, markdown, json or csv)")),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Table => "table",
            Format::Markdown => "markdown",
            Format::Json => "json",
            Format::Csv => "csv",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse() {
        assert_eq!("md".parse::<Format>(), Ok(Format::Markdown));
        for f in [Format::Table, Format::Markdown, Format::Json, Format::Csv] {
            assert_eq!(f.to_string().parse::<Format>(), Ok(f));
        }
        assert!("html".parse::<Format>().is_err());
    }
}
