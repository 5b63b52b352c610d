//! A suite's listing: what the worker's `mlport_suites.py list` says about the installed
//! framework's own test data (format [`LISTING_FORMAT`]). It is read back from a file the
//! Python side wrote, and may come from another machine's cache, so it is untrusted: at most
//! [`MAX_LISTING_BYTES`], every dtype, name and count checked, the first problem named with its
//! entry.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::model::{DISPATCH_KEYS, Dtype, Suite};

/// The listing format this mlport reads and writes.
pub const LISTING_FORMAT: u32 = 1;

/// The largest listing file read, in bytes (op_db at every sample is about 2 MB).
pub const MAX_LISTING_BYTES: u64 = 64 << 20;

/// The longest variant name a listing may hold, in bytes: JAX's harness names spell out their
/// parameters (over 400 characters for some scatters).
pub const MAX_VARIANT: usize = 2000;

/// The most samples one entry may list at one dtype.
pub const MAX_SAMPLES: u32 = 10_000;

/// A suite as the installed framework lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    /// [`LISTING_FORMAT`].
    pub format: u32,
    /// The suite listed.
    pub suite: Suite,
    /// The framework's version (`torch.__version__`): the suite's version.
    pub framework_version: String,
    /// The cap on samples per entry and dtype the listing was made with; `None`: every sample.
    pub samples: Option<u32>,
    /// The suite's entries, in the suite's order.
    pub ops: Vec<Entry>,
    /// Entries not listed, with why.
    #[serde(default)]
    pub left_out: Vec<LeftOut>,
    /// How long listing took, s.
    #[serde(default)]
    pub seconds: f64,
}

/// One entry of a suite: an OpInfo, a ModuleInfo or a JAX harness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The entry's own name (OpInfo `name`, module class, harness group).
    pub name: String,
    /// Its variant (OpInfo `variant_test_name`, harness name); empty when none.
    #[serde(default)]
    pub variant: String,
    /// The public callable a user writes for it (`torch.nn.functional.pad`).
    pub function: String,
    /// Public aliases of the callable (`torch.absolute` for `torch.abs`).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The ATen operator's name (OpInfo `aten_name`); `None` outside PyTorch's operators.
    #[serde(default)]
    pub aten: Option<String>,
    /// Declared dtypes per device type (`cpu`, `cuda`, `xla`, `xpu`, `tpu`), mlport names.
    #[serde(default)]
    pub declared: BTreeMap<String, Vec<String>>,
    /// Whether a kernel is registered per dispatch key ([`DISPATCH_KEYS`]); `None`: unknown.
    #[serde(default)]
    pub registered: Option<BTreeMap<String, bool>>,
    /// The entry's own NumPy reference, by name.
    #[serde(default)]
    pub reference: Option<String>,
    /// Output depends on the random generator or uninitialised memory.
    #[serde(default)]
    pub random: bool,
    /// Samples per dtype (mlport names), capped at [`Listing::samples`].
    #[serde(default)]
    pub samples: BTreeMap<String, u32>,
    /// Dtypes tried whose sample generator raised or yielded nothing, with the first line of why.
    #[serde(default)]
    pub no_samples: BTreeMap<String, String>,
    /// Per dtype, the indices of the samples whose every tensor has no element (OpInfo's 0×0
    /// matrices).
    #[serde(default)]
    pub empty: BTreeMap<String, Vec<u32>>,
}

/// An entry the listing left out, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeftOut {
    /// Its name.
    pub name: String,
    /// Its variant.
    #[serde(default)]
    pub variant: String,
    /// Why.
    pub why: String,
}

impl Entry {
    /// `name.variant`, or `name` without a variant.
    pub fn entry_name(&self) -> String {
        crate::model::entry_name(&self.name, &self.variant)
    }

    /// The declared dtypes, typed (checked by [`Listing::check`]).
    pub fn declared_dtypes(&self) -> BTreeMap<String, Vec<Dtype>> {
        self.declared
            .iter()
            .map(|(t, list)| (t.clone(), list.iter().filter_map(|d| d.parse().ok()).collect()))
            .collect()
    }

    /// Samples per dtype, typed, in dtype order (checked by [`Listing::check`]).
    pub fn sample_counts(&self) -> Vec<(Dtype, u32)> {
        let mut v: Vec<(Dtype, u32)> =
            self.samples.iter().filter_map(|(d, n)| Some((d.parse().ok()?, *n))).filter(|(_, n)| *n > 0).collect();
        v.sort();
        v
    }
}

