//! Total-queue counts (Jepsen's `TotalQueue`): what was attempted, acknowledged, failed, unknown,
//! and what the drains show of it: lost, lost on a node, unexpected, duplicated, recovered.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::checks::lost::{LostValue, lost_produces, lost_value};
use crate::event::{NodeId, Offset, Outcome, Partition};
use crate::history::History;
use crate::index::{Presence, acked_produces, node_logs, value_outcomes};
use crate::offenders::Offenders;

/// The total-queue counts of a history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct QueueCounts {
    /// Producer operations (a retried value counts once per attempt).
    pub attempts: u64,
    /// Values with at least one `ok` produce.
    pub acknowledged: u64,
    /// Values whose every produce was `fail`.
    pub failed: u64,
    /// Values whose best produce outcome was `info`.
    pub unknown: u64,
    /// Acknowledged values absent from every node's drain of their partition.
    pub lost: Offenders<LostValue>,
    /// (node, acknowledged value) pairs where that drained node lacks the value.
    pub per_node_lost: Offenders<NodeLoss>,
    /// Values drained or delivered that were never attempted or whose produce definitely failed.
    pub unexpected: Offenders<Unexpected>,
    /// Values held at two or more offsets of one partition on one node. At-least-once allows
    /// them, so they do not make a run invalid.
    pub duplicated: Offenders<Duplicate>,
    /// `duplicated` over the distinct values the drains found (0 when they found none).
    pub duplicated_rate: f64,
    /// Values whose best outcome was `info` that the drains found.
    pub recovered: Offenders<String>,
}

/// An acknowledged value missing from one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeLoss {
    /// The node that lacks it.
    pub node: NodeId,
    /// The value.
    pub value: String,
    /// The partition its reply named, if any.
    pub partition: Option<Partition>,
}

/// Why a drained or delivered value was not expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnexpectedWhy {
    /// No producer ever sent it.
    NeverAttempted,
    /// Every attempt to produce it was refused before storing.
    Failed,
}

/// A value that should not exist, and the first place it was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unexpected {
    /// The value.
    pub value: String,
    /// Why it should not exist.
    pub why: UnexpectedWhy,
    /// The partition it was seen in.
    pub partition: Partition,
    /// The offset it was seen at.
    pub offset: Offset,
}

/// A value one node holds at several offsets of one partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Duplicate {
    /// The value.
    pub value: String,
    /// The node.
    pub node: NodeId,
    /// The partition.
    pub partition: Partition,
    /// The offsets holding it, ascending.
    pub offsets: Vec<Offset>,
}

/// Counts `history`.
pub fn count(history: &History) -> QueueCounts {
    let outcomes = value_outcomes(history);
    let presence = Presence::of(history);
    let duplicated = duplicates(history);
    let duplicated_rate = rate(duplicated.count, presence.distinct_values());
    QueueCounts {
        attempts: history.produces.len() as u64,
        acknowledged: count_outcome(&outcomes, Outcome::Ok),
        failed: count_outcome(&outcomes, Outcome::Fail),
        unknown: count_outcome(&outcomes, Outcome::Info),
        lost: lost_produces(history, &presence)
            .into_iter()
            .map(lost_value)
            .collect(),
        per_node_lost: per_node_lost(history, &presence),
        unexpected: unexpected(history, &outcomes),
        duplicated,
        duplicated_rate,
        recovered: recovered(history, &outcomes, &presence),
    }
}

fn count_outcome(outcomes: &HashMap<&str, Outcome>, wanted: Outcome) -> u64 {
    outcomes.values().filter(|&&o| o == wanted).count() as u64
}

fn rate(count: u64, total: usize) -> f64 {
    if total == 0 {
        0.0
    } else {
        count as f64 / total as f64
    }
}

fn per_node_lost(history: &History, presence: &Presence<'_>) -> Offenders<NodeLoss> {
    let mut losses = Offenders::default();
    for produce in acked_produces(history) {
        for node in presence.drained_nodes(produce.partition) {
            if !presence.on_node(node, produce.partition, &produce.value) {
                losses.push(NodeLoss {
                    node,
                    value: produce.value.clone(),
                    partition: produce.partition,
                });
            }
        }
    }
    losses
}

fn unexpected(history: &History, outcomes: &HashMap<&str, Outcome>) -> Offenders<Unexpected> {
    let drained = history
        .drains
        .iter()
        .map(|d| (d.value.as_str(), d.partition, d.offset));
    let delivered = history
        .deliveries
        .iter()
        .map(|d| (d.value.as_str(), d.partition, d.offset));
    let mut seen = HashSet::new();
    let mut found = Offenders::default();
    for (value, partition, offset) in drained.chain(delivered) {
        let why = match outcomes.get(value) {
            None => UnexpectedWhy::NeverAttempted,
            Some(Outcome::Fail) => UnexpectedWhy::Failed,
            Some(_) => continue,
        };
        if seen.insert(value) {
            found.push(Unexpected {
                value: value.to_owned(),
                why,
                partition,
                offset,
            });
        }
    }
    found
}

fn duplicates(history: &History) -> Offenders<Duplicate> {
    let mut seen = HashSet::new();
    let mut found = Offenders::default();
    for ((node, partition), log) in node_logs(history) {
        let mut offsets: BTreeMap<&str, Vec<Offset>> = BTreeMap::new();
        for drain in log {
            offsets.entry(&drain.value).or_default().push(drain.offset);
        }
        for (value, mut at) in offsets {
            at.sort_unstable();
            at.dedup();
            if at.len() > 1 && seen.insert(value) {
                found.push(Duplicate {
                    value: value.to_owned(),
                    node,
                    partition,
                    offsets: at,
                });
            }
        }
    }
    found
}

fn recovered(
    history: &History,
    outcomes: &HashMap<&str, Outcome>,
    presence: &Presence<'_>,
) -> Offenders<String> {
    let mut seen = HashSet::new();
    history
        .produces
        .iter()
        .map(|produce| produce.value.as_str())
        .filter(|value| outcomes.get(value) == Some(&Outcome::Info))
        .filter(|value| presence.anywhere(value) && seen.insert(*value))
        .map(str::to_owned)
        .collect()
}
