//! Loading and validating catalogue files: every error names the file, line and column.

use std::path::{Path, PathBuf};

use thiserror::Error;
use toml::Spanned;

use super::spec::{COMPARES, CaseTable, CompareSpec, DISTS, FORMAT_VERSION, FileSpec, FunctionSpec, PASS_AS};
use super::{Case, CatalogueFile, Function};
use crate::compare::Rule;
use crate::model::{CaseSpec, Compare, Dtype, DtypeTolerance, Framework};

/// The longest per-case timeout a catalogue or `--timeout` may ask for: one day, in s.
pub const MAX_TIMEOUT_S: f64 = 86_400.0;

/// A catalogue that could not be read, parsed or validated.
#[derive(Debug, Error)]
pub enum CatalogueError {
    /// A file or folder could not be read.
    #[error("cannot read catalogue {path}: {source}")]
    Io {
        /// The file or folder, as displayed.
        path: String,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A TOML syntax error or a failed check, at a position in the file.
    #[error("{path}:{line}:{column}: {message}")]
    Invalid {
        /// The file, as displayed (`catalogue/torch.toml (built in)` for embedded files).
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong, with the accepted values where there is a list of them.
        message: String,
    },
    /// A folder holds no `*.toml` file.
    #[error("{path}: no catalogue files (*.toml) found")]
    Empty {
        /// The folder, as displayed.
        path: String,
    },
}

/// Line and column (1-based) of a byte offset in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

struct Ctx<'a> {
    path: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, offset: usize, message: impl Into<String>) -> CatalogueError {
        let (line, column) = line_col(self.text, offset);
        CatalogueError::Invalid { path: self.path.to_string(), line, column, message: message.into() }
    }
    fn err_at<T>(&self, s: &Spanned<T>, message: impl Into<String>) -> CatalogueError {
        self.err(s.span().start, message)
    }
}

/// Parses and validates one catalogue file. `path` is used in error messages only.
///
/// Errors: [`CatalogueError::Invalid`] for a TOML syntax error, an unknown key, a format other
/// than [`FORMAT_VERSION`], or any check of docs/catalogue.md that fails.
pub fn parse(path: &str, text: &str) -> Result<CatalogueFile, CatalogueError> {
    let cx = Ctx { path, text };
    let spec: FileSpec = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        cx.err(offset, e.message().to_string())
    })?;
    if *spec.format.get_ref() != FORMAT_VERSION {
        return Err(cx.err_at(
            &spec.format,
            format!(
                "catalogue format {} is not supported (this mlport reads format {FORMAT_VERSION})",
                spec.format.get_ref()
            ),
        ));
    }
    let framework: Framework = spec.framework.get_ref().parse().map_err(|m: String| cx.err_at(&spec.framework, m))?;
    if spec.version.get_ref().trim().is_empty() {
        return Err(cx.err_at(&spec.version, "`version` must not be empty"));
    }
    let mut functions: Vec<Function> = Vec::with_capacity(spec.function.len());
    for f in spec.function {
        let span = f.span();
        let name_at = f.get_ref().name.span().start;
        let func = function(&cx, framework, f.into_inner(), span.start)?;
        if functions.iter().any(|g| g.name == func.name) {
            return Err(cx.err(name_at, format!("function `{}` is listed twice", func.name)));
        }
        functions.push(func);
    }
    Ok(CatalogueFile { path: path.to_string(), framework, version: spec.version.into_inner(), functions })
}

