//! Looking a message up (issue 12): by id, with its trace (its record, origin and trace
//! context, and for each subscription its state and the events about it), and by key. The
//! trace index ([`crate::trace_store`]) finds the offsets and the control frames; the log
//! holds the facts. A per-topic follower keeps each partition's index up with its log every
//! [`TRACE_FOLLOW_MS`], off the request path; a lookup first brings it up to date (one
//! bounded round), so a step a moment old is in its answer.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::topic_ticks::every_tick;
use super::{Broker, Topic, blocking};
use crate::control::{self, ControlOwner};
use crate::error::Result;
use crate::message::StoredRecord;
use crate::storage::{FrameBody, PartitionHandle};
use crate::subscription::events::SubscriptionEvent;
use crate::subscription::{EntryState, Subscription};
use crate::trace_store::{TraceStore, event_offset};

/// How often a topic's follower indexes what its partitions' logs gained: the staleness of
/// the index between lookups (a lookup catches up itself first).
pub const TRACE_FOLLOW_MS: u64 = 1_000;
/// Most messages a key lookup answers: a key may have millions of messages; the newest are
/// what an operator looks for.
pub const MAX_KEY_LOOKUP: usize = 100;
/// Most records of one id a lookup reads: an id is unique per topic but for redriven copies
/// and producers that reuse ids outside the dedup window; past this many, the newest are kept.
pub const MAX_ID_MATCHES: usize = 20;

/// A message and what happened to it.
#[derive(Debug, Clone)]
pub struct MessageTrace {
    /// Its partition.
    pub partition: u32,
    /// The record (its origin and trace context included).
    pub stored: StoredRecord,
    /// For each subscription of the topic, in name order.
    pub subscriptions: Vec<SubscriptionTrace>,
}

/// One subscription's view of a message.
#[derive(Debug, Clone)]
pub struct SubscriptionTrace {
    /// The subscription's name.
    pub name: String,
    /// Where the message stands for it now.
    pub state: MessageState,
    /// The events about the message, in log order, each with its time.
    pub events: Vec<TracedEvent>,
}

/// An event of a message's trace.
#[derive(Debug, Clone)]
pub struct TracedEvent {
    /// When it was written (its control frame's time), ms since the epoch.
    pub time_ms: u64,
    /// The event.
    pub event: SubscriptionEvent,
}

/// Where a message stands for one subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageState {
    /// Not delivered yet (or its last lease ended without an answer): it will be.
    Pending,
    /// Waiting for its retry (after a nack) until `due_ms`.
    Delayed {
        /// When it may be delivered again.
        due_ms: u64,
    },
    /// Leased to a consumer until `deadline_ms`.
    InFlight {
        /// When the lease ends.
        deadline_ms: u64,
    },
    /// Acked.
    Acked,
    /// The subscription's filter does not want it.
    Filtered,
    /// Out of deliveries: moved (or being moved) to the dead-letter topic.
    DeadLettered,
    /// Settled without an ack: a seek passed it, the subscription began after it, or
    /// retention removed it before it was delivered.
    Skipped,
}

impl Broker {
    /// The messages of `topic` whose id is `id` (one, but for redriven copies and reused
    /// ids), oldest first, each with its trace. Empty when there is none.
    pub async fn trace_message(&self, topic: &str, id: &str) -> Result<Vec<MessageTrace>> {
        super::produce::check_path_id(id)?;
        let topic = self.topic(topic)?;
        let id = id.to_owned();
        blocking(move || {
            let mut found = Vec::new();
            for (partition, (log, store)) in (0u32..).zip(topic.partitions.iter().zip(&topic.trace))
            {
                store.catch_up(log)?;
                let offsets = store.offsets_with_id(&id)?;
                for stored in read_matching(log, &offsets, |r| r.record.id == id)? {
                    found.push((partition, stored));
                }
            }
            found.sort_by_key(|(_, s)| s.record.timestamp_ms);
            let skip = found.len().saturating_sub(MAX_ID_MATCHES);
            found
                .into_iter()
                .skip(skip)
                .map(|(partition, stored)| trace_of(&topic, partition, stored))
                .collect()
        })
        .await
    }

