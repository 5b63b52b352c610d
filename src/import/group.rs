//! Which function a test of a user's suite stands for (`--group-by`), and the dtype its
//! parametrization names. Suites test many functions per file, so the paper's convention (a
//! function is a test file) is one choice among four:
//! - `file`: the file's stem without `test_`/`_test` (`tests/test_matmul.py` → `matmul`);
//! - `test`: the test's name without its parametrization and `test_` prefix
//!   (`Cls::test_add[float16-2]` → `add`);
//! - `metadata:KEY`: the test's pytest-json-report `metadata[KEY]` (a string), else `test`;
//! - `regex:PATTERN`: the first capture group (or the whole match) of PATTERN in the nodeid,
//!   else `test`.
//!
//! The default (`auto`) uses `metadata:function`, `metadata:op` or `metadata:func` when the
//! test carries one, else `test`.

use std::fmt;
use std::str::FromStr;

use super::pytest_json::PytestTest;
use crate::model::Dtype;

/// How tests are grouped into functions.
#[derive(Clone, Debug, Default)]
pub enum GroupBy {
    /// A metadata key that names a function when the test has one, else [`GroupBy::Test`].
    #[default]
    Auto,
    /// A function is a test file (the paper's convention; `import paper` uses it).
    File,
    /// A function is a test name without parametrization.
    Test,
    /// A function is the string under this key of the test's `metadata`.
    Metadata(String),
    /// A function is the first capture group (or the match) of this pattern in the nodeid.
    Regex(regex::Regex),
}

/// Metadata keys the default grouping reads, in order.
pub const AUTO_KEYS: [&str; 3] = ["function", "op", "func"];

impl FromStr for GroupBy {
    type Err = String;
    /// `auto`, `file`, `test`, `metadata:KEY` or `regex:PATTERN`; errors name what was wrong.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(GroupBy::Auto),
            "file" => Ok(GroupBy::File),
            "test" => Ok(GroupBy::Test),
            _ => {
                if let Some(key) = s.strip_prefix("metadata:") {
                    if key.is_empty() {
                        return Err("`metadata:` needs a key (`metadata:function`)".into());
                    }
                    Ok(GroupBy::Metadata(key.to_string()))
                } else if let Some(p) = s.strip_prefix("regex:") {
                    regex::Regex::new(p).map(GroupBy::Regex).map_err(|e| format!("bad pattern in `{s}`: {e}"))
                } else {
                    Err(format!("unknown grouping `{s}` (expected file, test, metadata:KEY or regex:PATTERN)"))
                }
            }
        }
    }
}

impl fmt::Display for GroupBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupBy::Auto => f.write_str("auto"),
            GroupBy::File => f.write_str("file"),
            GroupBy::Test => f.write_str("test"),
            GroupBy::Metadata(k) => write!(f, "metadata:{k}"),
            GroupBy::Regex(r) => write!(f, "regex:{}", r.as_str()),
        }
    }
}

/// The test name of a nodeid's last part without its parametrization (`test_add[a::b]` →
/// `test_add`); the id may itself contain `::`, so the bracket is found first.
pub fn bare_name(nodeid: &str) -> &str {
    let head = nodeid.split_once('[').map_or(nodeid, |(h, _)| h);
    head.rsplit("::").next().unwrap_or(head)
}

/// The parametrization id of a nodeid (`float16-2` of `x.py::test_add[float16-2]`).
pub fn param_id(nodeid: &str) -> Option<&str> {
    let (_, rest) = nodeid.split_once('[')?;
    rest.strip_suffix(']')
}

