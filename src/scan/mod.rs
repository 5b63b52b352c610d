//! `mlport scan`: which framework functions a code base calls. Python files and the code
//! cells of notebooks are parsed with Ruff's Python parser; imports and aliases are resolved;
//! calls are counted by fully qualified, canonical name with their files and lines.

pub mod calls;
pub mod imports;
pub mod notebook;
pub mod output;
pub mod source;
pub mod walk;

pub use imports::{canonical, framework_of};
pub use output::{FunctionUse, ScanReport, Site, Unparsable};
pub use walk::{ScanOptions, check_threads, measured_methods, scan};
