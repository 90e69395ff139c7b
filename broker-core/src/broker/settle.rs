//! Settling by receipt: ack, nack and extend. Acks and nacks are events in the partition log
//! (see `subscription`): the answer waits until they are committed per the fsync policy, and
//! the settles of many requests share the writer's group commit. Extends live in memory.

use std::collections::BTreeMap;

use super::{Broker, ReceiptFailure, SettleOutcome, Topic};
use crate::clock::steady_ms;
use crate::error::{BrokerError, Result};
use crate::limits::MAX_RECEIPTS;
use crate::message::Origin;
use crate::storage::{PartitionHandle, PendingAppend};
use crate::subscription::config::validate_ack_timeout;
use crate::subscription::events::SubscriptionEvent;
use crate::subscription::lease_table::{EntryState, Stale};
use crate::subscription::{LeaseTable, ReceiptData, Subscription};
use crate::telemetry::SettleAction;

/// What a settle does to one leased offset.
#[derive(Debug, Clone, Copy)]
enum Settle<'a> {
    Ack,
    Nack {
        delay_ms: Option<u64>,
        error: Option<&'a str>,
    },
    Extend {
        lease_ms: u64,
    },
}

/// Longest `delay_ms` a nack may ask for: as long as the longest backoff.
pub const MAX_NACK_DELAY_MS: u64 = crate::subscription::config::MAX_BACKOFF_CEILING_MS;

impl Broker {
    /// Acks deliveries by receipt. Receipts that are malformed, of another subscription, or
    /// whose lease has ended are reported in `failed` and change nothing.
    pub async fn ack(
        &self,
        topic: &str,
        subscription: &str,
        receipts: &[String],
    ) -> Result<SettleOutcome> {
        self.ack_from(topic, subscription, receipts, None).await
    }

    /// [`Broker::ack`] by `consumer`, whom the `acked` events name for the message trace.
    pub async fn ack_from(
        &self,
        topic: &str,
        subscription: &str,
        receipts: &[String],
        consumer: Option<&Origin>,
    ) -> Result<SettleOutcome> {
        self.settle(topic, subscription, receipts, Settle::Ack, consumer)
            .await
    }

    /// Ends leases early: the messages come back after `delay_ms`, or after the retry backoff.
    pub async fn nack(
        &self,
        topic: &str,
        subscription: &str,
        receipts: &[String],
        delay_ms: Option<u64>,
        error: Option<&str>,
    ) -> Result<SettleOutcome> {
        self.nack_from(topic, subscription, receipts, (delay_ms, error), None)
            .await
    }

    /// [`Broker::nack`] (`delay_ms` and `error` as `nack`'s) by `consumer`, whom the `nacked`
    /// events name for the message trace.
    pub async fn nack_from(
        &self,
        topic: &str,
        subscription: &str,
        receipts: &[String],
        (delay_ms, error): (Option<u64>, Option<&str>),
        consumer: Option<&Origin>,
    ) -> Result<SettleOutcome> {
        if let Some(delay) = delay_ms {
            crate::limits::check_range("delay_ms", delay, 0, MAX_NACK_DELAY_MS)?;
        }
        let outcome = self
            .settle(
                topic,
                subscription,
                receipts,
                Settle::Nack { delay_ms, error },
                consumer,
            )
            .await?;
        let open = self.topic(topic)?;
        let sub = self.subscription_in(&open, subscription)?;
        for partition in 0..sub.partitions() {
            if self.serve_partition(&open, &sub, partition).await? {
                self.move_dead_letters(&open, &sub, partition).await?;
            }
        }
        open.on_commit.notify_waiters();
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
        self.extend_from(topic, subscription, receipts, ack_timeout_ms, None)
            .await
    }

    /// [`Broker::extend`] by `consumer`, whom a cluster's `leased` events of the new leases
    /// name (a single node records no event for an extend).
    pub async fn extend_from(
        &self,
        topic: &str,
        subscription: &str,
        receipts: &[String],
        ack_timeout_ms: u64,
        consumer: Option<&Origin>,
    ) -> Result<SettleOutcome> {
        let lease_ms = validate_ack_timeout("ack_timeout_ms", ack_timeout_ms)?;
        self.settle(
            topic,
            subscription,
            receipts,
            Settle::Extend { lease_ms },
            consumer,
        )
        .await
    }

