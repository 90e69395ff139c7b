//! Opening a subscription: each partition's lease table is its last checkpoint in sled,
//! clamped to the log that survived (on a single node), then brought up to date by replaying
//! the partition log's control entries from the checkpoint's position (its own kinds only:
//! see [`crate::control`]). The log is the truth; the checkpoint only shortens the replay.
//!
//! In a cluster a partition with no checkpoint replays its whole log: its start is the first
//! `sought` event its leader wrote (see `Subscription::make_live`), the same on every replica.

use std::collections::BTreeMap;

use super::SubscriptionConfig;
use super::events::SubscriptionEvent;
use super::lease_table::LeaseTable;
use super::store::SubscriptionStore;
use crate::control::{self, ControlOwner};
use crate::error::{BrokerError, Result};
use crate::storage::{LogPosition, MessageFrames, PartitionHandle, Replayed};

/// What opening one partition of a subscription found.
pub(super) struct Restored {
    /// The table, up to date with the log.
    pub table: LeaseTable,
    /// Error texts of nacks replayed, for dead letters: `(offset, text)`.
    pub errors: Vec<(u64, String)>,
    /// Redrive positions replayed: dead-letter partition → next offset.
    pub redrive: BTreeMap<u32, u64>,
    /// Where the replay ended: the table reflects every event before it.
    pub position: LogPosition,
    /// Whether the table has its start: from a checkpoint, or a `sought` event replayed.
    pub started: bool,
}

/// Opens one partition's table: from its checkpoint (or at `start`, for a partition that has
/// none), clamped to the log's end on a single node (see [`clamp_to_surviving_log`]) and
/// replayed from the checkpoint's position. A partition with no checkpoint replays nothing on
/// a single node (the subscription is new), and its whole log in a cluster (`replicated`).
/// Blocking.
pub(super) fn restore_partition(
    config: &SubscriptionConfig,
    store: &SubscriptionStore,
    partition: u32,
    start: u64,
    log: &PartitionHandle,
    replicated: bool,
) -> Result<Restored> {
    restore_partition_until(
        config,
        store,
        partition,
        start,
        log,
        replicated,
        LogPosition::MAX,
    )
}

/// [`restore_partition`] that replays no further than `until` (a frame boundary). Blocking.
pub(super) fn restore_partition_until(
    config: &SubscriptionConfig,
    store: &SubscriptionStore,
    partition: u32,
    start: u64,
    log: &PartitionHandle,
    replicated: bool,
    until: LogPosition,
) -> Result<Restored> {
    let policy = config.table_policy();
    let end_position = log.end_position().min(until);
    // The position before the table: a checkpoint written between the two reads leaves a
    // table newer than the position, and replaying a stretch again changes nothing.
    let position = store.position(partition)?;
    let (mut table, from, started) = match store.load(partition, policy)? {
        Some(table) => (table, position.unwrap_or_default(), true),
        None => {
            let mut table = LeaseTable::starting_at(start, policy);
            table.mark_cursor_dirty();
            let from = if replicated {
                LogPosition::default()
            } else {
                end_position
            };
            (table, from, !replicated)
        }
    };
    if !replicated {
        clamp_to_surviving_log(config, partition, &mut table, log.end_offset());
    }
    let mut restored = Restored {
        table,
        errors: Vec::new(),
        redrive: BTreeMap::new(),
        position: from.min(end_position),
        started,
    };
    replay_events_until(config, partition, log, &mut restored, until)?;
    Ok(restored)
}

/// On a single node, a checkpoint can be ahead of the log after a power loss under `--fsync
/// never` or an interval: what the log lost never happened, and new messages will reuse its
/// offsets, so the table forgets them (their counts stay).
///
/// Never in a cluster: a checkpoint there holds committed events only (a leader's live table
/// is never checkpointed), so the offsets it knows past this replica's end are committed ones
/// its log has yet to receive, with the same messages. That is the usual state after a
/// snapshot install: the carried table is its leader's checkpoint, taken at the leader's
/// committed end, past the snapshot's last entry. Clamping it would forget the settles of
/// those offsets but not their counts, and the replay of the events the new log then receives
/// would count them again.
fn clamp_to_surviving_log(
    config: &SubscriptionConfig,
    partition: u32,
    table: &mut LeaseTable,
    end: u64,
) {
    if table.next_offset() > end {
        tracing::warn!(
            subscription = %config.name,
            partition,
            cursor = table.next_offset(),
            end,
            "a subscription's checkpoint is ahead of its log; clamping it to the log's end"
        );
    }
    table.clamp_to(end);
}

