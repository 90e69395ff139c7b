//! [`RaftProposer`]: a replicated partition's writes proposed to its Raft.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use openraft::Raft;
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::coalesce::{PROPOSE_TIMEOUT_MS, Proposal, write_proposals};
use super::transfer::WriteHold;
use super::types::TypeConfig;
use crate::error::{BrokerError, Result};
use crate::storage::{EntryBody, ProposalSlot, ProposeFuture, Proposer};

/// Proposals one partition may have in flight: as deep as a writer queue four times over, so
/// a burst of single-message produces is absorbed, while a partition whose followers stall
/// refuses more (503 `overloaded`) instead of queueing without bound.
pub const MAX_PROPOSALS_IN_FLIGHT: usize = 1024;

/// Proposes one partition's entries on this node, through its writer task (which joins the
/// proposals that wait into one entry: at most [`MAX_WRITES_IN_FLIGHT`](super::MAX_WRITES_IN_FLIGHT)
/// entries in Raft at once, the proposals that queue meanwhile joined into the next).
pub struct RaftProposer {
    node_id: u64,
    raft: Raft<TypeConfig>,
    what: String,
    slots: Arc<Semaphore>,
    /// Whether this node's leadership of the partition is being moved away (then it takes
    /// no new writes).
    write_hold: Option<WriteHold>,
    /// The writer task's queue, started with the first proposal (a proposal is always made
    /// on the runtime; a seat may be built off it).
    queue: OnceLock<mpsc::Sender<Proposal>>,
}

impl RaftProposer {
    /// The proposer of `raft` on node `node_id`; `what` names the partition in errors.
    pub fn new(node_id: u64, raft: Raft<TypeConfig>, what: String) -> RaftProposer {
        RaftProposer {
            node_id,
            raft,
            what,
            slots: Arc::new(Semaphore::new(MAX_PROPOSALS_IN_FLIGHT)),
            write_hold: None,
            queue: OnceLock::new(),
        }
    }

    /// This proposer, taking no new writes while `hold` says the leadership is moving away.
    pub fn with_write_hold(mut self, hold: WriteHold) -> RaftProposer {
        self.write_hold = Some(hold);
        self
    }

    fn not_leader(&self, leader: Option<u64>) -> BrokerError {
        BrokerError::NotLeader {
            what: self.what.clone(),
            leader,
        }
    }

    fn queue(&self) -> &mpsc::Sender<Proposal> {
        self.queue.get_or_init(|| {
            // As deep as the slots: every queued proposal holds one, so a send never finds
            // the queue full.
            let (sender, receiver) = mpsc::channel(MAX_PROPOSALS_IN_FLIGHT);
            tokio::spawn(write_proposals(
                self.raft.clone(),
                self.what.clone(),
                self.write_hold.clone(),
                receiver,
            ));
            sender
        })
    }
}

impl Proposer for RaftProposer {
    fn reserve(&self) -> Result<ProposalSlot> {
        let leader = self.raft.metrics().borrow().current_leader;
        if leader != Some(self.node_id) {
            return Err(self.not_leader(leader));
        }
        if let Some(target) = self.write_hold.as_ref().and_then(WriteHold::moving_to) {
            return Err(self.not_leader(Some(target)));
        }
        let permit =
            Arc::clone(&self.slots)
                .try_acquire_owned()
                .map_err(|_| BrokerError::Overloaded {
                    resource: "the partition's proposals in flight",
                    retry_after_ms: 1_000,
                })?;
        Ok(ProposalSlot(permit))
    }

    fn propose(&self, slot: ProposalSlot, body: EntryBody) -> ProposeFuture {
        // Queued here, not when the future is first polled: entries follow the order of
        // the calls.
        let (reply, answer) = oneshot::channel();
        let queued = self
            .queue()
            .try_send(Proposal { body, reply, slot })
            .map_err(|_| BrokerError::ShuttingDown);
        let what = self.what.clone();
        Box::pin(async move {
            queued?;
            // The entry's own write is bounded too; this bounds the wait behind the writes
            // ahead of it as well.
            let timeout = Duration::from_millis(2 * PROPOSE_TIMEOUT_MS);
            match tokio::time::timeout(timeout, answer).await {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(_)) => Err(BrokerError::ShuttingDown),
                Err(_) => Err(BrokerError::ReplicationTimeout {
                    what,
                    ms: 2 * PROPOSE_TIMEOUT_MS,
                }),
            }
        })
    }
}
