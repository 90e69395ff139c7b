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
    /// Whether this node applied every entry its log held when its replica started
    /// ([`OpenedLog::applied_by`]). openraft restores a node that led before a restart as
    /// leader of the same term at once (its vote is committed), with no entry of a new term
    /// whose apply would prove its earlier entries applied: `applied_term` already equals
    /// `term` while entries it held, committed before the restart, are still to be applied.
    /// (A partition's replica now stands for election in a new term instead, vendor/README.md
    /// change 4; the check stays for any group openraft restores.)
    pub applied_opened_log: bool,
    /// Index of this node's last log entry, committed or not.
    pub last_index: Option<u64>,
    /// Index of the last entry this node applied.
    pub applied_index: Option<u64>,
}

impl LeaderView {
    /// The leadership of `raft` now, for a replica whose log was `opened` when it started.
    pub fn of(raft: &Raft<TypeConfig>, opened: OpenedLog) -> LeaderView {
        let metrics = raft.metrics();
        let metrics = metrics.borrow();
        let applied = metrics.last_applied.map(|l| l.index);
        LeaderView {
            leader: metrics.current_leader,
            term: metrics.current_term,
            applied_term: metrics.last_applied.map(|l| l.leader_id.term),
            applied_opened_log: opened.applied_by(metrics.current_term, applied),
            last_index: metrics.last_log_index,
            applied_index: applied,
        }
    }
}

/// What a replica's log held when it started: the term of its saved vote and its last entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenedLog {
    /// The term of the vote saved before the start (0 on a fresh log).
    pub term: u64,
    /// The index of the log's last entry.
    pub last: Option<u64>,
}

impl OpenedLog {
    /// Whether a leadership in `term` that applied up to `applied` applied every entry the log
    /// held at start. One won after the start did, once it applied an entry of its term (its
    /// blank entry follows them all); one of the start's own term (restored at start) must
    /// apply up to the last entry itself. Never required of a later term, whose leader may
    /// have cut entries this log held uncommitted, so `last` may never come back.
    pub fn applied_by(&self, term: u64, applied: Option<u64>) -> bool {
        term > self.term || applied >= self.last
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

#[cfg(test)]
mod tests {
    use super::OpenedLog;

    #[test]
    fn a_leadership_restored_at_start_waits_for_the_entries_the_log_held() {
        let opened = OpenedLog {
            term: 2,
            last: Some(116),
        };
        // Restored as leader of term 2: the table must not go live at applied 93.
        assert!(!opened.applied_by(2, Some(93)));
        assert!(!opened.applied_by(2, None));
        assert!(opened.applied_by(2, Some(116)));
        assert!(opened.applied_by(2, Some(120)));
        // Won in a later term: its own first entry proves the rest, even below `last`.
        assert!(opened.applied_by(3, Some(40)));
    }

    #[test]
    fn a_fresh_log_asks_nothing() {
        let fresh = OpenedLog::default();
        assert!(fresh.applied_by(0, None));
        assert!(fresh.applied_by(1, Some(1)));
    }
}
