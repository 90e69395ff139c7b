//! Unavailability: how long producers could not get a write acknowledged.
//!
//! Windows the harness measured itself (`unavailable` events) are used when the history has any.
//! Otherwise they are derived from the produce operations in invocation order: a window opens
//! when an operation fails or ends unknown while none is open, and closes when the next
//! operation invoked after it is acknowledged; one still open at the end closes at the last
//! completion.

use serde::Serialize;

use crate::event::{Outcome, Produce};
use crate::history::History;

/// Where the windows came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// `unavailable` events the harness wrote.
    Measured,
    /// Derived from produce outcomes.
    Derived,
}

/// The unavailability windows' summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unavailability {
    /// Where the windows came from.
    pub source: WindowSource,
    /// How many windows there were.
    pub windows: u64,
    /// The longest window, in milliseconds (0 without windows).
    pub max_ms: u64,
    /// The median window (nearest rank), in milliseconds (0 without windows).
    pub p50_ms: u64,
}

/// Summarizes the unavailability of `history`.
pub fn check(history: &History) -> Unavailability {
    let (source, mut windows) = if history.unavailable.is_empty() {
        (WindowSource::Derived, derived_windows(&history.produces))
    } else {
        let measured = history.unavailable.iter();
        let lengths = measured.map(|w| w.to_ms.saturating_sub(w.from_ms));
        (WindowSource::Measured, lengths.collect())
    };
    windows.sort_unstable();
    Unavailability {
        source,
        windows: windows.len() as u64,
        max_ms: windows.last().copied().unwrap_or_default(),
        p50_ms: median(&windows),
    }
}

fn median(sorted: &[u64]) -> u64 {
    match sorted.len() {
        0 => 0,
        n => sorted[(n - 1) / 2],
    }
}

/// The lengths of the windows the produce outcomes show, in milliseconds.
fn derived_windows(produces: &[Produce]) -> Vec<u64> {
    let mut by_invocation: Vec<&Produce> = produces.iter().collect();
    by_invocation.sort_by_key(|produce| produce.invoke_ms);
    let mut windows = Vec::new();
    let mut open: Option<u64> = None;
    for produce in by_invocation {
        match (produce.outcome, open) {
            (Outcome::Ok, Some(from)) => {
                windows.push(produce.complete_ms.saturating_sub(from));
                open = None;
            }
            (Outcome::Fail | Outcome::Info, None) => open = Some(produce.invoke_ms),
            _ => {}
        }
    }
    if let Some(from) = open {
        let end = produces.iter().map(|p| p.complete_ms).max().unwrap_or(from);
        windows.push(end.saturating_sub(from));
    }
    windows
}
