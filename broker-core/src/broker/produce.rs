//! Producing: validate the whole batch, claim its client ids (waiting out produces of the same
//! ids under way), answer repeated ids from the dedup index, write delayed messages' scheduled
//! events, route the rest to their partitions (one batch per partition writer), and answer
//! in request order. Every durable change is in the partition logs when the reply comes; the
//! dedup index and the schedule in sled follow in the background (`tables`), so no produce
//! waits for a sled write or flush.
//!
//! In a cluster a message with a client id goes to the partition its key hashes to, or its id
//! when it has no key, so every attempt of one id meets the same partition's leader, which
//! alone decides. That leader's index holds every id its log does: a leadership takes ids only
//! once its index has applied the log up to where the leadership began (every entry of an
//! earlier term is applied by then: [`super::live_tables`]), every replica derives ids from
//! its log (`tables`), and every write with ids is bound to the term of that leadership
//! ([`crate::storage::ProposalSlot::term`]). An id then appears once in a leader's log, and so
//! once in the committed log, which is a prefix of some leader's (Raft's log matching). A
//! write that fails leaves its ids pending ([`crate::dedup::Fence`]): a retry is refused with
//! [`BrokerError::OutcomePending`] until the record is known stored or known not to be. A
//! produce with ids runs to its end on its own task, so a caller that goes away (a client
//! that timed out, a forwarding node that gave up) never ends its claims mid-write.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures_util::future::try_join_all;

use super::produce_ids::resolve;
use super::produce_plan::{Plan, Stamp, plan, produced};
use super::produce_writes::Unwritten;
use super::{AckMode, Broker, Delay, Durability, NewMessage, ProduceOutcome, Produced, Topic};
use crate::clock::{now_ms, steady_ms};
use crate::config::FsyncPolicy;
use crate::dedup::FirstResult;
use crate::error::{BrokerError, Result};
use crate::in_flight::Claims;
use crate::limits::{
    MAX_BATCH_MESSAGES, MAX_HEADER_BYTES, MAX_HEADERS, MAX_ID_BYTES, MAX_KEY_BYTES,
};
use crate::message::{Origin, Record};
use crate::storage::AppendResult;
use crate::tags;

impl Broker {
    /// Stores a batch of 1..=1000 messages. Every message is checked before any is written, so
    /// bad input changes nothing. A message with a client `id` seen within the topic's dedup
    /// window is not stored again: its entry repeats the first result, marked `duplicate`;
    /// one produced concurrently is stored once, the other produce answering with the first
    /// result once it is known (or storing it itself if the first produce failed).
    /// Delayed messages go on the schedule and get no offset until due; their scheduled
    /// events are durable when the reply comes, whatever the ack mode. With `AckMode::None`
    /// the reply comes once the rest of the batch is queued and carries no offsets; its ids
    /// count as produced once written (a produce of one of them meanwhile waits for the
    /// write), and not at all if the write fails. If one partition's
    /// writer refuses its share (overload) after another took its own, the error is returned
    /// and the taken share stays stored: producers retry, consumers see it at least once.
    pub async fn produce(
        &self,
        topic: &str,
        messages: Vec<NewMessage>,
        ack: AckMode,
    ) -> Result<ProduceOutcome> {
        self.produce_from(topic, messages, ack, None).await
    }

    /// [`Broker::produce`], recording who produced the batch: every record it stores shares
    /// `origin` (the log keeps it once per run of records, see [`Record::origin`]). A batch
    /// with client ids is produced on a task of its own, to its end even if this future is
    /// dropped.
    pub async fn produce_from(
        &self,
        topic: &str,
        messages: Vec<NewMessage>,
        ack: AckMode,
        origin: Option<Arc<Origin>>,
    ) -> Result<ProduceOutcome> {
        if messages.iter().all(|m| m.id.is_none()) {
            return self.produce_whole(topic, messages, ack, origin).await;
        }
        let broker = self.me.upgrade().ok_or(BrokerError::ShuttingDown)?;
        let topic = topic.to_owned();
        let whole =
            tokio::spawn(async move { broker.produce_whole(&topic, messages, ack, origin).await });
        whole
            .await
            .map_err(|error| super::join_error("producing", &error))?
    }

