//! The trace index (issue 12): where a partition's log holds each message by id and by key,
//! and the subscription events about each message, so that a message's trace is found
//! without reading the log from its start. Derived state: built by a follower of the log off
//! the request path, kept beside each segment, deleted with it, and rebuilt from the log when
//! missing or damaged. This module is the pure core: the hash, the builder of index runs, the
//! byte form of a run and the queries over it; no file, no clock, no task.
//!
//! # Shape
//! A segment's index is a sequence of **runs**, each one self-contained and checksummed: the
//! entries of up to [`RUN_ENTRIES`] messages and events of consecutive stretches of the
//! segment, sorted for binary search. The follower appends a run whenever its builder is full
//! and when the segment is sealed, so the memory a partition's follower holds is bounded by
//! one run, whatever the segment's size. A run records how far into the segment it covers
//! ([`RunHeader::covered_to`]), where the follower resumes after a restart; a torn last run
//! fails its checksum and is dropped ([`split_runs`]), and the follower indexes that stretch
//! again.
//!
//! # Layout
//! - [`hash`]: [`stable_hash`], the 64-bit hash of ids and keys (the same in every build).
//! - [`builder`]: [`RunBuilder`], the entries of the stretch being indexed and the queries
//!   over them before they are sealed.
//! - [`run`]: the byte form of a run ([`RunBuilder::seal`]), [`RunView`] and its queries,
//!   and [`split_runs`] over a whole index file.
//! - [`error`]: [`TraceIndexError`], the module's one error.

pub mod builder;
pub mod error;
pub mod hash;
pub mod run;

#[cfg(test)]
mod tests;

pub use builder::RunBuilder;
pub use error::TraceIndexError;
pub use hash::stable_hash;
pub use run::{RunHeader, RunView, SplitRuns, split_runs};

/// The most entries (messages, keyed messages and events together) a run holds: the bound
/// of a follower's memory per partition (16 bytes an entry, 256 KiB for a full builder) and
/// of the stretch a torn run makes the follower index again. 16,384 entries make a run of
/// about 256 KiB, so a 64 MiB segment of 1 KiB messages with a key and two events each
/// (about 65,000 messages, 260,000 entries) has 16 runs.
pub const RUN_ENTRIES: usize = 16_384;
