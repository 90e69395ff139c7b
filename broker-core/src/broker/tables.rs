//! The derived tables of a topic — its delay schedule and its dedup index — brought up to date
//! with its partitions' logs: at open, before the topic serves anything; every
//! [`APPLY_EVERY_MS`] in the background; and at shutdown, so a clean restart replays nothing.
//!
//! A round replays each partition's log from the position both tables reflect (the smaller
//! of the two, should a crash fall between their two batches: replaying a stretch again is
//! harmless, as every change in it is applied again in order) to the log's visible end:
//! scheduled and cancelled events, moved messages (records marked scheduled) and records
//! with client ids. It writes each table's changes with the new position in one sled batch,
//! and memory lets go of what sled now has. Message records are decoded only when they can
//! matter: at open, and while memory holds ids reserved for records with client ids, or
//! messages the mover claimed or moved, that sled does not yet reflect (memory lets go of
//! them only once a round has applied them, so a round that finds none may step over
//! message records; it looks again after its replay, in case some were queued meanwhile).

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::topic_ticks::every_tick;
use super::{Broker, Topic, blocking};
use crate::control::{self, ControlOwner};
use crate::dedup::{DedupIndex, FirstResult, PartitionProgress};
use crate::error::{BrokerError, Result};
use crate::message::Record;
use crate::raft::PartitionGroup;
use crate::schedule::{DelayStore, ScheduleChanges, ScheduleEvent, Scheduled};
use crate::storage::{LogPosition, MessageFrames, PartitionHandle, Replayed};

pub use crate::derived_position::APPLY_EVERY_MS;

/// A topic's derived tables and its logs.
pub(super) struct Tables<'a> {
    /// The schedule.
    pub delays: &'a DelayStore,
    /// The dedup index.
    pub dedup: &'a DedupIndex,
    /// The partition logs.
    pub partitions: &'a [PartitionHandle],
    /// This node's seat in each partition's Raft group (unused on a single node).
    pub groups: &'a [Arc<PartitionGroup>],
    /// Whether the topic remembers client ids (its dedup window is not 0).
    pub remembers_ids: bool,
    /// Whether this is the replay at open: then memory knows nothing of what the log holds
    /// past the tables' positions, and every message record is read.
    pub at_open: bool,
}

/// One partition's changes of a round.
#[derive(Default)]
struct Round {
    schedule: ScheduleChanges,
    ids: Vec<(String, FirstResult)>,
}

impl Tables<'_> {
    /// Applies every partition's log to the tables; memory lets go of what sled then has.
    /// Blocking.
    pub(super) fn apply(&self) -> Result<()> {
        for (partition, log) in (0u32..).zip(self.partitions) {
            self.apply_partition(partition, log)?;
        }
        let progress = |partition: u32| {
            let view = self.groups.get(partition as usize).and_then(|s| s.view());
            PartitionProgress {
                term: view.map(|v| v.term),
                applied_index: view.and_then(|v| v.applied_index),
                visible_end: self
                    .partitions
                    .get(partition as usize)
                    .map(PartitionHandle::end_position)
                    .unwrap_or_default(),
                indexed: None,
            }
        };
        self.dedup.drop_stale(crate::clock::now_ms(), progress);
        Ok(())
    }

    /// The smallest position of the two tables, or the log's start for a table with none.
    fn from(&self, partition: u32) -> Result<(LogPosition, bool)> {
        let positions = (
            self.delays.position(partition)?,
            self.dedup.position(partition)?,
        );
        Ok(match positions {
            (Some(a), Some(b)) => (a.min(b), a == b),
            _ => (LogPosition::default(), false),
        })
    }

    fn apply_partition(&self, partition: u32, log: &PartitionHandle) -> Result<()> {
        let (from, both_at_from) = self.from(partition)?;
        if both_at_from && from == log.end_position() {
            return Ok(());
        }
        let message_may_matter =
            || self.dedup.has_unapplied() || self.delays.has_unapplied_removals();
        // Every replica of a partition derives its ids from the log, not only the node that
        // stored them: whichever leads it next must know them all (`broker::produce`). Only
        // records with a client id or moved out of the schedule matter (`Tables::messages`),
        // so the frames holding neither are walked, not decoded.
        let replicated_ids = self.remembers_ids && log.is_replicated();
        let messages = if self.at_open || replicated_ids || message_may_matter() {
            MessageFrames::Marked
        } else {
            MessageFrames::Skip
        };
        let (mut round, mut end) = self.replay(partition, log, from, messages)?;
        // Stepping over the messages was wrong if one of them may matter after all: the mover
        // may have claimed and moved messages, or a produce reserved ids and queued their
        // records, after the round began, and they may be before `end`. Both stay marked in
        // memory until a round has applied them.
        let missed = message_may_matter();
        if messages == MessageFrames::Skip && missed {
            (round, end) = self.replay(partition, log, from, MessageFrames::Marked)?;
        }
        self.delays.apply(partition, &round.schedule, end)?;
        self.dedup.apply(partition, &round.ids, end)
    }

    fn replay(
        &self,
        partition: u32,
        log: &PartitionHandle,
        from: LogPosition,
        messages: MessageFrames,
    ) -> Result<(Round, LogPosition)> {
        let mut round = Round::default();
        let end = log.replay(from, messages, |at, item| match item {
            Replayed::Control(entry) => self.control(&mut round, partition, at, &entry),
            Replayed::Messages {
                base_offset,
                records,
            } => self.messages(&mut round, partition, base_offset, records),
        })?;
        Ok((round, end))
    }

    fn control(
        &self,
        round: &mut Round,
        partition: u32,
        at: LogPosition,
        entry: &[u8],
    ) -> Result<()> {
        let corrupt = |reason: String| BrokerError::Corrupt {
            path: format!("partition {partition} log").into(),
            position: at.position,
            reason,
        };
        match control::owner(entry) {
            Some(ControlOwner::Schedule) => {}
            Some(ControlOwner::Subscription) => return Ok(()),
            None => return Err(corrupt("a control entry of no known kind".into())),
        }
        let event = ScheduleEvent::decode(entry)
            .map_err(|e| corrupt(format!("a schedule event does not decode: {e}")))?;
        match event {
            ScheduleEvent::Scheduled {
                due_ms,
                seq,
                record,
            } => {
                if self.remembers_ids && record.client_id {
                    let first = FirstResult {
                        produced_ms: record.timestamp_ms,
                        partition,
                        offset: None,
                        deliver_at_ms: Some(due_ms),
                    };
                    round.ids.push((record.id.clone(), first));
                }
                round.schedule.scheduled(Scheduled {
                    due_ms,
                    seq,
                    partition,
                    record,
                });
            }
            ScheduleEvent::Cancelled { due_ms, seq, id } => {
                round.schedule.cancelled((due_ms, seq), &id);
            }
        }
        Ok(())
    }

    fn messages(
        &self,
        round: &mut Round,
        partition: u32,
        base_offset: u64,
        records: Vec<Record>,
    ) -> Result<()> {
        for (offset, record) in (base_offset..).zip(records) {
            if record.scheduled {
                round
                    .schedule
                    .moved(&record.id, |id| self.delays.lookup_id(id))?;
            } else if record.client_id && self.remembers_ids {
                let first = FirstResult {
                    produced_ms: record.timestamp_ms,
                    partition,
                    offset: Some(offset),
                    deliver_at_ms: None,
                };
                round.ids.push((record.id, first));
            }
        }
        Ok(())
    }
}

