//! Loading and validating catalogue files: every error names the file, line and column.

use std::path::{Path, PathBuf};

use thiserror::Error;
use toml::Spanned;

use super::spec::{COMPARES, CaseTable, CompareSpec, FORMAT_VERSION, FileSpec, FunctionSpec};
use super::{Case, CatalogueFile, Function, OwnReference};
use crate::compare::Rule;
use crate::model::{CaseSpec, Compare, Dtype, DtypeTolerance, Framework, Mode, OutDtype, RutRole, WorkloadSpec};

/// The longest per-case timeout a catalogue or `--timeout` may ask for: one day, in s.
pub const MAX_TIMEOUT_S: f64 = 86_400.0;

/// The longest function name, op, case id or catalogue version, in characters: names travel
/// in every case key, file name, report row and protocol message.
pub const MAX_NAME_CHARS: usize = 256;

/// The largest catalogue file read, in bytes (64 MiB; the built-in catalogue is under 1 MiB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

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
    /// A path that is neither a regular file nor a folder (a device such as `/dev/zero`, a FIFO,
    /// a socket), or a file over [`MAX_FILE_BYTES`]: refused before it is read.
    #[error("cannot read catalogue {path}: {why}")]
    Refused {
        /// The path, as displayed.
        path: String,
        /// What it is, and what mlport reads instead.
        why: String,
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
    parse_as(path, text, None)
}

/// Parses one catalogue file into the catalogues it holds: one, or for `framework = "keras"`
/// one per Keras backend (`keras-jax`, `keras-torch`, `keras-tensorflow`; the same functions,
/// each checked for its backend).
///
/// Errors: as [`parse`].
pub fn parse_files(path: &str, text: &str) -> Result<Vec<CatalogueFile>, CatalogueError> {
    let keras = toml::from_str::<toml::Table>(text)
        .ok()
        .is_some_and(|t| t.get("framework").and_then(toml::Value::as_str) == Some("keras"));
    if keras {
        Framework::KERAS.iter().map(|&fw| parse_as(path, text, Some(fw))).collect()
    } else {
        Ok(vec![parse(path, text)?])
    }
}

