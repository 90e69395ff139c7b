//! The client ids of a produce in a cluster: where a message with an id goes (the same
//! partition whatever node takes it), when a leadership may decide on ids (its dedup index
//! holds every id of its log), the claims that make concurrent produces of one id wait for
//! each other, and what a failed write leaves of its ids (see `produce`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Broker, NewMessage, Topic};
use crate::dedup::{Fence, FirstResult};
use crate::error::{BrokerError, Result};
use crate::in_flight::Claims;
use crate::topic::TopicConfig;

/// Longest a produce with client ids waits for a new leadership's dedup index to reach the
/// log's end where the leadership began: the applier runs every
/// [`super::APPLY_EVERY_MS`] on every replica, so this is many rounds; past it the produce is
/// refused (503) rather than decided on an index that may lack ids.
pub const LEADERSHIP_CATCH_UP_MS: u64 = 2_000;

/// A batch's client ids, claimed for its produce.
pub(super) struct ClaimedIds {
    /// The claims: `None` for a batch without ids or a topic that remembers none.
    pub(super) claims: Option<Claims>,
    /// The first results of ids that produces under way stored meanwhile.
    pub(super) stored_meanwhile: HashMap<String, FirstResult>,
    /// The term each partition's writes with ids are bound to ([`Broker::id_terms`]).
    pub(super) terms: BTreeMap<u32, u64>,
}

impl Broker {
    /// Claims a batch's client ids when its topic remembers ids ([`claim_ids`]) and, holding
    /// claims, finds the term each of their partitions is led in.
    pub(super) async fn claim_batch_ids(
        &self,
        open: &Topic,
        config: &TopicConfig,
        messages: &[NewMessage],
    ) -> Result<ClaimedIds> {
        let (claims, stored_meanwhile) = match config.dedup_window_ms {
            0 => (None, HashMap::new()),
            _ => claim_ids(open, messages).await,
        };
        let terms = match claims.is_some() {
            true => self.id_terms(open, messages).await?,
            false => BTreeMap::new(),
        };
        Ok(ClaimedIds {
            claims,
            stored_meanwhile,
            terms,
        })
    }

    /// The partition of `topic` a message with `key` and client `id` goes to whatever node
    /// takes it, if that is fixed: its key's, or in a cluster the id's for an unkeyed
    /// message when the topic remembers ids (so every attempt of one id meets one leader);
    /// `None` when it may go to any.
    pub fn partition_for_message(
        &self,
        topic: &str,
        key: Option<&str>,
        id: Option<&str>,
    ) -> Result<Option<u32>> {
        let open = self.topic(topic)?;
        let config = open.config();
        let message = NewMessage {
            key: key.map(str::to_owned),
            id: id.map(str::to_owned),
            ..NewMessage::default()
        };
        let remembers_ids = config.dedup_window_ms > 0;
        Ok(match key {
            Some(key) => Some(open.partitioner.choose(Some(key), config.partitions)),
            None => id_partition(&open, &message, config.partitions, remembers_ids),
        })
    }

    /// For each replicated partition that `messages` with client ids go to, the Raft term
    /// this node leads it in once its dedup index holds every id its log does
    /// ([`Broker::ids_ready`]).
    pub(super) async fn id_terms(
        &self,
        open: &Topic,
        messages: &[NewMessage],
    ) -> Result<BTreeMap<u32, u64>> {
        let partitions = open.config().partitions;
        let with_ids: BTreeSet<u32> = messages
            .iter()
            .filter(|m| m.id.is_some())
            .filter_map(|m| id_partition(open, m, partitions, true))
            .collect();
        let mut terms = BTreeMap::new();
        for partition in with_ids {
            if open.partitions[partition as usize].is_replicated() {
                terms.insert(partition, self.ids_ready(open, partition).await?);
            }
        }
        Ok(terms)
    }