impl Topic {
    /// The topic's derived tables over its logs.
    pub(super) fn tables(&self) -> Tables<'_> {
        Tables {
            delays: &self.delays,
            dedup: &self.dedup,
            partitions: &self.partitions,
            groups: &self.groups,
            remembers_ids: self.config().dedup_window_ms > 0,
            at_open: false,
        }
    }
}

impl Broker {
    /// Applies every topic's logs to its derived tables now (at shutdown).
    pub(super) async fn apply_all_tables(&self) -> Result<()> {
        let topics: Vec<Arc<Topic>> = crate::sync::read(&self.topics).values().cloned().collect();
        blocking(move || topics.iter().try_for_each(|t| t.tables().apply())).await
    }
}

/// Applies one topic's logs to its tables every [`APPLY_EVERY_MS`] until the topic is deleted
/// or the broker shuts down.
pub(super) async fn apply_loop(broker: Weak<Broker>, topic: Arc<Topic>) {
    let apply = |applying: &Topic| applying.tables().apply();
    every_tick(broker, topic, APPLY_EVERY_MS, apply, |topic, applied| {
        if let Err(error) = applied {
            tracing::error!(%error, "applying the logs to the delay schedule and dedup index failed");
        }
        topic.tables_applied.notify_waiters();
    })
    .await;
}

/// Longest a produce or cancel waits for the applier to make room in memory before it is
/// refused with `Overloaded`: many apply rounds, so a burst of delayed messages or ids
/// faster than sled takes them is slowed to sled's pace instead of refused (at 60,000
/// delayed messages a second, one producer in six was refused without waiting), and no
/// longer than a full writer queue makes a produce wait
/// ([`crate::limits::WRITER_ENQUEUE_TIMEOUT_MS`]).
pub const ROOM_WAIT_MS: u64 = crate::limits::WRITER_ENQUEUE_TIMEOUT_MS;

/// Waits until `check` finds room, looking again after each apply round of `topic`, for at
/// most [`ROOM_WAIT_MS`]; then `check`'s error.
pub(super) async fn wait_for_room(topic: &Topic, check: impl Fn() -> Result<()>) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(ROOM_WAIT_MS);
    loop {
        let applied = topic.tables_applied.notified();
        tokio::pin!(applied);
        applied.as_mut().enable();
        match check() {
            Ok(()) => return Ok(()),
            Err(full) if tokio::time::Instant::now() >= deadline => return Err(full),
            Err(_) => {
                let _timed_out = tokio::time::timeout_at(deadline, applied).await;
            }
        }
    }
}
