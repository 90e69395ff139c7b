//! Delayed messages: scheduling, cancelling, and the task per topic that moves due messages
//! from the schedule into their partitions, never early and without loss or duplication
//! across crashes (see [`crate::schedule`]).
//!
//! Scheduling and cancelling are control events in the log of the message's partition
//! ([`ScheduleEvent`]), group-committed like produces: the reply comes once the event is
//! durable per the fsync policy, and only then does the schedule in memory change; sled
//! follows in the background (`tables`). Nothing here waits for a sled write.
//!
//! A message is moved up to [`PRESTAGE_LEAD_MS`] before it is due, stamped with its due time
//! and marked [`Record::scheduled`]; subscriptions and offset reads hold it back until then
//! (see [`crate::subscription::LeaseTable::grant`]). So the schedule read, the append and its
//! fsync happen ahead of time, and at the due time only a timer in the waiting receive has to
//! fire: under load, those steps stalled for 5 to 15 ms and made the delivery that late. The
//! moved record itself is what takes the message off the schedule when the log is replayed.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;

use super::live_tables::Lead;
use super::{Broker, Topic, background_blocking};
use crate::clock::steady_ms;
use crate::error::{BrokerError, Result};
use crate::limits::MAX_BATCH_MESSAGES;
use crate::message::Record;
use crate::schedule::{ScheduleEvent, Scheduled};
use crate::storage::{AppendResult, PendingAppend};

/// How long an idle mover sleeps at most before it looks at the schedule again: the applier
/// may have brought messages in from a replayed log meanwhile.
const IDLE_LOOK_EVERY_MS: u64 = 1_000;
/// Pause after a failed move before trying again, so a full disk does not spin the task.
const MOVE_RETRY_MS: u64 = 500;
/// How long before its due time a delayed message is appended to its partition: longer than
/// the mover's stalls under load (schedule reads and appends took up to ~15 ms, measured),
/// short enough that the window where a cancel is too late stays small.
pub const PRESTAGE_LEAD_MS: u64 = 50;

/// The scheduled events of a produce, queued: resolves once all are durable.
pub(super) type ScheduleWrites = tokio::task::JoinHandle<Result<Vec<AppendResult>>>;

impl Broker {
    /// Queues the scheduled events of `messages` in their partitions' logs (a place in each
    /// writer's queue is taken first, so `Overloaded` changes nothing) and returns a task that
    /// waits until they are durable, then puts the messages on the schedule in memory and
    /// wakes the delay task if it would otherwise move one too late. The task finishes even if
    /// the produce is dropped meanwhile.
    pub(super) fn queue_schedule(
        &self,
        topic: &Arc<Topic>,
        messages: Vec<Scheduled>,
        terms: &BTreeMap<u32, u64>,
    ) -> Result<ScheduleWrites> {
        topic.delays.check_room()?;
        let mut by_partition: BTreeMap<u32, Vec<Bytes>> = BTreeMap::new();
        for message in &messages {
            let event = ScheduleEvent::Scheduled {
                due_ms: message.due_ms,
                seq: message.seq,
                record: message.record.clone(),
            };
            by_partition
                .entry(message.partition)
                .or_default()
                .push(event.encode()?);
        }
        let slots = by_partition
            .keys()
            .map(|p| partition(topic, *p)?.reserve_control_in_term(terms.get(p).copied()))
            .collect::<Result<Vec<_>>>()?;
        let pending: Vec<PendingAppend> = slots
            .into_iter()
            .zip(by_partition.into_values())
            .map(|(slot, entries)| slot.send(entries))
            .collect();
        let topic = Arc::clone(topic);
        Ok(tokio::spawn(async move {
            let mut results = Vec::with_capacity(pending.len());
            for write in pending {
                results.push(write.wait().await?);
            }
            scheduled(&topic, messages);
            Ok(results)
        }))
    }

    /// Cancels a delayed message that is not yet due: its cancelled event is durable in the
    /// log when this returns. `MessageNotFound` once it was delivered (or is being moved), or
    /// if no such message was scheduled.
    pub async fn cancel_delayed(&self, topic: &str, id: &str) -> Result<()> {
        self.check_running()?;
        super::produce::check_path_id(id)?;
        let open = self.topic(topic)?;
        super::tables::wait_for_room(&open, || open.delays.check_room()).await?;
        let not_found = || BrokerError::MessageNotFound {
            topic: topic.to_owned(),
            id: id.to_owned(),
        };
        let cancelling = open.delays.begin_cancel(id)?.ok_or_else(not_found)?;
        let event = ScheduleEvent::Cancelled {
            due_ms: cancelling.key.0,
            seq: cancelling.key.1,
            id: id.to_owned(),
        };
        let queued = event
            .encode()
            .and_then(|entry| Ok((entry, partition(&open, cancelling.partition)?)))
            .and_then(|(entry, log)| Ok(log.reserve_control()?.send(vec![entry])));
        let write = match queued {
            Ok(write) => write,
            Err(error) => {
                open.delays.end_cancel(cancelling, false);
                return Err(error);
            }
        };
        // The cancel ends (and its message shows again or stays hidden for good) even if the
        // caller goes away while the event is written.
        let delays = open.delays.clone();
        let written = tokio::spawn(async move {
            let written = write.wait().await;
            delays.end_cancel(cancelling, written.is_ok());
            written
        });
        written
            .await
            .map_err(|error| super::join_error("a delayed-message cancel", &error))??;
        unscheduled(&open, 1);
        Ok(())
    }