fn is_dotted_identifier(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|p| {
            let mut chars = p.chars();
            matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

fn function(cx: &Ctx, framework: Framework, f: FunctionSpec, at: usize) -> Result<Function, CatalogueError> {
    let name = f.name.get_ref().clone();
    if !is_dotted_identifier(&name) || !name.contains('.') {
        return Err(cx.err_at(&f.name, format!("`{name}` is not a fully qualified name (e.g. torch.linalg.svd)")));
    }
    let decile = match &f.decile {
        Some(d) => {
            let v = *d.get_ref();
            if !(10..=100).contains(&v) || v % 10 != 0 {
                return Err(cx.err_at(d, format!("decile {v} must be one of 10, 20, ..., 100")));
            }
            Some(v as u8)
        }
        None => None,
    };
    if f.case.is_empty() {
        return Err(cx.err(at, format!("function `{name}` has no [[function.case]]")));
    }
    let mut cases: Vec<Case> = Vec::new();
    for c in f.case {
        let span = c.span();
        let case = case(cx, framework, &name, c.into_inner(), span.start)?;
        if cases.iter().any(|d| d.id == case.id) {
            return Err(cx.err(span.start, format!("case id `{}` is used twice in `{name}`", case.id)));
        }
        cases.push(case);
    }
    Ok(Function { name, paper: f.paper, decile, top20: f.top20, op: f.op, moved: f.moved, note: f.note, cases })
}

/// `dtype` as a [`Dtype`]; `None` for `T` where `allow_t` (an input that takes the swept dtype).
fn check_dtype(cx: &Ctx, at: usize, dtype: &str, allow_t: bool) -> Result<Option<Dtype>, CatalogueError> {
    match dtype.parse::<Dtype>() {
        Ok(d) => Ok(Some(d)),
        Err(_) if allow_t && dtype == "T" => Ok(None),
        Err(_) => Err(cx.err(
            at,
            format!(
                "unknown dtype `{dtype}` (expected one of {}{})",
                Dtype::expected_list(),
                if allow_t { ", or T" } else { "" }
            ),
        )),
    }
}

fn case(cx: &Ctx, _framework: Framework, function: &str, c: CaseTable, at: usize) -> Result<Case, CatalogueError> {
    let id = c.id.as_ref().map_or_else(|| "default".to_string(), |s| s.get_ref().clone());
    if let Some(s) = &c.id
        && (id.is_empty() || id.contains('/') || id.chars().any(char::is_whitespace))
    {
        return Err(cx.err_at(s, format!("case id `{id}` must be non-empty, without '/' or spaces")));
    }
    let dtypes: Vec<Dtype> = match &c.dtypes {
        None => vec![Dtype::Float32],
        Some(list) => {
            if list.get_ref().is_empty() {
                return Err(cx.err_at(list, "`dtypes` must list at least one dtype"));
            }
            let mut out = Vec::new();
            for d in list.get_ref() {
                let dtype = check_dtype(cx, d.span().start, d.get_ref(), false)?.expect("T is not allowed here");
                if out.contains(&dtype) {
                    return Err(cx.err_at(d, format!("dtype `{}` is listed twice", d.get_ref())));
                }
                out.push(dtype);
            }
            out
        }
    };
    let mut inputs = Vec::new();
    for inp in &c.inputs {
        let at = inp.span().start;
        let i = inp.get_ref();
        if let Some(d) = &i.dtype {
            check_dtype(cx, at, d, true)?;
        }
        if let Some(dist) = &i.dist {
            if !DISTS.contains(&dist.as_str()) {
                return Err(cx.err(at, format!("unknown dist `{dist}` (expected one of {})", DISTS.join(", "))));
            }
            if i.value.is_some() {
                return Err(cx.err(at, "an input has either `value` or `dist`, not both"));
            }
        }
        if let Some(shape) = &i.shape
            && shape.iter().any(|&s| s < 0)
        {
            return Err(cx.err(at, format!("shape {shape:?} has a negative dimension")));
        }
        if let Some(a) = &i.as_
            && !PASS_AS.contains(&a.as_str())
        {
            return Err(cx.err(at, format!("unknown `as = \"{a}\"` (expected one of {})", PASS_AS.join(", "))));
        }
        let scalar = i.scalar == Some(true) || i.as_.as_deref() == Some("scalar");
        if scalar && i.shape.as_ref().is_some_and(|s| s.iter().product::<i64>() != 1) {
            return Err(
                cx.err(at, "a scalar input (`scalar = true` or `as = \"scalar\"`) must have shape [] or one element")
            );
        }
        if let (Some(lo), Some(hi)) = (i.low, i.high)
            && lo >= hi
        {
            return Err(cx.err(at, format!("low {lo} must be below high {hi}")));
        }
        inputs.push(serde_json::to_value(i).map_err(|e| cx.err(at, e.to_string()))?);
    }
    let compare = match c.compare.as_ref() {
        None => Compare::One(Rule::AllClose),
        Some(cmp) => {
            let rules: Vec<&String> = match cmp.get_ref() {
                CompareSpec::One(r) => vec![r],
                CompareSpec::PerOutput(list) => list.iter().collect(),
            };
            if rules.is_empty() {
                return Err(cx.err_at(cmp, "`compare` lists no rule"));
            }
            if let Some(bad) = rules.iter().find(|r| !COMPARES.contains(&r.as_str())) {
                return Err(
                    cx.err_at(cmp, format!("unknown compare rule `{bad}` (expected one of {})", COMPARES.join(", ")))
                );
            }
            if let (CompareSpec::PerOutput(list), Some(outs)) = (cmp.get_ref(), &c.outputs)
                && list.len() != outs.len()
            {
                return Err(cx.err_at(
                    cmp,
                    format!("`compare` lists {} rules but `outputs` selects {} outputs", list.len(), outs.len()),
                ));
            }
            let rule = |r: &String| r.parse::<Rule>().map_err(|e| cx.err_at(cmp, e.to_string()));
            match cmp.get_ref() {
                CompareSpec::One(r) => Compare::One(rule(r)?),
                CompareSpec::PerOutput(list) => Compare::PerOutput(list.iter().map(rule).collect::<Result<_, _>>()?),
            }
        }
    };
    for t in [&c.rtol, &c.atol].into_iter().flatten() {
        if !(*t.get_ref() >= 0.0 && t.get_ref().is_finite()) {
            return Err(cx.err_at(t, "a tolerance must be a finite number >= 0"));
        }
    }
    let mut tolerance = std::collections::BTreeMap::new();
    if let Some(table) = &c.tolerance {
        for (dt, tol) in table.get_ref() {
            let dtype = check_dtype(cx, table.span().start, dt, false)?.expect("T is not allowed here");
            for v in [tol.rtol, tol.atol].into_iter().flatten() {
                if !(v >= 0.0 && v.is_finite()) {
                    return Err(cx.err_at(table, format!("tolerance for {dt}: must be finite numbers >= 0")));
                }
            }
            tolerance.insert(dtype, DtypeTolerance { rtol: tol.rtol, atol: tol.atol });
        }
    }
    if let Some(t) = &c.timeout_s
        && !(*t.get_ref() > 0.0 && *t.get_ref() <= MAX_TIMEOUT_S)
    {
        return Err(cx.err_at(t, format!("timeout_s must be a number of seconds in (0, {MAX_TIMEOUT_S}]")));
    }
    if let Some(code) = &c.code
        && !code.get_ref().contains("def build(")
    {
        return Err(cx.err_at(code, "`code` must define build(ctx, *inputs, **kwargs)"));
    }
    let kwargs = match serde_json::to_value(&c.kwargs).map_err(|e| cx.err(at, e.to_string()))? {
        serde_json::Value::Object(m) => m,
        other => return Err(cx.err(at, format!("`kwargs` must be a table, not {other}"))),
    };
    let spec = CaseSpec {
        atol: c.atol.as_ref().map(|t| *t.get_ref()),
        code: c.code.as_ref().map(|s| s.get_ref().clone()),
        compare,
        function: function.to_string(),
        id: id.clone(),
        inputs,
        kwargs,
        outputs: c.outputs.clone(),
        rtol: c.rtol.as_ref().map(|t| *t.get_ref()),
        skip: None,
        timeout_s: None,
        tolerance,
    };
    let line = line_col(cx.text, at).0;
    Ok(Case {
        id,
        dtypes,
        seed: c.seed.unwrap_or(0),
        timeout_s: c.timeout_s.map(|t| *t.get_ref()),
        skip: c.skip,
        spec,
        path: cx.path.to_string(),
        line,
    })
}

/// Reads one file or every `*.toml` in a folder (sorted by name).
///
/// Errors: [`CatalogueError::Io`] when a path cannot be read, [`CatalogueError::Empty`] for a
/// folder without `*.toml` files, and whatever [`parse`] returns for each file.
pub fn load_path(path: &Path) -> Result<Vec<CatalogueFile>, CatalogueError> {
    let display = path.display().to_string();
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|source| CatalogueError::Io { path: display.clone(), source })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        v.sort();
        if v.is_empty() {
            return Err(CatalogueError::Empty { path: display });
        }
        v
    } else {
        vec![path.to_path_buf()]
    };
    files
        .iter()
        .map(|p| {
            let shown = p.display().to_string();
            let text =
                std::fs::read_to_string(p).map_err(|source| CatalogueError::Io { path: shown.clone(), source })?;
            parse(&shown, &text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A case's spec as the JSON the store keeps and the worker receives.
    fn json_of(c: &Case) -> serde_json::Value {
        serde_json::to_value(&c.spec).unwrap()
    }

    const GOOD: &str = r#"format = 1
framework = "torch"
version = "t1"

[[function]]
name = "torch.linalg.svd"
decile = 70
op = "svd"

  [[function.case]]
  id = "square"
  dtypes = ["float32", "bfloat16"]
  inputs = [{ shape = [4, 4] }]
  kwargs = { full_matrices = false }
  compare = "up_to_sign"
"#;

    #[test]
    fn parses_a_good_file() {
        let f = parse("t.toml", GOOD).unwrap();
        assert_eq!(f.framework, Framework::Torch);
        assert_eq!(f.functions.len(), 1);
        let c = &f.functions[0].cases[0];
        assert_eq!(c.dtypes, [Dtype::Float32, Dtype::Bfloat16]);
        let c = &json_of(c);
        assert_eq!(c["kwargs"]["full_matrices"], json!(false));
        assert_eq!(c["inputs"][0]["shape"], json!([4, 4]));
        assert_eq!(c["compare"], json!("up_to_sign"));
    }

    #[test]
    fn per_output_compare_and_tolerances() {
        let text = GOOD.replace(
            "compare = \"up_to_sign\"",
            "compare = [\"up_to_sign\", \"allclose\", \"up_to_sign_rows\"]\nrtol = 1e-3\natol = 0.0\n\
             tolerance = { float16 = { rtol = 1e-2 } }",
        );
        let f = parse("t.toml", &text).unwrap();
        let c = &json_of(&f.functions[0].cases[0]);
        assert_eq!(c["compare"], json!(["up_to_sign", "allclose", "up_to_sign_rows"]));
        assert_eq!(c["rtol"], json!(1e-3));
        assert_eq!(c["atol"], json!(0.0));
        assert_eq!(c["tolerance"]["float16"]["rtol"], json!(1e-2));
        let plain = parse("t.toml", GOOD).unwrap();
        assert!(json_of(&plain.functions[0].cases[0]).get("rtol").is_none(), "absent overrides are not stored");
        let stat = GOOD.replace("\"up_to_sign\"", "\"statistical\"");
        assert_eq!(json_of(&parse("t.toml", &stat).unwrap().functions[0].cases[0])["compare"], json!("statistical"));
        let list = GOOD.replace("\"up_to_sign\"", "[\"up_to_sign\", \"roughly\"]");
        assert!(error_of(&list).contains("unknown compare rule `roughly`"));
        assert!(error_of(&GOOD.replace("\"up_to_sign\"", "[]")).contains("`compare` lists no rule"));
        assert!(error_of(&GOOD.replace("compare = \"up_to_sign\"", "rtol = -1.0")).contains("finite number >= 0"));
        assert!(error_of(&GOOD.replace("compare = \"up_to_sign\"", "atol = nan")).contains("finite number >= 0"));
        let bad_dtype = GOOD.replace("compare = \"up_to_sign\"", "tolerance = { float8 = { rtol = 1.0 } }");
        assert!(error_of(&bad_dtype).contains("unknown dtype `float8`"), "{}", error_of(&bad_dtype));
        let mismatch = GOOD.replace("compare = \"up_to_sign\"", "compare = [\"exact\", \"exact\"]\noutputs = [0]");
        assert!(error_of(&mismatch).contains("lists 2 rules but `outputs` selects 1"));
    }

    fn error_of(text: &str) -> String {
        parse("cat/t.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn a_bad_dtype_names_file_line_and_column() {
        let e = error_of(&GOOD.replace("\"bfloat16\"]", "\"bfloat17\"]"));
        assert!(e.starts_with("cat/t.toml:12:"), "{e}");
        assert!(e.contains("unknown dtype `bfloat17`"), "{e}");
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_line() {
        let e = error_of(&GOOD.replace("decile = 70", "decile = 70\ndecil = 3"));
        assert!(e.starts_with("cat/t.toml:8:"), "{e}");
        assert!(e.contains("unknown field `decil`"), "{e}");
    }

    #[test]
    fn other_validation_errors() {
        assert!(error_of(&GOOD.replace("format = 1", "format = 2")).contains("format 2 is not supported"));
        assert!(error_of(&GOOD.replace("\"torch\"", "\"caffe\"")).contains("unknown framework `caffe`"));
        assert!(error_of(&GOOD.replace("decile = 70", "decile = 75")).contains("decile 75"));
        assert!(error_of(&GOOD.replace("torch.linalg.svd", "svd")).contains("not a fully qualified name"));
        assert!(error_of(&GOOD.replace("up_to_sign", "roughly")).contains("unknown compare rule `roughly`"));
        assert!(error_of(&GOOD.replace("shape = [4, 4]", "shape = [4, -4]")).contains("negative dimension"));
        assert!(error_of(&GOOD.replace("shape = [4, 4]", "shape = [4], dist = \"cauchy\"")).contains("unknown dist"));
        assert!(error_of(&GOOD.replace("shape = [4, 4]", "shape = [4], as = \"scalar\"")).contains("scalar input"));
        assert!(error_of(&GOOD.replace("compare = \"up_to_sign\"", "timeout_s = 1e300")).contains("timeout_s must be"));
        let twice = format!("{GOOD}\n[[function]]\nname = \"torch.linalg.svd\"\n[[function.case]]\n");
        let e = error_of(&twice);
        assert!(e.contains("listed twice") && e.starts_with("cat/t.toml:18:8:"), "{e}");
        let nocase = "format = 1\nframework = \"jax\"\nversion = \"1\"\n[[function]]\nname = \"jax.numpy.sum\"\n";
        assert!(error_of(nocase).contains("has no [[function.case]]"));
    }

    #[test]
    fn syntax_errors_carry_a_position() {
        let e = error_of("format = 1\nframework = \"torch\nversion = 1\n");
        assert!(e.starts_with("cat/t.toml:2:"), "{e}");
    }
}