    /// [`Broker::produce_from`] on the caller's task.
    async fn produce_whole(
        &self,
        topic: &str,
        messages: Vec<NewMessage>,
        ack: AckMode,
        origin: Option<Arc<Origin>>,
    ) -> Result<ProduceOutcome> {
        self.check_running()?;
        self.disk.check()?;
        let open = self.topic(topic)?;
        let config = open.config();
        let nearby = self.unkeyed_partitions(&open);
        let (now, steady) = (now_ms(), steady_ms());
        check(
            &messages,
            config.max_message_bytes,
            now,
            self.config.max_delay_ms,
        )?;
        let claimed = self.claim_batch_ids(&open, &config, &messages).await?;
        let stamp = Stamp {
            now,
            steady,
            origin,
        };
        let plan = plan(&open, &config, &nearby, messages, &claimed, &stamp)?;
        let kept = reserve_ids(&open, &plan, now).await?;
        let stored_bytes = plan.stored_bytes();
        let written = self
            .write_batch(&open, plan.shares, plan.scheduled, ack, &claimed.terms)
            .await;
        let (bases, proofs, writes, failed) = match written {
            Ok(written) => written,
            Err(Unwritten(error)) => {
                open.dedup.release(kept.iter().map(|(id, _)| id.as_str()));
                return Err(error);
            }
        };
        let durability = match ack {
            AckMode::None => Durability::None,
            AckMode::Leader | AckMode::All => self.durability(&proofs),
        };
        let produced: Vec<Produced> = plan
            .ids
            .into_iter()
            .zip(plan.placements)
            .map(|(id, placement)| produced(id, placement, &bases))
            .collect();
        let claims = claimed.claims.as_ref();
        if let Some(failure) = failed {
            self.leave_pending(&open, &kept, &failure.partitions, &claimed.terms);
            let remember = &plan.remember;
            remember_stored(
                &open,
                &produced,
                remember,
                &failure.partitions,
                ack,
                now,
                claims,
            );
            return Err(failure.error);
        }
        let unwritten = remember_written(&open, &produced, plan.remember, ack, now, claims);
        if !unwritten.is_empty() {
            tokio::spawn(super::detached::record_when_written(
                Arc::clone(&open),
                writes,
                unwritten,
                claimed.terms,
                claimed.claims,
            ));
        }
        let stored: Vec<&Produced> = produced.iter().filter(|p| !p.duplicate).collect();
        open.counters.produced(topic, stored.len(), stored_bytes);
        Ok(ProduceOutcome {
            messages: produced,
            durability,
        })
    }

    /// Checks a batch as [`Broker::produce`] would before writing anything (its size and
    /// every message), writing nothing: a batch split over several leaders is checked whole
    /// before any part is sent.
    pub fn check_batch(&self, topic: &str, messages: &[NewMessage]) -> Result<()> {
        let open = self.topic(topic)?;
        let config = open.config();
        check(
            messages,
            config.max_message_bytes,
            now_ms(),
            self.config.max_delay_ms,
        )
    }

    /// The partition [`Broker::produce`] puts a message with `key` in: the same on every node
    /// (a stable hash of the key over the topic's partitions).
    pub fn partition_for_key(&self, topic: &str, key: &str) -> Result<u32> {
        let open = self.topic(topic)?;
        Ok(open.partitioner.choose(Some(key), open.config().partitions))
    }