/// [`parse`], with the file's `framework = "keras"` read as `keras_as`.
fn parse_as(path: &str, text: &str, keras_as: Option<Framework>) -> Result<CatalogueFile, CatalogueError> {
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
    let framework: Framework = match (spec.framework.get_ref().as_str(), keras_as) {
        ("keras", Some(fw)) => fw,
        ("keras", None) => {
            return Err(cx.err_at(&spec.framework, "a `keras` file holds three catalogues: read it with parse_files"));
        }
        (name, _) => name.parse().map_err(|m: String| cx.err_at(&spec.framework, m))?,
    };
    bounded(&cx, spec.version.span().start, spec.version.get_ref(), "`version`")?;
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

/// Refuses a name longer than [`MAX_NAME_CHARS`], quoting only its beginning.
fn bounded(cx: &Ctx, at: usize, name: &str, what: &str) -> Result<(), CatalogueError> {
    let n = name.chars().count();
    if n <= MAX_NAME_CHARS {
        return Ok(());
    }
    let start: String = name.chars().take(40).collect();
    Err(cx
        .err(at, format!("{what} is {n} characters long (it begins `{start}`); at most {MAX_NAME_CHARS} are allowed")))
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
    bounded(cx, f.name.span().start, &name, "the function name")?;
    if let Some(op) = &f.op {
        bounded(cx, f.name.span().start, op, &format!("the `op` of `{name}`"))?;
    }
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
    let workload = match &f.kind {
        None => false,
        Some(k) => match k.get_ref().as_str() {
            "function" => false,
            "workload" => true,
            other => {
                return Err(cx.err_at(k, format!("unknown kind `{other}` (expected function or workload)")));
            }
        },
    };
    let mut cases: Vec<Case> = Vec::new();
    for c in f.case {
        let span = c.span();
        let mut c = c.into_inner();
        if c.out_dtype.is_none()
            && let Some(o) = &f.out_dtype
        {
            // The function's default, checked against each case's `outputs` where it lands.
            let copy = match o.get_ref() {
                CompareSpec::One(d) => CompareSpec::One(d.clone()),
                CompareSpec::PerOutput(l) => CompareSpec::PerOutput(l.clone()),
            };
            c.out_dtype = Some(Spanned::new(o.span(), copy));
        }
        if c.modes.is_none()
            && let Some(m) = &f.modes
        {
            c.modes = Some(Spanned::new(m.span(), m.get_ref().clone()));
        }
        let case = case(cx, framework, &name, c, span.start, workload)?;
        if cases.iter().any(|d| d.id == case.id) {
            return Err(cx.err(span.start, format!("case id `{}` is used twice in `{name}`", case.id)));
        }
        cases.push(case);
    }
    let reference_only = match &f.reference_only {
        Some(r) if *r.get_ref() && framework != Framework::Numpy => {
            return Err(cx.err_at(
                r,
                "`reference_only` belongs in the NumPy catalogue: it marks a NumPy function that only supplies float64 \
                 references",
            ));
        }
        Some(r) if *r.get_ref() && f.op.is_none() => {
            return Err(cx.err_at(r, "a `reference_only` function needs an `op`: that is what it is the reference of"));
        }
        Some(r) => *r.get_ref(),
        None => false,
    };
    Ok(Function {
        name,
        workload,
        paper: f.paper,
        decile,
        top20: f.top20,
        op: f.op,
        moved: f.moved,
        note: f.note,
        reference_only,
        cases,
    })
}

/// A workload case's [`WorkloadSpec`] (`batch`, `rut_pair`, `rut_role`), `None` for a
/// function's case, which may not use those keys. A workload's case must have `code`.
fn workload_spec(cx: &Ctx, c: &CaseTable, at: usize, workload: bool) -> Result<Option<WorkloadSpec>, CatalogueError> {
    if !workload {
        let misplaced = [
            ("batch", c.batch.as_ref().map(Spanned::span)),
            ("rut_pair", c.rut_pair.as_ref().map(Spanned::span)),
            ("rut_role", c.rut_role.as_ref().map(Spanned::span)),
        ];
        if let Some((name, span)) = misplaced.into_iter().find_map(|(n, s)| s.map(|s| (n, s))) {
            return Err(
                cx.err(span.start, format!("`{name}` belongs to workloads: give the function `kind = \"workload\"`"))
            );
        }
        return Ok(None);
    }
    if c.code.is_none() {
        return Err(cx.err(at, "a workload's case needs `code` that builds the model (docs/workloads.md)"));
    }
    let batch = match &c.batch {
        Some(b) if *b.get_ref() < 1 => return Err(cx.err_at(b, "`batch` must be at least 1")),
        Some(b) => Some(*b.get_ref() as u64),
        None => None,
    };
    let rut_role = match &c.rut_role {
        None => None,
        Some(r) => Some(match r.get_ref().as_str() {
            "monolithic" => RutRole::Monolithic,
            "composed" => RutRole::Composed,
            other => {
                return Err(cx.err_at(r, format!("unknown rut_role `{other}` (expected monolithic or composed)")));
            }
        }),
    };
    let rut_pair = c.rut_pair.as_ref().map(|p| p.get_ref().clone());
    match (&rut_pair, &c.rut_role) {
        (Some(_), None) => {
            return Err(cx.err(at, "`rut_pair` needs `rut_role` (monolithic or composed)"));
        }
        (None, Some(r)) => return Err(cx.err_at(r, "`rut_role` needs `rut_pair`")),
        _ => {}
    }
    Ok(Some(WorkloadSpec { batch, rut_pair, rut_role }))
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

fn case(
    cx: &Ctx,
    framework: Framework,
    function: &str,
    c: CaseTable,
    at: usize,
    workload: bool,
) -> Result<Case, CatalogueError> {
    let id = c.id.as_ref().map_or_else(|| "default".to_string(), |s| s.get_ref().clone());
    if let Some(s) = &c.id {
        bounded(cx, s.span().start, &id, "the case id")?;
    }
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
        super::inputs::check(i, &dtypes).map_err(|m| cx.err(at, m))?;
        inputs.push(serde_json::to_value(i).map_err(|e| cx.err(at, e.to_string()))?);
    }
    let workload = workload_spec(cx, &c, at, workload)?;
    let compare = match c.compare.as_ref() {
        None if workload.is_some() => Compare::One(Rule::WholeModel),
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
    if workload.is_none()
        && let Some(cmp) = &c.compare
        && match cmp.get_ref() {
            CompareSpec::One(r) => r == "whole_model",
            CompareSpec::PerOutput(list) => list.iter().any(|r| r == "whole_model"),
        }
    {
        return Err(cx.err_at(cmp, "`whole_model` judges workloads only: give the function `kind = \"workload\"`"));
    }
    let (compare, max_ulp) = ulp_rule(cx, &c, compare)?;
    let out_dtype = c.out_dtype.as_ref().map(|o| out_dtype(cx, o, c.outputs.as_deref())).transpose()?;
    let modes = c.modes.as_ref().map(|m| modes(cx, framework, m)).transpose()?;
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
        max_ulp,
        modes,
        out_dtype,
        outputs: c.outputs.clone(),
        rtol: c.rtol.as_ref().map(|t| *t.get_ref()),
        skip: None,
        suite: None,
        timeout_s: None,
        tolerance,
        workload,
    };
    let line = line_col(cx.text, at).0;
    let reference = match (&c.reference, &c.reference_kwargs) {
        (Some(r), kwargs) => {
            let name = r.get_ref();
            let root = name.split('.').next().unwrap_or("");
            if !is_dotted_identifier(name) || !name.contains('.') || !matches!(root, "numpy" | "scipy") {
                return Err(cx.err_at(
                    r,
                    format!(
                        "`reference = \"{name}\"` must name a NumPy or SciPy callable by its full name \
                         (`scipy.special.expit`, `numpy.cumsum`)"
                    ),
                ));
            }
            let kwargs = match kwargs {
                Some(k) => match serde_json::to_value(k.get_ref()).map_err(|e| cx.err_at(k, e.to_string()))? {
                    serde_json::Value::Object(m) => m,
                    other => return Err(cx.err_at(k, format!("`reference_kwargs` must be a table, not {other}"))),
                },
                None => serde_json::Map::new(),
            };
            Some(OwnReference { function: name.clone(), kwargs })
        }
        (None, Some(k)) => {
            return Err(cx.err_at(
                k,
                "`reference_kwargs` goes with `reference = \"numpy...\"`: there is no callable to pass them to",
            ));
        }
        (None, None) => None,
    };
    Ok(Case {
        id,
        dtypes,
        seed: c.seed.unwrap_or(0),
        timeout_s: c.timeout_s.map(|t| *t.get_ref()),
        skip: c.skip,
        reference,
        spec,
        path: cx.path.to_string(),
        line,
    })
}

/// A case's `out_dtype`: each name a dtype or `T`; a list names at least one, and exactly one
/// per output `outputs` selects when it selects.
fn out_dtype(cx: &Ctx, o: &Spanned<CompareSpec>, outputs: Option<&[u32]>) -> Result<OutDtype, CatalogueError> {
    let names: Vec<&String> = match o.get_ref() {
        CompareSpec::One(d) => vec![d],
        CompareSpec::PerOutput(list) => list.iter().collect(),
    };
    if names.is_empty() {
        return Err(cx.err_at(o, "`out_dtype` lists no dtype"));
    }
    for d in &names {
        check_dtype(cx, o.span().start, d, true).map_err(|_| {
            cx.err_at(o, format!("`out_dtype`: unknown dtype `{d}` (expected one of {}, or T)", Dtype::expected_list()))
        })?;
    }
    Ok(match o.get_ref() {
        CompareSpec::One(d) => OutDtype::One(d.clone()),
        CompareSpec::PerOutput(list) => {
            if let Some(outs) = outputs
                && outs.len() != list.len()
            {
                return Err(cx.err_at(
                    o,
                    format!("`out_dtype` lists {} dtypes but `outputs` selects {} outputs", list.len(), outs.len()),
                ));
            }
            OutDtype::PerOutput(list.clone())
        }
    })
}

/// A case's `modes`: at least one, each a [`Mode`] the framework has, none twice.
fn modes(cx: &Ctx, framework: Framework, m: &Spanned<Vec<String>>) -> Result<Vec<Mode>, CatalogueError> {
    if m.get_ref().is_empty() {
        return Err(cx.err_at(m, "`modes` lists no mode (eager, compiled, compiled_fullgraph)"));
    }
    let mut out = Vec::new();
    for name in m.get_ref() {
        let mode: Mode = name.parse().map_err(|e: String| cx.err_at(m, format!("`modes`: {e}")))?;
        if let Some(why) = framework.lacks_mode(mode) {
            return Err(cx.err_at(m, format!("`modes`: {why}")));
        }
        if out.contains(&mode) {
            return Err(cx.err_at(m, format!("`modes` lists {mode} twice")));
        }
        out.push(mode);
    }
    Ok(out)
}

/// The `ulp` rule's keys: `ulp = N` replaces the default rule by `ulp` with `max_ulp = N`;
/// `max_ulp` goes with a `compare` that names `ulp` (and that needs it); `rtol`/`atol` mean
/// nothing when every output is compared in ULPs.
fn ulp_rule(cx: &Ctx, c: &CaseTable, compare: Compare) -> Result<(Compare, Option<f64>), CatalogueError> {
    let bound = |v: &Spanned<f64>, key: &str| {
        let n = *v.get_ref();
        if n >= 0.0 && n.is_finite() {
            Ok(n)
        } else {
            Err(cx.err_at(v, format!("`{key}` must be a finite number >= 0")))
        }
    };
    let names_ulp = match &compare {
        Compare::One(r) => *r == Rule::Ulp,
        Compare::PerOutput(list) => list.contains(&Rule::Ulp),
    };
    let (compare, max_ulp) = match (&c.ulp, &c.max_ulp) {
        (Some(u), _) if c.compare.is_some() => {
            return Err(cx.err_at(
                u,
                "`ulp = N` replaces the default rule; with `compare`, write `compare = \"ulp\"` and `max_ulp = N`",
            ));
        }
        (Some(u), Some(_)) => return Err(cx.err_at(u, "`ulp = N` is `max_ulp = N` with the `ulp` rule: give one")),
        (Some(u), None) => (Compare::One(Rule::Ulp), Some(bound(u, "ulp")?)),
        (None, Some(m)) if !names_ulp => {
            return Err(cx.err_at(m, "`max_ulp` means nothing without `compare = \"ulp\"` (or `ulp = N`)"));
        }
        (None, Some(m)) => (compare, Some(bound(m, "max_ulp")?)),
        (None, None) if names_ulp => {
            let at = c.compare.as_ref().map_or(0, |s| s.span().start);
            return Err(cx.err(at, "the `ulp` rule needs `max_ulp = N` (0.5: correctly rounded)"));
        }
        (None, None) => (compare, None),
    };
    if compare == Compare::One(Rule::Ulp)
        && let Some(t) = c.rtol.as_ref().or(c.atol.as_ref())
    {
        return Err(cx.err_at(t, "`rtol`/`atol` mean nothing when every output is compared in ULPs (`max_ulp`)"));
    }
    Ok((compare, max_ulp))
}

/// Reads one file or every `*.toml` in a folder (sorted by name).
///
/// Errors: [`CatalogueError::Io`] when a path cannot be read, [`CatalogueError::Empty`] for a
/// folder without `*.toml` files, [`CatalogueError::Refused`] for what is neither a regular
/// file nor a folder (`/dev/zero`, a FIFO: reading one could last forever) or a file over
/// [`MAX_FILE_BYTES`], [`CatalogueError::Invalid`] with the line, column and byte offset of
/// the first byte that is not UTF-8, and whatever [`parse`] returns for each file.
pub fn load_path(path: &Path) -> Result<Vec<CatalogueFile>, CatalogueError> {
    let display = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|source| CatalogueError::Io { path: display.clone(), source })?;
    let files: Vec<PathBuf> = if meta.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|source| CatalogueError::Io { path: display.clone(), source })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        // A `workloads/` folder beside the files holds each framework's workloads (as the
        // built-in catalogue's does): read with them.
        let workloads = path.join("workloads");
        if workloads.is_dir() {
            v.extend(
                std::fs::read_dir(&workloads)
                    .map_err(|source| CatalogueError::Io { path: workloads.display().to_string(), source })?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|e| e == "toml")),
            );
        }
        v.sort();
        if v.is_empty() {
            return Err(CatalogueError::Empty { path: display });
        }
        v
    } else {
        vec![path.to_path_buf()]
    };
    let mut out = Vec::new();
    for p in &files {
        out.extend(read_file(p)?);
    }
    Ok(out)
}

