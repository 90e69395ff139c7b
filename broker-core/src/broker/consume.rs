//! Receiving: long-poll receive with leases, peeking at the head of each partition, granting
//! and reading what was granted (settling by receipt is in `settle`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::reads::read_range;
use super::{Broker, Delivery, ReceiveRequest, Topic, blocking};
use crate::clock::steady_ms;
use crate::error::{BrokerError, Result};
use crate::limits::{MAX_READ_BYTES, MAX_RECEIVE_MESSAGES, MAX_WAIT_MS, check_range};
use crate::message::{Origin, StoredRecord};
use crate::partitioner::key_hash64;
use crate::subscription::attempts::{MAX_ATTEMPT_ID_LEN, Remembered, valid_attempt_id};
use crate::subscription::config::validate_ack_timeout;
use crate::subscription::{Candidate, Grant, LeaseTable, ReceiptData, Subscription};
use crate::telemetry;

/// How many times one receive peeks at one partition when everything it peeked was filtered
/// out or held back: bounds the work of one receive on a subscription that skips a lot.
const MAX_PEEKS_PER_PARTITION: usize = 8;

/// Header naming the one subscription a redriven message is for; other subscriptions of the
/// topic skip it, as they had already settled the original.
pub const REDRIVE_HEADER: &str = "wharf-redrive-subscription";

/// How often a waiting receive that found no room in the memory budget tries again: the
/// answers holding it are usually written out within milliseconds.
const MEMORY_WAIT_RETRY_MS: u64 = 50;

impl Broker {
    /// Leases up to `max_messages` messages: due redeliveries first, then new ones, visiting the
    /// partitions in turn. Leases live in memory and reach the next checkpoint (about a second
    /// later), not the disk before the reply. Waits up to `wait_ms` for at least one, woken by commits to the
    /// topic and by retry timers, not by polling. With `request.memory`, each read first
    /// reserves room for its answer; when there is none, a receive that may wait waits for
    /// it as for messages (holding nothing), and one with `wait_ms` 0 is
    /// [`BrokerError::Overloaded`].
    pub async fn receive(
        &self,
        topic: &str,
        subscription: &str,
        request: ReceiveRequest,
    ) -> Result<Vec<Delivery>> {
        self.receive_from(topic, subscription, request, None).await
    }

    /// [`Broker::receive`] by `consumer`, whom the deliveries' events name for the message
    /// trace (`delivered` on a single node, `leased` in a cluster).
    pub async fn receive_from(
        &self,
        topic: &str,
        subscription: &str,
        request: ReceiveRequest,
        consumer: Option<&Origin>,
    ) -> Result<Vec<Delivery>> {
        self.check_running()?;
        check_range(
            "max_messages",
            request.max_messages,
            1,
            MAX_RECEIVE_MESSAGES,
        )?;
        check_range("wait_ms", request.wait_ms, 0, MAX_WAIT_MS)?;
        let open = self.topic(topic)?;
        let sub = self.subscription_in(&open, subscription)?;
        // A waiting receive is a consumer present for all of its wait: noted as it starts
        // and as it returns (the `consumer_offline` alert's activity).
        sub.counters.received_at(steady_ms());
        let lease_ms = match request.ack_timeout_ms {
            Some(ms) => validate_ack_timeout("ack_timeout_ms", ms)?,
            None => sub.config.ack_timeout_ms,
        };
        if let Some(id) = &request.attempt_id {
            if !valid_attempt_id(id) {
                return Err(BrokerError::invalid(
                    "attempt_id",
                    format!("must be 1 to {MAX_ATTEMPT_ID_LEN} printable ASCII characters"),
                ));
            }
            if let Some(deliveries) = self.repeat_attempt(&open, &sub, id).await? {
                return Ok(deliveries);
            }
        }
        // In a cluster this node serves the partitions it leads (the gateway gathers the
        // others from their leaders), and refuses a topic it leads none of.
        self.require_some_partition(&open, &sub).await?;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(request.wait_ms);
        loop {
            let committed = open.on_commit.notified();
            tokio::pin!(committed);
            committed.as_mut().enable();
            let shutdown = self.shutdown_signal.notified();
            tokio::pin!(shutdown);
            shutdown.as_mut().enable();
            self.check_alive(&open, &sub)?;

            let max_bytes = match &request.memory {
                Some(memory) => match memory.reserve() {
                    Some(bytes) => Some(bytes),
                    // No room for an answer: one that may not wait is refused; one that
                    // waits holds nothing and tries again shortly, as if nothing had come.
                    None if request.wait_ms == 0 => {
                        return Err(super::reads::memory_overloaded());
                    }
                    None => None,
                },
                None => Some(MAX_READ_BYTES),
            };
            let deliveries = match max_bytes {
                Some(max_bytes) => {
                    let ask = (request.max_messages, lease_ms, max_bytes);
                    self.lease_and_read(&open, &sub, ask, consumer).await?
                }
                None => Vec::new(),
            };
            if deliveries.is_empty()
                && let Some(memory) = &request.memory
            {
                memory.release();
            }
            if !deliveries.is_empty() {
                sub.counters.received_at(steady_ms());
                if let Some(id) = &request.attempt_id {
                    sub.remember_attempt(id.clone(), deliveries.iter().map(remembered).collect());
                }
                // Leases are not made durable before the reply: a crash before the next
                // checkpoint can only make a message come back sooner (at least once).
                let redelivered = deliveries.iter().filter(|d| d.delivery_attempt > 1).count();
                let bytes = deliveries
                    .iter()
                    .map(|d| d.message.record.value.len())
                    .sum();
                sub.counters
                    .delivered(topic, subscription, deliveries.len(), redelivered, bytes);
                open.counters.consumed(deliveries.len(), bytes);
                return Ok(deliveries);
            }
            let now = tokio::time::Instant::now();
            if now >= deadline || self.shutting_down.load(Ordering::SeqCst) {
                sub.counters.received_at(steady_ms());
                return Ok(Vec::new());
            }
            let mut wake = next_wake(&sub).map_or(deadline, |at_ms| {
                now + Duration::from_millis(at_ms.saturating_sub(steady_ms()))
            });
            if max_bytes.is_none() {
                wake = wake.min(now + Duration::from_millis(MEMORY_WAIT_RETRY_MS));
            }
            tokio::select! {
                () = &mut committed => {}
                () = &mut shutdown => {}
                () = tokio::time::sleep_until(wake.min(deadline)) => {}
            }
        }
    }

