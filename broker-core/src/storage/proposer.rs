//! [`Proposer`]: where a replicated partition's writes go instead of its writer queue.
//!
//! A replicated partition's log is its Raft log: a message batch or a control batch becomes
//! an entry that the partition's Raft leader proposes, every replica appends, and the leader
//! answers once a majority has it. [`crate::storage::PartitionHandle`] hands its writes
//! (`append`, `append_detached…`, `queue_control`, `reserve_control`) to the proposer once
//! one is set, so the broker's code above writes to a replicated partition as to a local one.

use std::future::Future;
use std::pin::Pin;

use tokio::sync::OwnedSemaphorePermit;

use super::codec::raft::EntryBody;
use super::writer::AppendResult;
use crate::error::Result;

/// The outcome of one proposal.
pub type ProposeFuture = Pin<Box<dyn Future<Output = Result<AppendResult>> + Send>>;

/// A place among a partition's proposals in flight, taken before the proposal (so a caller
/// can change its state knowing the proposal will be made).
#[derive(Debug)]
pub struct ProposalSlot {
    /// The place itself, given back when the slot is dropped.
    pub permit: OwnedSemaphorePermit,
    /// The Raft term the proposal must be written in, if any: one whose term has moved on
    /// by the time it is written is refused with [`crate::BrokerError::NotLeader`] instead.
    /// A produce of client ids looked them up in what this node knew as leader of that term
    /// (`broker::produce`); in a later term another leader may have stored them meanwhile.
    pub term: Option<u64>,
}

/// Proposes a replicated partition's entries.
pub trait Proposer: Send + Sync + 'static {
    /// A place for one more proposal, or [`crate::BrokerError::Overloaded`] at once when the
    /// partition has as many in flight as it allows; [`crate::BrokerError::NotLeader`] when
    /// this node cannot propose (it does not lead the partition).
    fn reserve(&self) -> Result<ProposalSlot>;

    /// [`Proposer::reserve`] for a proposal that must be written in Raft term `term`:
    /// [`crate::BrokerError::NotLeader`] at once when this node does not lead in that term,
    /// and refused the same way later if the term has moved on when the entry is written.
    fn reserve_in_term(&self, term: u64) -> Result<ProposalSlot>;

    /// Proposes `body` in `slot`'s place; resolves once it is committed (where its messages
    /// landed) or failed. The slot is given back when the future ends.
    fn propose(&self, slot: ProposalSlot, body: EntryBody) -> ProposeFuture;
}
