//! JSON helpers: every JSON document mlport writes is pretty-printed, ends with a newline and
//! (when durable) opens with its `format` name and `version`.

use serde::Serialize;

/// `doc` pretty-printed, with a trailing newline.
pub fn pretty(doc: &impl Serialize) -> String {
    // Our documents hold only strings, numbers, sequences and string-keyed maps: serialising
    // cannot fail.
    serde_json::to_string_pretty(doc).expect("serialisable") + "\n"
}

/// A versioned document: `{"format": format, "version": version, ...body's fields}`,
/// pretty-printed with a trailing newline. `body` must serialise as a struct or map.
pub fn versioned(format: &'static str, version: u32, body: &impl Serialize) -> String {
    #[derive(Serialize)]
    struct Doc<'a, T> {
        format: &'static str,
        version: u32,
        #[serde(flatten)]
        body: &'a T,
    }
    pretty(&Doc { format, version, body })
}