    /// The deliveries of a remembered attempt whose leases still hold, with their receipts.
    async fn repeat_attempt(
        &self,
        topic: &Topic,
        sub: &Subscription,
        id: &str,
    ) -> Result<Option<Vec<Delivery>>> {
        let Some(remembered) = sub.remembered_attempt(id) else {
            return Ok(None);
        };
        let now = steady_ms();
        let mut deliveries = Vec::new();
        for item in remembered {
            let partition = item.partition as usize;
            if partition >= sub.partitions()
                || !sub.inspect(partition, |t| t.is_leased(item.offset, item.lease, now))
            {
                continue;
            }
            let found = read_range(
                topic.partitions[partition].clone(),
                item.offset,
                1,
                MAX_READ_BYTES,
            )
            .await?;
            if let Some(record) = found.into_iter().next().filter(|r| r.offset == item.offset) {
                let grant = Grant {
                    offset: item.offset,
                    attempt: item.attempt,
                    lease: item.lease,
                };
                deliveries.push(self.delivery(sub, partition, grant, record));
            }
        }
        Ok((!deliveries.is_empty()).then_some(deliveries))
    }

    fn check_alive(&self, topic: &Topic, sub: &Subscription) -> Result<()> {
        self.check_running()?;
        let config = topic.config();
        if topic.deleted.load(Ordering::SeqCst) {
            return Err(BrokerError::TopicNotFound { topic: config.name });
        }
        match topic.subscription(&sub.config.name) {
            Ok(current) if current.config.uid == sub.config.uid => Ok(()),
            _ => Err(BrokerError::SubscriptionNotFound {
                topic: config.name,
                subscription: sub.config.name.clone(),
            }),
        }
    }

    /// Grants leases partition by partition and reads the granted records: it peeks at the
    /// records at the head of the log (the filter and key order need their tags and keys),
    /// grants, then reads what redeliveries need. Grants the reply has no room for (it would
    /// pass `max_bytes` of values, itself at most [`MAX_READ_BYTES`]) are released untouched;
    /// grants of records that retention removed meanwhile are forgotten. Dead letters found
    /// on the way are moved.
    /// `ask` is `(max_messages, lease_ms, max_bytes)`; `consumer` is whom the grants' events
    /// name.
    async fn lease_and_read(
        &self,
        topic: &Arc<Topic>,
        sub: &Arc<Subscription>,
        (max_messages, lease_ms, max_bytes): (usize, u64, usize),
        consumer: Option<&Origin>,
    ) -> Result<Vec<Delivery>> {
        let mut reply = Reply {
            deliveries: Vec::new(),
            budget: max_bytes.min(MAX_READ_BYTES),
        };
        for partition in sub.visiting_order() {
            if !self.serve_partition(topic, sub, partition).await? {
                continue;
            }
            for _ in 0..MAX_PEEKS_PER_PARTITION {
                let wanted = max_messages - reply.deliveries.len();
                if wanted == 0 || reply.budget == 0 {
                    break;
                }
                let before = sub.inspect(partition, LeaseTable::peek_offset);
                let granted = self
                    .grant_partition(
                        topic,
                        sub,
                        partition,
                        (wanted, lease_ms),
                        consumer,
                        &mut reply,
                    )
                    .await?;
                let after = sub.inspect(partition, LeaseTable::peek_offset);
                if granted > 0 || after == before {
                    break;
                }
            }
            self.move_dead_letters(topic, sub, partition).await?;
        }
        Ok(reply.deliveries)
    }