    /// Settles receipts of one subscription by `action`, partition by partition; acks and
    /// nacks answer once their events are durable.
    async fn settle(
        &self,
        topic: &str,
        subscription: &str,
        receipts: &[String],
        action: Settle<'_>,
        consumer: Option<&Origin>,
    ) -> Result<SettleOutcome> {
        self.check_running()?;
        check_receipt_count(receipts)?;
        let open = self.topic(topic)?;
        let sub = self.subscription_in(&open, subscription)?;
        let mut outcome = SettleOutcome::default();
        let by_partition = self.by_partition(&sub, receipts, &mut outcome);
        let now = steady_ms();
        let mut pending = Vec::new();
        for partition in by_partition.keys() {
            self.require_partition(&open, &sub, *partition).await?;
        }
        for (partition, items) in by_partition {
            let log = &open.partitions[partition];
            let results = match action {
                Settle::Extend { lease_ms } => {
                    let extend = (now, lease_ms);
                    let (results, append) =
                        extend_leases(&sub, partition, log, &items, extend, consumer)?;
                    pending.extend(append);
                    results
                }
                _ => {
                    let (results, append) = sub.change_durably(partition, log, |table| {
                        let settle = (action, consumer, now);
                        settle_durably(&sub, partition, table, &items, settle)
                    })?;
                    pending.extend(append);
                    results
                }
            };
            tally(&mut outcome, results);
        }
        // The answer waits for the events to be durable per the fsync policy; settles of
        // many requests share the writer's group commit.
        for append in pending {
            append.wait().await?;
        }
        if outcome.succeeded > 0 {
            note_settled(
                &open,
                &sub,
                (topic, subscription),
                action,
                outcome.succeeded,
            );
        }
        Ok(outcome)
    }

    /// The receipts of `sub` sorted by partition, each with what it decodes to; the rest
    /// (malformed, of another subscription or partition) go into `outcome` as failed.
    fn by_partition<'r>(
        &self,
        sub: &Subscription,
        receipts: &'r [String],
        outcome: &mut SettleOutcome,
    ) -> BTreeMap<usize, Vec<(&'r String, ReceiptData)>> {
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
        by_partition
    }

    /// For each receipt, whether its lease still holds (not acked, nacked, or expired): what a
    /// stream counts as its messages in flight.
    pub fn still_leased(
        &self,
        topic: &str,
        subscription: &str,
        receipts: &[String],
    ) -> Result<Vec<bool>> {
        let open = self.topic(topic)?;
        let sub = self.subscription_in(&open, subscription)?;
        let now = steady_ms();
        Ok(receipts
            .iter()
            .map(|receipt| {
                self.receipts.decode(receipt).is_some_and(|data| {
                    data.subscription_uid == sub.config.uid
                        && (data.partition as usize) < sub.partitions()
                        && sub.inspect(data.partition as usize, |t| {
                            t.is_leased(data.offset, data.lease, now)
                        })
                })
            })
            .collect())
    }
}

/// Refuses a settle of no receipts or of more than [`MAX_RECEIPTS`].
fn check_receipt_count(receipts: &[String]) -> Result<()> {
    if receipts.is_empty() || receipts.len() > MAX_RECEIPTS {
        return Err(BrokerError::invalid(
            "receipts",
            format!(
                "must hold 1 to {MAX_RECEIPTS} receipts, got {}",
                receipts.len()
            ),
        ));
    }
    Ok(())
}

