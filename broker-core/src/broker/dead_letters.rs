//! Dead letters: messages out of deliveries are appended to the subscription's dead-letter
//! topic (created on demand) with headers naming their origin, then settled; `redrive` moves
//! them back into the source topic, for this subscription only, each once.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::consume::REDRIVE_HEADER;
use super::reads::read_range;
use super::{Broker, Topic};
use crate::clock::{now_ms, steady_ms};
use crate::error::{BrokerError, Result};
use crate::limits::{
    MAX_BATCH_MESSAGES, MAX_INT32_SETTING, MAX_INT64_SETTING, MAX_READ_BYTES, check_range,
};
use crate::message::Record;
use crate::storage::{PartitionHandle, PendingAppend};
use crate::subscription::events::SubscriptionEvent;
use crate::subscription::{LeaseTable, Subscription};
use crate::sync::read;
use crate::telemetry;
use crate::topic::{TopicInfo, TopicSpec};

/// How much one redrive may move: at most `limit` messages, at most `per_second` a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RedriveBudget {
    limit: u64,
    per_second: u64,
}

impl RedriveBudget {
    /// The budget a request asks for: [`BrokerError::InvalidArgument`] for a zero count or
    /// rate; no count is no limit, no rate [`DEFAULT_REDRIVE_PER_SECOND`].
    fn new(max_messages: Option<u64>, per_second: Option<u32>) -> Result<Self> {
        if max_messages == Some(0) {
            return Err(BrokerError::invalid("max_messages", "must be positive"));
        }
        if per_second == Some(0) {
            return Err(BrokerError::invalid(
                "messages_per_second",
                "must be positive",
            ));
        }
        if let Some(max) = max_messages {
            check_range("max_messages", max, 1, MAX_INT64_SETTING)?;
        }
        if let Some(rate) = per_second {
            check_range("messages_per_second", rate, 1, MAX_INT32_SETTING)?;
        }
        Ok(RedriveBudget {
            limit: max_messages.unwrap_or(u64::MAX),
            per_second: u64::from(per_second.unwrap_or(DEFAULT_REDRIVE_PER_SECOND)),
        })
    }
}

/// Prefix of the headers a dead letter carries about its origin.
pub const ORIGIN_PREFIX: &str = "wharf-dlq-";
/// Most redriven messages per second when the request does not say: enough to drain a
/// typical dead-letter topic in minutes without swamping consumers that just recovered.
pub const DEFAULT_REDRIVE_PER_SECOND: u32 = 1_000;

impl Broker {
    /// Appends a partition's pending dead letters to the dead-letter topic and settles them.
    pub(super) async fn move_dead_letters(
        &self,
        topic: &Arc<Topic>,
        sub: &Arc<Subscription>,
        partition: usize,
    ) -> Result<()> {
        if sub.inspect(partition, |t| t.dead_letters().is_empty()) {
            return Ok(());
        }
        let _turn = sub.dead_letter_turn.lock().await;
        let pending = sub.inspect(partition, LeaseTable::dead_letters);
        if pending.is_empty() {
            return Ok(());
        }
        let dlq = match self.dead_letter_topic(topic, sub).await {
            Ok(dlq) => dlq,
            // In a cluster: the controller has not created it yet; the next round moves them.
            Err(BrokerError::NotLeader { .. }) => return Ok(()),
            Err(error) => return Err(error),
        };
        // In a cluster this node appends only to dead-letter partitions it leads; with none,
        // the dead letters wait here for a round on a node that leads one (they stay
        // unsettled, and are counted as backlog, meanwhile).
        let targets = if self.replication.is_some() {
            let led = self.partitions_led_here(&dlq);
            if led.is_empty() {
                return Ok(());
            }
            Some(led)
        } else {
            None
        };
        let log = topic.partitions[partition].clone();
        let (records, gone) = read_dead_letters(topic, sub, partition, &log, pending).await?;
        let shares = dead_letter_shares(&dlq, targets.as_deref(), &records);
        match self.append_shares(&dlq, shares).await {
            Ok(_) => {}
            // Its leadership moved meanwhile: the next round appends them again.
            Err(BrokerError::NotLeader { .. }) => return Ok(()),
            Err(error) => return Err(error),
        }
        let append = settle_dead_letters(sub, partition, &log, &records, &gone)?;
        if let Some(append) = append {
            append.wait().await?;
        }
        tracing::info!(subscription = %sub.config.name, dead_letters = records.len(), "moved to the dead-letter topic");
        telemetry::dead_lettered(&topic.config().name, &sub.config.name, records.len());
        sub.counters.dead_lettered(records.len());
        Ok(())
    }

