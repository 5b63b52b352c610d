//! `mlport list`: the catalogue (built-in or `--catalogue`), optionally every function and
//! what will judge the planned cases (`--references`, `--unchecked`), and unless
//! `--no-probe` the frameworks and devices the interpreter offers.

use anyhow::Result;

use super::output::emit;
use super::{ExitStatus, env};
use crate::cli::ListArgs;
use crate::lifecycle::start::load_catalogue;
use crate::model::Framework;
use crate::render;

/// `mlport list`.
pub fn list(args: ListArgs) -> Result<ExitStatus> {
    let catalogue = load_catalogue(args.catalogue.as_deref())?;
    let mut frameworks: Vec<Framework> = catalogue.files.iter().map(|f| f.framework).collect();
    frameworks.sort();
    frameworks.dedup();
    if !args.frameworks.is_empty() {
        if let Some(absent) = args.frameworks.iter().find(|f| !frameworks.contains(f)) {
            anyhow::bail!(
                "--framework {absent}: the catalogue has no {absent} file (it has {})",
                frameworks.iter().map(|f| f.to_string()).collect::<Vec<_>>().join(", ")
            );
        }
        frameworks = args.frameworks.clone();
    }
    emit(&render::catalogue::files_table(&catalogue))?;
    if args.functions {
        emit(&render::catalogue::functions(&catalogue))?;
    }
    if args.references || args.unchecked {
        // Every framework named (by default all of the catalogue's, add-ons included: listing
        // what would judge their cases installs nothing).
        let selection = crate::plan::Selection { frameworks: frameworks.clone(), ..Default::default() };
        let plan = crate::plan::plan(&catalogue, &selection, 0)?;
        let coverage = crate::analysis::coverage::build(&plan);
        if args.references {
            emit(&render::catalogue::references(&coverage))?;
        }
        if args.unchecked {
            emit(&render::catalogue::unchecked(&coverage))?;
        }
    }
    if !args.no_probe {
        let env = env::python_env(&args.python, &frameworks)?;
        emit(&render::env::python_line(&env))?;
        let (probes, _) = env::probe(&env, &frameworks)?;
        emit(&render::env::probe_table(&probes))?;
        emit(&render::env::vulkan_table(&crate::vulkan::devices()))?;
    }
    Ok(ExitStatus::Ok)
}