/// Replays the partition log's events of this subscription from `restored.position` to the
/// log's visible end (in a cluster: what its Raft group committed), and moves the position
/// there. Blocking.
pub(super) fn replay_events(
    config: &SubscriptionConfig,
    partition: u32,
    log: &PartitionHandle,
    restored: &mut Restored,
) -> Result<()> {
    replay_events_until(config, partition, log, restored, LogPosition::MAX)
}

/// [`replay_events`] that stops at `until` when it comes before the visible end. Blocking.
fn replay_events_until(
    config: &SubscriptionConfig,
    partition: u32,
    log: &PartitionHandle,
    restored: &mut Restored,
    until: LogPosition,
) -> Result<()> {
    let end = log.replay_until(restored.position, until, MessageFrames::Skip, |at, item| {
        let Replayed::Control(entry) = item else {
            return Ok(());
        };
        let corrupt = |reason: String| BrokerError::Corrupt {
            path: format!("partition {partition} log").into(),
            position: at.position,
            reason,
        };
        match control::owner(&entry) {
            Some(ControlOwner::Subscription) => {}
            Some(ControlOwner::Schedule) => return Ok(()),
            None => return Err(corrupt("a control entry of no known kind".into())),
        }
        let event = SubscriptionEvent::decode(&entry)
            .map_err(|e| corrupt(format!("a control entry does not decode: {e}")))?;
        if event.subscription() == config.uid {
            apply(restored, event);
        }
        Ok(())
    })?;
    restored.position = end;
    Ok(())
}

/// Applies one replayed event.
fn apply(restored: &mut Restored, event: SubscriptionEvent) {
    let table = &mut restored.table;
    match event {
        SubscriptionEvent::Acked { offset, .. } => table.replay_ack(offset),
        SubscriptionEvent::Nacked {
            offset,
            attempts,
            due_ms,
            key_hash,
            error,
            ..
        } => {
            table.replay_nack(offset, attempts, due_ms, key_hash);
            if let Some(error) = error {
                restored.errors.push((offset, error));
            }
        }
        SubscriptionEvent::Redelivered {
            offset,
            attempts,
            key_hash,
            ..
        } => table.replay_attempt(offset, attempts, key_hash),
        // A first delivery changes nothing, as before it was recorded: like its lease, it is
        // forgotten by a restart (the message is delivered again as attempt 1).
        SubscriptionEvent::Delivered {
            attempts: 0..=1, ..
        } => {}
        SubscriptionEvent::Delivered {
            offset,
            attempts,
            key_hash,
            ..
        } => table.replay_attempt(offset, attempts, key_hash),
        SubscriptionEvent::DeadLettered { offset, .. } => table.replay_dead_lettered(offset),
        SubscriptionEvent::Sought { offset, .. } => {
            table.reset(offset);
            restored.started = true;
        }
        SubscriptionEvent::Leased {
            offset,
            attempts,
            lease,
            deadline_ms,
            key_hash,
            ..
        } => table.replay_lease(offset, attempts, lease, deadline_ms, key_hash),
        SubscriptionEvent::Redriven {
            dead_letter_partition,
            next_offset,
            ..
        } => {
            let cursor = restored.redrive.entry(dead_letter_partition).or_default();
            *cursor = (*cursor).max(next_offset);
        }
    }
}

/// The furthest redrive cursor of dead-letter partition `dead_letter_partition` that the
/// subscription's `redriven` events in `log` record (`None` without one): in a cluster the
/// cursor is kept in the dead-letter partition's own log. Blocking: reads every control entry.
pub(super) fn redrive_cursor_in(
    config: &SubscriptionConfig,
    dead_letter_partition: u32,
    log: &PartitionHandle,
) -> Result<Option<u64>> {
    let mut furthest = None;
    log.replay_until(
        LogPosition::default(),
        LogPosition::MAX,
        MessageFrames::Skip,
        |_, item| {
            let Replayed::Control(entry) = item else {
                return Ok(());
            };
            if control::owner(&entry) != Some(ControlOwner::Subscription) {
                return Ok(());
            }
            // Another topic's subscription events (the dead-letter topic's own subscriptions)
            // are theirs to judge; only this subscription's cursor matters here.
            let Ok(SubscriptionEvent::Redriven {
                subscription,
                dead_letter_partition: partition,
                next_offset,
            }) = SubscriptionEvent::decode(&entry)
            else {
                return Ok(());
            };
            if subscription == config.uid && partition == dead_letter_partition {
                furthest = furthest.max(Some(next_offset));
            }
            Ok(())
        },
    )?;
    Ok(furthest)
}
