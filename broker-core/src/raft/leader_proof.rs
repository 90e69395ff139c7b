//! [`LeaderProof`]: when a partition's leader last saw a quorum follow it, so that a receive
//! can rely on that for a while (a read lease) instead of sending a heartbeat round of its
//! own before it hands anything out.
//!
//! Why a recent proof is enough: a voter that takes a leader's append or heartbeat refuses
//! every vote for openraft's leader lease after it (the longest election timeout,
//! [`ELECTION_TIMEOUT_MS`]`.1`), and a voter that restarts refuses them as long after its start
//! (openraft stamps the vote it loads with the time it loaded it). A write that committed, or a
//! read-index round a quorum answered, was taken by a quorum after it began. So no other
//! leader can be elected by those voters until the lease has passed since it began. The
//! leader itself is the one voter of the quorum that may grant a vote sooner (openraft counts
//! its lease from when it became leader), so [`prove_leadership`] also asks its Raft, after
//! the lease check and in order with the votes it grants, whether it still leads in the term.
//!
//! [`READ_LEASE_MS`] is half the voters' lease: the rest is margin for clocks of different
//! machines running at different rates, and for the leader's own stalls between reading the
//! time and acting on it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use openraft::{Raft, ServerState};

use super::groups::ELECTION_TIMEOUT_MS;
use super::types::TypeConfig;

/// How long after a proof began its leader relies on it: half the voters' lease
/// ([`ELECTION_TIMEOUT_MS`]`.1`, openraft's default `leader_lease`).
pub const READ_LEASE_MS: u64 = ELECTION_TIMEOUT_MS.1 / 2;
const _: () = assert!(READ_LEASE_MS < ELECTION_TIMEOUT_MS.1);

/// How a receive proved that its node still led the partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proved {
    /// By a write or round that began within [`READ_LEASE_MS`] (and the Raft's own vote).
    Lease,
    /// By a heartbeat round sent for it (openraft's read-index check).
    Round,
}

/// The latest proof of one partition's leadership on this node: the term, and when the write
/// or round that a quorum took began.
#[derive(Debug, Default)]
pub struct LeaderProof {
    /// Taken only for a read or one assignment: poison-tolerant (`crate::sync`).
    last: Mutex<Option<(u64, Instant)>>,
}

impl LeaderProof {
    /// Records that something this node began at `began` as leader in `term` was taken by a
    /// quorum. A proof of a later term, or a later one of the same term, stays.
    pub fn record(&self, term: u64, began: Instant) {
        let mut last = crate::sync::lock(&self.last);
        let newer = match *last {
            Some((t, at)) => term > t || (term == t && began > at),
            None => true,
        };
        if newer {
            *last = Some((term, began));
        }
    }

    /// When the latest proof in `term` began, if there is one.
    pub fn began(&self, term: u64) -> Option<Instant> {
        crate::sync::lock(&self.last).and_then(|(t, at)| (t == term).then_some(at))
    }

    /// Whether a proof in `term` began less than [`READ_LEASE_MS`] before `now`.
    pub fn holds(&self, term: u64, now: Instant) -> bool {
        self.began(term).is_some_and(|began| {
            now.saturating_duration_since(began) < Duration::from_millis(READ_LEASE_MS)
        })
    }
}

/// Whether `raft`'s node still leads in `term`: by `proof` while it holds and the Raft,
/// asked after, still leads in that term; else by a heartbeat round sent now that a quorum
/// answers (recorded in `proof`). `None` when neither shows it (the caller then proves it
/// by a commit).
pub async fn prove_leadership(
    raft: &Raft<TypeConfig>,
    proof: &LeaderProof,
    term: u64,
) -> Option<Proved> {
    let began = Instant::now();
    if proof.holds(term, began) {
        let leads = raft
            .with_raft_state(move |state| {
                state.server_state == ServerState::Leader
                    && state.vote_ref().leader_id().get_term() == term
            })
            .await;
        return leads.unwrap_or(false).then_some(Proved::Lease);
    }
    let answered = raft.get_read_log_id().await.is_ok();
    if answered && raft.metrics().borrow().current_term == term {
        proof.record(term, began);
        Some(Proved::Round)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_holds_in_its_term_for_the_read_lease_and_not_after() {
        let proof = LeaderProof::default();
        let began = Instant::now();
        assert!(!proof.holds(3, began), "no proof yet");
        proof.record(3, began);
        assert!(proof.holds(3, began));
        assert!(proof.holds(3, began + Duration::from_millis(READ_LEASE_MS - 1)));
        assert!(!proof.holds(3, began + Duration::from_millis(READ_LEASE_MS)));
        assert!(!proof.holds(4, began), "another term is not proved");
        assert!(!proof.holds(2, began), "another term is not proved");
    }

    #[test]
    fn an_older_proof_or_an_earlier_term_never_replaces_the_latest() {
        let proof = LeaderProof::default();
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(10);
        proof.record(3, t1);
        proof.record(3, t0);
        assert_eq!(
            proof.began(3),
            Some(t1),
            "a write that began earlier answered late"
        );
        proof.record(2, t1 + Duration::from_millis(5));
        assert_eq!(proof.began(3), Some(t1), "a stale term's answer");
        assert_eq!(proof.began(2), None);
        proof.record(4, t0);
        assert_eq!(
            proof.began(4),
            Some(t0),
            "a new term replaces the old one's"
        );
        assert_eq!(proof.began(3), None);
    }
}
