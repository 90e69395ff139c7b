//! Delayed messages: scheduling, cancelling, and the task per topic that moves due messages
//! from the on-disk schedule into their partitions, never early and without loss or
//! duplication across crashes (see [`crate::schedule`]).
//!
//! A message is moved up to [`PRESTAGE_LEAD_MS`] before it is due, stamped with its due time
//! and marked [`Record::scheduled`]; subscriptions and offset reads hold it back until then
//! (see [`crate::subscription::LeaseTable::grant`]). So the schedule read, the append and its
//! fsync happen ahead of time, and at the due time only a timer in the waiting receive has to
//! fire: under load, those steps stalled for 5 to 15 ms and made the delivery that late.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Broker, Topic, blocking};
use crate::clock::now_ms;
use crate::error::{BrokerError, Result};
use crate::limits::{MAX_BATCH_MESSAGES, MAX_READ_BYTES, MAX_READ_RECORDS};
use crate::message::Record;
use crate::schedule::{DelayStore, Scheduled};
use crate::storage::PartitionHandle;

/// Most records a restart reads per partition from the delay checkpoint: about a second of
/// appends at a high produce rate, as the mover moves checkpoints every second.
const MAX_RECOVERY_SCAN: usize = 1_000_000;
/// How often an idle mover moves the checkpoints, bounding the restart's scan.
const CHECKPOINT_EVERY_MS: u64 = 1_000;
/// Pause after a failed move before trying again, so a full disk does not spin the task.
const MOVE_RETRY_MS: u64 = 500;
/// How long before its due time a delayed message is appended to its partition: longer than
/// the mover's stalls under load (schedule reads and appends took up to ~15 ms, measured),
/// short enough that the window where a cancel is too late stays small.
pub const PRESTAGE_LEAD_MS: u64 = 50;

impl Broker {
    /// Puts messages on a topic's schedule and wakes its delay task if it would otherwise move
    /// one too late. The sled inserts run here, as the lease and cursor writes do: they go to
    /// sled's memory and its own threads write them out. On the blocking pool they spread
    /// sled's allocations over more threads and malloc arenas (+11 MiB of RSS for a million
    /// scheduled messages) and were no faster.
    pub(super) fn schedule(&self, topic: &Topic, messages: &[Scheduled]) -> Result<()> {
        topic.delays.schedule(messages)?;
        topic
            .scheduled
            .fetch_add(messages.len() as u64, Ordering::SeqCst);
        let soonest = messages.iter().map(|m| m.due_ms).min().unwrap_or(u64::MAX);
        if soonest.saturating_sub(PRESTAGE_LEAD_MS) < topic.delay_wake_at.load(Ordering::SeqCst) {
            topic.delay_wake.notify_one();
        }
        Ok(())
    }

    /// Cancels a delayed message that is not yet due. `MessageNotFound` once it was delivered,
    /// or if no such message was scheduled.
    pub async fn cancel_delayed(&self, topic: &str, id: &str) -> Result<()> {
        self.check_running()?;
        if !super::produce::valid_id(id) {
            return Err(BrokerError::invalid(
                "id",
                format!(
                    "must be 1 to {} printable ASCII characters without spaces or '/'",
                    crate::limits::MAX_ID_BYTES
                ),
            ));
        }
        let open = self.topic(topic)?;
        if !open.delays.cancel(id)? {
            return Err(BrokerError::MessageNotFound {
                topic: topic.to_owned(),
                id: id.to_owned(),
            });
        }
        unscheduled(&open, 1);
        self.persist().await
    }

    /// Moves every message due within [`PRESTAGE_LEAD_MS`] into its partition, in due order,
    /// a batch per partition, each stamped with its due time (or now, if that has passed).
    /// The messages are claimed until moved, so a cancel cannot take one of them meanwhile.
    /// Nothing here waits on a metadata flush: see [`crate::schedule`] for why a crash
    /// neither loses nor duplicates a message anyway.
    async fn move_due(&self, topic: &Topic) -> Result<()> {
        let delays = topic.delays.clone();
        let horizon = now_ms().saturating_add(PRESTAGE_LEAD_MS);
        let (due, _claim) = blocking(move || {
            let claimed = delays.claim_due(horizon, MAX_BATCH_MESSAGES)?;
            fail::fail_point!("delays::claimed");
            Ok(claimed)
        })
        .await?;
        let mut by_partition: BTreeMap<u32, Vec<Scheduled>> = BTreeMap::new();
        for message in due {
            by_partition
                .entry(message.partition)
                .or_default()
                .push(message);
        }
        for (partition, group) in by_partition {
            let Some(log) = topic.partitions.get(partition as usize) else {
                continue;
            };
            let end_before = log.end_offset();
            let now = now_ms();
            let records: Vec<Record> = group
                .iter()
                .map(|m| Record {
                    timestamp_ms: m.due_ms.max(now),
                    scheduled: true,
                    ..m.record.clone()
                })
                .collect();
            log.append(records).await?;
            topic.delays.finish_move(&group, partition, end_before)?;
            unscheduled(topic, group.len() as u64);
        }
        Ok(())
    }
}

