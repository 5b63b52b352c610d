//! A suite's listing as a catalogue, so its samples are planned, run, stored and reported like
//! any catalogue case: one function per public callable, one case per entry and sample index,
//! swept over the dtypes that entry has samples at.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::catalogue::{Case, CatalogueFile, Function};
use crate::compare::Rule;
use crate::model::{CaseSpec, Compare, Framework, Mode, SuiteSample};

use super::listing::{Entry, Listing};

/// Which of a listing's entries to plan (`--op`): every one when empty, else those whose
/// name, `name.variant` or public function is listed.
#[derive(Clone, Debug, Default)]
pub struct EntryFilter(pub Vec<String>);

impl EntryFilter {
    /// Whether `e` is selected.
    pub fn admits(&self, e: &Entry) -> bool {
        self.0.is_empty() || self.0.iter().any(|f| *f == e.name || *f == e.entry_name() || *f == e.function)
    }
}

/// The modes a suite's cases run in: eager and compiled. The export routes are left out: a
/// sample's inputs are the suite's own Python objects, not arrays an exporter can take.
const MODES: [Mode; 3] = [Mode::Eager, Mode::Compiled, Mode::CompiledFullgraph];

/// The catalogue file of one framework's listings (opinfo and modules share PyTorch's):
/// functions in the order their first entry is listed, case ids `s<k>` (`<variant>.s<k>` for a
/// variant; prefixed by the entry's name when two entries of one function share a variant),
/// each case's dtypes those its entry has a `k`-th sample at.
///
/// Panics if `listings` is empty or mixes frameworks (the caller groups them).
pub fn catalogue_file(listings: &[&Listing], filter: &EntryFilter) -> CatalogueFile {
    let framework: Framework = listings[0].suite.framework();
    assert!(listings.iter().all(|l| l.suite.framework() == framework), "one framework per file");
    let mut order: Vec<String> = Vec::new();
    let mut functions: HashMap<String, Function> = HashMap::new();
    let mut ids: HashMap<String, HashSet<String>> = HashMap::new();
    for listing in listings {
        for e in listing.ops.iter().filter(|e| filter.admits(e)) {
            let counts = e.sample_counts();
            let Some(most) = counts.iter().map(|(_, n)| *n).max() else { continue };
            let f = functions.entry(e.function.clone()).or_insert_with(|| {
                order.push(e.function.clone());
                Function {
                    name: e.function.clone(),
                    workload: false,
                    paper: None,
                    decile: None,
                    top20: false,
                    op: None,
                    moved: None,
                    note: Some(format!("from {} {}", listing.suite, listing.framework_version)),
                    reference_only: false,
                    cases: Vec::new(),
                }
            });
            let taken = ids.entry(e.function.clone()).or_default();
            let base = id_base(e, taken);
            for k in 0..most {
                let id = if base.is_empty() { format!("s{k}") } else { format!("{base}.s{k}") };
                taken.insert(id.clone());
                let sample = SuiteSample {
                    suite: listing.suite,
                    name: e.name.clone(),
                    variant: e.variant.clone(),
                    sample: k,
                    declared: e.declared_dtypes(),
                    registered: e.registered.clone(),
                    reference: e.reference.clone(),
                    random: e.random,
                    empty_at: counts
                        .iter()
                        .filter(|(d, _)| e.empty.get(d.as_str()).is_some_and(|ks| ks.contains(&k)))
                        .map(|(d, _)| *d)
                        .collect(),
                };
                let mut spec = CaseSpec::new(&e.function, &id);
                spec.modes = Some(MODES.to_vec());
                if e.random {
                    spec.compare = Compare::One(Rule::ShapeDtype);
                }
                spec.suite = Some(sample);
                f.cases.push(Case {
                    id,
                    dtypes: counts.iter().filter(|(_, n)| *n > k).map(|(d, _)| *d).collect(),
                    seed: 0,
                    timeout_s: None,
                    skip: None,
                    reference: None,
                    spec,
                    path: format!("{} {}", listing.suite, listing.framework_version),
                    line: 0,
                });
            }
        }
    }
    let suites: Vec<String> = listings.iter().map(|l| l.suite.to_string()).collect();
    let samples = listings[0].samples.map_or("every sample".to_string(), |n| format!("{n} samples"));
    CatalogueFile {
        path: format!("{} (the {} suite)", suites.join(" + "), framework),
        framework,
        version: format!("{} of {framework} {}, {samples}", suites.join("+"), listings[0].framework_version),
        functions: order.into_iter().filter_map(|n| functions.remove(&n)).collect(),
    }
}