/// The function `test` stands for under `group`; `None` for [`GroupBy::File`] (the caller
/// names files).
pub fn function_of(group: &GroupBy, test: &PytestTest) -> Option<String> {
    let by_test = || {
        let name = bare_name(&test.nodeid);
        name.strip_prefix("test_").filter(|n| !n.is_empty()).unwrap_or(name).to_string()
    };
    let meta = |key: &str| test.metadata.as_ref()?.get(key)?.as_str().filter(|s| !s.is_empty()).map(str::to_string);
    match group {
        GroupBy::File => None,
        GroupBy::Test => Some(by_test()),
        GroupBy::Auto => Some(AUTO_KEYS.iter().find_map(|k| meta(k)).unwrap_or_else(by_test)),
        GroupBy::Metadata(k) => Some(meta(k).unwrap_or_else(by_test)),
        GroupBy::Regex(r) => Some(
            r.captures(&test.nodeid)
                .and_then(|c| c.get(1).or_else(|| c.get(0)))
                .map(|m| m.as_str().to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(by_test),
        ),
    }
}

/// The dtype a nodeid's parametrization id names (`test_add[float16-2]` → float16,
/// `test_x[dtype=bfloat16]` → bfloat16); `None` when it names none or several different ones.
pub fn dtype_of(nodeid: &str) -> Option<Dtype> {
    let id = param_id(nodeid)?;
    let mut found: Option<Dtype> = None;
    for token in id.split(|c: char| !(c.is_ascii_alphanumeric())) {
        let token = token.to_ascii_lowercase();
        let name = match token.as_str() {
            "half" => "float16",
            "float" => continue,
            t => t,
        };
        if let Ok(d) = name.parse::<Dtype>() {
            if found.is_some_and(|f| f != d) {
                return None;
            }
            found = Some(d);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(nodeid: &str, metadata: Option<serde_json::Value>) -> PytestTest {
        serde_json::from_value(serde_json::json!({"nodeid": nodeid, "outcome": "passed", "metadata": metadata}))
            .unwrap()
    }

    #[test]
    fn grouping_by_test_metadata_and_regex() {
        let t = test("ops/math_test.py::MathOpsCorrectnessTest::test_logsumexp[float16-axis::0]", None);
        assert_eq!(function_of(&GroupBy::Test, &t).as_deref(), Some("logsumexp"));
        assert_eq!(function_of(&GroupBy::Auto, &t).as_deref(), Some("logsumexp"));
        assert_eq!(function_of(&GroupBy::File, &t), None);
        let m = test("t.py::test_unary[x]", Some(serde_json::json!({"function": "numpy.sin", "op": "sin"})));
        assert_eq!(function_of(&GroupBy::Auto, &m).as_deref(), Some("numpy.sin"));
        assert_eq!(function_of(&"metadata:op".parse().unwrap(), &m).as_deref(), Some("sin"));
        assert_eq!(function_of(&"metadata:nope".parse().unwrap(), &m).as_deref(), Some("unary"));
        let r: GroupBy = r"regex:test_(\w+?)_(?:grad|fwd)".parse().unwrap();
        assert_eq!(function_of(&r, &test("t.py::test_matmul_grad[a]", None)).as_deref(), Some("matmul"));
        assert_eq!(function_of(&r, &test("t.py::test_other", None)).as_deref(), Some("other"));
        assert!("regex:(".parse::<GroupBy>().unwrap_err().contains("bad pattern in `regex:(`"));
        assert!("metadata:".parse::<GroupBy>().is_err());
        assert!("files".parse::<GroupBy>().unwrap_err().contains("unknown grouping `files`"));
    }

    #[test]
    fn the_parametrization_names_the_dtype() {
        assert_eq!(dtype_of("t.py::test_add[float16-2]"), Some(Dtype::Float16));
        assert_eq!(dtype_of("t.py::test_add[dtype=bfloat16]"), Some(Dtype::Bfloat16));
        assert_eq!(dtype_of("t.py::test_add[int64-a::b]"), Some(Dtype::Int64));
        assert_eq!(dtype_of("t.py::test_add[float16-float32]"), None, "two dtypes: none");
        assert_eq!(dtype_of("t.py::test_add[x]"), None);
        assert_eq!(dtype_of("t.py::test_add"), None);
        assert_eq!(bare_name("t.py::C::test_add[a::b]"), "test_add");
    }
}