/// Counts `count` messages off the topic's schedule. Saturating: a stat that wrapped to
/// `u64::MAX` would be worse than one that is briefly low.
fn unscheduled(topic: &Topic, count: u64) {
    let _always_some = topic
        .scheduled
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            Some(n.saturating_sub(count))
        });
}

/// Moves a topic's checkpoints to the end of its partitions: called by the mover between
/// moves (at most once a second), so a restart's scan stays short. Writes nothing when the
/// ends are those it wrote last (`written`), so idle topics cost no metadata writes.
fn checkpoint(topic: &Topic, written: &mut Vec<(u32, u64)>) -> Result<()> {
    let ends: Vec<(u32, u64)> = (0u32..)
        .zip(&topic.partitions)
        .map(|(p, log)| (p, log.end_offset()))
        .collect();
    if ends != *written {
        topic.delays.set_checkpoints(&ends)?;
        *written = ends;
    }
    Ok(())
}

/// Drops from the schedule the messages a crash left both appended and scheduled, before the
/// topic serves anything: it reads each partition from its checkpoint to its end. Blocking.
pub(super) fn recover_appended(delays: &DelayStore, partitions: &[PartitionHandle]) -> Result<()> {
    if delays.is_empty()? {
        return Ok(());
    }
    for (partition, log) in (0u32..).zip(partitions) {
        let mut offset = delays.checkpoint(partition)?.max(log.start_offset());
        let mut appended = Vec::new();
        let mut scanned = 0;
        while scanned < MAX_RECOVERY_SCAN {
            let batch = log.read(offset, MAX_READ_RECORDS, MAX_READ_BYTES)?;
            let Some(last) = batch.last() else { break };
            offset = last.offset + 1;
            scanned += batch.len();
            appended.extend(batch.into_iter().map(|r| r.record.id));
        }
        if scanned >= MAX_RECOVERY_SCAN {
            tracing::warn!(
                partition,
                scanned,
                "the delayed-message recovery scan stopped at its bound"
            );
        }
        let removed = delays.remove_appended(&appended)?;
        if removed > 0 {
            tracing::info!(
                partition,
                removed,
                "dropped delayed messages a crash left both appended and scheduled"
            );
        }
    }
    let ends: Vec<(u32, u64)> = (0u32..)
        .zip(partitions)
        .map(|(p, log)| (p, log.end_offset()))
        .collect();
    delays.set_checkpoints(&ends)
}

