//! [`GroupStatus`]: what one node knows of one of its Raft groups, for `GET /v1/cluster`.

use std::collections::BTreeMap;

use openraft::Raft;

use super::types::TypeConfig;

/// One group as this node sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupStatus {
    /// The leader this node knows (none during an election).
    pub leader: Option<u64>,
    /// The current term.
    pub term: u64,
    /// The group's voters.
    pub voters: Vec<u64>,
    /// Index of this node's last log entry.
    pub last_index: Option<u64>,
    /// Index of the last entry this node applied (committed and visible here).
    pub applied: Option<u64>,
    /// When this node leads: each voter's replicated index (its own included).
    pub matched: Option<BTreeMap<u64, Option<u64>>>,
    /// When this node leads: milliseconds since a majority last acknowledged it.
    pub since_quorum_ack_ms: Option<u64>,
}

/// Who leads a group, cheaply (no copies of its membership), for a request deciding whether
/// this node serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderView {
    /// The leader this node knows (none during an election).
    pub leader: Option<u64>,
    /// The current term.
    pub term: u64,
    /// The term of the last entry this node applied: once it equals `term` on a leader, every
    /// entry of earlier terms is committed and applied here.
    pub applied_term: Option<u64>,
}

impl LeaderView {
    /// The leadership of `raft` now.
    pub fn of(raft: &Raft<TypeConfig>) -> LeaderView {
        let metrics = raft.metrics();
        let metrics = metrics.borrow();
        LeaderView {
            leader: metrics.current_leader,
            term: metrics.current_term,
            applied_term: metrics.last_applied.map(|l| l.leader_id.term),
        }
    }
}

/// Whether the leader of `raft` is in the zone of node `me`, as the group's membership knows
/// both (`false` during an election, or when either is not a member).
pub fn leader_in_zone_of(raft: &Raft<TypeConfig>, me: u64) -> bool {
    let metrics = raft.metrics();
    let metrics = metrics.borrow();
    let membership = metrics.membership_config.membership();
    let zone = |node: u64| membership.get_node(&node).map(|n| n.zone.as_str());
    match metrics.current_leader {
        Some(leader) => zone(me).is_some() && zone(leader) == zone(me),
        None => false,
    }
}

impl GroupStatus {
    /// The status of `raft` now.
    pub fn of(raft: &Raft<TypeConfig>) -> GroupStatus {
        let metrics = raft.metrics();
        let metrics = metrics.borrow();
        let matched = metrics.replication.as_ref().map(|replication| {
            replication
                .iter()
                .map(|(node, log_id)| (*node, log_id.map(|l| l.index)))
                .collect()
        });
        GroupStatus {
            leader: metrics.current_leader,
            term: metrics.current_term,
            voters: metrics.membership_config.membership().voter_ids().collect(),
            last_index: metrics.last_log_index,
            applied: metrics.last_applied.map(|l| l.index),
            matched,
            since_quorum_ack_ms: metrics.millis_since_quorum_ack,
        }
    }

    /// How many entries `node` is behind the leader's last entry, when this node leads.
    pub fn lag(&self, node: u64) -> Option<u64> {
        let matched = self.matched.as_ref()?.get(&node).copied().flatten();
        let last = self.last_index?;
        Some(last.saturating_sub(matched.unwrap_or(0)))
    }
}