    /// One peek-grant-read round on one partition; returns how many deliveries it added.
    async fn grant_partition(
        &self,
        topic: &Arc<Topic>,
        sub: &Arc<Subscription>,
        partition: usize,
        (wanted, lease_ms): (usize, u64),
        consumer: Option<&Origin>,
        reply: &mut Reply,
    ) -> Result<usize> {
        let log = &topic.partitions[partition];
        let start = log.start_offset();
        let (next, room) = sub.inspect(partition, |t| (t.peek_offset(), t.has_room()));
        let peeked = if room && next < log.end_offset() {
            match read_range(log.clone(), next.max(start), wanted, reply.budget).await {
                Ok(records) => records,
                Err(error @ BrokerError::Corrupt { .. }) => {
                    self.skip_unreadable(topic, sub, partition, next.max(start), &error)
                        .await?;
                    return Ok(0);
                }
                Err(error) => return Err(error),
            }
        } else {
            Vec::new()
        };
        let candidates: Vec<Candidate> = peeked.iter().map(|r| candidate(sub, r)).collect();
        let now = steady_ms();
        let (grants, leases) =
            sub.grant(partition, log, consumer, self.config.trace_index, |table| {
                table.grant(
                    now,
                    wanted,
                    start,
                    &candidates,
                    lease_ms,
                    &sub.config.retry,
                    rand::random,
                )
            })?;
        if grants.is_empty() {
            return Ok(0);
        }
        // In a cluster nothing leaves before this node has proved it still leads (a deposed
        // leader's table may show as waiting what the new leader delivered and had acked):
        // by a heartbeat round a quorum answers, or else by the leases' own commit. The
        // leases then commit in the background, as a single node's reach its checkpoint.
        if let Some(leases) = leases
            && !self.still_leads(topic, sub, partition).await
        {
            leases.wait().await?;
        }
        let mut records: BTreeMap<u64, StoredRecord> =
            peeked.into_iter().map(|r| (r.offset, r)).collect();
        let redelivered: Vec<Grant> = grants
            .iter()
            .filter(|g| !records.contains_key(&g.offset))
            .copied()
            .collect();
        let mut damaged = false;
        if !redelivered.is_empty() {
            match read_granted(log.clone(), &redelivered, reply.budget).await {
                Ok(read) => records.extend(read.into_iter().map(|r| (r.offset, r))),
                Err(error @ BrokerError::Corrupt { .. }) => {
                    tracing::error!(%error, partition, "a redelivery met a damaged frame; its messages are dropped");
                    damaged = true;
                }
                Err(error) => return Err(error),
            }
        }
        let mut unused = Vec::new();
        let added = reply.deliveries.len();
        for grant in grants {
            match records.remove(&grant.offset) {
                Some(record)
                    if reply.budget >= record.record.value.len() || reply.deliveries.is_empty() =>
                {
                    reply.budget = reply.budget.saturating_sub(record.record.value.len());
                    reply
                        .deliveries
                        .push(self.delivery(sub, partition, grant, record));
                }
                Some(_) => unused.push((grant, true)),
                None => unused.push((grant, false)),
            }
        }
        if !unused.is_empty() {
            let (now, start) = (steady_ms(), log.start_offset());
            sub.update(partition, |table| {
                for (grant, exists) in &unused {
                    if !*exists && (grant.offset < start || damaged) {
                        table.forget(grant.offset, now);
                    } else {
                        table.release(grant.offset, grant.lease, now);
                    }
                }
            });
        }
        Ok(reply.deliveries.len() - added)
    }