/// Moves due messages of one topic until the topic is deleted or the broker shuts down.
pub(super) async fn delay_loop(broker: Weak<Broker>, topic: Arc<Topic>) {
    let checkpoint_every = Duration::from_millis(CHECKPOINT_EVERY_MS);
    let mut last_checkpoint: Option<tokio::time::Instant> = None;
    let mut checkpointed = Vec::new();
    loop {
        let wake = topic.delay_wake.notified();
        tokio::pin!(wake);
        wake.as_mut().enable();
        let Some(live) = broker.upgrade() else { return };
        if live.shutting_down.load(Ordering::SeqCst) || topic.deleted.load(Ordering::SeqCst) {
            return;
        }
        // Between moves none is in progress, so the checkpoints may move; once a second is
        // enough to bound the restart's scan, busy or idle.
        if last_checkpoint.is_none_or(|at| at.elapsed() >= checkpoint_every) {
            if let Err(error) = checkpoint(&topic, &mut checkpointed) {
                tracing::error!(%error, "moving the delay checkpoints failed");
            }
            last_checkpoint = Some(tokio::time::Instant::now());
        }
        // Awake until it sleeps: whatever is scheduled meanwhile notifies, and the enabled
        // `wake` above keeps that notification for the select below.
        topic.delay_wake_at.store(u64::MAX, Ordering::SeqCst);
        let delays = topic.delays.clone();
        let next = blocking(move || delays.next_due()).await;
        let now = now_ms();
        let pause = match next {
            Ok(Some(due)) if due <= now.saturating_add(PRESTAGE_LEAD_MS) => {
                match live.move_due(&topic).await {
                    Ok(()) => continue,
                    Err(error) => {
                        tracing::error!(%error, "moving due delayed messages failed");
                        MOVE_RETRY_MS
                    }
                }
            }
            Ok(next) => next.map_or(CHECKPOINT_EVERY_MS, |due| {
                (due - PRESTAGE_LEAD_MS - now).min(CHECKPOINT_EVERY_MS)
            }),
            Err(error) => {
                tracing::error!(%error, "reading the delay schedule failed");
                MOVE_RETRY_MS
            }
        };
        drop(live);
        topic
            .delay_wake_at
            .store(now.saturating_add(pause), Ordering::SeqCst);
        tokio::select! {
            () = &mut wake => {}
            () = tokio::time::sleep(Duration::from_millis(pause)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;

    use super::*;
    use crate::config::{FsyncPolicy, LogConfig};

    fn scheduled(id: &str, due_ms: u64, seq: u64) -> Scheduled {
        Scheduled {
            due_ms,
            seq,
            partition: 0,
            record: Record {
                id: id.into(),
                timestamp_ms: 1,
                key: None,
                value: Bytes::from_static(b"v"),
                binary: false,
                scheduled: false,
                headers: Vec::new(),
                tags: Vec::new(),
            },
        }
    }

    /// A partition log in a temporary folder, with the sled database its index lives in.
    fn open_log() -> (tempfile::TempDir, sled::Db, PartitionHandle) {
        let dir = tempfile::tempdir().expect("dir");
        let db = sled::Config::new().temporary(true).open().expect("sled");
        let config = LogConfig {
            fsync: FsyncPolicy::Never,
            ..LogConfig::default()
        };
        let log = PartitionHandle::open(
            dir.path().join("0"),
            db.open_tree("log").expect("tree"),
            config,
            Arc::new(tokio::sync::Notify::new()),
        )
        .expect("log");
        (dir, db, log)
    }

    /// Runs the restart's recovery of the schedule against `log`.
    async fn recover(delays: &DelayStore, log: &PartitionHandle) {
        let (delays, partitions) = (delays.clone(), vec![log.clone()]);
        tokio::task::spawn_blocking(move || recover_appended(&delays, &partitions))
            .await
            .expect("join")
            .expect("recover");
    }

    #[tokio::test]
    async fn messages_appended_but_still_scheduled_are_dropped_from_the_schedule() {
        let (_dir, db, log) = open_log();
        log.append(vec![scheduled("before", 0, 0).record])
            .await
            .expect("append");
        let delays = DelayStore::new(db.open_tree("delay").expect("tree"));
        delays
            .set_checkpoints(&[(0, log.end_offset())])
            .expect("checkpoint");
        let (a, b, c) = (
            scheduled("a", 10, 1),
            scheduled("b", 10, 2),
            scheduled("c", 99, 3),
        );
        delays
            .schedule(&[a.clone(), b.clone(), c.clone()])
            .expect("schedule");
        // The crash came after the append and before the schedule was updated.
        log.append(vec![a.record.clone(), b.record.clone()])
            .await
            .expect("append");

        recover(&delays, &log).await;

        let left: Vec<String> = delays
            .due(u64::MAX, 10)
            .expect("due")
            .into_iter()
            .map(|m| m.record.id)
            .collect();
        assert_eq!(
            left,
            vec!["c"],
            "a and b reached the log and must not be scheduled again"
        );
        assert_eq!(delays.checkpoint(0).expect("checkpoint"), 3);
        log.shutdown();
    }

    #[tokio::test]
    async fn messages_below_the_checkpoint_are_not_looked_for() {
        let (_dir, db, log) = open_log();
        let delays = DelayStore::new(db.open_tree("delay").expect("tree"));
        // An id reused after its earlier message was moved long ago: below the checkpoint.
        log.append(vec![scheduled("a", 0, 0).record])
            .await
            .expect("append");
        delays
            .set_checkpoints(&[(0, log.end_offset())])
            .expect("checkpoint");
        delays
            .schedule(&[scheduled("a", 10, 1), scheduled("b", 10, 2)])
            .expect("schedule");
        recover(&delays, &log).await;
        assert_eq!(delays.due(u64::MAX, 10).expect("due").len(), 2);
        log.shutdown();
    }
}
