//! Fire-and-forget produces (`ack=none`): the reply comes once the records are queued, so
//! what follows their writes happens here, after the reply: their client ids are remembered
//! once written, and not at all if the write fails, so a retry after a failed write stores the
//! message instead of being told it is a duplicate (the dedup index derives ids from the log,
//! which has only the records that were written).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tokio::sync::oneshot;

use super::{Broker, Topic};
use crate::dedup::FirstResult;
use crate::error::Result;
use crate::in_flight::Claims;
use crate::message::Record;
use crate::storage::AppendResult;

/// The outcome of one partition's detached write, when the writer has it.
pub(super) type Write = (u32, oneshot::Receiver<Result<AppendResult>>);

impl Broker {
    /// Queues each partition's share as one batch without waiting for the writes; returns
    /// where each write's outcome will come. The records stay charged to the memory budget
    /// until written.
    pub(super) fn append_detached(
        &self,
        open: &Topic,
        shares: Vec<Vec<Record>>,
    ) -> Result<Vec<Write>> {
        let mut writes = Vec::new();
        for (partition, share) in super::produce::routed(shares) {
            let held = match self.memory.get() {
                Some(budget) => Some(
                    budget
                        .try_charge(crate::storage::batch_bytes(&share))
                        .ok_or_else(super::reads::memory_overloaded)?,
                ),
                None => None,
            };
            let (done, write) = oneshot::channel();
            open.partitions[partition as usize].append_detached_holding(share, held, Some(done))?;
            writes.push((partition, write));
        }
        Ok(writes)
    }
}

/// Waits for detached writes, then records the first results of the ids whose partition's
/// write succeeded, leaves those of failed writes pending (their records may be stored after
/// all: `produce`), and only then ends the produce's claims: a produce of one of these ids
/// meanwhile waits, and gets the first result, or is refused until a failed write's outcome
/// is known.
pub(super) async fn record_when_written(
    topic: Arc<Topic>,
    writes: Vec<Write>,
    firsts: Vec<(String, FirstResult)>,
    terms: BTreeMap<u32, u64>,
    claims: Option<Claims>,
) {
    let mut written = Vec::new();
    let mut failed = BTreeSet::new();
    for (partition, write) in writes {
        match write.await {
            Ok(Ok(_)) => written.push(partition),
            Ok(Err(error)) => {
                tracing::warn!(%error, partition, "a fire-and-forget append failed");
                failed.insert(partition);
            }
            Err(_) => {
                tracing::error!(
                    partition,
                    "a partition writer dropped a fire-and-forget append"
                );
                failed.insert(partition);
            }
        }
    }
    for &partition in &failed {
        let ids = firsts.iter().filter(|(_, f)| f.partition == partition);
        let term = terms.get(&partition).copied();
        super::produce_ids::unresolved(&topic, partition, term, ids.map(|(id, _)| id.as_str()));
    }
    let firsts: Vec<(&str, FirstResult)> = firsts
        .iter()
        .filter(|(_, first)| written.contains(&first.partition))
        .map(|(id, first)| (id.as_str(), *first))
        .collect();
    if firsts.is_empty() {
        return;
    }
    topic.dedup.remember(&firsts);
    if let Some(claims) = &claims {
        for (id, first) in firsts {
            claims.resolve(id, first);
        }
    }
}