/// The part of a case id before `.s<k>`: the variant, sanitised to `[A-Za-z0-9_.-]`, or empty;
/// prefixed with the entry's name when another entry of the function already took it.
fn id_base(e: &Entry, taken: &HashSet<String>) -> String {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || "_.-".contains(c) { c } else { '_' }).collect()
    };
    let base = clean(&e.variant);
    let first = |b: &str| if b.is_empty() { "s0".to_string() } else { format!("{b}.s0") };
    if !taken.contains(&first(&base)) {
        return base;
    }
    let named = if base.is_empty() { clean(&e.name) } else { format!("{}.{base}", clean(&e.name)) };
    (1..)
        .map(|i| if i == 1 { named.clone() } else { format!("{named}.{i}") })
        .find(|b| !taken.contains(&first(b)))
        .expect("an unused id")
}

/// How many entries, operator × dtype pairs and samples a catalogue built by
/// [`catalogue_file`] plans: `(entries, pairs, samples)`.
pub fn planned(listings: &[&Listing], filter: &EntryFilter) -> (usize, usize, u64) {
    let mut entries = 0;
    let mut pairs = 0;
    let mut samples = 0u64;
    for e in listings.iter().flat_map(|l| &l.ops).filter(|e| filter.admits(e)) {
        let counts = e.sample_counts();
        if !counts.is_empty() {
            entries += 1;
            pairs += counts.len();
            samples += counts.iter().map(|(_, n)| u64::from(*n)).sum::<u64>();
        }
    }
    (entries, pairs, samples)
}

/// Per entry name, the dtypes it declares and has no sample at (the suite's generator raised
/// or yielded nothing): `name -> {dtype: why}`, for the run's header.
pub fn without_samples(listing: &Listing) -> BTreeMap<String, BTreeMap<String, String>> {
    listing.ops.iter().filter(|e| !e.no_samples.is_empty()).map(|e| (e.entry_name(), e.no_samples.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Dtype;

    fn listing(text: &str) -> Listing {
        Listing::parse(text).unwrap()
    }

    const TWO: &str = r#"{"format": 1, "suite": "opinfo", "framework_version": "2.15.0", "samples": 3,
        "ops": [
          {"name": "sin", "function": "torch.sin", "declared": {"cpu": ["float32"]},
           "samples": {"float32": 3, "float16": 1}},
          {"name": "nn.functional.pad", "variant": "reflect", "function": "torch.nn.functional.pad",
           "samples": {"float32": 1}},
          {"name": "pad_alias", "variant": "reflect", "function": "torch.nn.functional.pad",
           "samples": {"float32": 1}},
          {"name": "bernoulli", "function": "torch.bernoulli", "random": true, "samples": {"float64": 2}},
          {"name": "none", "function": "torch.none", "samples": {"float32": 0}}
        ]}"#;

    #[test]
    fn one_function_per_callable_one_case_per_sample() {
        let l = listing(TWO);
        let f = catalogue_file(&[&l], &EntryFilter::default());
        assert_eq!(f.framework, Framework::Torch);
        assert_eq!(f.version, "opinfo of torch 2.15.0, 3 samples");
        let names: Vec<&str> = f.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["torch.sin", "torch.nn.functional.pad", "torch.bernoulli"], "no samples, no function");
        let sin = &f.functions[0];
        let ids: Vec<&str> = sin.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["s0", "s1", "s2"]);
        assert_eq!(sin.cases[0].dtypes, [Dtype::Float16, Dtype::Float32]);
        assert_eq!(sin.cases[1].dtypes, [Dtype::Float32], "float16 has one sample");
        let s = sin.cases[2].spec.suite.as_ref().unwrap();
        assert_eq!((s.name.as_str(), s.sample), ("sin", 2));
        let pad: Vec<&str> = f.functions[1].cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(pad, ["reflect.s0", "pad_alias.reflect.s0"], "a shared variant is told apart by name");
        let bern = &f.functions[2].cases[0].spec;
        assert_eq!(bern.compare, Compare::One(Rule::ShapeDtype), "random: shape and dtype only");
        assert_eq!(planned(&[&l], &EntryFilter::default()), (4, 5, 8));
    }

    #[test]
    fn the_filter_takes_names_variants_and_functions() {
        let l = listing(TWO);
        let pick = |names: &[&str]| {
            let filter = EntryFilter(names.iter().map(|s| s.to_string()).collect());
            catalogue_file(&[&l], &filter).functions.iter().map(|f| f.cases.len()).sum::<usize>()
        };
        assert_eq!(pick(&["sin"]), 3);
        assert_eq!(pick(&["nn.functional.pad.reflect"]), 1);
        assert_eq!(pick(&["torch.nn.functional.pad"]), 2);
        assert_eq!(pick(&["cos"]), 0);
    }
}