    /// Appends each partition's share as one batch and waits for the writes; returns each
    /// partition's base offset (`None` for an empty share) and what each write achieved.
    pub(super) async fn append_shares(
        &self,
        open: &Topic,
        shares: Vec<Vec<Record>>,
    ) -> Result<(Vec<Option<u64>>, Vec<AppendResult>)> {
        let mut bases = vec![None; shares.len()];
        let appends = routed(shares).into_iter().map(|(partition, share)| {
            let log = open.partitions[partition as usize].clone();
            async move { log.append(share).await.map(|result| (partition, result)) }
        });
        let mut proofs = Vec::new();
        for (partition, result) in try_join_all(appends).await? {
            bases[partition as usize] = Some(result.base_offset);
            proofs.push(result);
        }
        Ok((bases, proofs))
    }

    /// What an answer after these writes proves: the weakest of them.
    pub(super) fn durability(&self, proofs: &[AppendResult]) -> Durability {
        let all_fsynced = !proofs.is_empty() && proofs.iter().all(|p| p.fsynced);
        let fsynced = all_fsynced || self.config.log.fsync == FsyncPolicy::Always;
        let replicated = !proofs.is_empty() && proofs.iter().all(|p| p.replicated);
        if replicated {
            return match fsynced {
                true => Durability::ReplicatedFsynced,
                false => Durability::Replicated,
            };
        }
        if fsynced {
            Durability::LeaderFsynced
        } else {
            Durability::LeaderWritten
        }
    }
}

/// The non-empty shares, with their partitions.
pub(super) fn routed(shares: Vec<Vec<Record>>) -> Vec<(u32, Vec<Record>)> {
    (0u32..)
        .zip(shares)
        .filter(|(_, share)| !share.is_empty())
        .collect()
}

/// Reserves the remembered client ids `plan` stores in the dedup index, once it has room:
/// returns them, each with its partition.
async fn reserve_ids(open: &Topic, plan: &Plan, now: u64) -> Result<Vec<(String, u32)>> {
    let kept = plan.kept_ids();
    if !kept.is_empty() {
        super::tables::wait_for_room(open, || open.dedup.check_room()).await?;
        open.dedup
            .reserve(kept.iter().map(|(id, _)| id.as_str()), now);
    }
    Ok(kept)
}

/// After a write failed in the `failed` partitions: remembers the first results of the
/// remembered ids stored elsewhere (with `ack=none` only the delayed ones, whose scheduled
/// events were written), resolving their claims.
fn remember_stored(
    open: &Topic,
    produced: &[Produced],
    remember: &[bool],
    failed: &BTreeSet<u32>,
    ack: AckMode,
    now: u64,
    claims: Option<&Claims>,
) {
    let stored = produced
        .iter()
        .zip(remember)
        .filter(|(p, kept)| **kept && !failed.contains(&p.partition));
    let firsts: Vec<_> = stored
        .map(|(p, _)| (p.id.as_str(), first_result(p, now)))
        .filter(|(_, first)| ack != AckMode::None || first.deliver_at_ms.is_some())
        .collect();
    open.dedup.remember(&firsts);
    for (id, first) in &firsts {
        resolve(claims, id, *first);
    }
}

/// After the writes: remembers the first results of the remembered ids written, resolving
/// their claims; returns those of the ids only queued (`ack=none`), to record once written.
fn remember_written(
    open: &Topic,
    produced: &[Produced],
    remember: Vec<bool>,
    ack: AckMode,
    now: u64,
    claims: Option<&Claims>,
) -> Vec<(String, FirstResult)> {
    let (unwritten, firsts): (Vec<_>, Vec<_>) = produced
        .iter()
        .zip(remember)
        .filter(|(_, remember)| *remember)
        .map(|(p, _)| (p.id.as_str(), first_result(p, now)))
        .partition(|(_, first)| ack == AckMode::None && first.deliver_at_ms.is_none());
    if !firsts.is_empty() {
        open.dedup.remember(&firsts);
    }
    for (id, first) in &firsts {
        resolve(claims, id, *first);
    }
    let unwritten = unwritten.into_iter().map(|(id, f)| (id.to_owned(), f));
    unwritten.collect()
}

