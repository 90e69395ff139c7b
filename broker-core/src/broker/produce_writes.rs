//! The writes of a produce: its scheduled events queued, its shares appended (each bound to
//! its partition's term when it holds client ids), and which writes failed after others may
//! have been made (see `produce`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures_util::future::join_all;

use super::produce::routed;
use super::{AckMode, Broker, Topic};
use crate::error::BrokerError;
use crate::message::Record;
use crate::schedule::Scheduled;
use crate::storage::AppendResult;

/// The writes of a batch: each partition's base offset, what the writes achieved, the
/// detached writes (`ack=none`) and, if some write failed, which.
pub(super) type Written = (
    Vec<Option<u64>>,
    Vec<AppendResult>,
    Vec<super::detached::Write>,
    Option<Failure>,
);

/// Writes of a batch that failed after some were queued: their records may be stored.
pub(super) struct Failure {
    /// The first error, for the reply.
    pub(super) error: BrokerError,
    /// The partitions whose records may or may not be stored.
    pub(super) partitions: BTreeSet<u32>,
}

/// A batch refused before any of its writes was queued: nothing was stored.
pub(super) struct Unwritten(pub(super) BrokerError);

impl Broker {
    /// Queues a batch's scheduled events and appends its shares (each bound to its
    /// partition's term in `terms`), waiting for the writes unless `ack` is none.
    pub(super) async fn write_batch(
        &self,
        open: &Arc<Topic>,
        shares: Vec<Vec<Record>>,
        scheduled: Vec<Scheduled>,
        ack: AckMode,
        terms: &BTreeMap<u32, u64>,
    ) -> std::result::Result<Written, Unwritten> {
        let mut touched: BTreeSet<u32> = scheduled.iter().map(|s| s.partition).collect();
        let schedule_writes = match scheduled.is_empty() {
            true => None,
            false => {
                super::tables::wait_for_room(open, || open.delays.check_room())
                    .await
                    .map_err(Unwritten)?;
                Some(
                    self.queue_schedule(open, scheduled, terms)
                        .map_err(Unwritten)?,
                )
            }
        };
        let scheduled_partitions = touched.clone();
        let share_partitions: BTreeSet<u32> = (0u32..)
            .zip(&shares)
            .filter(|(_, share)| !share.is_empty())
            .map(|(partition, _)| partition)
            .collect();
        touched.extend(&share_partitions);
        let mut failure: Option<Failure> = None;
        let mut fail = |error: BrokerError, partitions: &BTreeSet<u32>| match &mut failure {
            Some(failure) => failure.partitions.extend(partitions),
            None => {
                failure = Some(Failure {
                    error,
                    partitions: partitions.clone(),
                });
            }
        };
        let (bases, mut proofs, writes) = match ack {
            AckMode::None => match self.append_detached(open, shares) {
                Ok(writes) => (vec![None; open.partitions.len()], Vec::new(), writes),
                Err(error) if schedule_writes.is_none() => return Err(Unwritten(error)),
                Err(error) => {
                    fail(error, &share_partitions);
                    (vec![None; open.partitions.len()], Vec::new(), Vec::new())
                }
            },
            AckMode::Leader | AckMode::All => {
                let (bases, proofs, failed) = self.append_each(open, shares, terms).await;
                for (partition, error) in failed {
                    fail(error, &BTreeSet::from([partition]));
                }
                (bases, proofs, Vec::new())
            }
        };
        if let Some(schedule_writes) = schedule_writes {
            let written = schedule_writes
                .await
                .map_err(|error| super::join_error("writing scheduled events", &error))
                .and_then(|written| written);
            match written {
                Ok(written) => proofs.extend(written),
                Err(error) => fail(error, &scheduled_partitions),
            }
        }
        Ok((bases, proofs, writes, failure))
    }

    /// Appends each partition's share as one batch (bound to its term in `terms`) and waits
    /// for every write; returns each partition's base offset (`None` for an empty or failed
    /// share), what the writes that succeeded achieved, and the failures.
    async fn append_each(
        &self,
        open: &Topic,
        shares: Vec<Vec<Record>>,
        terms: &BTreeMap<u32, u64>,
    ) -> (Vec<Option<u64>>, Vec<AppendResult>, Vec<(u32, BrokerError)>) {
        let mut bases = vec![None; shares.len()];
        let appends = routed(shares).into_iter().map(|(partition, share)| {
            let log = open.partitions[partition as usize].clone();
            let term = terms.get(&partition).copied();
            async move { (partition, log.append_in_term(share, term).await) }
        });
        let mut proofs = Vec::new();
        let mut failed = Vec::new();
        for (partition, result) in join_all(appends).await {
            match result {
                Ok(result) => {
                    bases[partition as usize] = Some(result.base_offset);
                    proofs.push(result);
                }
                Err(error) => failed.push((partition, error)),
            }
        }
        (bases, proofs, failed)
    }
}