impl Listing {
    /// Reads a listing file written by `mlport_suites.py list`.
    ///
    /// Errors: the file cannot be read, is over [`MAX_LISTING_BYTES`], is not JSON of this
    /// shape, has another format, or fails [`Listing::check`]; each names the file.
    pub fn read(path: &Path) -> Result<Listing> {
        let len =
            std::fs::metadata(path).with_context(|| format!("cannot read the suite listing {}", path.display()))?.len();
        if len > MAX_LISTING_BYTES {
            bail!("the suite listing {} is {len} bytes, over the limit of {MAX_LISTING_BYTES} bytes", path.display());
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the suite listing {}", path.display()))?;
        Listing::parse(&text).with_context(|| format!("the suite listing {}", path.display()))
    }

    /// Parses and checks a listing's JSON text.
    ///
    /// Errors: as [`Listing::read`], without the file's name.
    pub fn parse(text: &str) -> Result<Listing> {
        let format = serde_json::from_str::<serde_json::Value>(text)
            .context("is not JSON")?
            .get("format")
            .and_then(serde_json::Value::as_u64);
        if format != Some(u64::from(LISTING_FORMAT)) {
            let said = format.map_or_else(|| "no numeric format".to_string(), |f| format!("format {f}"));
            bail!("has {said}; this mlport reads suite listings of format {LISTING_FORMAT}");
        }
        let listing: Listing = serde_json::from_str(text).context("is not a suite listing")?;
        listing.check()?;
        Ok(listing)
    }

    /// Checks what the catalogue and reports rely on: names are dotted identifiers without
    /// `/` or whitespace, every dtype is one mlport knows, every dispatch key one of
    /// [`DISPATCH_KEYS`], counts at most [`MAX_SAMPLES`] (and at most the listing's cap).
    ///
    /// Errors: the first entry that breaks a rule, named with the rule.
    pub fn check(&self) -> Result<()> {
        let clean = |s: &str| {
            !s.is_empty() && s.len() <= 300 && !s.chars().any(|c| c == '/' || c.is_whitespace() || c.is_control())
        };
        let printable = |s: &str| s.len() <= 2000 && !s.chars().any(char::is_control);
        if !printable(&self.framework_version) || self.framework_version.is_empty() {
            bail!("the framework version must be 1 to 2000 characters without control characters");
        }
        let mut seen = std::collections::HashSet::new();
        for e in &self.ops {
            let at = || format!("entry `{}`", e.entry_name().escape_debug());
            if !seen.insert((e.name.as_str(), e.variant.as_str())) {
                bail!("{}: listed twice", at());
            }
            let texts = e.aten.iter().chain(&e.reference).chain(e.no_samples.values());
            if let Some(t) = texts.into_iter().find(|t| !printable(t)) {
                bail!("{}: `{}` holds control characters or is over 2000 characters", at(), t.escape_debug());
            }
            for (d, ks) in &e.empty {
                let n = e.samples.get(d).copied().unwrap_or(0);
                if let Some(k) = ks.iter().find(|k| **k >= n) {
                    bail!("{}: empty sample {k} at {d}, which has {n} samples", at());
                }
            }
            if !clean(&e.name) || e.variant.len() > MAX_VARIANT || e.variant.chars().any(char::is_control) {
                bail!(
                    "{}: a name must be 1 to 300 characters without `/`, whitespace or control characters, a variant at \
                     most {MAX_VARIANT} characters",
                    at()
                );
            }
            for f in std::iter::once(&e.function).chain(&e.aliases) {
                if !clean(f) || !f.contains('.') {
                    bail!("{}: `{f}` is not a qualified function name", at());
                }
            }
            let dtypes =
                e.declared.values().flatten().chain(e.samples.keys()).chain(e.no_samples.keys()).chain(e.empty.keys());
            for d in dtypes {
                d.parse::<Dtype>().map_err(|err| anyhow::anyhow!("{}: {err}", at()))?;
            }
            for (d, n) in &e.samples {
                if *n > MAX_SAMPLES || self.samples.is_some_and(|cap| *n > cap) {
                    bail!("{}: {n} samples at {d}, over the cap", at());
                }
            }
            if let Some(keys) = &e.registered
                && let Some(k) = keys.keys().find(|k| !DISPATCH_KEYS.contains(&k.as_str()))
            {
                bail!("{}: unknown dispatch key `{k}` (known: {})", at(), DISPATCH_KEYS.join(", "));
            }
        }
        if let Some(l) =
            self.left_out.iter().find(|l| !printable(&l.name) || !printable(&l.variant) || !printable(&l.why))
        {
            bail!("left-out entry `{}` holds control characters or is over 2000 characters", l.name.escape_debug());
        }
        Ok(())
    }

    /// Operator × dtype pairs with at least one sample.
    pub fn pairs(&self) -> usize {
        self.ops.iter().map(|e| e.sample_counts().len()).sum()
    }

    /// Samples over every entry and dtype.
    pub fn sample_total(&self) -> u64 {
        self.ops.iter().flat_map(|e| e.samples.values()).map(|n| u64::from(*n)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const SMALL: &str = r#"{"format": 1, "suite": "opinfo", "framework": "torch",
        "framework_version": "2.15.0", "samples": 3, "seconds": 1.5,
        "ops": [
          {"name": "sin", "variant": "", "function": "torch.sin", "aliases": [], "aten": "sin",
           "declared": {"cpu": ["float32", "float64", "bfloat16"], "cuda": ["float16", "float32"]},
           "registered": {"CPU": true, "CUDA": true, "Composite": false},
           "reference": "numpy.sin", "random": false,
           "samples": {"float32": 3, "float16": 2, "bool": 0}, "no_samples": {"int8": "TypeError: no"}},
          {"name": "nn.functional.dropout", "variant": "", "function": "torch.nn.functional.dropout",
           "aten": "dropout", "declared": {"cpu": ["float32"]}, "registered": null, "random": true,
           "samples": {"float32": 1}}
        ], "left_out": [{"name": "H", "why": "no dtypes"}]}"#;

    #[test]
    fn reads_counts_and_types() {
        let l = Listing::parse(SMALL).unwrap();
        assert_eq!((l.ops.len(), l.pairs(), l.sample_total()), (2, 3, 6));
        assert_eq!(l.ops[0].sample_counts(), vec![(Dtype::Float16, 2), (Dtype::Float32, 3)]);
        assert_eq!(l.ops[0].declared_dtypes()["cuda"], vec![Dtype::Float16, Dtype::Float32]);
        assert_eq!(l.left_out[0].why, "no dtypes");
    }

    #[test]
    fn refuses_what_it_cannot_trust() {
        let bad = |from: &str, to: &str| Listing::parse(&SMALL.replacen(from, to, 1)).unwrap_err();
        let e = format!("{:#}", bad(r#""format": 1"#, r#""format": 9"#));
        assert!(e.contains("has format 9") && e.contains("format 1"), "{e}");
        let e = format!("{:#}", bad(r#""framework_version": "2.15.0""#, r#""framework_version": "2.15\u001b[31m""#));
        assert!(e.contains("control characters"), "{e}");
        let e = format!("{:#}", bad(r#""bool": 0}"#, r#""bool": 0}, "empty": {"float16": [7]}"#));
        assert!(e.contains("empty sample 7 at float16, which has 2 samples"), "{e}");
        let e = format!("{:#}", bad(r#""float16": 2"#, r#""float8": 2"#));
        assert!(e.contains("entry `sin`") && e.contains("unknown dtype `float8`"), "{e}");
        let e = format!("{:#}", bad(r#""float16": 2"#, r#""float16": 4"#));
        assert!(e.contains("4 samples at float16, over the cap"), "{e}");
        let e = format!("{:#}", bad(r#""function": "torch.sin""#, r#""function": "torch/sin""#));
        assert!(e.contains("not a qualified function name"), "{e}");
        let e = format!("{:#}", bad(r#""Composite": false"#, r#""Vulkan": false"#));
        assert!(e.contains("unknown dispatch key `Vulkan`"), "{e}");
        let e = format!("{:#}", Listing::parse("[1,").unwrap_err());
        assert!(e.contains("not JSON"), "{e}");
    }

    #[test]
    fn an_oversized_file_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.json");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(MAX_LISTING_BYTES + 1).unwrap();
        let e = format!("{:#}", Listing::read(&p).unwrap_err());
        assert!(e.contains("big.json") && e.contains("over the limit of 67108864 bytes"), "{e}");
    }
}
