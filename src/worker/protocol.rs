//! The worker protocol, version 1 (docs/protocol.md): JSON lines. The core writes
//! requests to the worker's stdin; the worker answers on a dedicated pipe (the pipe it
//! inherited as fd 1, which it moves to a private descriptor before importing any
//! framework, pointing fd 1 at stderr). Arrays travel as .npy files in the run folder.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The protocol version this core speaks; every message carries it as `v`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Repetition settings for steady-state timing.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Timing {
    /// At least this many steady-state calls.
    pub min_reps: u32,
    /// At most this many steady-state calls.
    pub max_reps: u32,
    /// Stop after this many ms of steady-state calls once `min_reps` are taken.
    pub budget_ms: f64,
}

impl Default for Timing {
    /// 5..=100 repetitions within a 100 ms budget per case: enough for a stable median
    /// of calls from microseconds to tens of milliseconds on CPU.
    fn default() -> Self {
        Timing { min_reps: 5, max_reps: 100, budget_ms: 100.0 }
    }
}

/// A request from the core.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request<'a> {
    /// Run one case at one dtype.
    Run {
        v: u32,
        /// A fresh number per request, echoed in the answer: a line that does not carry it
        /// (one a case wrote itself, or a late answer to an earlier request) is refused.
        nonce: u64,
        case_key: &'a str,
        case: &'a serde_json::Value,
        dtype: &'a str,
        seed: u64,
        out_dir: &'a str,
        timing: &'a Timing,
    },
    Ping {
        v: u32,
    },
    Shutdown {
        v: u32,
    },
}

/// A device a framework reports.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct WorkerDevice {
    pub device: String,
    pub available: bool,
    #[serde(default)]
    pub native: String,
    #[serde(default)]
    pub detail: String,
}

/// An error as the worker saw it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Default)]
pub struct WorkerError {
    /// Qualified exception type (`torch.OutOfMemoryError`, `NotImplementedError`).
    #[serde(rename = "type")]
    pub error_type: String,
    pub message: String,
    #[serde(default)]
    pub traceback: String,
    /// import | resolve | inputs | setup | first_call | outputs | steady
    #[serde(default)]
    pub phase: String,
    /// True when the worker judged the error its own or the catalogue's (harness_error).
    #[serde(default)]
    pub harness: bool,
}

/// The worker's first message, sent once its framework is imported (or failed to).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Hello {
    pub v: u32,
    pub protocol: u32,
    pub pid: u32,
    pub python: String,
    pub python_executable: String,
    pub framework: String,
    pub device: String,
    pub framework_version: Option<String>,
    pub import_error: Option<WorkerError>,
    #[serde(default)]
    pub devices: Vec<WorkerDevice>,
    #[serde(default)]
    pub packages: BTreeMap<String, String>,
    #[serde(default)]
    pub threads: Option<u32>,
}

/// The worker's answer to `run`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct RunReply {
    pub v: u32,
    pub case_key: Option<String>,
    /// The request's nonce, echoed.
    #[serde(default)]
    pub nonce: Option<u64>,
    /// `pass` or `fail` (timeouts and crashes are decided by the core).
    pub outcome: String,
    pub error: Option<WorkerError>,
    pub first_call_ns: Option<u64>,
    #[serde(default)]
    pub samples_ns: Vec<u64>,
    #[serde(default)]
    pub outputs: serde_json::Value,
}

/// Any message from the worker.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Message {
    Hello(Hello),
    Result(RunReply),
    Pong { v: u32 },
    Bye { v: u32 },
    Error { v: u32, message: String },
}

/// Parses one protocol line, checking the version.
pub fn parse_line(line: &str) -> Result<Message, String> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e}): {line:.200}"))?;
    let v = value.get("v").and_then(|v| v.as_u64());
    if v != Some(u64::from(PROTOCOL_VERSION)) {
        return Err(format!("protocol version {v:?} (this core speaks {PROTOCOL_VERSION}): {line:.200}"));
    }
    serde_json::from_value(value).map_err(|e| format!("unexpected message ({e}): {line:.200}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_serialise_as_documented() {
        let spec = serde_json::json!({"function": "torch.add"});
        let t = Timing::default();
        let r = Request::Run {
            v: 1,
            nonce: 9,
            case_key: "k",
            case: &spec,
            dtype: "float32",
            seed: 7,
            out_dir: "/o",
            timing: &t,
        };
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(
            s,
            r#"{"op":"run","v":1,"nonce":9,"case_key":"k","case":{"function":"torch.add"},"dtype":"float32","seed":7,"out_dir":"/o","timing":{"min_reps":5,"max_reps":100,"budget_ms":100.0}}"#
        );
        assert_eq!(serde_json::to_string(&Request::Shutdown { v: 1 }).unwrap(), r#"{"op":"shutdown","v":1}"#);
    }

    #[test]
    fn replies_parse_and_versions_are_checked() {
        let m = parse_line(r#"{"v":1,"kind":"result","case_key":"k","outcome":"fail","error":{"type":"NotImplementedError","message":"x","traceback":"","phase":"first_call","harness":false},"first_call_ns":null}"#).unwrap();
        match m {
            Message::Result(r) => {
                assert_eq!(r.outcome, "fail");
                assert_eq!(r.error.unwrap().phase, "first_call");
                assert!(r.samples_ns.is_empty());
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_line(r#"{"v":2,"kind":"pong"}"#).unwrap_err().contains("protocol version"));
        assert!(parse_line("hello").unwrap_err().contains("not JSON"));
        assert!(parse_line(r#"{"v":1,"kind":"dance"}"#).unwrap_err().contains("unexpected message"));
    }
}
