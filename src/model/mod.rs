//! The shared vocabulary and records of mlport: frameworks, targets and dtypes, outcomes and
//! failure reasons, function statuses (the names of the paper, "The Grand Illusion", Mince et
//! al., arXiv 2309.07181, and of docs/architecture.md), and the records every stage passes on — runs,
//! planned functions and cases with their typed specs, results, references and comparisons. Every durable format
//! stores the `as_str` spellings of its enums. Which outcome a case gets is decided in
//! [`crate::outcome`]; this module only names it.

mod case;
mod framework;
mod outcome;
mod results;
mod run;
mod spec;
mod suite;
mod target;

pub use case::{CaseResult, CaseRow, FunctionRow, SteadyStop, WorkloadMeasures};
// The dtype vocabulary lives below `model`, in `compare`, whose `.npy` reader and comparisons
// speak it too (`compare` does not depend on `model`).
pub use crate::compare::dtype::{Dtype, DtypeName, name_or_empty, or_empty as dtype_or_empty};
pub use framework::Framework;
pub use outcome::{FunctionStatus, Outcome, Reason};
pub use results::{Against, ComparisonRow, ComparisonVerdict, ReferenceRow, ResultRow};
pub use run::{
    DeviceInfo, DeviceStack, FrameworkInfo, RunData, RunInfo, RunOrigin, RunRecord, RunSource, RunState, RunSummary,
    RunSwitches, Shard, device_stacks,
};
pub use spec::{CaseSpec, Compare, DtypeTolerance, ImportedSpec, OutDtype, RutRole, Spec, WorkloadSpec};
pub use suite::{DISPATCH_KEYS, Suite, SuiteSample, device_type, dispatch_key, entry_name};
pub use target::{Mode, Target};