/// Reads and parses one catalogue file, refusing what is not a regular file of at most
/// [`MAX_FILE_BYTES`] before reading it.
fn read_file(p: &Path) -> Result<Vec<CatalogueFile>, CatalogueError> {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let shown = p.display().to_string();
    let io = |source| CatalogueError::Io { path: shown.clone(), source };
    let refused = |why: String| CatalogueError::Refused { path: shown.clone(), why };
    let meta = std::fs::metadata(p).map_err(io)?;
    let t = meta.file_type();
    if !t.is_file() {
        let kind = if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(refused(format!("it is {kind}; mlport reads catalogue files (*.toml) or folders of them")));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(refused(format!("it is {} bytes; a catalogue file holds at most {MAX_FILE_BYTES}", meta.len())));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(p).and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)).map_err(io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(refused(format!("it grew past {MAX_FILE_BYTES} bytes while it was read")));
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let offset = e.utf8_error().valid_up_to();
            let bytes = e.as_bytes();
            let valid = std::str::from_utf8(&bytes[..offset]).expect("valid up to the offset");
            let (line, column) = line_col(valid, offset);
            return Err(CatalogueError::Invalid {
                path: shown,
                line,
                column,
                message: format!(
                    "not UTF-8: byte 0x{:02x} at byte offset {offset}; catalogue files are UTF-8",
                    bytes[offset]
                ),
            });
        }
    };
    parse_files(&shown, &text)
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

    const WORKLOAD: &str = r#"format = 1
