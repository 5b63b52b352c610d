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
    emit(&render::catalogue::files_table(&catalogue))?;
    if args.functions {
        emit(&render::catalogue::functions(&catalogue))?;
    }
    if args.references || args.unchecked {
        let plan = crate::plan::plan(&catalogue, &crate::plan::Selection::default(), 0)?;
        let coverage = crate::analysis::coverage::build(&plan);
        if args.references {
            emit(&render::catalogue::references(&coverage))?;
        }
        if args.unchecked {
            emit(&render::catalogue::unchecked(&coverage))?;
        }
    }
    if !args.no_probe {
        let frameworks: Vec<Framework> = catalogue.files.iter().map(|f| f.framework).collect();
        let env = env::python_env(&args.python, &frameworks)?;
        emit(&render::env::python_line(&env))?;
        let (probes, _) = env::probe(&env, &frameworks)?;
        emit(&render::env::probe_table(&probes))?;
        emit(&render::env::vulkan_table(&crate::vulkan::devices()))?;
    }
    Ok(ExitStatus::Ok)
}