/// Extends the leases of one partition's receipts to `lease_ms` from `now`, `(now, lease_ms)`;
/// returns each receipt's result and the append recording the new leases (in a cluster).
fn extend_leases<'r>(
    sub: &Subscription,
    partition: usize,
    log: &PartitionHandle,
    items: &[(&'r String, ReceiptData)],
    (now, lease_ms): (u64, u64),
    consumer: Option<&Origin>,
) -> Result<(Vec<SettleResult<'r>>, Option<PendingAppend>)> {
    let results = sub.update(partition, |table| {
        items
            .iter()
            .map(|(receipt, data)| {
                (
                    *receipt,
                    table.extend(data.offset, data.lease, now, lease_ms),
                )
            })
            .collect::<Vec<_>>()
    });
    let extended: Vec<u64> = items
        .iter()
        .zip(&results)
        .filter(|(_, (_, result))| result.is_ok())
        .map(|((_, data), _)| data.offset)
        .collect();
    let append = sub.record_leases(partition, log, &extended, consumer)?;
    Ok((results, append))
}

/// Counts each receipt's result in `outcome`: a success, or a failure naming the receipt.
fn tally(outcome: &mut SettleOutcome, results: Vec<SettleResult<'_>>) {
    for (receipt, result) in results {
        match result {
            Ok(()) => outcome.succeeded += 1,
            Err(Stale::NotLeased) => outcome
                .failed
                .push((receipt.clone(), ReceiptFailure::Invalid)),
        }
    }
}

/// Counts `succeeded` settles of `sub`; on a subscription ordered by key, wakes the receivers
/// waiting for work.
fn note_settled(
    open: &Topic,
    sub: &Subscription,
    (topic, subscription): (&str, &str),
    action: Settle<'_>,
    succeeded: usize,
) {
    let action = match action {
        Settle::Ack => SettleAction::Ack,
        Settle::Nack { .. } => SettleAction::Nack,
        Settle::Extend { .. } => SettleAction::Extend,
    };
    sub.counters.settled(topic, subscription, action, succeeded);
    // On an ordered subscription an ack gives the next message of its key its turn:
    // receivers waiting for work must look again.
    if sub.config.ordering == crate::subscription::Ordering::Key {
        open.on_commit.notify_waiters();
    }
}

/// One receipt and what its settle did.
type SettleResult<'r> = (&'r String, std::result::Result<(), Stale>);

/// Acks or nacks the receipts of one partition in its table, `(action, consumer, now)`;
/// returns each receipt's result and the events to record.
fn settle_durably<'r>(
    sub: &Subscription,
    partition: usize,
    table: &mut LeaseTable,
    items: &[(&'r String, ReceiptData)],
    (action, consumer, now): (Settle<'_>, Option<&Origin>, u64),
) -> (Vec<SettleResult<'r>>, Vec<SubscriptionEvent>) {
    let subscription = sub.config.uid;
    let mut events = Vec::new();
    let results = items
        .iter()
        .map(|(receipt, data)| {
            let offset = data.offset;
            let result = match action {
                Settle::Ack => table.ack(offset, data.lease, now).map(|()| {
                    events.push(SubscriptionEvent::Acked {
                        subscription,
                        offset,
                        consumer: consumer.cloned(),
                    })
                }),
                Settle::Nack { delay_ms, error } => table
                    .nack(offset, data.lease, now, delay_ms, &sub.config.retry)
                    .map(|()| {
                        if let Some(error) = error {
                            sub.set_last_error(partition, offset, error);
                        }
                        events.push(nacked(subscription, offset, table, error, consumer));
                    }),
                Settle::Extend { .. } => Err(Stale::NotLeased),
            };
            (*receipt, result)
        })
        .collect();
    (results, events)
}

/// The event of a nack by `consumer`, from the entry the nack left.
fn nacked(
    subscription: u64,
    offset: u64,
    table: &LeaseTable,
    error: Option<&str>,
    consumer: Option<&Origin>,
) -> SubscriptionEvent {
    let entry = table.entry(offset);
    let due_ms = match entry.map(|e| e.state) {
        Some(EntryState::Waiting { due_ms }) => due_ms,
        _ => 0,
    };
    SubscriptionEvent::Nacked {
        subscription,
        offset,
        attempts: entry.map_or(0, |e| e.attempts),
        due_ms,
        key_hash: entry.and_then(|e| e.key_hash),
        error: error.map(str::to_owned),
        consumer: consumer.cloned(),
    }
}
