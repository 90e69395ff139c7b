//! Per-key order: of two `ok` produces by one process with one key, the one invoked after the
//! other completed must land in the same partition at a higher offset.
//!
//! A value sent in several attempts (a retry after a timeout or a 5xx) counts as invoked at its
//! first attempt: any attempt may be the one that stored it, and a retry's reply marked
//! `duplicate` names where the first one did.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::event::{Offset, Outcome, Partition, Produce};
use crate::history::History;
use crate::offenders::Offenders;

/// A later write of a key that did not land after an earlier one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrderViolation {
    /// The producing process.
    pub process: u32,
    /// The key.
    pub key: String,
    /// The earlier write (completed before the later was invoked).
    pub earlier: Position,
    /// The later write.
    pub later: Position,
}

/// Where an acknowledged write landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Position {
    /// The value.
    pub value: String,
    /// The partition its reply named.
    pub partition: Partition,
    /// The offset its reply named.
    pub offset: Offset,
}

/// One violation per later write that lands before, at, or beside (in another partition) an
/// earlier write of its process and key. Writes whose reply named no position are not judged.
pub fn check(history: &History) -> Offenders<OrderViolation> {
    let mut found = Offenders::default();
    for ((process, key), writes) in keyed_writes(history) {
        for (earlier, later) in violations(writes) {
            found.push(OrderViolation {
                process,
                key: key.to_owned(),
                earlier: earlier.position(),
                later: later.position(),
            });
        }
    }
    found
}

/// An acknowledged write whose reply named its position.
#[derive(Debug, Clone, Copy)]
struct Write<'h> {
    produce: &'h Produce,
    partition: Partition,
    offset: Offset,
    /// When the value's first attempt was sent.
    invoked_ms: u64,
}

impl<'h> Write<'h> {
    fn of(produce: &'h Produce, invoked_ms: u64) -> Option<Self> {
        Some(Self {
            produce,
            partition: produce.partition?,
            offset: produce.offset?,
            invoked_ms,
        })
    }

    fn position(&self) -> Position {
        Position {
            value: self.produce.value.clone(),
            partition: self.partition,
            offset: self.offset,
        }
    }
}

/// Each process's acknowledged, positioned writes of each key, ordered by process and key.
fn keyed_writes(history: &History) -> BTreeMap<(u32, &str), Vec<Write<'_>>> {
    let mut first_invoked: HashMap<&str, u64> = HashMap::new();
    for produce in &history.produces {
        let first = first_invoked
            .entry(&produce.value)
            .or_insert(produce.invoke_ms);
        *first = (*first).min(produce.invoke_ms);
    }
    let mut writes: BTreeMap<(u32, &str), Vec<Write<'_>>> = BTreeMap::new();
    for produce in history.produces.iter().filter(|p| p.outcome == Outcome::Ok) {
        let invoked_ms = first_invoked
            .get(produce.value.as_str())
            .copied()
            .unwrap_or(produce.invoke_ms);
        if let (Some(key), Some(write)) = (&produce.key, Write::of(produce, invoked_ms)) {
            writes
                .entry((produce.process, key))
                .or_default()
                .push(write);
        }
    }
    writes
}

/// Sweeps the writes in invocation order, keeping, per partition, the highest-offset write that
/// had completed before the current one was invoked.
fn violations(mut writes: Vec<Write<'_>>) -> Vec<(Write<'_>, Write<'_>)> {
    let mut by_completion = writes.clone();
    by_completion.sort_by_key(|write| write.produce.complete_ms);
    writes.sort_by_key(|write| write.invoked_ms);
    let mut completed = by_completion.into_iter().peekable();
    let mut highest: HashMap<Partition, Write<'_>> = HashMap::new();
    let mut found = Vec::new();
    for later in writes {
        let invoked = later.invoked_ms;
        while let Some(earlier) = completed.next_if(|e| e.produce.complete_ms < invoked) {
            let best = highest.entry(earlier.partition).or_insert(earlier);
            if earlier.offset > best.offset {
                *best = earlier;
            }
        }
        if let Some(earlier) = conflicting(&highest, &later) {
            found.push((earlier, later));
        }
    }
    found
}

/// An earlier write in another partition (the lowest such partition), else an earlier write in
/// the same partition at or above the later one's offset.
fn conflicting<'h>(
    highest: &HashMap<Partition, Write<'h>>,
    later: &Write<'_>,
) -> Option<Write<'h>> {
    let elsewhere = highest
        .iter()
        .filter(|(partition, _)| **partition != later.partition)
        .min_by_key(|(partition, _)| **partition)
        .map(|(_, write)| *write);
    let not_after = highest
        .get(&later.partition)
        .copied()
        .filter(|earlier| earlier.offset >= later.offset);
    elsewhere.or(not_after)
}
