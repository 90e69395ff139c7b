//! [`PartitionGroup`]: this node's seat in one partition's Raft group, kept on the broker's
//! topic so that a request finds its partition's Raft without naming the group (no
//! allocation, no registry lookup).
//!
//! A node holds a replica of only the partitions placed on it: the seat of a partition held
//! elsewhere has no Raft, and names the leader the cluster metadata last recorded for it
//! (its hint) instead. A partition's writes go through its seat ([`Proposer`]): to its Raft
//! when this node holds a replica, refused with [`BrokerError::NotLeader`] naming the hint
//! otherwise (the gateway forwards them there).
//!
//! The seat is replaceable: a replica moved off this node is unseated
//! ([`PartitionGroup::unseat`]) and a later move back seats a fresh one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use openraft::Raft;

use super::contact::LeaderContact;
use super::proposer::RaftProposer;
use super::repair::RepairClaim;
use super::status::{LeaderView, OpenedLog};
use super::transfer::WriteHold;
use super::types::TypeConfig;
use crate::error::{BrokerError, Result};
use crate::storage::{EntryBody, ProposalSlot, ProposeFuture, Proposer};

/// The hint's value while the metadata names no leader (node ids start at 1).
const NO_HINT: u64 = 0;

/// A replica just started ([`super::groups::PartitionReplica::start`]), to be seated.
pub struct StartedReplica {
    /// Its Raft.
    pub raft: Raft<TypeConfig>,
    /// Its log's repair claim.
    pub repair: Arc<RepairClaim>,
    /// What its log held when it started.
    pub opened: OpenedLog,
}

/// This node's seat in one partition's group.
pub struct PartitionGroup {
    /// How errors name the partition.
    what: String,
    /// The partition's Raft and its proposer here, while this node holds a replica.
    replica: RwLock<Option<Arc<Seated>>>,
    /// What this node's replica last heard from the leader (for follower reads).
    contact: Arc<LeaderContact>,
    /// The leader the cluster metadata records for the partition ([`NO_HINT`]: none).
    hint: AtomicU64,
    /// The partition's replicas as the cluster metadata places them (empty until known).
    replicas: RwLock<Vec<u64>>,
}

/// A replica seated here: its Raft and the proposer its writes go through.
pub struct Seated {
    /// The partition's Raft on this node.
    pub raft: Raft<TypeConfig>,
    /// Its writes' proposer (write hold, in-flight bound, entry joining).
    pub proposer: RaftProposer,
    /// Its log's repair claim, which its votes go by while it stands.
    pub repair: Arc<RepairClaim>,
    /// What its log held when it started (see [`LeaderView`]).
    pub opened: OpenedLog,
}

impl std::fmt::Debug for PartitionGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionGroup")
            .field("what", &self.what)
            .field("held", &self.held())
            .field("hint", &self.hint())
            .finish()
    }
}

impl PartitionGroup {
    /// The seat of a partition `what` names (`topic 'orders' partition 2`), with no replica.
    pub fn new(what: String) -> PartitionGroup {
        PartitionGroup {
            what,
            replica: RwLock::new(None),
            contact: Arc::default(),
            hint: AtomicU64::new(NO_HINT),
            replicas: RwLock::new(Vec::new()),
        }
    }

    /// Seats `raft`, this node's (`node_id`) replica of the partition, its writes stopped
    /// while `write_hold` says its leadership is moving away and its votes going by `repair`;
    /// one seated already stays (`false` when one is seated).
    pub fn hold(&self, node_id: u64, started: StartedReplica, write_hold: WriteHold) -> bool {
        let StartedReplica {
            raft,
            repair,
            opened,
        } = started;
        let mut replica = crate::sync::write(&self.replica);
        if replica.is_some() {
            return false;
        }
        let proposer =
            RaftProposer::new(node_id, raft.clone(), self.what.clone()).with_write_hold(write_hold);
        *replica = Some(Arc::new(Seated {
            raft,
            proposer,
            repair,
            opened,
        }));
        true
    }

    /// Takes the seated replica away (its Raft, for the caller to shut down): from then on
    /// the partition's requests are refused naming the hint, as for any partition this node
    /// does not hold, and a later [`PartitionGroup::hold`] seats a fresh replica.
    pub fn unseat(&self) -> Option<Raft<TypeConfig>> {
        crate::sync::write(&self.replica)
            .take()
            .map(|seated| seated.raft.clone())
    }

    /// The seated replica, when this node holds one.
    pub fn seated(&self) -> Option<Arc<Seated>> {
        crate::sync::read(&self.replica).clone()
    }

    /// The partition's Raft, when this node holds a replica.
    pub fn raft(&self) -> Option<Raft<TypeConfig>> {
        crate::sync::read(&self.replica)
            .as_ref()
            .map(|seated| seated.raft.clone())
    }

    /// What this node's replica last heard from the partition's leader: the Raft groups
    /// record there each append they accept for it.
    pub fn contact(&self) -> &Arc<LeaderContact> {
        &self.contact
    }

    /// Whether this node holds a replica.
    pub fn held(&self) -> bool {
        crate::sync::read(&self.replica).is_some()
    }

    /// Who leads the partition as this node's replica knows (one read of its metrics), or
    /// `None` when this node holds no replica.
    pub fn view(&self) -> Option<LeaderView> {
        let seated = crate::sync::read(&self.replica);
        seated.as_ref().map(|s| LeaderView::of(&s.raft, s.opened))
    }

    /// The partition's leader: as this node's replica knows it, or else as the metadata
    /// records it.
    pub fn leader(&self) -> Option<u64> {
        match self.view() {
            Some(view) => view.leader,
            None => self.hint(),
        }
    }

    /// The leader the cluster metadata records.
    pub fn hint(&self) -> Option<u64> {
        Some(self.hint.load(Ordering::Relaxed)).filter(|n| *n != NO_HINT)
    }

    /// Records the leader the cluster metadata names.
    pub fn set_hint(&self, leader: Option<u64>) {
        self.hint
            .store(leader.unwrap_or(NO_HINT), Ordering::Relaxed);
    }

    /// The partition's replicas as the metadata places them (empty until known).
    pub fn replicas(&self) -> Vec<u64> {
        crate::sync::read(&self.replicas).clone()
    }

    /// Records the partition's replicas as the metadata places them.
    pub fn set_replicas(&self, replicas: &[u64]) {
        if crate::sync::read(&self.replicas).as_slice() != replicas {
            *crate::sync::write(&self.replicas) = replicas.to_vec();
        }
    }

    fn not_held(&self) -> BrokerError {
        BrokerError::NotLeader {
            what: self.what.clone(),
            leader: self.hint(),
        }
    }
}

impl Proposer for PartitionGroup {
    fn reserve(&self) -> Result<ProposalSlot> {
        match self.seated() {
            Some(seated) => seated.proposer.reserve(),
            None => Err(self.not_held()),
        }
    }

    fn reserve_in_term(&self, term: u64) -> Result<ProposalSlot> {
        match self.seated() {
            Some(seated) => seated.proposer.reserve_in_term(term),
            None => Err(self.not_held()),
        }
    }

    fn propose(&self, slot: ProposalSlot, body: EntryBody) -> ProposeFuture {
        match self.seated() {
            Some(seated) => seated.proposer.propose(slot, body),
            None => {
                let refusal = self.not_held();
                Box::pin(async move { Err(refusal) })
            }
        }
    }
}
