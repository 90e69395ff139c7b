//! Redrive in a cluster. Each partition of the dead-letter topic is redriven by its leader,
//! which reads it from its own replica; the gateway sends a redrive to every leader of the
//! dead-letter topic ([`Broker::redrive_led`]) one after another, each with what is left of
//! the request's count, and sums their answers.
//!
//! - The redriven records go to the source topic's partitions by key, each at that
//!   partition's leader: here, or on another node over the cluster transport
//!   ([`crate::raft::write_at_leader`]), ids and marks as built.
//! - The redrive cursor of a dead-letter partition is an event in that partition's own log,
//!   written by its leader after the records it covers are committed: it is replicated with
//!   the dead letters, so a new leader of either partition continues from it, and retention
//!   never drops a cursor without the dead letters it covers (they come before it). A leader
//!   learns it from its log before each redrive ([`Subscription::learn_redrive_cursor`]).
//! - A crash or lost leadership between a batch's append and its cursor event redrives that
//!   batch again (at least once); nothing else moves twice.

use std::sync::Arc;

use futures_util::future::try_join_all;

use super::live_tables::Lead;
use super::produce::routed;
use super::{Broker, Topic, blocking};
use crate::error::{BrokerError, Result};
use crate::message::Record;
use crate::raft::{GroupId, write_at_leader};
use crate::storage::PartitionHandle;
use crate::subscription::Subscription;

impl Broker {
    /// In a cluster, [`Broker::redrive`] of only the dead-letter partitions this node leads
    /// (none: 0 moved); on a single node, all of them.
    pub async fn redrive_led(
        &self,
        topic: &str,
        subscription: &str,
        max_messages: Option<u64>,
        per_second: Option<u32>,
    ) -> Result<u64> {
        self.redrive_partitions(topic, subscription, max_messages, per_second, true)
            .await
    }

    /// The partitions of `dlq` to redrive here: all on a single node; in a cluster those
    /// this node leads (`led_only`), else all, each of which it must lead. A partition led
    /// here whose leadership is too new to have applied every earlier entry (its cursor may
    /// not be here yet) is [`BrokerError::NotLeader`], for a retry.
    pub(super) fn dead_letter_partitions_here(
        &self,
        dlq: &Topic,
        led_only: bool,
    ) -> Result<Vec<usize>> {
        let Some(replication) = &self.replication else {
            return Ok((0..dlq.partitions.len()).collect());
        };
        let name = dlq.config().name;
        let mut here = Vec::new();
        for (partition, seat) in dlq.groups.iter().enumerate() {
            let leader = seat.leader();
            let not_leader = |leader| BrokerError::NotLeader {
                what: format!("partition {partition} of dead-letter topic '{name}'"),
                leader,
            };
            match self.lead(dlq, partition) {
                Lead::Single | Lead::Leader(_) => here.push(partition),
                Lead::Other(_) if leader == Some(replication.node_id) => {
                    return Err(not_leader(None));
                }
                Lead::Other(_) if led_only => {}
                Lead::Other(other) => return Err(not_leader(other.or(leader))),
            }
        }
        Ok(here)
    }

    /// In a cluster, moves the redrive cursor of dead-letter partition `partition` (kept in
    /// its log `log`) up to what its log records; nothing on a single node.
    pub(super) async fn learn_redrive_cursor(
        &self,
        sub: &Arc<Subscription>,
        log: &PartitionHandle,
        partition: usize,
    ) -> Result<()> {
        if self.replication.is_none() {
            return Ok(());
        }
        let (sub, log) = (Arc::clone(sub), log.clone());
        blocking(move || sub.learn_redrive_cursor(partition, &log)).await?;
        Ok(())
    }

    /// Appends redriven records, `shares[p]` to partition `p` of `open`: on a single node to
    /// its logs; in a cluster each share at its partition's leader, here or elsewhere.
    pub(super) async fn append_redriven(
        &self,
        open: &Topic,
        shares: Vec<Vec<Record>>,
    ) -> Result<()> {
        let Some(replication) = &self.replication else {
            return self.append_shares(open, shares).await.map(|_| ());
        };
        let name = open.config().name;
        let writes = routed(shares).into_iter().map(|(partition, share)| {
            let seat = &open.groups[partition as usize];
            let log = open.partitions[partition as usize].clone();
            let group = GroupId::Partition {
                topic: name.clone(),
                partition,
            };
            let (me, leader) = (replication.node_id, seat.leader());
            let transport = Arc::clone(&replication.transport);
            async move {
                match leader {
                    Some(node) if node == me => log.append(share).await.map(|_| ()),
                    Some(node) => write_at_leader(&*transport, node, group, &share).await,
                    None => Err(BrokerError::NotLeader {
                        what: group.to_string(),
                        leader: None,
                    }),
                }
            }
        });
        try_join_all(writes).await?;
        Ok(())
    }
}
