//! Changing a partition group's members: what moving a replica to another node does to its
//! group. Each step runs at the group's leader, asked over an [`Rpc::Membership`] (or
//! directly when the asking node leads the group):
//!
//! 1. [`MembershipStep::AddLearner`]: the new node joins as a learner (committed without
//!    waiting for it: its replica may not run yet);
//! 2. [`MembershipStep::CatchUp`]: wait until the learner holds every entry the leader had
//!    when asked (its tables then follow the same log from its start);
//! 3. [`MembershipStep::SetVoters`]: the voters become the new replica set (openraft commits a
//!    joint configuration, then the new one); a voter left out stops being one.
//!
//! A node the move left out then asks the leader [`MembershipStep::Released`] before it
//! drops its replica: the leader stops replicating to it as soon as the new configuration is
//! appended, so the node's own Raft may never learn that configuration was committed.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use openraft::Raft;
use openraft::error::{ClientWriteError, RaftError};
use serde::{Deserialize, Serialize};

use super::groups::RaftGroups;
use super::transport::{GroupId, Rpc, RpcCall, RpcHandler, Transport};
use super::types::{NodeInfo, TypeConfig};
use crate::error::{BrokerError, Result};

/// Longest one step may take at the leader: a learner copying a partition's whole log (no
/// retention runs in a cluster yet) on this stage's small test logs takes well under it.
pub const MEMBERSHIP_STEP_MS: u64 = 20_000;

/// One step of changing a group's members, the body of an [`Rpc::Membership`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MembershipStep {
    /// Adds `node` as a learner.
    AddLearner {
        /// The node.
        node: u64,
        /// Where it is.
        info: NodeInfo,
    },
    /// Waits until learner `node` holds every entry the leader has now.
    CatchUp {
        /// The node.
        node: u64,
    },
    /// Makes `voters` the group's voters.
    SetVoters {
        /// The new voters.
        voters: BTreeSet<u64>,
    },
    /// Answers done only when `node` is neither voter nor learner of the group's
    /// configuration, that configuration is not joint, and it is committed (applied at the
    /// leader): a committed configuration never rolls back, so a replica on `node` is no
    /// longer needed.
    Released {
        /// The node.
        node: u64,
    },
}

/// What a step came to at the node asked: done, or why not.
pub type MembershipAnswer = std::result::Result<(), MembershipRefusal>;

/// Why a step was not done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MembershipRefusal {
    /// The node asked does not lead the group (the leader it knows, if any).
    NotLeader(Option<u64>),
    /// Not done within [`MEMBERSHIP_STEP_MS`].
    Timeout,
    /// The group refused or failed.
    Failed(String),
}

impl std::fmt::Display for MembershipRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MembershipRefusal::NotLeader(leader) => write!(f, "not the leader (leader {leader:?})"),
            MembershipRefusal::Timeout => write!(f, "not done within {MEMBERSHIP_STEP_MS} ms"),
            MembershipRefusal::Failed(reason) => f.write_str(reason),
        }
    }
}

fn write_refusal(error: RaftError<u64, ClientWriteError<u64, NodeInfo>>) -> MembershipRefusal {
    match error {
        RaftError::APIError(ClientWriteError::ForwardToLeader(forward)) => {
            MembershipRefusal::NotLeader(forward.leader_id)
        }
        other => MembershipRefusal::Failed(other.to_string()),
    }
}

/// Does `step` on `raft`, this node's replica of the group (it must lead it).
pub async fn answer_membership(raft: &Raft<TypeConfig>, step: MembershipStep) -> MembershipAnswer {
    let timeout = Duration::from_millis(MEMBERSHIP_STEP_MS);
    match step {
        MembershipStep::AddLearner { node, info } => {
            settled(raft, timeout).await;
            match tokio::time::timeout(timeout, raft.add_learner(node, info, false)).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(write_refusal(e)),
                Err(_) => Err(MembershipRefusal::Timeout),
            }
        }
        MembershipStep::CatchUp { node } => {
            let (leader, last) = {
                let metrics = raft.metrics();
                let metrics = metrics.borrow();
                (metrics.current_leader, metrics.last_log_index)
            };
            if leader != Some(metrics_node(raft)) {
                return Err(MembershipRefusal::NotLeader(leader));
            }
            let caught_up = move |m: &openraft::RaftMetrics<u64, NodeInfo>| {
                let matched = m
                    .replication
                    .as_ref()
                    .and_then(|r| r.get(&node).copied().flatten())
                    .map(|l| l.index);
                matched >= last
            };
            match raft
                .wait(Some(timeout))
                .metrics(caught_up, "the learner caught up")
                .await
            {
                Ok(_) => Ok(()),
                Err(openraft::metrics::WaitError::Timeout(..)) => Err(MembershipRefusal::Timeout),
                Err(e) => Err(MembershipRefusal::Failed(e.to_string())),
            }
        }
        MembershipStep::Released { node } => released(raft, node),
        MembershipStep::SetVoters { voters } => {
            settled(raft, timeout).await;
            match tokio::time::timeout(timeout, raft.change_membership(voters, false)).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(write_refusal(e)),
                Err(_) => Err(MembershipRefusal::Timeout),
            }
        }
    }
}

