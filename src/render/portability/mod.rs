//! The portability report of one run (the paper's statuses, [`crate::analysis::portability`])
//! in every format: `reports` picks among a terminal table (`table`), Markdown
//! (`markdown`), versioned JSON (`json`) and CSV ([`csv`]); `words` holds the wording
//! table and Markdown share.

pub mod csv;
mod json;
mod markdown;
mod reports;
mod table;
pub(crate) mod words;

pub use json::{
    BUNDLE_FORMAT as JSON_BUNDLE_FORMAT, FORMAT as JSON_FORMAT, FUNCTIONS_FORMAT as JSON_FUNCTIONS_FORMAT,
    VERSION as JSON_VERSION,
};
pub use reports::{Functions, WithFunctions};