framework = "torch"
version = "t1"

[[function]]
name = "torch.nn.modules.linear.Linear"
kind = "workload"

  [[function.case]]
  id = "forward"
  batch = 8
  rut_pair = "linear"
  rut_role = "composed"
  inputs = [{ shape = [8, 4] }]
  code = '''
def build(ctx, x):
    return lambda x=x: x
'''
"#;

    #[test]
    fn workloads_carry_batch_and_rut_pair_and_default_to_the_whole_model_rule() {
        let f = parse("t.toml", WORKLOAD).unwrap();
        assert!(f.functions[0].workload);
        let c = json_of(&f.functions[0].cases[0]);
        assert_eq!(c["compare"], json!("whole_model"));
        assert_eq!(c["workload"], json!({"batch": 8, "rut_pair": "linear", "rut_role": "composed"}));
        // An API function's spec has no `workload` key (its JSON is what earlier versions wrote).
        assert!(json_of(&parse("t.toml", GOOD).unwrap().functions[0].cases[0]).get("workload").is_none());
    }

    #[test]
    fn workload_keys_are_checked() {
        let e = error_of(&WORKLOAD.replace("kind = \"workload\"", "kind = \"workloads\""));
        assert!(e.starts_with("cat/t.toml:7:") && e.contains("unknown kind `workloads`"), "{e}");
        let e = error_of(&WORKLOAD.replace("  batch = 8\n", "  batch = 0\n"));
        assert!(e.contains("`batch` must be at least 1"), "{e}");
        let e = error_of(&WORKLOAD.replace("  rut_role = \"composed\"\n", ""));
        assert!(e.contains("`rut_pair` needs `rut_role`"), "{e}");
        let e = error_of(&WORKLOAD.replace("  rut_pair = \"linear\"\n", ""));
        assert!(e.contains("`rut_role` needs `rut_pair`"), "{e}");
        let e = error_of(&WORKLOAD.replace("\"composed\"", "\"fused\""));
        assert!(e.contains("unknown rut_role `fused`"), "{e}");
        let no_code = WORKLOAD.split("  code = ").next().unwrap().to_string();
        assert!(error_of(&no_code).contains("a workload's case needs `code`"), "{no_code}");
        // Workload keys on an API function, and the whole-model rule outside a workload.
        let e = error_of(&WORKLOAD.replace("kind = \"workload\"\n", ""));
        assert!(e.contains("`batch` belongs to workloads"), "{e}");
        let e = error_of(&GOOD.replace("compare = \"up_to_sign\"", "compare = \"whole_model\""));
        assert!(e.starts_with("cat/t.toml:15:") && e.contains("`whole_model` judges workloads only"), "{e}");
    }

    #[test]
    fn a_framework_takes_one_file_of_workloads_beside_its_functions() {
        let functions = || parse("a.toml", GOOD).unwrap();
        let workloads = |path: &str| parse(path, WORKLOAD).unwrap();
        let c = crate::catalogue::Catalogue::new(vec![workloads("w.toml"), functions()]).unwrap();
        let torch = c.file(Framework::Torch).unwrap();
        assert_eq!((torch.path.as_str(), torch.version.as_str()), ("a.toml + w.toml", "t1"));
        assert_eq!(torch.functions.iter().filter(|f| f.workload).count(), 1);
        let e = crate::catalogue::Catalogue::new(vec![functions(), workloads("w.toml"), workloads("w2.toml")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("a framework may add one file of workloads only"), "{e}");
        let e = crate::catalogue::Catalogue::new(vec![functions(), functions()]).unwrap_err().to_string();
        assert!(e.contains("a second catalogue for torch"), "{e}");
        let twice = WORKLOAD.replace("torch.nn.modules.linear.Linear", "torch.linalg.svd");
        let e = crate::catalogue::Catalogue::new(vec![functions(), parse("w.toml", &twice).unwrap()])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("w.toml:9:") && e.contains("`torch.linalg.svd` is in a.toml too"), "{e}");
    }

    #[test]
    fn out_dtype_is_a_dtype_or_t_per_case_or_from_the_function() {
        let case = |text: &str| json_of(&parse("t.toml", text).unwrap().functions[0].cases[0]);
        assert!(case(GOOD).get("out_dtype").is_none(), "absent: not stored");
        let one = GOOD.replace("compare = \"up_to_sign\"", "out_dtype = \"int64\"");
        assert_eq!(case(&one)["out_dtype"], json!("int64"));
        let list = GOOD.replace("compare = \"up_to_sign\"", "out_dtype = [\"T\", \"int64\"]\n  outputs = [0, 2]");
        assert_eq!(case(&list)["out_dtype"], json!(["T", "int64"]));
        let from_function = GOOD.replace("op = \"svd\"", "op = \"svd\"\nout_dtype = \"bool\"");
        assert_eq!(case(&from_function)["out_dtype"], json!("bool"));
        let both = from_function.replace("compare = \"up_to_sign\"", "out_dtype = \"T\"");
        assert_eq!(case(&both)["out_dtype"], json!("T"), "the case's own wins");
        let e = error_of(&GOOD.replace("compare = \"up_to_sign\"", "out_dtype = \"int65\""));
        assert!(e.starts_with("cat/t.toml:15:") && e.contains("`out_dtype`: unknown dtype `int65`"), "{e}");
        let e = error_of(&GOOD.replace("op = \"svd\"", "op = \"svd\"\nout_dtype = [\"T\", \"t\"]"));
        assert!(e.starts_with("cat/t.toml:9:") && e.contains("unknown dtype `t`"), "{e}");
        let e = error_of(&GOOD.replace("compare = \"up_to_sign\"", "out_dtype = []"));
        assert!(e.contains("`out_dtype` lists no dtype"), "{e}");
        let e = error_of(&GOOD.replace("compare = \"up_to_sign\"", "out_dtype = [\"T\"]\n  outputs = [0, 1]"));
        assert!(e.contains("`out_dtype` lists 1 dtypes but `outputs` selects 2 outputs"), "{e}");
        let e = error_of(&GOOD.replace("compare = \"up_to_sign\"", "out_dtype = 3"));
        assert!(e.starts_with("cat/t.toml:15:"), "{e}");
    }

    #[test]
    fn modes_name_the_modes_a_case_runs_in() {
        let case = |text: &str| json_of(&parse("t.toml", text).unwrap().functions[0].cases[0]);
        assert!(case(GOOD).get("modes").is_none(), "absent: every mode, not stored");
        let eager = GOOD.replace("compare = \"up_to_sign\"", "modes = [\"eager\"]");
        assert_eq!(case(&eager)["modes"], json!(["eager"]));
        let both = GOOD.replace("op = \"svd\"", "op = \"svd\"\nmodes = [\"compiled\", \"compiled_fullgraph\"]");
        assert_eq!(case(&both)["modes"], json!(["compiled", "compiled_fullgraph"]), "from the function");
        let own = both.replace("compare = \"up_to_sign\"", "modes = [\"eager\"]");
        assert_eq!(case(&own)["modes"], json!(["eager"]), "the case's own wins");
        for (bad, says) in [
            ("modes = []", "`modes` lists no mode"),
            (
                "modes = [\"jit\"]",
                "`modes`: unknown mode `jit` (expected eager, compiled, compiled_fullgraph, onnx, onnx_openvino or stablehlo)",
            ),
            ("modes = [\"eager\", \"eager\"]", "`modes` lists eager twice"),
            ("modes = \"eager\"", "invalid type"),
        ] {
            let e = error_of(&GOOD.replace("compare = \"up_to_sign\"", bad));
            assert!(e.starts_with("cat/t.toml:15:") && e.contains(says), "{bad}: {e}");
        }
        let jax = GOOD
            .replace("\"torch\"", "\"jax\"")
            .replace("compare = \"up_to_sign\"", "modes = [\"compiled_fullgraph\"]");
        assert!(error_of(&jax).contains("jax has no compiled_fullgraph mode"), "{}", error_of(&jax));
        let numpy =
            GOOD.replace("\"torch\"", "\"numpy\"").replace("compare = \"up_to_sign\"", "modes = [\"compiled\"]");
        assert!(error_of(&numpy).contains("numpy has no compiled mode"), "{}", error_of(&numpy));
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

    /// A one-case file whose case is swept over `dtypes` and has one input table `input`.
    fn with_input(dtypes: &str, input: &str) -> String {
        format!(
            "format = 1\nframework = \"torch\"\nversion = \"t1\"\n[[function]]\nname = \"torch.abs\"\n\
             [[function.case]]\ndtypes = {dtypes}\ninputs = [ {{ {input} }} ]\n"
        )
    }

    #[test]
    fn every_pair_of_input_keys_means_something_or_is_an_error_naming_the_place() {
        // One value per key; `dist = "uniform"` reads `low`/`high` only.
        const KEYS: [(&str, &str); 13] = [
            ("shape", "[2, 2]"),
            ("dtype", "\"int32\""),
            ("dist", "\"uniform\""),
            ("low", "1.0"),
            ("high", "5.0"),
            ("mean", "0.5"),
            ("std", "2.0"),
            ("p", "0.3"),
            ("start", "1.0"),
            ("value", "[1, 2]"),
            ("fill", "3"),
            ("scalar", "true"),
            ("as", "\"list\""),
        ];
        // Alone, at float32: `low`, `high` (no dist reads them), `p` (not bool) and `start`
        // (not arange) mean nothing.
        let alone_bad = ["low", "high", "p", "start"];
        // The pairs that mean something although one key alone does not, and those that do
        // not although each key alone does, with a word of the error.
        let rescued = [("dist", "low"), ("dist", "high")];
        let broken: [(&str, &str, &str); 16] = [
            ("shape", "scalar", "must hold one element"),
            ("dtype", "mean", "means nothing"),
            ("dtype", "std", "means nothing"),
            ("dist", "mean", "means nothing"),
            ("dist", "std", "means nothing"),
            ("dist", "value", "not `dist` and `value`"),
            ("dist", "fill", "not `dist` and `fill`"),
            ("mean", "value", "means nothing with `value`"),
            ("mean", "fill", "means nothing with `fill`"),
            ("std", "value", "means nothing with `value`"),
            ("std", "fill", "means nothing with `fill`"),
            ("value", "fill", "not `value` and `fill`"),
            ("value", "scalar", "must hold one element"),
            ("scalar", "as", "contradicts `as = \"list\"`"),
            ("low", "high", "means nothing"),
            ("p", "start", "means nothing"),
        ];
        let mut checked = 0;
        for (i, (a, va)) in KEYS.iter().enumerate() {
            for (b, vb) in &KEYS[i + 1..] {
                let text = with_input("[\"float32\"]", &format!("{a} = {va}, {b} = {vb}"));
                let got = parse("cat/t.toml", &text);
                let broke = broken.iter().find(|(x, y, _)| (x, y) == (a, b));
                let refused =
                    !rescued.contains(&(a, b)) && (alone_bad.contains(a) || alone_bad.contains(b) || broke.is_some());
                match (got, refused) {
                    (Ok(_), false) | (Err(_), true) => {}
                    (Ok(_), true) => panic!("`{a}` with `{b}` loaded, but one of them means nothing there"),
                    (Err(e), false) => panic!("`{a}` with `{b}` was refused: {e}"),
                }
                if let Err(e) = parse("cat/t.toml", &text) {
                    let e = e.to_string();
                    assert!(e.starts_with("cat/t.toml:8:12: "), "`{a}` with `{b}`: {e}");
                    if let Some((_, _, word)) = broke {
                        assert!(e.contains(word), "`{a}` with `{b}`: {e}");
                    }
                }
                checked += 1;
            }
        }
        assert_eq!(checked, 78, "13 keys, 78 pairs");
        for (a, va) in KEYS {
            let alone = parse("cat/t.toml", &with_input("[\"float32\"]", &format!("{a} = {va}")));
            assert_eq!(alone.is_err(), alone_bad.contains(&a), "`{a}` alone: {alone:?}");
        }
    }

    #[test]
    fn inputs_are_read_at_the_dtypes_they_take() {
        let ok = |dtypes: &str, input: &str| parse("cat/t.toml", &with_input(dtypes, input)).map(|_| ());
        let err = |dtypes: &str, input: &str| ok(dtypes, input).unwrap_err().to_string();
        // `p` means something when the sweep holds bool, low/high for the other dtypes.
        ok("[\"float32\", \"bool\"]", "shape = [4], dist = \"randint\", low = 0, high = 4, p = 0.2").unwrap();
        assert!(err("[\"bool\"]", "shape = [4], dist = \"randint\"").contains("a bool input is drawn"));
        assert!(err("[\"bool\"]", "shape = [4], std = 2.0").contains("`std` means nothing"));
        ok("[\"bool\"]", "shape = [4], p = 0.9").unwrap();
        assert!(err("[\"bool\"]", "shape = [4], p = 1.5").contains("probability"));
        // mean/std are read by normal at floating dtypes only; a sweep with one is enough.
        ok("[\"int32\", \"float16\"]", "shape = [4], std = 3.0").unwrap();
        assert!(err("[\"int32\"]", "shape = [4], std = 3.0").contains("at dtype int32"));
        assert!(err("[\"float32\"]", "shape = [4], dist = \"arange\", low = 1.0").contains("`low` means nothing"));
        ok("[\"float32\"]", "shape = [4], dist = \"arange\", start = 3.0").unwrap();
        // value and fill: broadcast to the shape, or refused.
        ok("[\"float32\"]", "shape = [250, 250], value = 1.23").unwrap();
        ok("[\"float32\"]", "shape = [3, 4], value = [[1], [2], [3]]").unwrap();
        ok("[\"float32\"]", "shape = [250, 250], fill = 1.23").unwrap();
        let e = err("[\"float32\"]", "shape = [2, 3], value = [1, 2]");
        assert!(e.starts_with("cat/t.toml:8:12: `value` of shape [2] cannot be broadcast to `shape` [2, 3]"), "{e}");
        assert!(err("[\"float32\"]", "value = [[1, 2], [3]]").contains("ragged"));
        assert!(err("[\"float32\"]", "value = \"one\"").contains("not a string"));
        assert!(err("[\"float32\"]", "fill = [1, 2]").contains("one number or bool"));
        assert!(err("[\"float32\", \"int8\"]", "shape = [2], fill = 1.5").contains("dtype int8 cannot hold"));
        assert!(err("[\"float32\"]", "value = 2.5, dtype = \"int64\"").contains("truncated"));
        ok("[\"float32\"]", "value = [4], as = \"scalar\"").unwrap();
        assert!(err("[\"float32\"]", "shape = [3], dist = \"spd\"").contains("two equal dimensions"));
        assert!(err("[\"float32\"]", "dist = \"probs\"").contains("at least one dimension"));
    }

    #[test]
    fn the_ulp_rule_keys() {
        let case = |keys: &str| GOOD.replace("compare = \"up_to_sign\"", keys);
        let spec = |keys: &str| parse("cat/t.toml", &case(keys)).map(|f| f.functions[0].cases[0].spec.clone());
        let s = spec("ulp = 1").unwrap();
        assert_eq!((s.compare.clone(), s.max_ulp), (Compare::One(Rule::Ulp), Some(1.0)));
        let s = spec("compare = [\"ulp\", \"allclose\"]\nmax_ulp = 0.5\nrtol = 1e-3").unwrap();
        assert_eq!((s.compare.rule(0), s.compare.rule(1), s.max_ulp), (Rule::Ulp, Rule::AllClose, Some(0.5)));
        let err = |keys: &str| error_of(&case(keys));
        assert!(err("compare = \"exact\"\nulp = 1").contains("`ulp = N` replaces the default rule"));
        assert!(err("ulp = 1\nmax_ulp = 1").contains("give one"));
        assert!(err("max_ulp = 1").contains("`max_ulp` means nothing without"));
        assert!(err("compare = \"ulp\"").contains("needs `max_ulp = N`"));
        assert!(err("ulp = -1.0").contains("`ulp` must be a finite number >= 0"));
        assert!(err("ulp = 2\nrtol = 1e-3").contains("mean nothing when every output is compared in ULPs"));
        let e = err("max_ulp = 1");
        assert!(e.starts_with("cat/t.toml:15:"), "{e}");
    }

    #[test]
    fn syntax_errors_carry_a_position() {
        let e = error_of("format = 1\nframework = \"torch\nversion = 1\n");
        assert!(e.starts_with("cat/t.toml:2:"), "{e}");
    }

    #[test]
    fn references_are_checked_where_they_are_written() {
        let head =
            |fw: &str| format!("format = 1\nframework = \"{fw}\"\nversion = \"t\"\n[[function]]\nname = \"{fw}.f\"\n");
        // reference_only belongs in the NumPy file, on a function with an op.
        let e = error_of(&format!("{}reference_only = true\nop = \"f\"\n[[function.case]]\n", head("torch")));
        assert!(e.contains("`reference_only` belongs in the NumPy catalogue") && e.starts_with("cat/t.toml:6:"), "{e}");
        let e = error_of(&format!("{}reference_only = true\n[[function.case]]\n", head("numpy")));
        assert!(e.contains("needs an `op`"), "{e}");
        // reference names a NumPy or SciPy callable; reference_kwargs only with it.
        let e = error_of(&format!("{}[[function.case]]\nreference = \"torch.exp\"\n", head("torch")));
        assert!(e.contains("must name a NumPy or SciPy callable") && e.starts_with("cat/t.toml:7:"), "{e}");
        let e = error_of(&format!("{}[[function.case]]\nreference_kwargs = {{ axis = 1 }}\n", head("torch")));
        assert!(e.contains("`reference_kwargs` goes with `reference"), "{e}");
        let ok = parse(
            "cat/t.toml",
            &format!(
                "{}[[function.case]]\nreference = \"scipy.special.softmax\"\nreference_kwargs = {{ axis = 1 }}\n",
                head("torch")
            ),
        )
        .unwrap();
        let own = ok.functions[0].cases[0].reference.clone().unwrap();
        assert_eq!((own.function.as_str(), own.kwargs["axis"].as_i64()), ("scipy.special.softmax", Some(1)));
    }
}
