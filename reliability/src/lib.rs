//! Wharf's reliability checker, in the Jepsen manner: a fault-injection run writes a history of
//! what its clients did and saw, then what every node's log holds after healing; the checker
//! reads that history offline and says whether anything acknowledged was lost, delivered after its
//! ack, reordered, or held differently by two replicas.
//!
//! # Layout
//! - [`event`]: the history's events, one JSON line each, tagged by `"type"`.
//! - [`writer`]: [`HistoryWriter`], which appends events to a history file.
//! - [`reader`]: reading a JSONL history; every error names its line.
//! - [`history`]: [`History`], the events of one run sorted by kind.
//! - [`checks`]: the checks, pure functions over a history, one concept each.
//! - [`offenders`]: [`Offenders`], a count with the first few cases behind it.
//! - [`findings`]: [`Findings`], every check's result.
//! - [`verdict`]: [`Verdict`] (`valid`, `invalid`, `unknown`) and the rule reaching it.
//! - [`report`]: [`Report`], the report line and the JSON summary.
//! - [`case`]: [`CaseLine`], the report line of a case that is not a queue-checker run.
//! - [`catalogue`]: every case of `RELIABILITY.md`, with the test that exercises it.
//! - [`summary`]: report lines read back, rolled up into the headline and the Markdown report.
//! - [`harness`]: the cluster runner, `wharf` processes with process faults.
//! - [`workload`]: producers, consumers and the drain that record a history.
//!
//! The entry point is [`check`]; `wharf-check` is a thin binary around it.

pub mod case;
pub mod catalogue;
pub mod checks;
pub mod event;
pub mod findings;
pub mod harness;
pub mod history;
mod index;
pub mod offenders;
pub mod reader;
pub mod report;
pub mod summary;
pub mod verdict;
pub mod workload;
pub mod writer;

pub use case::CaseLine;
pub use event::Event;
pub use findings::Findings;
pub use history::History;
pub use offenders::Offenders;
pub use report::Report;
pub use verdict::Verdict;
pub use writer::HistoryWriter;

/// Runs every check over `history` and judges it.
pub fn check(history: &History) -> Report {
    Report::of(history)
}