    /// The newest messages of `topic` with key `key`, newest first, at most `limit` (and
    /// [`MAX_KEY_LOOKUP`]).
    pub async fn messages_by_key(
        &self,
        topic: &str,
        key: &str,
        limit: usize,
    ) -> Result<Vec<(u32, StoredRecord)>> {
        let topic = self.topic(topic)?;
        let key = key.to_owned();
        let limit = limit.clamp(1, MAX_KEY_LOOKUP);
        blocking(move || {
            let mut found = Vec::new();
            for (partition, (log, store)) in (0u32..).zip(topic.partitions.iter().zip(&topic.trace))
            {
                store.catch_up(log)?;
                let offsets = store.offsets_with_key(&key)?;
                // The newest `limit` of this partition are all that can make the answer.
                let newest = &offsets[offsets.len().saturating_sub(limit)..];
                for stored in read_matching(log, newest, |r| r.record.key.as_deref() == Some(&key))?
                {
                    found.push((partition, stored));
                }
            }
            found.sort_by(|a, b| {
                (b.1.record.timestamp_ms, b.0, b.1.offset).cmp(&(
                    a.1.record.timestamp_ms,
                    a.0,
                    a.1.offset,
                ))
            });
            found.truncate(limit);
            Ok(found)
        })
        .await
    }

    /// Bytes the trace index of `topic` takes on disk.
    pub fn trace_index_bytes(&self, topic: &str) -> Result<u64> {
        let topic = self.topic(topic)?;
        Ok(topic.trace.iter().map(TraceStore::size_bytes).sum())
    }
}

/// Reads the records at `offsets` (still in the log) and keeps those `wanted` says are it.
fn read_matching(
    log: &PartitionHandle,
    offsets: &[u64],
    wanted: impl Fn(&StoredRecord) -> bool,
) -> Result<Vec<StoredRecord>> {
    let mut found = Vec::new();
    for offset in offsets {
        if *offset < log.start_offset() {
            continue;
        }
        let read = log.read(*offset, 1, usize::MAX)?;
        found.extend(
            read.into_iter()
                .filter(|stored| stored.offset == *offset && wanted(stored)),
        );
    }
    Ok(found)
}

/// The trace of one record: its events from the log, and each subscription's state.
fn trace_of(topic: &Topic, partition: u32, stored: StoredRecord) -> Result<MessageTrace> {
    let index = partition as usize;
    let (Some(log), Some(store)) = (topic.partitions.get(index), topic.trace.get(index)) else {
        return Ok(MessageTrace {
            partition,
            stored,
            subscriptions: Vec::new(),
        });
    };
    let mut events: Vec<(u64, TracedEvent)> = Vec::new();
    for at in store.event_frames(stored.offset)? {
        let Some(frame) = log.frame_at(at)? else {
            continue;
        };
        let FrameBody::Controls(entries) = frame.body else {
            continue;
        };
        for entry in entries {
            if control::owner(&entry) != Some(ControlOwner::Subscription) {
                continue;
            }
            let Ok(event) = SubscriptionEvent::decode(&entry) else {
                continue;
            };
            if event_offset(&event) == Some(stored.offset) {
                events.push((
                    event.subscription(),
                    TracedEvent {
                        time_ms: frame.ts_ms,
                        event,
                    },
                ));
            }
        }
    }
    let subscriptions: Vec<Arc<Subscription>> = crate::sync::read(&topic.subscriptions)
        .values()
        .cloned()
        .collect();
    let now = crate::clock::now_ms();
    let traces = subscriptions
        .iter()
        .map(|sub| {
            let mine: Vec<TracedEvent> = events
                .iter()
                .filter(|(uid, _)| *uid == sub.config.uid)
                .map(|(_, e)| e.clone())
                .collect();
            SubscriptionTrace {
                name: sub.config.name.clone(),
                state: state_of(sub, index, &stored, &mine, now),
                events: mine,
            }
        })
        .collect();
    Ok(MessageTrace {
        partition,
        stored,
        subscriptions: traces,
    })
}

