//! TEMPORARY stand-in until the classify branch lands.
use crate::model::{Framework, Reason};
pub struct ErrorReport<'a> { pub error_type: &'a str, pub message: &'a str, pub phase: &'a str, pub harness: bool }
pub fn classify(_framework: Framework, e: &ErrorReport) -> Reason {
    if e.harness { return Reason::HarnessError; }
    if e.phase == "resolve" { return Reason::ApiMissing; }
    let m = e.message.to_lowercase();
    if m.contains("bfloat16") || m.contains("unsupported dtype") || m.contains("float16 is unsupported") { return Reason::DtypeUnsupported; }
    Reason::Other
}
