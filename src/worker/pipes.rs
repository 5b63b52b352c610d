//! The threads that read a worker's two output pipes: its protocol lines (stdout), each at most
//! [`MAX_LINE_BYTES`], and the tail of its stderr — the last [`STDERR_TAIL_LINES`] lines of the
//! case in flight, each at most [`STDERR_LINE_BYTES`]. Neither holds more than a bounded
//! amount of memory, whatever a case writes.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{Receiver, unbounded};

/// The longest protocol line read, in bytes (its newline included): 8 MiB. A worker's longest
/// answer is a failure's message and traceback (at most 65,536 + 32,768 characters, JSON-escaped
/// at most 6 bytes each) and 16 output descriptions, well under 1 MiB; a longer line is not an
/// answer, and reading it whole could take any amount of memory.
pub const MAX_LINE_BYTES: usize = 8 << 20;

/// Bytes kept of one stderr line; the rest of a longer line is dropped and marked `[…cut]`.
pub const STDERR_LINE_BYTES: usize = 4096;

/// Lines of stderr kept for crash and timeout reports.
pub const STDERR_TAIL_LINES: usize = 40;

/// The line the worker writes to stderr as it takes a request (docs/protocol.md): the stderr
/// tail restarts there, so a case's tail holds only what was written since its request.
pub const CASE_START_MARK: &str = "\u{1e}mlport: request";

/// What the protocol reader passes on.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// One line, without its line end (invalid UTF-8 replaced, for the parser to refuse).
    Line(String),
    /// A line longer than [`MAX_LINE_BYTES`]: reading stopped there.
    TooLong,
}

/// Reads protocol lines from `stdout` on a thread of its own; the receiver disconnects when the
/// pipe closes (every process holding its write end has ended or closed it) or after a line
/// over [`MAX_LINE_BYTES`].
pub fn read_lines(stdout: impl Read + Send + 'static) -> Receiver<Incoming> {
    let (tx, rx) = unbounded();
    std::thread::spawn(move || {
        // Bytes, not `lines()`: a line that is not UTF-8 is a protocol error for the core to
        // record, not the end of the conversation.
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match (&mut reader).take(MAX_LINE_BYTES as u64).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) if n == MAX_LINE_BYTES && buf.last() != Some(&b'\n') => {
                    let _ = tx.send(Incoming::TooLong);
                    break;
                }
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r']).to_string();
                    if tx.send(Incoming::Line(line)).is_err() {
                        break;
                    }
                }
            }
        }
    });
    rx
}

/// The last stderr lines of the case in flight, shared with the reader thread.
#[derive(Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    /// The kept lines, newline-joined.
    pub fn text(&self) -> String {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    fn keep(&self, bytes: &[u8], cut: bool) {
        let mut l = String::from_utf8_lossy(bytes).into_owned();
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if l.starts_with(CASE_START_MARK) {
            g.clear();
            return;
        }
        if cut {
            l.push_str(" […cut]");
        }
        tracing::trace!(target: "worker_stderr", "{l}");
        if g.len() == STDERR_TAIL_LINES {
            g.pop_front();
        }
        g.push_back(l);
    }
}

/// Reads `stderr` on a thread of its own into the returned tail, until the pipe closes.
pub fn read_stderr(stderr: impl Read + Send + 'static) -> StderrTail {
    let tail = StderrTail::default();
    let keeper = tail.clone();
    std::thread::spawn(move || {
        // Lines are kept up to STDERR_LINE_BYTES: a case that prints 300 MB without a
        // newline costs neither memory nor store space.
        let mut reader = BufReader::new(stderr);
        let mut line: Vec<u8> = Vec::new();
        let mut cut = false;
        loop {
            let (consumed, end) = match reader.fill_buf() {
                Ok([]) | Err(_) => break,
                Ok(buf) => {
                    let (chunk, consumed, end) = match buf.iter().position(|&b| b == b'\n') {
                        Some(i) => (&buf[..i], i + 1, true),
                        None => (buf, buf.len(), false),
                    };
                    let room = STDERR_LINE_BYTES.saturating_sub(line.len());
                    cut |= chunk.len() > room;
                    line.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    (consumed, end)
                }
            };
            reader.consume(consumed);
            if end {
                keeper.keep(&line, cut);
                line.clear();
                cut = false;
            }
        }
        if !line.is_empty() {
            keeper.keep(&line, cut);
        }
    });
    tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_limit_stops_the_reader_and_says_so() {
        let mut input = b"{\"a\":1}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
        input.extend_from_slice(b"\n{\"b\":2}\n");
        let rx = read_lines(std::io::Cursor::new(input));
        assert_eq!(rx.recv().unwrap(), Incoming::Line("{\"a\":1}".into()));
        assert_eq!(rx.recv().unwrap(), Incoming::TooLong);
        assert!(rx.recv().is_err(), "nothing is read after a line over the limit");
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_a_line() {
        let mut input = vec![b'y'; MAX_LINE_BYTES - 1];
        input.push(b'\n');
        input.extend_from_slice(b"last");
        let rx = read_lines(std::io::Cursor::new(input));
        match rx.recv().unwrap() {
            Incoming::Line(l) => assert_eq!(l.len(), MAX_LINE_BYTES - 1),
            other => panic!("{other:?}"),
        }
        assert_eq!(rx.recv().unwrap(), Incoming::Line("last".into()), "a last line without its newline");
    }

    #[test]
    fn the_tail_restarts_at_each_request_mark() {
        let text = format!("old 1\nold 2\n{CASE_START_MARK} 7\nnew 1\n{}\nnew 3", "z".repeat(5000));
        let tail = read_stderr(std::io::Cursor::new(text.into_bytes()));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !tail.text().ends_with("new 3") && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let lines: Vec<String> = tail.text().lines().map(str::to_string).collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[0], "new 1");
        assert_eq!(lines[1], format!("{} […cut]", "z".repeat(STDERR_LINE_BYTES)));
        assert_eq!(lines[2], "new 3");
    }
}
