//! Getting a command into the controller log: proposed here when this node leads the
//! controller, else relayed to its leader (or, knowing none, to the peers named at start), and
//! a refusal turned into the error the caller answers with.

use std::time::Duration;

use super::ClusterNode;
use crate::cluster::{Command, encode_command};
use crate::error::{BrokerError, Result};
use crate::raft::{GroupId, ProposeAnswer, ProposeRefusal, Rpc, RpcCall, propose_command};

/// How long one proposal relayed to the controller leader may take.
const RELAY_TIMEOUT_MS: u64 = 6_000;

impl ClusterNode {
    /// The refusal of a metadata change on a node that does not lead the controller.
    pub(super) fn not_controller_leader(&self) -> BrokerError {
        BrokerError::NotLeader {
            what: "cluster metadata".into(),
            leader: self.controller_leader(),
        }
    }

    /// Proposes `command` to the controller group, this node leading it.
    pub(super) async fn propose(&self, command: &Command) -> Result<()> {
        match propose_command(&self.controller.raft, encode_command(command)?).await {
            Ok(()) => Ok(()),
            Err(refusal) => Err(refusal_error(refusal)),
        }
    }

    /// Waits until `done` holds (checked every 20 ms), at most `ms`: a replication timeout
    /// past that.
    pub(super) async fn wait_for(&self, ms: u64, done: impl Fn() -> bool) -> Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
        while !done() {
            if tokio::time::Instant::now() >= deadline {
                return Err(BrokerError::ReplicationTimeout {
                    what: "cluster metadata".into(),
                    ms,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// Proposes `command` at the controller leader, wherever it is. A node that knows no
    /// leader (an election, or a node joining that is no member yet) asks the peers it was
    /// started with, following the leader one of them names.
    pub(super) async fn propose_anywhere(&self, command: &Command) -> Result<()> {
        match self.controller_leader() {
            Some(leader) if leader == self.node_id() => self.propose(command).await,
            Some(leader) => self.relay(leader, command).await,
            None => {
                for peer in &self.peers {
                    let leader = match self.relay_answer(*peer, command).await {
                        Ok(Ok(())) => return Ok(()),
                        Ok(Err(ProposeRefusal::LeaderAt {
                            leader,
                            cluster_addr,
                        })) => {
                            // A joining node learns the leader's address here first.
                            self.replication.transport.learn(leader, &cluster_addr);
                            leader
                        }
                        Ok(Err(ProposeRefusal::NotLeader(Some(leader)))) => leader,
                        Ok(Err(refusal)) => {
                            tracing::debug!(peer, ?refusal, "no controller leader there");
                            continue;
                        }
                        Err(error) => {
                            tracing::debug!(peer, %error, "no controller leader there");
                            continue;
                        }
                    };
                    if leader != *peer {
                        return self.relay(leader, command).await;
                    }
                }
                Err(self.not_controller_leader())
            }
        }
    }

    /// Sends `command` to node `target`, to propose as the controller leader.
    async fn relay(&self, target: u64, command: &Command) -> Result<()> {
        self.relay_answer(target, command)
            .await?
            .map_err(refusal_error)
    }

    /// [`ClusterNode::relay`]'s answer as node `target` gave it.
    async fn relay_answer(&self, target: u64, command: &Command) -> Result<ProposeAnswer> {
        let call = RpcCall {
            group: GroupId::Controller,
            rpc: Rpc::Propose,
            body: encode_command(command)?,
            timeout: Duration::from_millis(RELAY_TIMEOUT_MS),
        };
        let answer = self
            .replication
            .transport
            .call(target, call)
            .await
            .map_err(|e| BrokerError::invalid("controller", e.to_string()))?;
        serde_json::from_slice(&answer)
            .map_err(|e| BrokerError::invalid("controller", e.to_string()))
    }
}

/// The error a refused proposal answers with.
fn refusal_error(refusal: ProposeRefusal) -> BrokerError {
    match refusal {
        ProposeRefusal::LeaderAt { leader, .. } => BrokerError::NotLeader {
            what: "cluster metadata".into(),
            leader: Some(leader),
        },
        ProposeRefusal::NotLeader(leader) => BrokerError::NotLeader {
            what: "cluster metadata".into(),
            leader,
        },
        ProposeRefusal::Timeout => BrokerError::ReplicationTimeout {
            what: "cluster metadata".into(),
            ms: crate::raft::PROPOSE_TIMEOUT_MS,
        },
        // Whatever failed (a stopped or panicked Raft answers `Timeout` already, see
        // `propose_command`), the caller cannot tell that nothing was written: 503 with the
        // outcome unknown, never a bad request.
        ProposeRefusal::Failed(reason) => BrokerError::ReplicationTimeout {
            what: format!("cluster metadata (its Raft failed: {reason})"),
            ms: crate::raft::PROPOSE_TIMEOUT_MS,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controller_whose_raft_failed_answers_an_unknown_outcome_not_a_bad_request() {
        let failed = refusal_error(ProposeRefusal::Failed("the Raft core panicked".into()));
        assert!(
            matches!(failed, BrokerError::ReplicationTimeout { .. }),
            "{failed:?}"
        );
        let elsewhere = refusal_error(ProposeRefusal::NotLeader(Some(2)));
        assert!(
            matches!(
                elsewhere,
                BrokerError::NotLeader {
                    leader: Some(2),
                    ..
                }
            ),
            "{elsewhere:?}"
        );
    }
}
