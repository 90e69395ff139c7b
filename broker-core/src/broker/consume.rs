//! Consuming: long-poll receive with leases, and ack, nack and extend by receipt.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Broker, Delivery, ReceiptFailure, ReceiveRequest, SettleOutcome, Topic, blocking};
use crate::clock::now_ms;
use crate::error::{BrokerError, Result};
use crate::limits::{MAX_READ_BYTES, MAX_RECEIPTS, MAX_RECEIVE_MESSAGES, MAX_WAIT_MS};
use crate::message::StoredRecord;
use crate::subscription::config::validate_ack_timeout;
use crate::subscription::lease_table::Stale;
use crate::subscription::{Grant, ReceiptData, Subscription};

/// What a settle does to one leased offset.
#[derive(Debug, Clone, Copy)]
enum Settle {
    Ack,
    Nack { delay_ms: Option<u64> },
    Extend { lease_ms: u64 },
}

/// Longest `delay_ms` a nack may ask for: as long as the longest backoff.
pub const MAX_NACK_DELAY_MS: u64 = crate::subscription::config::MAX_BACKOFF_CEILING_MS;

impl Broker {
    /// Leases up to `max_messages` messages: due redeliveries first, then new ones, visiting the
    /// partitions in turn. Waits up to `wait_ms` for at least one, woken by commits to the
    /// topic and by retry timers, not by polling.
    pub async fn receive(
        &self,
        topic: &str,
        subscription: &str,
        request: ReceiveRequest,
    ) -> Result<Vec<Delivery>> {
        self.check_running()?;
        if request.max_messages == 0 || request.max_messages > MAX_RECEIVE_MESSAGES {
            return Err(BrokerError::invalid(
                "max_messages",
                format!(
                    "must be 1 to {MAX_RECEIVE_MESSAGES}, got {}",
                    request.max_messages
                ),
            ));
        }
        if request.wait_ms > MAX_WAIT_MS {
            return Err(BrokerError::invalid(
                "wait_ms",
                format!("must be 0 to {MAX_WAIT_MS}, got {}", request.wait_ms),
            ));
        }
        let open = self.topic(topic)?;
        let sub = open.subscription(subscription)?;
        let lease_ms = match request.ack_timeout_ms {
            Some(ms) => validate_ack_timeout("ack_timeout_ms", ms)?,
            None => sub.config.ack_timeout_ms,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_millis(request.wait_ms);
        loop {
            let committed = open.on_commit.notified();
            tokio::pin!(committed);
            committed.as_mut().enable();
            let shutdown = self.shutdown_signal.notified();
            tokio::pin!(shutdown);
            shutdown.as_mut().enable();
            self.check_alive(&open, &sub)?;

            let deliveries = self
                .lease_and_read(&open, &sub, request.max_messages, lease_ms)
                .await?;
            if !deliveries.is_empty() {
                self.persist().await?;
                return Ok(deliveries);
            }
            let now = tokio::time::Instant::now();
            if now >= deadline || self.shutting_down.load(Ordering::SeqCst) {
                return Ok(Vec::new());
            }
            let wake = next_wake(&sub).map_or(deadline, |at_ms| {
                now + Duration::from_millis(at_ms.saturating_sub(now_ms()))
            });
            tokio::select! {
                () = &mut committed => {}
                () = &mut shutdown => {}
                () = tokio::time::sleep_until(wake.min(deadline)) => {}
            }
        }
    }

    /// Acks deliveries by receipt. Receipts that are malformed, of another subscription, or
    /// whose lease has ended are reported in `failed` and change nothing.
    pub async fn ack(
        &self,
        topic: &str,
        subscription: &str,
        receipts: &[String],
    ) -> Result<SettleOutcome> {
        self.settle(topic, subscription, receipts, Settle::Ack)
            .await
    }

    /// Ends leases early: the messages come back after `delay_ms`, or after the retry backoff.
    pub async fn nack(
        &self,
        topic: &str,
        subscription: &str,
        receipts: &[String],
        delay_ms: Option<u64>,
    ) -> Result<SettleOutcome> {
        if let Some(delay) = delay_ms.filter(|d| *d > MAX_NACK_DELAY_MS) {
            return Err(BrokerError::invalid(
                "delay_ms",
                format!("must be 0 to {MAX_NACK_DELAY_MS}, got {delay}"),
            ));
        }
        let outcome = self
            .settle(topic, subscription, receipts, Settle::Nack { delay_ms })
            .await?;
        if let Ok(open) = self.topic(topic) {
            open.on_commit.notify_waiters();
        }
        Ok(outcome)
    }

    /// Extends leases to `ack_timeout_ms` from now.
    pub async fn extend(
        &self,
        topic: &str,
        subscription: &str,
        receipts: &[String],
        ack_timeout_ms: u64,
    ) -> Result<SettleOutcome> {
        let lease_ms = validate_ack_timeout("ack_timeout_ms", ack_timeout_ms)?;
        self.settle(topic, subscription, receipts, Settle::Extend { lease_ms })
            .await
    }

    async fn settle(
        &self,
        topic: &str,
        subscription: &str,
        receipts: &[String],
        action: Settle,
    ) -> Result<SettleOutcome> {
        self.check_running()?;
        if receipts.is_empty() || receipts.len() > MAX_RECEIPTS {
            return Err(BrokerError::invalid(
                "receipts",
                format!(
                    "must hold 1 to {MAX_RECEIPTS} receipts, got {}",
                    receipts.len()
                ),
            ));
        }
        let open = self.topic(topic)?;
        let sub = open.subscription(subscription)?;
        let mut outcome = SettleOutcome::default();
        let mut by_partition: BTreeMap<usize, Vec<(&String, ReceiptData)>> = BTreeMap::new();
        for receipt in receipts {
            match self.receipts.decode(receipt) {
                Some(data)
                    if data.subscription_uid == sub.config.uid
                        && (data.partition as usize) < sub.partitions() =>
                {
                    by_partition
                        .entry(data.partition as usize)
                        .or_default()
                        .push((receipt, data));
                }
                _ => outcome
                    .failed
                    .push((receipt.clone(), ReceiptFailure::Invalid)),
            }
        }
        let now = now_ms();
        let retry = sub.config.retry;
        for (partition, items) in by_partition {
            let results = sub.update(partition, |table| {
                items
                    .iter()
                    .map(|(receipt, data)| {
                        let result = match action {
                            Settle::Ack => table.ack(data.offset, data.lease, now),
                            Settle::Nack { delay_ms } => {
                                table.nack(data.offset, data.lease, now, delay_ms, &retry)
                            }
                            Settle::Extend { lease_ms } => {
                                table.extend(data.offset, data.lease, now, lease_ms)
                            }
                        };
                        (*receipt, result)
                    })
                    .collect::<Vec<_>>()
            })?;
            for (receipt, result) in results {
                match result {
                    Ok(()) => outcome.succeeded += 1,
                    Err(Stale::NotLeased) => outcome
                        .failed
                        .push((receipt.clone(), ReceiptFailure::Invalid)),
                }
            }
        }
        if outcome.succeeded > 0 {
            self.persist().await?;
        }
        Ok(outcome)
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

    /// Grants leases partition by partition and reads the granted records. Grants the reply
    /// has no room for (it would pass [`MAX_READ_BYTES`]) are released untouched; grants of
    /// records that retention removed meanwhile are forgotten.
    async fn lease_and_read(
        &self,
        topic: &Arc<Topic>,
        sub: &Arc<Subscription>,
        max_messages: usize,
        lease_ms: u64,
    ) -> Result<Vec<Delivery>> {
        let mut deliveries = Vec::new();
        let mut budget = MAX_READ_BYTES;
        for partition in sub.visiting_order() {
            let wanted = max_messages - deliveries.len();
            if wanted == 0 {
                break;
            }
            let log = &topic.partitions[partition];
            let (start, end) = (log.start_offset(), log.end_offset());
            let now = now_ms();
            let grants = sub.update(partition, |table| {
                table.grant(
                    now,
                    wanted,
                    start..end,
                    lease_ms,
                    &sub.config.retry,
                    rand::random,
                )
            })?;
            if grants.is_empty() {
                continue;
            }
            let records = read_granted(log.clone(), &grants, budget).await?;
            let mut unused = Vec::new();
            let by_offset: BTreeMap<u64, StoredRecord> =
                records.into_iter().map(|r| (r.offset, r)).collect();
            for grant in grants {
                match by_offset.get(&grant.offset) {
                    Some(record)
                        if budget >= record.record.value.len() || deliveries.is_empty() =>
                    {
                        budget = budget.saturating_sub(record.record.value.len());
                        deliveries.push(self.delivery(sub, partition, grant, record.clone()));
                    }
                    Some(_) => unused.push((grant, true)),
                    None => unused.push((grant, false)),
                }
            }
            if !unused.is_empty() {
                let (now, start) = (now_ms(), log.start_offset());
                sub.update(partition, |table| {
                    for (grant, exists) in &unused {
                        if !*exists && grant.offset < start {
                            table.forget(grant.offset);
                        } else {
                            table.release(grant.offset, grant.lease, now);
                        }
                    }
                })?;
            }
        }
        Ok(deliveries)
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
        }
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
    blocking(move || {
        let mut records = Vec::new();
        let mut bytes = 0usize;
        for (first, len) in runs {
            if bytes >= max_bytes && !records.is_empty() {
                break;
            }
            let batch = log.read(first, len, max_bytes.saturating_sub(bytes).max(1))?;
            bytes += batch.iter().map(|r| r.record.value.len()).sum::<usize>();
            records.extend(batch.into_iter().filter(|r| r.offset < first + len as u64));
        }
        Ok(records)
    })
    .await
}

fn next_wake(sub: &Subscription) -> Option<u64> {
    (0..sub.partitions())
        .filter_map(|p| sub.inspect(p, |t| t.next_wake()))
        .min()
}
