//! mlport: measures how portable machine-learning framework functions are across
//! devices and dtypes, after "The Grand Illusion: The Myth of Software Portability and
//! Implications for ML Progress" (Mince et al., NeurIPS 2023, arXiv 2309.07181).
//!
//! Pipeline: [`catalogue`] (or a framework's own test data, [`testdata`]) → [`plan`] → [`runner`] (with [`worker`]s) → [`outcome`] →
//! [`agreement`] (numeric comparison with [`compare`]) → [`store`] → [`analysis`] → [`render`];
//! [`lifecycle`] starts, continues and closes a run around the runner, and [`progress`] is its
//! terminal view; [`import`] brings pytest suites' results (imported, or run live), the paper's
//! raw data and, with [`bundle`], other stores' runs into the same store; [`fleet`] places a
//! campaign's shards; [`scan`], [`audit`] and [`mine`] read a code base's framework calls;
//! [`repro`] writes a result's reproduction script.
//!
//! Around it: [`cli`] (clap only, values parsed into types once), [`commands`] (one file per
//! command, orchestration only; the binary maps their [`commands::ExitStatus`] to the exit
//! code), [`model`] (the shared vocabulary and records), [`workspace`] (the on-disk layout),
//! [`process_group`] (process groups and the Ctrl-C flag), [`pyenv`] (Python environments),
//! [`sysinfo`] (this machine), [`fault`] (fault injection points for tests) and [`stats`]
//! (self-contained statistics). Dependencies run one way (`tests/architecture.rs`;
//! docs/architecture.md walks the layout).

pub mod agreement;
pub mod analysis;
pub mod audit;
pub mod bundle;
pub mod catalogue;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod fault;
pub mod fleet;
pub mod import;
pub mod lifecycle;
pub mod mine;
pub mod model;
pub mod outcome;
pub mod plan;
pub mod process_group;
pub mod progress;
pub mod pyenv;
pub mod render;
pub mod repro;
pub mod runner;
pub mod scan;
pub mod stats;
pub mod store;
pub mod sysinfo;
pub mod testdata;
pub mod vulkan;
pub mod worker;
pub mod workspace;
