//! Delayed messages: scheduling, cancelling, and the task per topic that moves due messages
//! from the on-disk schedule into their partitions, never early and without loss or
//! duplication across crashes (see [`crate::schedule`]).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Broker, Topic, blocking};
use crate::clock::now_ms;
use crate::error::{BrokerError, Result};
use crate::limits::{MAX_BATCH_MESSAGES, MAX_READ_BYTES, MAX_READ_RECORDS};
use crate::message::Record;
use crate::schedule::{DelayStore, PendingMove, Scheduled};
use crate::storage::PartitionHandle;

/// Most records a restart reads after an interrupted move to find what it had appended: the
/// move's own batch plus what other producers appended alongside it before the crash.
const MAX_RECOVERY_SCAN: usize = 100_000;
/// Pause after a failed move before trying again, so a full disk does not spin the task.
const MOVE_RETRY_MS: u64 = 500;

impl Broker {
    /// Puts messages on a topic's schedule and wakes its delay task if one is due sooner.
    pub(super) fn schedule(&self, topic: &Topic, messages: &[Scheduled]) -> Result<()> {
        topic.delays.schedule(messages)?;
        topic
            .scheduled
            .fetch_add(messages.len() as u64, Ordering::SeqCst);
        topic.delay_wake.notify_one();
        Ok(())
    }

    /// Cancels a delayed message that is not yet due. `MessageNotFound` once it was delivered,
    /// or if no such message was scheduled.
    pub async fn cancel_delayed(&self, topic: &str, id: &str) -> Result<()> {
        self.check_running()?;
        let open = self.topic(topic)?;
        if !open.delays.cancel(id)? {
            return Err(BrokerError::MessageNotFound {
                topic: topic.to_owned(),
                id: id.to_owned(),
            });
        }
        open.scheduled.fetch_sub(1, Ordering::SeqCst);
        self.persist().await
    }

    /// Moves every message due now into its partition, in due order, a batch per partition.
    async fn move_due(&self, topic: &Topic) -> Result<()> {
        let due = topic.delays.due(now_ms(), MAX_BATCH_MESSAGES)?;
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
            topic.delays.begin_move(PendingMove {
                partition,
                end_before: log.end_offset(),
            })?;
            // The marker must be on disk before the append can be, or a crash in between
            // would leave appended messages that a restart schedules again.
            self.metadata.flush().await?;
            let visible_ms = now_ms();
            let records: Vec<Record> = group
                .iter()
                .map(|m| Record {
                    timestamp_ms: visible_ms,
                    ..m.record.clone()
                })
                .collect();
            log.append(records).await?;
            topic.delays.finish_move(&group)?;
            topic
                .scheduled
                .fetch_sub(group.len() as u64, Ordering::SeqCst);
        }
        self.persist().await
    }
}

/// Finishes a move that a crash interrupted, before the topic serves anything. Blocking.
pub(super) fn recover_interrupted_move(
    delays: &DelayStore,
    partitions: &[PartitionHandle],
) -> Result<()> {
    let Some(pending) = delays.pending_move()? else {
        return Ok(());
    };
    let Some(log) = partitions.get(pending.partition as usize) else {
        delays.finish_interrupted_move(&[])?;
        return Ok(());
    };
    let mut appended = Vec::new();
    let mut offset = pending.end_before;
    while appended.len() < MAX_RECOVERY_SCAN {
        let batch = log.read(offset, MAX_READ_RECORDS, MAX_READ_BYTES)?;
        let Some(last) = batch.last() else { break };
        offset = last.offset + 1;
        appended.extend(batch.into_iter().map(|r| r.record.id));
    }
    let removed = delays.finish_interrupted_move(&appended)?;
    tracing::info!(
        partition = pending.partition,
        removed,
        "finished a delayed-message move interrupted by a crash"
    );
    Ok(())
}

/// Moves due messages of one topic until the topic is deleted or the broker shuts down.
pub(super) async fn delay_loop(broker: Weak<Broker>, topic: Arc<Topic>) {
    loop {
        let wake = topic.delay_wake.notified();
        tokio::pin!(wake);
        wake.as_mut().enable();
        let Some(live) = broker.upgrade() else { return };
        if live.shutting_down.load(Ordering::SeqCst) || topic.deleted.load(Ordering::SeqCst) {
            return;
        }
        let delays = topic.delays.clone();
        let next = blocking(move || delays.next_due()).await;
        let now = now_ms();
        let pause = match next {
            Ok(Some(due)) if due <= now => match live.move_due(&topic).await {
                Ok(()) => continue,
                Err(error) => {
                    tracing::error!(%error, "moving due delayed messages failed");
                    Some(MOVE_RETRY_MS)
                }
            },
            Ok(Some(due)) => Some(due - now),
            Ok(None) => None,
            Err(error) => {
                tracing::error!(%error, "reading the delay schedule failed");
                Some(MOVE_RETRY_MS)
            }
        };
        drop(live);
        match pause {
            Some(ms) => {
                tokio::select! {
                    () = &mut wake => {}
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                }
            }
            None => wake.await,
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
                headers: Vec::new(),
                tags: Vec::new(),
            },
        }
    }

    #[tokio::test]
    async fn a_move_interrupted_after_its_append_is_finished_without_appending_again() {
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
        log.append(vec![scheduled("before", 0, 0).record])
            .await
            .expect("append");
        let delays = DelayStore::new(db.open_tree("delay").expect("tree"));
        let (a, b, c) = (
            scheduled("a", 10, 1),
            scheduled("b", 10, 2),
            scheduled("c", 99, 3),
        );
        delays
            .schedule(&[a.clone(), b.clone(), c.clone()])
            .expect("schedule");
        delays
            .begin_move(PendingMove {
                partition: 0,
                end_before: log.end_offset(),
            })
            .expect("begin");
        // The crash came after the append and before the schedule was updated.
        log.append(vec![a.record.clone(), b.record.clone()])
            .await
            .expect("append");

        let partitions = vec![log.clone()];
        let recovered = delays.clone();
        tokio::task::spawn_blocking(move || recover_interrupted_move(&recovered, &partitions))
            .await
            .expect("join")
            .expect("recover");

        assert_eq!(delays.pending_move().expect("marker"), None);
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
        assert_eq!(log.end_offset(), 3);
        log.shutdown();
    }

    #[tokio::test]
    async fn a_move_interrupted_before_its_append_keeps_every_message_scheduled() {
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
        let delays = DelayStore::new(db.open_tree("delay").expect("tree"));
        delays
            .schedule(&[scheduled("a", 10, 1), scheduled("b", 10, 2)])
            .expect("schedule");
        delays
            .begin_move(PendingMove {
                partition: 0,
                end_before: log.end_offset(),
            })
            .expect("begin");
        let partitions = vec![log.clone()];
        let recovered = delays.clone();
        tokio::task::spawn_blocking(move || recover_interrupted_move(&recovered, &partitions))
            .await
            .expect("join")
            .expect("recover");
        assert_eq!(delays.due(u64::MAX, 10).expect("due").len(), 2);
        assert_eq!(delays.pending_move().expect("marker"), None);
        log.shutdown();
    }
}
