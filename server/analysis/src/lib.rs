//! The racelens analysis: a salsa database of C files, per-function
//! summaries, the thread walk (locksets, active threads, points-to) and the
//! per-location race check, following RacerF.
//!
//! This crate does no IO and knows no LSP types. Layers: [`db`] holds inputs
//! and per-function queries; [`walk`] is the whole-program thread walk;
//! [`races`] checks one location at a time; [`report`] turns results into
//! absolute positions; [`host`] is the API for the CLI and the server.
//! [`visit`] (statement visitors) is a leaf that every layer may use, so
//! that no lower layer has to reach up into [`walk`] for it.

pub mod baseline;
pub mod config;
pub mod db;
pub mod explain;
pub mod facts;
pub mod fixes;
pub mod host;
pub mod hover;
mod locate;
mod lower_cache;
pub mod model;
pub mod prefetch;
pub mod programs;
pub mod races;
pub mod report;
pub mod snapshot;
pub mod suppress;
mod typed_names;
pub mod units;
pub mod visit;
pub mod walk;

pub use config::{Config, ConfigError};
pub use explain::{Explanation, Step, Verdict};
pub use fixes::{FileEdit, Fix};
pub use host::{AnalysisHost, CheckLimits, CheckedRaces, Incomplete};
pub use races::Confidence;
pub use report::{Conflict, Creation, RaceReport, SiteRef};
pub use salsa::Cancelled;
pub use snapshot::Analysis;