    /// The subscription's dead-letter topic, created like its source topic if missing.
    async fn dead_letter_topic(&self, topic: &Topic, sub: &Subscription) -> Result<Arc<Topic>> {
        let name = &sub.config.dead_letter_topic;
        if let Ok(existing) = self.topic(name) {
            return Ok(existing);
        }
        if self.replication.is_some() {
            // In a cluster the controller creates it with the subscription.
            return Err(BrokerError::NotLeader {
                what: format!("dead-letter topic '{name}'"),
                leader: None,
            });
        }
        let source = topic.config();
        let spec = TopicSpec {
            name: name.clone(),
            partitions: Some(source.partitions),
            max_message_bytes: Some(source.max_message_bytes),
            // Only an internal topic's subscription has an internal dead-letter name.
            internal: crate::names::is_internal(name),
            ..TopicSpec::default()
        };
        match self.create_topic(spec).await {
            Ok(_) | Err(BrokerError::TopicExists { .. }) => self.topic(name),
            Err(error) => Err(error),
        }
    }

    /// Moves up to `max_messages` dead letters of a subscription back into its topic, at most
    /// `per_second` a second, each once: the subscription keeps a cursor on its dead-letter
    /// topic. Redriven messages carry [`REDRIVE_HEADER`], so only this subscription takes them.
    /// In a cluster this node must lead every partition of the dead-letter topic (else
    /// [`BrokerError::NotLeader`] naming one that does); [`Broker::redrive_led`] redrives
    /// only those it leads.
    pub async fn redrive(
        &self,
        topic: &str,
        subscription: &str,
        max_messages: Option<u64>,
        per_second: Option<u32>,
    ) -> Result<u64> {
        self.redrive_partitions(topic, subscription, max_messages, per_second, false)
            .await
    }

    /// [`Broker::redrive`] of the dead-letter partitions this node leads (`led_only`, in a
    /// cluster), or of all of them.
    pub(super) async fn redrive_partitions(
        &self,
        topic: &str,
        subscription: &str,
        max_messages: Option<u64>,
        per_second: Option<u32>,
        led_only: bool,
    ) -> Result<u64> {
        self.check_running()?;
        let open = self.topic(topic)?;
        let sub = self.subscription_in(&open, subscription)?;
        let RedriveBudget { limit, per_second } = RedriveBudget::new(max_messages, per_second)?;
        let Ok(dlq) = self.topic(&sub.config.dead_letter_topic) else {
            return Ok(0);
        };
        let partitions = self.dead_letter_partitions_here(&dlq, led_only)?;
        let _turn = sub.redrive_turn.lock().await;
        let started = tokio::time::Instant::now();
        let mut moved = 0u64;
        for partition in partitions {
            let log = &dlq.partitions[partition];
            self.learn_redrive_cursor(&sub, log, partition).await?;
            loop {
                if moved >= limit || self.shutting_down.load(Ordering::SeqCst) {
                    return Ok(moved);
                }
                let from = sub.redrive_cursor(partition).max(log.start_offset());
                let take = (limit - moved)
                    .min(per_second)
                    .min(MAX_BATCH_MESSAGES as u64) as usize;
                let batch = read_range(log.clone(), from, take, MAX_READ_BYTES).await?;
                let Some(last) = batch.last().map(|r| r.offset) else {
                    break;
                };
                let mut shares: Vec<Vec<Record>> = vec![Vec::new(); open.partitions.len()];
                for stored in batch {
                    let record = redriven(stored.record, &sub.config.name);
                    let target = open
                        .partitioner
                        .choose(record.key.as_deref(), open.config().partitions);
                    shares[target as usize].push(record);
                    moved += 1;
                }
                self.append_redriven(&open, shares).await?;
                let home = match self.replication {
                    None => &open.partitions[partition % open.partitions.len()],
                    Some(_) => log,
                };
                sub.set_redrive_cursor(partition, last + 1, home)?
                    .wait()
                    .await?;
                let allowed_at = started + Duration::from_millis(moved * 1000 / per_second);
                tokio::time::sleep_until(allowed_at).await;
            }
        }
        Ok(moved)
    }

    /// Info about a subscription's dead-letter topic, if it exists yet.
    pub fn dead_letter_info(
        &self,
        sub_topic: &str,
        subscription: &str,
    ) -> Result<Option<TopicInfo>> {
        let open = self.topic(sub_topic)?;
        let sub = self.subscription_in(&open, subscription)?;
        let dlq = read(&self.topics)
            .get(&sub.config.dead_letter_topic)
            .cloned();
        Ok(dlq.map(|t| self.info(&t)))
    }
}

