//! [`RaftProposer`]: a replicated partition's writes proposed to its Raft.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use openraft::Raft;
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::coalesce::{PROPOSE_TIMEOUT_MS, Proposal, write_proposals};
use super::leader_proof::LeaderProof;
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
/// entries of messages and as many of control records in Raft at once, the proposals that
/// queue meanwhile joined into their lane's next).
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
    /// When a write of this node's last committed as leader (a proof that it led then).
    proof: Arc<LeaderProof>,
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
            proof: Arc::default(),
        }
    }

    /// The latest proof that this node leads the partition: each committed write renews it.
    pub fn proof(&self) -> &Arc<LeaderProof> {
        &self.proof
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

    /// A slot while this node leads (in `term`, when given) and takes writes.
    fn reserve_slot(&self, term: Option<u64>) -> Result<ProposalSlot> {
        let (leader, current) = {
            let metrics = self.raft.metrics();
            let metrics = metrics.borrow();
            (metrics.current_leader, metrics.current_term)
        };
        if leader != Some(self.node_id) {
            return Err(self.not_leader(leader));
        }
        if term.is_some_and(|term| term != current) {
            return Err(self.not_leader(None));
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
        Ok(ProposalSlot { permit, term })
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
                Arc::clone(&self.proof),
                receiver,
            ));
            sender
        })
    }
}

impl Proposer for RaftProposer {
    fn reserve(&self) -> Result<ProposalSlot> {
        self.reserve_slot(None)
    }

    fn reserve_in_term(&self, term: u64) -> Result<ProposalSlot> {
        self.reserve_slot(Some(term))
    }

    fn propose(&self, slot: ProposalSlot, body: EntryBody) -> ProposeFuture {
        // Queued here, not when the future is first polled: entries follow the order of
        // the calls.
        let (reply, mut answer) = oneshot::channel();
        let abandoned = Arc::new(AtomicBool::new(false));
        let proposal = Proposal {
            body,
            reply,
            slot,
            abandoned: Arc::clone(&abandoned),
            queued: std::time::Instant::now(),
        };
        let queued = self
            .queue()
            .try_send(proposal)
            .map_err(|_| BrokerError::ShuttingDown);
        let what = self.what.clone();
        Box::pin(async move {
            queued?;
            // The entry's own write is bounded too; this bounds the wait behind the writes
            // ahead of it as well.
            let turn = Duration::from_millis(2 * PROPOSE_TIMEOUT_MS);
            if let Ok(answered) = tokio::time::timeout(turn, &mut answer).await {
                return answered.unwrap_or(Err(BrokerError::ShuttingDown));
            }
            // Not answered yet: give up the turn, then hear whether the writer dropped it
            // unwritten (at once) or is writing it (within the write's own bound), so the
            // caller knows whether its outcome is unknown or nothing was written.
            abandoned.store(true, Ordering::Release);
            match tokio::time::timeout(turn, answer).await {
                Ok(answered) => answered.unwrap_or(Err(BrokerError::ShuttingDown)),
                Err(_) => Err(BrokerError::ReplicationTimeout {
                    what,
                    ms: 4 * PROPOSE_TIMEOUT_MS,
                }),
            }
        })
    }
}