/// Where `stored` stands for `sub`: from its live table on a single node, from the events
/// in a cluster (a replica's table is not live; the events are replicated with the log).
fn state_of(
    sub: &Subscription,
    partition: usize,
    stored: &StoredRecord,
    events: &[TracedEvent],
    now_ms: u64,
) -> MessageState {
    if !sub.config.filter.wants(&stored.record.tags) {
        return MessageState::Filtered;
    }
    let from_events = state_from_events(events, now_ms);
    if sub.is_replicated() {
        return from_events.unwrap_or(MessageState::Pending);
    }
    let offset = stored.offset;
    let (entry, cursor, settled) = sub.inspect(partition, |table| {
        (
            table.entry(offset),
            table.cursor(),
            table.settled().contains(offset),
        )
    });
    if let Some(entry) = entry {
        return match entry.state {
            EntryState::InFlight { deadline_ms, .. } if deadline_ms > now_ms => {
                MessageState::InFlight { deadline_ms }
            }
            EntryState::Waiting { due_ms } if due_ms > now_ms => MessageState::Delayed { due_ms },
            EntryState::DeadLettering => MessageState::DeadLettered,
            _ => MessageState::Pending,
        };
    }
    if offset < cursor.ack_floor || settled {
        return match from_events {
            Some(state @ (MessageState::Acked | MessageState::DeadLettered)) => state,
            _ => MessageState::Skipped,
        };
    }
    MessageState::Pending
}

/// The state the last telling event leaves a message in; none without one.
fn state_from_events(events: &[TracedEvent], now_ms: u64) -> Option<MessageState> {
    events.iter().rev().find_map(|traced| match &traced.event {
        SubscriptionEvent::Acked { .. } => Some(MessageState::Acked),
        SubscriptionEvent::DeadLettered { .. } => Some(MessageState::DeadLettered),
        SubscriptionEvent::Nacked { due_ms, .. } if *due_ms > now_ms => {
            Some(MessageState::Delayed { due_ms: *due_ms })
        }
        SubscriptionEvent::Leased { deadline_ms, .. } if *deadline_ms > now_ms => {
            Some(MessageState::InFlight {
                deadline_ms: *deadline_ms,
            })
        }
        SubscriptionEvent::Nacked { .. }
        | SubscriptionEvent::Leased { .. }
        | SubscriptionEvent::Redelivered { .. }
        | SubscriptionEvent::Delivered { .. } => Some(MessageState::Pending),
        _ => None,
    })
}

/// Indexes a topic's logs every [`TRACE_FOLLOW_MS`] until the topic is deleted or the broker
/// shuts down.
pub(super) async fn follow_loop(broker: Weak<Broker>, topic: Arc<Topic>) {
    let follow = |following: &Topic| {
        for (log, store) in following.partitions.iter().zip(&following.trace) {
            if following.deleted.load(Ordering::SeqCst) {
                break;
            }
            store.catch_up(log)?;
        }
        Ok(())
    };
    every_tick(broker, topic, TRACE_FOLLOW_MS, follow, |_, followed| {
        if let Err(error) = followed {
            tracing::warn!(%error, "indexing the logs for message lookups failed");
        }
    })
    .await;
}

/// The stores of a topic's partitions, whose folders are `partition_dirs`.
pub(super) fn stores(partition_dirs: &[std::path::PathBuf]) -> Vec<TraceStore> {
    partition_dirs.iter().map(|d| TraceStore::new(d)).collect()
}