    /// Moves messages due within [`PRESTAGE_LEAD_MS`] into their partitions, in due order, a
    /// batch per partition, each stamped with its due time (or now, if that has passed);
    /// whether it found any. The messages are claimed until moved, so a cancel cannot take
    /// one of them meanwhile. Nothing here waits on sled: the moved records take the messages
    /// off the schedule in sled when the applier replays them.
    async fn move_due(&self, topic: &Topic) -> Result<bool> {
        let delays = topic.delays.clone();
        let horizon = steady_ms().saturating_add(PRESTAGE_LEAD_MS);
        // In a cluster only the partitions led here: appending to another's fails, and failing
        // the whole batch would hold up this node's own due messages behind it for good.
        let led: Vec<bool> = (0..topic.partitions.len())
            .map(|p| matches!(self.lead(topic, p), Lead::Single | Lead::Leader(_)))
            .collect();
        if !led.contains(&true) {
            return Ok(false);
        }
        let (due, claim) = background_blocking(&self.background, move || {
            let moves = |p: u32| led.get(p as usize).copied().unwrap_or(false);
            let claimed = delays.claim_due_of(horizon, MAX_BATCH_MESSAGES, &moves)?;
            fail::fail_point!("delays::claimed");
            Ok(claimed)
        })
        .await?;
        if due.is_empty() {
            return Ok(false);
        }
        let mut by_partition: BTreeMap<u32, Vec<Scheduled>> = BTreeMap::new();
        for message in due {
            by_partition
                .entry(message.partition)
                .or_default()
                .push(message);
        }
        let mut claim = claim;
        for (partition, group) in by_partition {
            let keys: Vec<_> = group.iter().map(|m| (m.due_ms, m.seq)).collect();
            let now = steady_ms();
            let records: Vec<Record> = group
                .into_iter()
                .map(|m| Record {
                    timestamp_ms: m.due_ms.max(now),
                    scheduled: true,
                    ..m.record
                })
                .collect();
            let Some(log) = topic.partitions.get(partition as usize) else {
                continue;
            };
            log.append(records).await?;
            claim.moved(&keys);
            unscheduled(topic, keys.len() as u64);
        }
        Ok(true)
    }
}

/// The log of a topic's partition.
fn partition(topic: &Topic, partition: u32) -> Result<&crate::storage::PartitionHandle> {
    topic
        .partitions
        .get(partition as usize)
        .ok_or_else(|| BrokerError::invalid("partition", format!("no partition {partition}")))
}

/// Puts messages whose scheduled events are durable on the topic's schedule and wakes its
/// delay task if it would otherwise move one too late.
fn scheduled(topic: &Topic, messages: Vec<Scheduled>) {
    let soonest = messages.iter().map(|m| m.due_ms).min().unwrap_or(u64::MAX);
    topic
        .scheduled
        .fetch_add(messages.len() as u64, Ordering::SeqCst);
    topic.delays.scheduled(messages);
    if soonest.saturating_sub(PRESTAGE_LEAD_MS) < topic.delay_wake_at.load(Ordering::SeqCst) {
        topic.delay_wake.notify_one();
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
        // Awake until it sleeps: whatever is scheduled meanwhile notifies, and the enabled
        // `wake` above keeps that notification for the select below.
        topic.delay_wake_at.store(u64::MAX, Ordering::SeqCst);
        let delays = topic.delays.clone();
        let next = background_blocking(&live.background, move || delays.next_due()).await;
        let now = steady_ms();
        let pause = match next {
            Ok(Some(due)) if due <= now.saturating_add(PRESTAGE_LEAD_MS) => {
                match live.move_due(&topic).await {
                    Ok(true) => continue,
                    // Due messages it could not claim: too many moves wait for the applier.
                    Ok(false) => super::APPLY_EVERY_MS,
                    Err(error) => {
                        tracing::error!(%error, "moving due delayed messages failed");
                        MOVE_RETRY_MS
                    }
                }
            }
            Ok(next) => next.map_or(IDLE_LOOK_EVERY_MS, |due| {
                (due - PRESTAGE_LEAD_MS - now).min(IDLE_LOOK_EVERY_MS)
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
