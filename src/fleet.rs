//! Fleet: which campaign and shard a run belongs to, from the command line or from the job
//! system that started it — a Slurm job array (`SLURM_ARRAY_TASK_ID` with
//! `SLURM_ARRAY_TASK_COUNT`, or `SLURM_ARRAY_TASK_MIN`/`_MAX`/`_STEP`) or a Kubernetes Indexed
//! Job (`JOB_COMPLETION_INDEX`, the count from `--shards`/`MLPORT_SHARDS`). Pure: the
//! environment is passed in as a lookup, so every rule is tested without touching the
//! process's own.
//!
//! Rules: a flag wins over its environment variable (`--shards` over `MLPORT_SHARDS`,
//! `--campaign` over `MLPORT_CAMPAIGN`, which clap applies); two sources of the shard that
//! disagree (`--shard` against the array's task, a Slurm array inside a Kubernetes pod, `--shard
//! I/N` against `--shards M`) are an error naming both, never a silent choice — four array tasks
//! all run with `--shard 0/4` would run one shard four times and three never. A shard needs a
//! campaign (the name that lets its rerun find it); inside a Slurm array it defaults to
//! `slurm-<SLURM_ARRAY_JOB_ID>`, which a requeued task keeps.

use anyhow::{Result, bail};

use crate::model::{RunInfo, RunOrigin, RunSummary, Shard};

/// `--shard I/N` given without a campaign: the command line alone is wrong, a usage error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ShardWithoutCampaign(String);

/// Where a run's shard came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardSource {
    /// `--shard I/N`.
    Flag,
    /// A Slurm job array's task.
    Slurm,
    /// A Kubernetes Indexed Job's completion index.
    Kubernetes,
    /// No shard was asked for: a campaign run is the whole plan, shard 0 of 1.
    Whole,
}

impl ShardSource {
    /// How the source is named in messages.
    pub fn describe(self) -> &'static str {
        match self {
            ShardSource::Flag => "--shard",
            ShardSource::Slurm => "the Slurm job array (SLURM_ARRAY_TASK_ID)",
            ShardSource::Kubernetes => "the Kubernetes Indexed Job (JOB_COMPLETION_INDEX)",
            ShardSource::Whole => "the whole plan",
        }
    }
}

/// A run's place in a campaign.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The campaign's name.
    pub campaign: String,
    /// The run's part of the plan ([`Shard::WHOLE`] when not sharded).
    pub shard: Shard,
    /// Where the shard came from.
    pub source: ShardSource,
}