fn first_result(produced: &Produced, now: u64) -> FirstResult {
    FirstResult {
        produced_ms: now,
        partition: produced.partition,
        offset: produced.offset,
        deliver_at_ms: produced.deliver_at_ms,
    }
}

/// When a delayed message is due, on the steady clock ([`crate::clock::steady_ms`], `steady`
/// now): `delay_ms` after now, or `deliver_at_ms` as far ahead as it is of the wall clock
/// (`now`). Timed on the steady clock, a step of the wall clock after the produce makes no
/// message due early (or late).
pub(super) fn due(delay: Delay, now: u64, steady: u64) -> u64 {
    match delay {
        Delay::AfterMs(ms) => steady.saturating_add(ms),
        Delay::AtMs(at) => steady.saturating_add(at.saturating_sub(now)),
    }
}

/// A batch's size, then each of its messages.
fn check(
    messages: &[NewMessage],
    max_message_bytes: usize,
    now: u64,
    max_delay_ms: u64,
) -> Result<()> {
    if messages.is_empty() || messages.len() > MAX_BATCH_MESSAGES {
        return Err(BrokerError::invalid(
            "messages",
            format!(
                "a batch holds 1 to {MAX_BATCH_MESSAGES} messages, got {}",
                messages.len()
            ),
        ));
    }
    messages
        .iter()
        .try_for_each(|message| validate(message, max_message_bytes, now, max_delay_ms))
}

fn validate(
    message: &NewMessage,
    max_message_bytes: usize,
    now: u64,
    max_delay_ms: u64,
) -> Result<()> {
    if message.value.len() > max_message_bytes {
        return Err(BrokerError::MessageTooLarge {
            size: message.value.len(),
            limit: max_message_bytes,
        });
    }
    if let Some(key) = &message.key
        && (key.is_empty() || key.len() > MAX_KEY_BYTES)
    {
        return Err(BrokerError::invalid(
            "key",
            format!("must be 1 to {MAX_KEY_BYTES} bytes, got {}", key.len()),
        ));
    }
    if let Some(id) = &message.id
        && !valid_id(id)
    {
        return Err(BrokerError::invalid(
            "id",
            format!(
                "must be 1 to {MAX_ID_BYTES} printable ASCII characters without spaces or '/', got {id:?}"
            ),
        ));
    }
    if let Some(delay) = message.delay
        && due(delay, now, now).saturating_sub(now) > max_delay_ms
    {
        let field = match delay {
            Delay::AfterMs(_) => "delay_ms",
            Delay::AtMs(_) => "deliver_at_ms",
        };
        return Err(BrokerError::invalid(
            field,
            format!("at most {max_delay_ms} ms ahead"),
        ));
    }
    let header_bytes: usize = message.headers.iter().map(|(k, v)| k.len() + v.len()).sum();
    if message.headers.len() > MAX_HEADERS || header_bytes > MAX_HEADER_BYTES {
        return Err(BrokerError::invalid(
            "headers",
            format!("at most {MAX_HEADERS} headers and {MAX_HEADER_BYTES} bytes in all"),
        ));
    }
    if message.headers.iter().any(|(name, _)| name.is_empty()) {
        return Err(BrokerError::invalid("headers", "a header name is empty"));
    }
    tags::validate("tags", &message.tags)
}

/// An id asked for in a URL path (a cancel, a trace): `invalid_request` unless [`valid_id`].
pub fn check_path_id(id: &str) -> Result<()> {
    if valid_id(id) {
        return Ok(());
    }
    Err(BrokerError::invalid(
        "id",
        format!("must be 1 to {MAX_ID_BYTES} printable ASCII characters without spaces or '/'"),
    ))
}

/// Message ids travel in URL paths (`DELETE /v1/topics/{topic}/messages/{id}`): printable
/// ASCII without spaces or slashes.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_BYTES
        && id.bytes().all(|b| b.is_ascii_graphic() && b != b'/')
}
