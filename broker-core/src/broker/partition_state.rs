//! Replacing what a topic derives from one partition's log (its subscription tables, its
//! share of the delay schedule, the dedup index's ids of the partition) when the log itself
//! is replaced: a snapshot installed on a replica too far behind (`cluster_retention`), or
//! this node's replica dropped (`cluster_release`). Each starts again at the log's start,
//! from what the snapshot carries or from nothing: positions kept from the old log would
//! name frames of a log that is gone, and its events replayed into the old tables would be
//! counted twice.

use std::sync::Arc;

use super::Topic;
use super::carried::CarriedTables;
use crate::dedup::FirstResult;
use crate::error::Result;
use crate::schedule::ScheduleChanges;
use crate::storage::{LogPosition, PartitionHandle};
use crate::subscription::Subscription;
use crate::sync::read;

/// Why a partition's derived state is replaced, and so how it goes on.
#[derive(Clone, Copy)]
pub(super) enum Replaced<'a> {
    /// A snapshot replaced the partition's log, now `log`: the subscription tables replay
    /// what the new log holds after the snapshot.
    BySnapshot(&'a PartitionHandle),
    /// This node drops its replica: the log is about to be emptied, its next message offset
    /// `next_offset`. Nothing is replayed, and the tables start without a start.
    Dropped {
        /// Where the emptied log starts.
        next_offset: u64,
    },
}

/// Replaces what `topic` derives from partition `partition`'s log by `carried`, each at the
/// log's start: the delay schedule's share and the dedup ids of the partition become the
/// carried ones (a version 2 snapshot carries neither: they then keep theirs and replay the
/// new log), and each open subscription's table becomes its carried table or a fresh one.
/// Returns the subscriptions open here. Blocking (sled).
pub(super) fn replace_partition_state(
    topic: &Topic,
    partition: usize,
    carried: &CarriedTables,
    replaced: Replaced<'_>,
) -> Result<Vec<Arc<Subscription>>> {
    let number = partition_number(partition);
    let start = LogPosition::default();
    match &carried.schedule {
        Some(schedule) => {
            let image: Vec<_> = schedule
                .iter()
                .map(|d| (d.due_ms, d.seq, d.entry.clone()))
                .collect();
            topic.delays.replace_partition(number, &image, start)?;
        }
        None => topic
            .delays
            .apply(number, &ScheduleChanges::default(), start)?,
    }
    let firsts: Vec<(String, FirstResult)> = carried
        .ids
        .iter()
        .flatten()
        .map(|c| {
            let first = FirstResult {
                produced_ms: c.produced_ms,
                partition: number,
                offset: c.offset,
                deliver_at_ms: c.deliver_at_ms,
            };
            (c.id.clone(), first)
        })
        .collect();
    match &carried.ids {
        Some(_) => topic.dedup.replace_partition(number, &firsts, start)?,
        None => topic.dedup.apply(number, &firsts, start)?,
    }
    let subscriptions: Vec<_> = read(&topic.subscriptions).values().cloned().collect();
    for sub in &subscriptions {
        let image = carried
            .tables
            .iter()
            .find(|t| t.subscription == sub.config.uid)
            .map(|t| &t.table);
        match replaced {
            Replaced::BySnapshot(log) => sub.install_snapshot_table(partition, image, log)?,
            Replaced::Dropped { next_offset } => sub.drop_table(partition, next_offset)?,
        }
    }
    Ok(subscriptions)
}

/// A partition's index as the derived tables number it.
pub(super) fn partition_number(partition: usize) -> u32 {
    u32::try_from(partition).unwrap_or(u32::MAX)
}
