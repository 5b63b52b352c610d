//! The one CSV writer (RFC 4180, through the `csv` crate): a field is quoted only when it
//! holds a comma, a quote or a line break (`QuoteStyle::Necessary`), quotes inside doubled.
//! Records may differ in length (the slowdown CSV's summary rows are padded by hand, and no
//! CSV of mlport's relies on the writer to check).
//!
//! Line terminators are each output's own, kept so that every CSV stays byte-identical to
//! what mlport always wrote: `\n` ([`Csv::new`]) for the portability, overview, slowdown,
//! modes, dtype and cross-framework CSVs; `\r\n` ([`Csv::crlf`], RFC 4180's CRLF) for the
//! scan, `mine`, `sample` and audit CSVs.

use csv::{QuoteStyle, Terminator, WriterBuilder};

/// A CSV document being written in memory, one record at a time.
pub struct Csv {
    writer: csv::Writer<Vec<u8>>,
    crlf: bool,
}

impl Csv {
    /// Records end with `\n`.
    pub fn new() -> Csv {
        Csv::with(false)
    }

    /// Records end with `\r\n`.
    pub fn crlf() -> Csv {
        Csv::with(true)
    }

    fn with(crlf: bool) -> Csv {
        Csv { writer: builder(QuoteStyle::Necessary, crlf).from_writer(Vec::new()), crlf }
    }

    /// Appends one record.
    pub fn row<I, S>(&mut self, cells: I) -> &mut Csv
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        self.writer.write_record(cells).expect("writing CSV to memory cannot fail");
        self
    }

    /// Appends one record whose columns listed in `always` are quoted whatever they hold (the
    /// audit CSV has always quoted its `reasons` and `run` columns); the others as [`Csv::row`].
    pub fn row_quoting<S: AsRef<str>>(&mut self, cells: &[S], always: &[usize]) -> &mut Csv {
        let fields: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                field(c.as_ref(), if always.contains(&i) { QuoteStyle::Always } else { QuoteStyle::Necessary })
            })
            .collect();
        // The record is written beside the writer, into the bytes it has written so far.
        let writer =
            std::mem::replace(&mut self.writer, builder(QuoteStyle::Necessary, self.crlf).from_writer(Vec::new()));
        let mut out = writer.into_inner().expect("writing CSV to memory cannot fail");
        out.extend_from_slice(fields.join(",").as_bytes());
        out.extend_from_slice(if self.crlf { b"\r\n" } else { b"\n" });
        self.writer = builder(QuoteStyle::Necessary, self.crlf).from_writer(out);
        self
    }

    /// The document.
    pub fn finish(self) -> String {
        let bytes = self.writer.into_inner().expect("writing CSV to memory cannot fail");
        String::from_utf8(bytes).expect("UTF-8 cells make UTF-8 CSV")
    }
}

impl Default for Csv {
    fn default() -> Self {
        Csv::new()
    }
}

fn builder(style: QuoteStyle, crlf: bool) -> WriterBuilder {
    let mut b = WriterBuilder::new();
    b.quote_style(style).flexible(true).terminator(if crlf { Terminator::CRLF } else { Terminator::Any(b'\n') });
    b
}

/// One field, encoded by the `csv` crate under `style`.
fn field(text: &str, style: QuoteStyle) -> String {
    // A record of one empty field is written `""` (else it would read as no record); a field
    // inside a longer record is empty.
    if text.is_empty() && matches!(style, QuoteStyle::Necessary) {
        return String::new();
    }
    let mut w = builder(style, false).from_writer(Vec::new());
    w.write_record([text]).expect("writing CSV to memory cannot fail");
    let mut bytes = w.into_inner().expect("writing CSV to memory cannot fail");
    bytes.pop();
    String::from_utf8(bytes).expect("UTF-8 cells make UTF-8 CSV")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<S: AsRef<[u8]>>(cells: &[S]) -> String {
        let mut c = Csv::new();
        c.row(cells);
        c.finish()
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(line(&["a", "b,c", "say \"x\""]), "a,\"b,c\",\"say \"\"x\"\"\"\n");
        assert_eq!(line(&["a\rb", "c\nd", "", "e"]), "\"a\rb\",\"c\nd\",,e\n");
    }

    #[test]
    fn terminators_and_always_quoted_columns() {
        let mut c = Csv::crlf();
        c.row(["h1", "h2", "h3"]).row_quoting(&["x", "", "y z"], &[1, 2]).row_quoting(&["", "a\"b", ","], &[1]);
        assert_eq!(c.finish(), "h1,h2,h3\r\nx,\"\",\"y z\"\r\n,\"a\"\"b\",\",\"\r\n");
    }
}
