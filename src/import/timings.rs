//! Per-test timing files in the format of "The Grand Illusion"'s harness (arXiv
//! 2309.07181, repository for-ai/portability): one JSON object per pytest session,
//! `{"<file>_test.py:<test>": {"operations": [s, ...], "test_time": s}}`, where each
//! `operations` entry is one timed (device-synchronised) call of the function under test and
//! `test_time` the whole test body. An operation that raised left no entry.
//!
//! Steady state: the first timed call of a test in a session includes compilation and
//! cache warm-up (XLA compiles there), so it is kept apart as the first call, as mlport's own
//! worker does; the later calls of every session are the steady-state samples.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};

use super::ImportError;

/// One timing file (one session), entries in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct TimingFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// One per test, in file order.
    pub entries: Vec<TimingEntry>,
}

/// One test's timings in one session.
#[derive(Clone, Debug, PartialEq)]
pub struct TimingEntry {
    /// `<file>:<test>`, e.g. `Adamax_test.py:test_adamax_xla`; the class is not part of it.
    pub key: String,
    /// Each timed call, seconds, in call order.
    pub operations: Vec<f64>,
    /// The whole test body, seconds.
    pub test_time: f64,
}

impl TimingEntry {
    /// The file part of the key (`Adamax_test.py`).
    pub fn file(&self) -> &str {
        self.key.split_once(':').map_or(self.key.as_str(), |(f, _)| f)
    }

    /// The test part of the key (`test_adamax_xla`).
    pub fn test(&self) -> &str {
        self.key.split_once(':').map_or("", |(_, t)| t)
    }
}

#[derive(Deserialize)]
struct RawEntry {
    operations: Vec<f64>,
    test_time: f64,
}

/// The top-level object, keeping file order.
struct Entries(Vec<(String, RawEntry)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of `file:test` keys with `operations` and `test_time`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, RawEntry>()? {
                    out.push((k, v));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Parses a timing file's `bytes` read from `path`.
///
/// Errors: [`ImportError::Json`] with line and column for malformed, truncated or foreign
/// JSON (an entry without `operations` or `test_time`); [`ImportError::Invalid`] naming the
/// key for a key without `:` or a negative or non-finite time.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<TimingFile, ImportError> {
    let Entries(raw) =
        serde_json::from_slice(bytes).map_err(|e| ImportError::from_serde(path, &e, "not a timing file"))?;
    let mut entries = Vec::with_capacity(raw.len());
    for (key, e) in raw {
        let invalid = |what: String| ImportError::Invalid { path: path.to_path_buf(), place: format!("`{key}`"), what };
        if !key.contains(':') {
            return Err(invalid("a timing key must be `<file>:<test>`".into()));
        }
        if let Some(bad) = e.operations.iter().chain([&e.test_time]).find(|s| !(**s >= 0.0 && s.is_finite())) {
            return Err(invalid(format!("{bad} is not a duration in seconds")));
        }
        entries.push(TimingEntry { key, operations: e.operations, test_time: e.test_time });
    }
    Ok(TimingFile { path: path.to_path_buf(), entries })
}

/// Reads and parses the timing file at `path`. Errors: [`ImportError::Io`] and those of [`parse`].
pub fn read(path: &Path) -> Result<TimingFile, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io { path: path.to_path_buf(), source })?;
    parse(path, &bytes)
}

/// One test's timings merged over the sessions (repeats) that recorded it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Merged {
    /// The first timed call of the first session that timed any call, ns.
    pub first_call_ns: Option<u64>,
    /// Every session's timed calls after its first, ns, session after session.
    pub samples_ns: Vec<u64>,
    /// The first timed call of each session that timed any, ns, in session order (the first
    /// of them is `first_call_ns`): with `samples_ns`, every timed call.
    pub session_first_calls_ns: Vec<u64>,
    /// Mean `test_time` over the sessions, s.
    pub test_time_s: Option<f64>,
    /// Timed calls per session, in session order.
    pub operations: Vec<usize>,
}

/// Merges one test's entries from several sessions (see the module doc for steady state).
pub fn merge(entries: &[&TimingEntry]) -> Merged {
    let mut m = Merged::default();
    for e in entries {
        m.operations.push(e.operations.len());
        if let Some((first, rest)) = e.operations.split_first() {
            m.first_call_ns.get_or_insert(ns(*first));
            m.session_first_calls_ns.push(ns(*first));
            m.samples_ns.extend(rest.iter().map(|s| ns(*s)));
        }
    }
    if !entries.is_empty() {
        m.test_time_s = Some(entries.iter().map(|e| e.test_time).sum::<f64>() / entries.len() as f64);
    }
    m
}

/// Seconds to whole nanoseconds (durations are checked non-negative and finite on parse).
fn ns(seconds: f64) -> u64 {
    (seconds * 1e9).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keep_file_order_and_split_their_keys() {
        let text = br#"{"b_test.py:test_z": {"operations": [0.5, 0.25], "test_time": 1.0},
                        "a_test.py:test_y[1]": {"operations": [], "test_time": 0.5}}"#;
        let f = parse(Path::new("t.json"), text).unwrap();
        let keys: Vec<&str> = f.entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["b_test.py:test_z", "a_test.py:test_y[1]"]);
        assert_eq!((f.entries[1].file(), f.entries[1].test()), ("a_test.py", "test_y[1]"));
    }

    #[test]
    fn merging_keeps_each_sessions_first_call_apart() {
        let e = |ops: &[f64], t: f64| TimingEntry { key: "f.py:t".into(), operations: ops.to_vec(), test_time: t };
        let (a, b, c) = (e(&[9e-3, 1e-6, 2e-6], 1.0), e(&[], 2.0), e(&[8e-3, 3e-6], 3.0));
        let m = merge(&[&a, &b, &c]);
        assert_eq!(m.first_call_ns, Some(9_000_000));
        assert_eq!(m.samples_ns, vec![1_000, 2_000, 3_000]);
        assert_eq!(m.session_first_calls_ns, vec![9_000_000, 8_000_000]);
        assert_eq!(m.test_time_s, Some(2.0));
        assert_eq!(m.operations, vec![3, 0, 2]);
        assert_eq!(merge(&[]), Merged::default());
    }

    #[test]
    fn bad_files_name_the_place() {
        let p = Path::new("t.json");
        let e = parse(p, br#"{"f.py:t": {"operations": [1.0, -2.0], "test_time": 1.0}}"#).unwrap_err();
        assert_eq!(e.to_string(), "t.json: `f.py:t`: -2 is not a duration in seconds");
        let e = parse(p, br#"{"no colon": {"operations": [], "test_time": 1.0}}"#).unwrap_err();
        assert_eq!(e.to_string(), "t.json: `no colon`: a timing key must be `<file>:<test>`");
        let e = parse(p, br#"{"f.py:t": {"operations": [1.0]}}"#).unwrap_err();
        assert_eq!(e.to_string(), "t.json:1:32: not a timing file: missing field `test_time`");
        let e = parse(p, br#"{"f.py:t": {"operations": [1.0"#).unwrap_err();
        assert!(e.to_string().starts_with("t.json:1:30: truncated JSON"), "{e}");
        let e = parse(p, br#"{"tests": []}"#).unwrap_err();
        assert!(e.to_string().starts_with("t.json:1:12: not a timing file: invalid length 0"), "{e}");
    }
}