/// Reads a partition's `pending` dead letters, `(offset, attempts)`: returns each found with
/// its dead letter, and the offsets of those retention removed meanwhile.
async fn read_dead_letters(
    topic: &Topic,
    sub: &Subscription,
    partition: usize,
    log: &PartitionHandle,
    pending: Vec<(u64, u32)>,
) -> Result<(Vec<(u64, Record)>, Vec<u64>)> {
    let mut records = Vec::with_capacity(pending.len());
    let mut gone = Vec::new();
    for (offset, attempts) in pending {
        let found = read_range(log.clone(), offset, 1, MAX_READ_BYTES).await?;
        match found.into_iter().next().filter(|r| r.offset == offset) {
            Some(stored) => {
                let error = sub.take_last_error(partition, offset);
                records.push((
                    offset,
                    dead_letter(
                        &topic.config().name,
                        partition,
                        sub,
                        stored.record,
                        offset,
                        attempts,
                        error,
                    ),
                ));
            }
            None => gone.push(offset),
        }
    }
    Ok((records, gone))
}

/// The dead letters split into the dead-letter topic's partitions: round-robin over
/// `targets` (in a cluster, the partitions this node leads), else by key.
fn dead_letter_shares(
    dlq: &Topic,
    targets: Option<&[u32]>,
    records: &[(u64, Record)],
) -> Vec<Vec<Record>> {
    let mut shares: Vec<Vec<Record>> = vec![Vec::new(); dlq.partitions.len()];
    for (i, (_, record)) in records.iter().enumerate() {
        let target = match targets {
            Some(led) => led[i % led.len()],
            None => dlq
                .partitioner
                .choose(record.key.as_deref(), dlq.config().partitions),
        };
        shares[target as usize].push(record.clone());
    }
    shares
}

/// Settles a partition's moved dead letters and forgets those `gone`, in its lease table and
/// as `dead_lettered` events in its log; returns the append of the events.
fn settle_dead_letters(
    sub: &Subscription,
    partition: usize,
    log: &PartitionHandle,
    records: &[(u64, Record)],
    gone: &[u64],
) -> Result<Option<PendingAppend>> {
    let now = steady_ms();
    let subscription = sub.config.uid;
    let ((), append) = sub.change_durably(partition, log, |table| {
        for (offset, _) in records {
            table.finish_dead_letter(*offset, now);
        }
        for offset in gone {
            table.forget(*offset, now);
        }
        let events = records
            .iter()
            .map(|(offset, _)| SubscriptionEvent::DeadLettered {
                subscription,
                offset: *offset,
            })
            .collect();
        ((), events)
    })?;
    Ok(append)
}

/// A dead letter: the message as it was, with headers naming its origin.
fn dead_letter(
    topic: &str,
    partition: usize,
    sub: &Subscription,
    mut record: Record,
    offset: u64,
    attempts: u32,
    error: Option<String>,
) -> Record {
    record
        .headers
        .retain(|(name, _)| !name.starts_with(ORIGIN_PREFIX) && name != REDRIVE_HEADER);
    let origin = [
        ("topic", topic.to_owned()),
        ("subscription", sub.config.name.clone()),
        ("partition", partition.to_string()),
        ("offset", offset.to_string()),
        ("id", record.id.clone()),
        ("attempts", attempts.to_string()),
        ("published-ms", record.timestamp_ms.to_string()),
    ];
    record.headers.extend(
        origin
            .into_iter()
            .map(|(name, value)| (format!("{ORIGIN_PREFIX}{name}"), value)),
    );
    if let Some(error) = error {
        record
            .headers
            .push((format!("{ORIGIN_PREFIX}error"), error));
    }
    record.timestamp_ms = now_ms();
    record.scheduled = false;
    // Not a produce of the client's id: neither the dead-letter topic nor a redrive's target
    // may remember it as one (the origin's first result stays the answer to a retry).
    record.client_id = false;
    record
}

/// A dead letter on its way back: origin headers dropped, addressed to one subscription.
fn redriven(mut record: Record, subscription: &str) -> Record {
    record
        .headers
        .retain(|(name, _)| !name.starts_with(ORIGIN_PREFIX) && name != REDRIVE_HEADER);
    record
        .headers
        .push((REDRIVE_HEADER.to_owned(), subscription.to_owned()));
    record.timestamp_ms = now_ms();
    record.scheduled = false;
    // Not a produce of the client's id: neither the dead-letter topic nor a redrive's target
    // may remember it as one (the origin's first result stays the answer to a retry).
    record.client_id = false;
    record
}