/// Whether `metrics`' membership is committed here (applied), so a change may start:
/// Raft refuses one while another is under way, the group's first membership included (a
/// group made a moment ago refused a drain's move with "already undergoing a configuration
/// change at log index 0").
fn membership_committed(metrics: &openraft::RaftMetrics<u64, NodeInfo>) -> bool {
    match (metrics.membership_config.log_id(), metrics.last_applied) {
        (None, _) => true,
        (Some(config), Some(applied)) => applied.index >= config.index,
        (Some(_), None) => false,
    }
}

/// Waits up to `timeout` until `raft`'s membership is committed ([`membership_committed`]);
/// past it the change is tried anyway, and refused by Raft if still under way.
async fn settled(raft: &Raft<TypeConfig>, timeout: Duration) {
    let waited = raft
        .wait(Some(timeout))
        .metrics(membership_committed, "the membership committed")
        .await;
    if let Err(error) = waited {
        tracing::debug!(%error, "a membership change starts before the last one committed");
    }
}

/// [`MembershipStep::Released`] at `raft`, which must lead the group.
fn released(raft: &Raft<TypeConfig>, node: u64) -> MembershipAnswer {
    let metrics = raft.metrics();
    let metrics = metrics.borrow();
    if metrics.current_leader != Some(metrics.id) {
        return Err(MembershipRefusal::NotLeader(metrics.current_leader));
    }
    let membership = metrics.membership_config.membership();
    let committed = membership_committed(&metrics);
    let joint = membership.get_joint_config().len() > 1;
    let member =
        membership.voter_ids().any(|v| v == node) || membership.learner_ids().any(|l| l == node);
    match (committed && !joint, member) {
        (true, false) => Ok(()),
        (false, _) => Err(MembershipRefusal::Failed(
            "the group's configuration is changing".into(),
        )),
        (true, true) => Err(MembershipRefusal::Failed(format!(
            "node {node} is still a member"
        ))),
    }
}

fn metrics_node(raft: &Raft<TypeConfig>) -> u64 {
    raft.metrics().borrow().id
}

/// Asks node `leader` (this node `me` through `local`, another over `transport`) to do
/// `step` on `group`.
pub async fn change_members(
    me: u64,
    local: &RaftGroups,
    transport: &dyn Transport,
    leader: u64,
    group: &GroupId,
    step: &MembershipStep,
) -> Result<()> {
    let failed = |reason: String| BrokerError::invalid("membership", format!("{group}: {reason}"));
    let body = serde_json::to_vec(step)
        .map(Bytes::from)
        .map_err(|e| failed(e.to_string()))?;
    // The step's own bound, plus a margin for the call.
    let timeout = Duration::from_millis(MEMBERSHIP_STEP_MS + 2_000);
    let answer = if leader == me {
        let local = local.handle(group.clone(), Rpc::Membership, body);
        match tokio::time::timeout(timeout, local).await {
            Ok(answer) => answer.map_err(|e| failed(e.to_string()))?,
            Err(_) => return Err(failed("no answer".into())),
        }
    } else {
        let call = RpcCall {
            group: group.clone(),
            rpc: Rpc::Membership,
            body,
            timeout,
        };
        transport
            .call(leader, call)
            .await
            .map_err(|e| failed(e.to_string()))?
    };
    let answer: MembershipAnswer =
        serde_json::from_slice(&answer).map_err(|e| failed(e.to_string()))?;
    answer.map_err(|refusal| failed(refusal.to_string()))
}
