//! One round of a receive: granting leases partition by partition on what a peek at the
//! head of each log found, and reading the granted records into the reply (see `consume`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::consume::REDRIVE_HEADER;
use super::reads::read_range;
use super::{Broker, Delivery, Topic, blocking};
use crate::clock::steady_ms;
use crate::error::{BrokerError, Result};
use crate::limits::MAX_READ_BYTES;
use crate::message::{Origin, StoredRecord};
use crate::partitioner::key_hash64;
use crate::subscription::{Candidate, Grant, LeaseTable, Subscription};
use crate::telemetry;

/// How many times one receive peeks at one partition when everything it peeked was filtered
/// out or held back: bounds the work of one receive on a subscription that skips a lot.
const MAX_PEEKS_PER_PARTITION: usize = 8;

impl Broker {
    /// Grants leases partition by partition and reads the granted records: it peeks at the
    /// records at the head of the log (the filter and key order need their tags and keys),
    /// grants, then reads what redeliveries need. Grants the reply has no room for (it would
    /// pass `max_bytes` of values, itself at most [`MAX_READ_BYTES`]) are released untouched;
    /// grants of records that retention removed meanwhile are forgotten. Dead letters found
    /// on the way are moved.
    /// `ask` is `(max_messages, lease_ms, max_bytes)`; `consumer` is whom the grants' events
    /// name.
    pub(super) async fn lease_and_read(
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
        let damaged = read_redelivered(log, partition, &grants, &mut records, reply.budget).await?;
        let added = reply.deliveries.len();
        let unused = self.fill_reply(sub, partition, grants, records, reply);
        if !unused.is_empty() {
            release_unused(sub, partition, log, &unused, damaged);
        }
        Ok(reply.deliveries.len() - added)
    }

    /// Adds the granted records to the reply while its budget lasts (always at least one);
    /// returns the grants left unused, each with whether its record was read.
    fn fill_reply(
        &self,
        sub: &Subscription,
        partition: usize,
        grants: Vec<Grant>,
        mut records: BTreeMap<u64, StoredRecord>,
        reply: &mut Reply,
    ) -> Vec<(Grant, bool)> {
        let mut unused = Vec::new();
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
        unused
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

/// Reads the granted records a peek did not hold (redeliveries) into `records`, within
/// `max_bytes`; returns whether a damaged frame dropped them instead.
async fn read_redelivered(
    log: &crate::storage::PartitionHandle,
    partition: usize,
    grants: &[Grant],
    records: &mut BTreeMap<u64, StoredRecord>,
    max_bytes: usize,
) -> Result<bool> {
    let redelivered: Vec<Grant> = grants
        .iter()
        .filter(|g| !records.contains_key(&g.offset))
        .copied()
        .collect();
    let mut damaged = false;
    if !redelivered.is_empty() {
        match read_granted(log.clone(), &redelivered, max_bytes).await {
            Ok(read) => records.extend(read.into_iter().map(|r| (r.offset, r))),
            Err(error @ BrokerError::Corrupt { .. }) => {
                tracing::error!(%error, partition, "a redelivery met a damaged frame; its messages are dropped");
                damaged = true;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(damaged)
}

/// Gives back grants the reply did not use: forgets those whose record is gone (removed by
/// retention, or dropped with a `damaged` frame), releases the rest untouched.
fn release_unused(
    sub: &Subscription,
    partition: usize,
    log: &crate::storage::PartitionHandle,
    unused: &[(Grant, bool)],
    damaged: bool,
) {
    let (now, start) = (steady_ms(), log.start_offset());
    sub.update(partition, |table| {
        for (grant, exists) in unused {
            if !*exists && (grant.offset < start || damaged) {
                table.forget(grant.offset, now);
            } else {
                table.release(grant.offset, grant.lease, now);
            }
        }
    });
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