/// The campaign and shard of a new run from `--shard`, `--shards` (or `MLPORT_SHARDS`),
/// `--campaign` (or `MLPORT_CAMPAIGN`) and the job system's variables read through `env`.
/// `None` when the run belongs to no campaign (no campaign, no shard anywhere).
///
/// Errors, each naming what to fix: a variable that is not a whole number; a Slurm array whose
/// count cannot be told or whose task id is not one of its evenly spaced ids; a Kubernetes index
/// without a count; an index not below its count; two sources that disagree; `--shards` with
/// nothing to take the index from; a shard without a campaign outside a Slurm array.
pub fn placement(
    flag: Option<Shard>,
    shards: Option<u32>,
    campaign: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Placement>> {
    let mut found: Vec<(Shard, ShardSource)> = Vec::new();
    if let Some(s) = flag {
        if let Some(n) = shards.filter(|n| *n != s.count) {
            bail!("--shard {s} says {} shards but --shards (or MLPORT_SHARDS) says {n}; give one count", s.count);
        }
        found.push((s, ShardSource::Flag));
    }
    if let Some(s) = slurm_shard(env)? {
        found.push((s, ShardSource::Slurm));
    }
    if let Some(index) = env_number(env, "JOB_COMPLETION_INDEX")? {
        let Some(count) = shards.or(flag.map(|s| s.count)) else {
            bail!(
                "JOB_COMPLETION_INDEX={index} says this is a Kubernetes Indexed Job, but not how many shards there \
                 are: give --shards N or MLPORT_SHARDS=N (the Job's `completions`)"
            );
        };
        let s = Shard::new(index, count)
            .map_err(|e| anyhow::anyhow!("JOB_COMPLETION_INDEX={index} with {count} shards: {e}"))?;
        found.push((s, ShardSource::Kubernetes));
    }
    if let [(a, from_a), rest @ ..] = found.as_slice()
        && let Some((b, from_b)) = rest.iter().find(|(b, _)| b != a)
    {
        bail!(
            "{} gives shard {a} but {} gives shard {b}: run each shard from one place (drop --shard inside a \
             job array or Indexed Job, which gives each task its own)",
            from_a.describe(),
            from_b.describe()
        );
    }
    let shard = found.first().copied();
    if shard.is_none() && shards.is_some() {
        bail!(
            "--shards (or MLPORT_SHARDS) gives a shard count, but nothing gives this run's index: use --shard I/N, or \
             run inside a Kubernetes Indexed Job (JOB_COMPLETION_INDEX)"
        );
    }
    let campaign = match (campaign, shard) {
        (Some(c), _) => c.to_string(),
        (None, None) => return Ok(None),
        (None, Some((_, ShardSource::Slurm))) => match env("SLURM_ARRAY_JOB_ID") {
            Some(job) if !job.trim().is_empty() => format!("slurm-{}", job.trim()),
            _ => bail!("a Slurm array task needs --campaign NAME (or MLPORT_CAMPAIGN): SLURM_ARRAY_JOB_ID is not set"),
        },
        (None, Some((s, from))) => {
            let why = format!(
                "shard {s} (from {}) needs --campaign NAME (or MLPORT_CAMPAIGN): the name its shards share, which \
                 lets a rerun of the same shard continue its run instead of starting another",
                from.describe()
            );
            if from == ShardSource::Flag {
                return Err(ShardWithoutCampaign(why).into());
            }
            bail!(why)
        }
    };
    let (shard, source) = shard.unwrap_or((Shard::WHOLE, ShardSource::Whole));
    Ok(Some(Placement { campaign, shard, source }))
}

/// The shard of a Slurm array task, `None` outside an array. Index = (ID − MIN) / STEP among
/// COUNT tasks (`SLURM_ARRAY_TASK_COUNT`, else (MAX − MIN) / STEP + 1); MIN defaults to 0 and
/// STEP to 1.
fn slurm_shard(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Shard>> {
    let Some(id) = env_number(env, "SLURM_ARRAY_TASK_ID")? else { return Ok(None) };
    let min = env_number(env, "SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
    let step = env_number(env, "SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
    let count = match (env_number(env, "SLURM_ARRAY_TASK_COUNT")?, env_number(env, "SLURM_ARRAY_TASK_MAX")?) {
        // A listed array (`--array=1,3,4`) whose ids are not MIN, MIN + STEP, ..., MAX: every
        // task refuses it, rather than some running a shard another id maps to as well.
        (Some(n), Some(max)) if max < min || (max - min) % step != 0 || (max - min) / step + 1 != n => bail!(
            "SLURM_ARRAY_TASK_COUNT={n} tasks are not evenly spaced from SLURM_ARRAY_TASK_MIN={min} to \
             SLURM_ARRAY_TASK_MAX={max} (step {step}): submit the array as a range, e.g. `--array=0-{}`, or give \
             --shard I/N",
            n.saturating_sub(1)
        ),
        (Some(n), _) => n,
        (None, Some(max)) if max >= min => (max - min) / step + 1,
        (None, Some(max)) => bail!("SLURM_ARRAY_TASK_MAX={max} is below SLURM_ARRAY_TASK_MIN={min}"),
        (None, None) => bail!(
            "SLURM_ARRAY_TASK_ID={id} is set but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX: cannot tell \
             how many shards the array has (give --shard I/N)"
        ),
    };
    if id < min || (id - min) % step != 0 || (id - min) / step >= count {
        bail!(
            "SLURM_ARRAY_TASK_ID={id} is not one of the {count} evenly spaced task ids from {min} (step {step}): submit \
             the array as a range, e.g. `--array=0-{}`, or give --shard I/N",
            count.saturating_sub(1)
        );
    }
    Shard::new((id - min) / step, count).map(Some).map_err(|e| anyhow::anyhow!("the Slurm array's task: {e}"))
}

/// The stored run a new campaign run continues: the one of the same campaign, `--machine` (as
/// given, not the host: a requeued task may land on another node) and shard. `None` when the
/// shard has no run yet.
///
/// Errors: the campaign's runs on that machine were split in another number of shards, or
/// planned other cases (another catalogue, selection or seed: [`crate::plan::Plan::digest`]) —
/// mixing them would count some cases twice and others never; or one of them ran with other
/// switches that change results ([`switches`]; `new_info` is the new run's) — mixing them would
/// report two measurements as one. The error names each differing switch with both values.
pub fn existing_shard<'r>(
    runs: &'r [RunSummary],
    new: &RunOrigin,
    new_info: &RunInfo,
) -> Result<Option<&'r RunSummary>> {
    let (Some(campaign), Some(shard)) = (&new.campaign, new.shard) else { return Ok(None) };
    let machine = match &new.machine {
        Some(m) => format!("machine `{m}`"),
        None => "no --machine".to_string(),
    };
    let mine = runs.iter().filter(|r| r.origin.campaign.as_ref() == Some(campaign) && r.origin.machine == new.machine);
    for r in mine.clone() {
        let Some(theirs) = r.origin.shard else { continue };
        if theirs.count != shard.count {
            bail!(
                "campaign `{campaign}` ({machine}) is split in {} shards (run {} is shard {theirs}), not {}: use the \
                 same count for every shard, or another --campaign",
                theirs.count,
                r.id,
                shard.count
            );
        }
        if r.origin.plan_digest != new.plan_digest {
            bail!(
                "campaign `{campaign}` ({machine}) planned other cases (run {}, shard {theirs}): the catalogue, \
                 --framework/--function/--dtype or --seed differ; run with the campaign's options, or use another \
                 --campaign",
                r.id
            );
        }
        let (Some(theirs_switches), Some(new_switches)) = (switches(&r.info), switches(new_info)) else { continue };
        let differ: Vec<(String, String)> = theirs_switches
            .iter()
            .zip(&new_switches)
            .filter(|(a, b)| a.1 != b.1)
            .map(|(a, b)| (format!("{} {}", a.0, a.1), format!("{} {}", b.0, b.1)))
            .collect();
        if !differ.is_empty() {
            let (was, now): (Vec<String>, Vec<String>) = differ.into_iter().unzip();
            let names: Vec<&str> = new_switches.iter().map(|(name, _)| *name).collect();
            bail!(
                "campaign `{campaign}` ({machine}) ran with other switches: run {} (shard {theirs}) ran with {}, this \
                 shard with {}; the shards of a campaign on one machine must agree on {} (they change the results): \
                 run with the campaign's, or use another --campaign or --machine",
                r.id,
                was.join(" and "),
                now.join(" and "),
                names.join(", ")
            );
        }
    }
    Ok(mine.into_iter().find(|r| r.origin.shard == Some(shard)))
}

/// The switches of `mlport run` that change a run's results without changing its plan, as
/// (flag, value as the flag spells it) in a fixed order: `--device`, `--modes`, `--threads`,
/// `--budget-ms`, `--target-spread`, `--timeout`, `--quick`, `--reference`, `--jax-x64`. `None` for a run
/// that did not record them (stored before schema 10, or imported).
pub fn switches(info: &RunInfo) -> Option<Vec<(&'static str, String)>> {
    let s = info.switches.as_ref()?;
    let join = |v: Vec<String>| v.join(",");
    Some(vec![
        (
            "--device",
            s.devices.as_ref().map_or("unset (every device the workers report)".to_string(), |d| {
                join(d.iter().map(ToString::to_string).collect())
            }),
        ),
        ("--modes", join(s.modes.iter().map(ToString::to_string).collect())),
        ("--threads", s.threads.map_or("unset".to_string(), |n| n.to_string())),
        ("--budget-ms", s.budget_ms.to_string()),
        ("--target-spread", s.target_spread.to_string()),
        ("--timeout", s.timeout_s.to_string()),
        ("--quick", if s.quick { "on" } else { "off" }.to_string()),
        ("--reference", info.reference_device.to_string()),
        ("--jax-x64", if info.jax_x64 { "on" } else { "off" }.to_string()),
    ])
}

/// An environment variable that must be a whole number when set (blank counts as unset).
fn env_number(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Option<u32>> {
    match env(name) {
        Some(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| anyhow::anyhow!("{name}=`{v}` is not a whole number (the job system sets it to one)")),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn with(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    fn shard(s: &str) -> Shard {
        s.parse().unwrap()
    }

    fn place(
        flag: Option<&str>,
        shards: Option<u32>,
        campaign: Option<&str>,
        vars: &[(&str, &str)],
    ) -> Result<Option<Placement>> {
        placement(flag.map(shard), shards, campaign, &with(vars))
    }

    fn err(flag: Option<&str>, shards: Option<u32>, campaign: Option<&str>, vars: &[(&str, &str)]) -> String {
        place(flag, shards, campaign, vars).unwrap_err().to_string()
    }

    #[test]
    fn no_campaign_and_no_shard_is_no_placement() {
        assert_eq!(place(None, None, None, &[("SLURM_JOB_ID", "5")]).unwrap(), None);
    }

    #[test]
    fn a_campaign_without_a_shard_is_the_whole_plan() {
        let p = place(None, None, Some("nightly"), &[]).unwrap().unwrap();
        assert_eq!((p.campaign.as_str(), p.shard, p.source), ("nightly", Shard::WHOLE, ShardSource::Whole));
    }

    #[test]
    fn the_flag_gives_the_shard() {
        let p = place(Some("2/4"), None, Some("c"), &[]).unwrap().unwrap();
        assert_eq!((p.shard, p.source), (shard("2/4"), ShardSource::Flag));
        assert!(err(Some("2/4"), Some(3), Some("c"), &[]).contains("--shard 2/4 says 4 shards but --shards"));
        assert!(place(Some("2/4"), Some(4), Some("c"), &[]).is_ok());
    }

    #[test]
    fn a_slurm_array_gives_index_and_count() {
        let by_count = [("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_COUNT", "4"), ("SLURM_ARRAY_JOB_ID", "77")];
        let p = place(None, None, None, &by_count).unwrap().unwrap();
        assert_eq!((p.campaign.as_str(), p.shard, p.source), ("slurm-77", shard("2/4"), ShardSource::Slurm));
        // `--array=1-4`: ids 1..4 are shards 0..3.
        let by_range = [("SLURM_ARRAY_TASK_ID", "4"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_MAX", "4")];
        assert_eq!(place(None, None, Some("c"), &by_range).unwrap().unwrap().shard, shard("3/4"));
        // `--array=0-6:2`: ids 0, 2, 4, 6.
        let stepped = [
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "6"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
        ];
        assert_eq!(place(None, None, Some("c"), &stepped).unwrap().unwrap().shard, shard("2/4"));
        // The flag agreeing with the array is fine; disagreeing is an error naming both.
        assert!(place(Some("2/4"), None, Some("c"), &by_count).is_ok());
        let e = err(Some("0/4"), None, Some("c"), &by_count);
        assert!(e.contains("--shard gives shard 0/4 but the Slurm job array") && e.contains("2/4"), "{e}");
    }

    #[test]
    fn a_slurm_array_that_cannot_be_read_is_an_error() {
        let e = err(None, None, Some("c"), &[("SLURM_ARRAY_TASK_ID", "1")]);
        assert!(e.contains("neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX"), "{e}");
        let e = err(None, None, Some("c"), &[("SLURM_ARRAY_TASK_ID", "x"), ("SLURM_ARRAY_TASK_COUNT", "4")]);
        assert!(e.contains("SLURM_ARRAY_TASK_ID=`x` is not a whole number"), "{e}");
        // `--array=0,3,7`: not evenly spaced.
        let listed = [("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_ARRAY_TASK_COUNT", "3"), ("SLURM_ARRAY_TASK_MAX", "7")];
        assert!(err(None, None, Some("c"), &listed).contains("--array=0-2"));
        // `--array=1,3,4` (COUNT 3, MIN 1, MAX 4): task 3 read as shard 2/3 (as task 4 would be)
        // before the adversarial round; every task now refuses the array.
        for id in ["1", "3", "4"] {
            let listed = [
                ("SLURM_ARRAY_TASK_ID", id),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
                ("SLURM_ARRAY_TASK_MIN", "1"),
                ("SLURM_ARRAY_TASK_MAX", "4"),
            ];
            let e = err(None, None, Some("c"), &listed);
            assert!(e.contains("SLURM_ARRAY_TASK_COUNT=3 tasks are not evenly spaced"), "{e}");
        }
        // A stepped range's COUNT agrees with MIN, MAX and STEP: `--array=1-7:2`.
        let stepped = [
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "7"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
        ];
        assert_eq!(place(None, None, Some("c"), &stepped).unwrap().unwrap().shard, shard("2/4"));
        let e = err(None, None, None, &[("SLURM_ARRAY_TASK_ID", "0"), ("SLURM_ARRAY_TASK_COUNT", "2")]);
        assert!(e.contains("SLURM_ARRAY_JOB_ID is not set"), "{e}");
    }

    #[test]
    fn a_kubernetes_index_needs_a_count() {
        let k8s = [("JOB_COMPLETION_INDEX", "3")];
        let p = place(None, Some(4), Some("c"), &k8s).unwrap().unwrap();
        assert_eq!((p.shard, p.source), (shard("3/4"), ShardSource::Kubernetes));
        assert!(err(None, None, Some("c"), &k8s).contains("give --shards N or MLPORT_SHARDS=N"));
        assert!(err(None, Some(3), Some("c"), &k8s).contains("shard index 3 is not below the count 3"));
        assert!(err(None, Some(4), None, &k8s).contains("needs --campaign NAME (or MLPORT_CAMPAIGN)"));
        // A Slurm array inside the pod that says otherwise.
        let both = [("JOB_COMPLETION_INDEX", "3"), ("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_COUNT", "4")];
        assert!(
            err(None, Some(4), Some("c"), &both).contains("the Slurm job array (SLURM_ARRAY_TASK_ID) gives shard 1/4")
        );
    }

    fn summary(id: i64, machine: Option<&str>, shard: &str, digest: &str) -> RunSummary {
        let mut r = crate::analysis::portability::tests::run_summary();
        r.id = id;
        r.origin = RunOrigin {
            machine: machine.map(str::to_string),
            campaign: Some("c".into()),
            shard: Some(shard.parse().unwrap()),
            plan_digest: Some(digest.into()),
            ..RunOrigin::default()
        };
        r
    }

    #[test]
    fn a_rerun_finds_its_shard_by_campaign_machine_and_index() {
        let runs = [summary(1, None, "0/4", "d"), summary(2, None, "1/4", "d"), summary(3, Some("tpu"), "1/4", "e")];
        let new = |machine: Option<&str>, shard: &str, digest: &str| summary(0, machine, shard, digest).origin;
        assert_eq!(existing_shard(&runs, &new(None, "1/4", "d"), &runs[0].info).unwrap().map(|r| r.id), Some(2));
        assert_eq!(existing_shard(&runs, &new(Some("tpu"), "1/4", "e"), &runs[0].info).unwrap().map(|r| r.id), Some(3));
        assert_eq!(existing_shard(&runs, &new(None, "3/4", "d"), &runs[0].info).unwrap().map(|r| r.id), None);
        assert_eq!(existing_shard(&runs, &new(Some("gpu"), "0/4", "x"), &runs[0].info).unwrap().map(|r| r.id), None);
        let mut other = new(None, "1/4", "d");
        other.campaign = Some("other".into());
        assert!(existing_shard(&runs, &other, &runs[0].info).unwrap().is_none());
        assert!(existing_shard(&runs, &RunOrigin::default(), &runs[0].info).unwrap().is_none());
        let e = existing_shard(&runs, &new(None, "1/2", "d"), &runs[0].info).unwrap_err().to_string();
        assert!(e.contains("campaign `c` (no --machine) is split in 4 shards (run 1 is shard 0/4), not 2"), "{e}");
        let e = existing_shard(&runs, &new(Some("tpu"), "2/4", "f"), &runs[0].info).unwrap_err().to_string();
        assert!(e.contains("campaign `c` (machine `tpu`) planned other cases (run 3, shard 1/4)"), "{e}");
        // Both messages read as one sentence (the adversarial round found 18 spaces in each).
        assert!(e.contains("the catalogue, --framework/--function/--dtype or --seed differ; run with the campaign's options, or use another --campaign"), "{e}");
        let e = existing_shard(&runs, &new(None, "1/2", "d"), &runs[0].info).unwrap_err().to_string();
        assert!(e.contains("not 2: use the same count for every shard, or another --campaign"), "{e}");
    }

    #[test]
    fn a_count_alone_or_a_shard_without_a_campaign_is_an_error() {
        assert!(err(None, Some(4), Some("c"), &[]).contains("nothing gives this run's index"));
        let e = place(Some("1/2"), None, None, &[]).unwrap_err();
        assert!(e.to_string().contains("shard 1/2 (from --shard) needs --campaign NAME"), "{e}");
        assert!(e.is::<ShardWithoutCampaign>(), "a usage error: the command line alone is wrong");
        // From a Kubernetes index it is the environment's doing: an ordinary error.
        let e = place(None, Some(4), None, &[("JOB_COMPLETION_INDEX", "1")]).unwrap_err();
        assert!(!e.is::<ShardWithoutCampaign>(), "{e}");
    }

    fn switched(id: i64, shard: &str, f: impl Fn(&mut RunInfo)) -> RunSummary {
        let mut r = summary(id, Some("box"), shard, "d");
        r.info.switches = Some(crate::model::RunSwitches {
            devices: Some(vec![crate::model::Target::cpu()]),
            modes: vec![crate::model::Mode::Eager],
            threads: None,
            budget_ms: 100.0,
            target_spread: 0.05,
            timeout_s: 60.0,
            quick: false,
            jobs: None,
        });
        f(&mut r.info);
        r
    }

    #[test]
    fn a_shard_with_other_switches_than_its_campaign_is_refused_naming_each() {
        let runs = [switched(1, "0/4", |_| {})];
        let new = |f: &dyn Fn(&mut RunInfo)| switched(0, "1/4", f);
        let check = |r: &RunSummary| existing_shard(&runs, &r.origin, &r.info);
        assert!(check(&new(&|_| {})).unwrap().is_none(), "the same switches");
        let e = check(&new(&|i| i.switches.as_mut().unwrap().budget_ms = 5.0)).unwrap_err().to_string();
        assert!(
            e.contains("campaign `c` (machine `box`) ran with other switches: run 1 (shard 0/4) ran with --budget-ms 100, this shard with --budget-ms 5;"),
            "{e}"
        );
        assert!(e.contains("must agree on --device, --modes, --threads, --budget-ms, --target-spread, --timeout, --quick, --reference, --jax-x64"), "{e}");
        let e = check(&new(&|i| {
            i.jax_x64 = true;
            i.switches.as_mut().unwrap().threads = Some(2);
        }))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("ran with --threads unset and --jax-x64 off, this shard with --threads 2 and --jax-x64 on"),
            "{e}"
        );
        let e = check(&new(&|i| i.switches.as_mut().unwrap().devices = None)).unwrap_err().to_string();
        assert!(e.contains("--device cpu, this shard with --device unset (every device the workers report)"), "{e}");
        let e = check(&new(&|i| i.reference_device = "cuda:0".parse().unwrap())).unwrap_err().to_string();
        assert!(e.contains("--reference cpu, this shard with --reference cuda:0"), "{e}");
        let e = check(&new(&|i| i.switches.as_mut().unwrap().timeout_s = 5.5)).unwrap_err().to_string();
        assert!(e.contains("--timeout 60, this shard with --timeout 5.5"), "{e}");
        // A run that did not record its switches (older, or imported) is not compared.
        let mut old = new(&|i| i.switches.as_mut().unwrap().budget_ms = 5.0);
        old.info.switches = None;
        assert!(check(&old).unwrap().is_none());
    }
}
