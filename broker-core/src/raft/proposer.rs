//! [`RaftProposer`]: a replicated partition's writes proposed to its Raft.

use std::sync::Arc;
use std::time::Duration;

use openraft::Raft;
use openraft::error::{ClientWriteError, RaftError};
use tokio::sync::Semaphore;

use super::types::TypeConfig;
use crate::error::{BrokerError, Result};
use crate::storage::{AppendResult, EntryBody, ProposalSlot, ProposeFuture, Proposer};

/// Proposals one partition may have in flight: as deep as a writer queue four times over, so
/// a burst of single-message produces is absorbed, while a partition whose followers stall
/// refuses more (503 `overloaded`) instead of queueing without bound in openraft's channels.
pub const MAX_PROPOSALS_IN_FLIGHT: usize = 1024;
/// How long a proposal may take to commit before its producer hears that its outcome is
/// unknown: several election timeouts, so a failover in progress usually finishes first.
pub const PROPOSE_TIMEOUT_MS: u64 = 5_000;

/// Proposes one partition's entries on this node.
pub struct RaftProposer {
    node_id: u64,
    raft: Raft<TypeConfig>,
    what: String,
    slots: Arc<Semaphore>,
}

impl RaftProposer {
    /// The proposer of `raft` on node `node_id`; `what` names the partition in errors.
    pub fn new(node_id: u64, raft: Raft<TypeConfig>, what: String) -> RaftProposer {
        RaftProposer {
            node_id,
            raft,
            what,
            slots: Arc::new(Semaphore::new(MAX_PROPOSALS_IN_FLIGHT)),
        }
    }

    fn not_leader(&self, leader: Option<u64>) -> BrokerError {
        BrokerError::NotLeader {
            what: self.what.clone(),
            leader,
        }
    }
}

impl Proposer for RaftProposer {
    fn reserve(&self) -> Result<ProposalSlot> {
        let leader = self.raft.metrics().borrow().current_leader;
        if leader != Some(self.node_id) {
            return Err(self.not_leader(leader));
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
        let raft = self.raft.clone();
        let what = self.what.clone();
        Box::pin(async move {
            let _slot = slot;
            let timeout = Duration::from_millis(PROPOSE_TIMEOUT_MS);
            let proposed = std::time::Instant::now();
            let written = tokio::time::timeout(timeout, raft.client_write(body)).await;
            match written {
                Ok(Ok(response)) => {
                    crate::telemetry::raft_commit(proposed.elapsed().as_secs_f64());
                    Ok(AppendResult {
                        base_offset: response.data.base_offset,
                        count: response.data.count,
                        fsynced: true,
                        replicated: true,
                    })
                }
                Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward)))) => {
                    Err(BrokerError::NotLeader {
                        what,
                        leader: forward.leader_id,
                    })
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, %what, "a proposal failed");
                    Err(BrokerError::ShuttingDown)
                }
                Err(_) => Err(BrokerError::ReplicationTimeout {
                    what,
                    ms: PROPOSE_TIMEOUT_MS,
                }),
            }
        })
    }
}