    /// Skips the messages from `from` that a damaged frame makes unreadable, up to where the
    /// log can be read again, so one bad frame does not fail every receive of the
    /// subscription; logged as an error and counted in `wharf_unreadable_messages_total`.
    async fn skip_unreadable(
        &self,
        topic: &Topic,
        sub: &Subscription,
        partition: usize,
        from: u64,
        error: &BrokerError,
    ) -> Result<()> {
        let log = topic.partitions[partition].clone();
        let resume = blocking(move || log.next_readable_after(from)).await?;
        let skipped = sub.update(partition, |table| table.skip_unreadable(from, resume));
        let name = topic.config().name;
        tracing::error!(
            topic = %name,
            subscription = %sub.config.name,
            partition,
            from,
            resume,
            skipped,
            %error,
            "skipping messages the log cannot read"
        );
        telemetry::unreadable(&name, &sub.config.name, skipped);
        Ok(())
    }

    fn delivery(
        &self,
        sub: &Subscription,
        partition: usize,
        grant: Grant,
        message: StoredRecord,
    ) -> Delivery {
        let partition = u32::try_from(partition).unwrap_or(u32::MAX);
        let receipt = self.receipts.encode(ReceiptData {
            subscription_uid: sub.config.uid,
            partition,
            offset: grant.offset,
            lease: grant.lease,
        });
        Delivery {
            receipt,
            partition,
            delivery_attempt: grant.attempt,
            message,
            lease: grant.lease,
        }
    }
}

/// The deliveries of one receive, and the payload bytes it may still gather.
struct Reply {
    deliveries: Vec<Delivery>,
    budget: usize,
}

/// What the lease table needs to know of a record at the head of the log.
fn candidate(sub: &Subscription, record: &StoredRecord) -> Candidate {
    let redriven_for_another = record
        .record
        .headers
        .iter()
        .any(|(name, value)| name == REDRIVE_HEADER && *value != sub.config.name);
    Candidate {
        offset: record.offset,
        key_hash: record.record.key.as_deref().map(key_hash64),
        wanted: !redriven_for_another && sub.config.filter.wants(&record.record.tags),
        not_before_ms: if record.record.scheduled {
            record.record.timestamp_ms
        } else {
            0
        },
    }
}

/// Reads the records of a set of grants: one sequential read per run of consecutive offsets.
async fn read_granted(
    log: crate::storage::PartitionHandle,
    grants: &[Grant],
    max_bytes: usize,
) -> Result<Vec<StoredRecord>> {
    let mut offsets: Vec<u64> = grants.iter().map(|g| g.offset).collect();
    offsets.sort_unstable();
    let mut runs: Vec<(u64, usize)> = Vec::new();
    for offset in offsets {
        match runs.last_mut() {
            Some((first, len)) if *first + *len as u64 == offset => *len += 1,
            _ => runs.push((offset, 1)),
        }
    }
    // From the tail cache when it holds every run (delayed messages at their due time,
    // recent redeliveries), else everything from the files.
    if let Some(records) = read_runs(&runs, max_bytes, |first, len, bytes| {
        Ok(log.read_cached(first, len, bytes))
    })? {
        return Ok(records);
    }
    blocking(move || {
        read_runs(&runs, max_bytes, |first, len, bytes| {
            log.read(first, len, bytes).map(Some)
        })
        .map(Option::unwrap_or_default)
    })
    .await
}

/// Reads each `(first offset, length)` run with `read`, within `max_bytes` in all; `None` as
/// soon as `read` has no answer for a run.
fn read_runs(
    runs: &[(u64, usize)],
    max_bytes: usize,
    mut read: impl FnMut(u64, usize, usize) -> Result<Option<Vec<StoredRecord>>>,
) -> Result<Option<Vec<StoredRecord>>> {
    let mut records = Vec::new();
    let mut bytes = 0usize;
    for &(first, len) in runs {
        if bytes >= max_bytes && !records.is_empty() {
            break;
        }
        let Some(batch) = read(first, len, max_bytes.saturating_sub(bytes).max(1))? else {
            return Ok(None);
        };
        bytes += batch.iter().map(|r| r.record.value.len()).sum::<usize>();
        records.extend(batch.into_iter().filter(|r| r.offset < first + len as u64));
    }
    Ok(Some(records))
}

fn remembered(delivery: &Delivery) -> Remembered {
    Remembered {
        partition: delivery.partition,
        offset: delivery.message.offset,
        lease: delivery.lease,
        attempt: delivery.delivery_attempt,
    }
}

fn next_wake(sub: &Subscription) -> Option<u64> {
    (0..sub.partitions())
        .filter_map(|p| sub.inspect(p, |t| t.next_wake()))
        .min()
}