    /// The term this node leads `partition` in, once its dedup index has applied the log up
    /// to where this leadership began (every entry of earlier terms is applied by then, see
    /// [`Broker::lead`]): `NotLeader` when another node leads it (or this leadership is too
    /// new); `Overloaded` when the index is not there within [`LEADERSHIP_CATCH_UP_MS`].
    /// Entries this node writes in the term come from its own produces, which its memory
    /// holds until the index has them.
    async fn ids_ready(&self, open: &Topic, partition: u32) -> Result<u64> {
        let term = match self.lead(open, partition as usize) {
            super::live_tables::Lead::Leader(term) => term,
            super::live_tables::Lead::Single => return Ok(0),
            super::live_tables::Lead::Other(leader) => {
                return Err(BrokerError::NotLeader {
                    what: format!("topic '{}' partition {partition}", open.config().name),
                    leader,
                });
            }
        };
        let ready = &open.ids_ready[partition as usize];
        if ready.load(Ordering::Acquire) == term {
            return Ok(term);
        }
        let began = open.partitions[partition as usize].end_position();
        let wait = Duration::from_millis(LEADERSHIP_CATCH_UP_MS);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let applied = open.tables_applied.notified();
            tokio::pin!(applied);
            applied.as_mut().enable();
            if open.dedup.position(partition)? >= Some(began) {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(BrokerError::Overloaded {
                    resource: "dedup index (a new leader applying its log)",
                    retry_after_ms: super::APPLY_EVERY_MS,
                });
            }
            let _timed_out = tokio::time::timeout_at(deadline, applied).await;
        }
        open.dedup.drop_fenced_before(partition, term);
        ready.fetch_max(term, Ordering::AcqRel);
        Ok(term)
    }

    /// The ids of `kept` (id, partition) whose partition's write failed: on a replicated
    /// partition left pending, fenced where their records would be if stored after all
    /// ([`unresolved`]); on a local log let go of (nothing was stored).
    pub(super) fn leave_pending(
        &self,
        open: &Topic,
        kept: &[(String, u32)],
        failed: &BTreeSet<u32>,
        terms: &BTreeMap<u32, u64>,
    ) {
        for &partition in failed {
            let ids = kept.iter().filter(|(_, p)| *p == partition);
            let ids = ids.map(|(id, _)| id.as_str());
            unresolved(open, partition, terms.get(&partition).copied(), ids);
        }
    }
}

/// The ids of `partition` whose write (bound to `term`, if replicated) just failed: on a
/// replicated partition left pending, fenced within the entries this node's log holds now (a
/// replica this node no longer holds, or a term it does not know, leaves nothing to wait for:
/// it does not lead the partition then); on a local log let go of, as its writer answers a
/// failure only for a write that stored nothing.
pub(super) fn unresolved<'a>(
    open: &Topic,
    partition: u32,
    term: Option<u64>,
    ids: impl IntoIterator<Item = &'a str>,
) {
    if !open.partitions[partition as usize].is_replicated() {
        open.dedup.release(ids);
        return;
    }
    let view = open.groups.get(partition as usize).and_then(|g| g.view());
    let fence = Fence {
        partition,
        term: term.or(view.map(|v| v.term)).unwrap_or(0),
        last_index: view.and_then(|v| v.last_index),
        resolve_at: None,
    };
    open.dedup.unresolved(ids, fence);
}

/// The partition a message goes to whatever node takes it, if that is fixed: its key's, or
/// on a replicated topic that remembers ids, an unkeyed message's id's.
pub(super) fn id_partition(
    open: &Topic,
    message: &NewMessage,
    partitions: u32,
    remembers_ids: bool,
) -> Option<u32> {
    match (&message.key, &message.id) {
        (Some(key), _) => Some(open.partitioner.choose(Some(key), partitions)),
        (None, Some(id)) if remembers_ids && open.partitions.first()?.is_replicated() => {
            Some(open.partitioner.choose(Some(id), partitions))
        }
        _ => None,
    }
}
/// Claims the client ids of a batch on its topic, first waiting out the produces of the same
/// ids under way: returns the claims (`None` for a batch without ids) and the first results
/// of the ids those produces stored meanwhile.
pub(super) async fn claim_ids(
    open: &Topic,
    messages: &[NewMessage],
) -> (Option<Claims>, HashMap<String, FirstResult>) {
    let ids: BTreeSet<&str> = messages.iter().filter_map(|m| m.id.as_deref()).collect();
    let mut stored = HashMap::new();
    if ids.is_empty() {
        return (None, stored);
    }
    loop {
        let unknown = ids.iter().copied().filter(|id| !stored.contains_key(*id));
        match open.in_flight.claim(unknown) {
            Ok(claims) => return (Some(claims), stored),
            Err(busy) => {
                let id = busy.id.clone();
                if let Some(first) = busy.outcome().await {
                    stored.insert(id, first);
                }
            }
        }
    }
}

pub(super) fn resolve(claims: Option<&Claims>, id: &str, first: FirstResult) {
    if let Some(claims) = claims {
        claims.resolve(id, first);
    }
}
