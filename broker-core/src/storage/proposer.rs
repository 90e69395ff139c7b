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
pub struct ProposalSlot(pub OwnedSemaphorePermit);

/// Proposes a replicated partition's entries.
pub trait Proposer: Send + Sync + 'static {
    /// A place for one more proposal, or [`crate::BrokerError::Overloaded`] at once when the
    /// partition has as many in flight as it allows; [`crate::BrokerError::NotLeader`] when
    /// this node cannot propose (it does not lead the partition).
    fn reserve(&self) -> Result<ProposalSlot>;

    /// Proposes `body` in `slot`'s place; resolves once it is committed (where its messages
    /// landed) or failed. The slot is given back when the future ends.
    fn propose(&self, slot: ProposalSlot, body: EntryBody) -> ProposeFuture;
}
