//! Receiving: long-poll receive with leases, repeating a remembered attempt, and waiting
//! between rounds (one round, peeking at the head of each partition, granting and reading
//! what was granted, is in `grants`; settling by receipt is in `settle`).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::reads::read_range;
use super::{Broker, Delivery, ReceiveRequest, Topic};
use crate::clock::steady_ms;
use crate::error::{BrokerError, Result};
use crate::limits::{MAX_READ_BYTES, MAX_RECEIVE_MESSAGES, MAX_WAIT_MS, check_range};
use crate::message::{Origin, StoredRecord};
use crate::subscription::attempts::{MAX_ATTEMPT_ID_LEN, Remembered, valid_attempt_id};
use crate::subscription::config::validate_ack_timeout;
use crate::subscription::{Grant, ReceiptData, Subscription};

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
            check_attempt_id(id)?;
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

            let max_bytes = answer_room(&request)?;
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
                note_delivered(&open, &sub, (topic, subscription), &request, &deliveries);
                return Ok(deliveries);
            }
            let now = tokio::time::Instant::now();
            if now >= deadline || self.shutting_down.load(Ordering::SeqCst) {
                sub.counters.received_at(steady_ms());
                return Ok(Vec::new());
            }
            let wake = wake_at(&sub, now, deadline, max_bytes.is_none());
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

    /// The delivery of a granted record, with the receipt that settles it.
    pub(super) fn delivery(
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

/// Refuses an attempt id that is not 1 to [`MAX_ATTEMPT_ID_LEN`] printable ASCII characters.
fn check_attempt_id(id: &str) -> Result<()> {
    if !valid_attempt_id(id) {
        return Err(BrokerError::invalid(
            "attempt_id",
            format!("must be 1 to {MAX_ATTEMPT_ID_LEN} printable ASCII characters"),
        ));
    }
    Ok(())
}

/// The payload bytes one round of a receive may read: the room reserved in its memory budget
/// (or [`MAX_READ_BYTES`] without one); `None` to wait holding nothing.
fn answer_room(request: &ReceiveRequest) -> Result<Option<usize>> {
    Ok(match &request.memory {
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
    })
}

/// Notes a receive's deliveries: the consumer's activity, the attempt they answer (if named)
/// and the topic's and subscription's counters.
fn note_delivered(
    open: &Topic,
    sub: &Subscription,
    (topic, subscription): (&str, &str),
    request: &ReceiveRequest,
    deliveries: &[Delivery],
) {
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
}

/// When a waiting receive next looks again: at the subscription's next retry or lease expiry,
/// else its deadline; soon when it is `waiting_for_memory`.
fn wake_at(
    sub: &Subscription,
    now: tokio::time::Instant,
    deadline: tokio::time::Instant,
    waiting_for_memory: bool,
) -> tokio::time::Instant {
    let mut wake = next_wake(sub).map_or(deadline, |at_ms| {
        now + Duration::from_millis(at_ms.saturating_sub(steady_ms()))
    });
    if waiting_for_memory {
        wake = wake.min(now + Duration::from_millis(MEMORY_WAIT_RETRY_MS));
    }
    wake
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
