//! Re-syncing a replica whose log was found damaged below its tail (`RELIABILITY.md` R9: bit
//! rot or a bad sector in entries it had acknowledged).
//!
//! At start the replica checks the frames openraft is about to read (from its snapshot on).
//! At a bad frame it cuts that frame and everything after it, as a truncation does, and takes
//! those entries from the leader again, like a follower that fell behind. Its shorter log is
//! not what it promised, though: entries it acknowledged may have been committed with its
//! help, and a leader elected without them would lose them (the NATS#7549 shape). So until its
//! log reaches again the last entry it held before the cut (its *claim*, kept in the Raft
//! state file across restarts):
//! - it votes as if it still held its claim: a candidate whose last entry is older than the
//!   claim is refused, as openraft would refuse it before the damage;
//! - it does not stand for election (openraft's `elect` is off): it lacks entries it had.
//!
//! Once an append takes its log to the claim's index, the log holds a leader's entries up to
//! there, and with them every entry the replica acknowledged (a leader holds every committed
//! entry); the claim is dropped and the replica is an ordinary one again.

use std::sync::Mutex;

use openraft::LogId;
use openraft::Raft;
use tokio::sync::watch;

use super::types::TypeConfig;

/// The repair claim of one replica: shared by its log storage (which sets and drops it) and
/// its vote handler (which votes by it).
#[derive(Debug)]
pub struct RepairClaim {
    claim: Mutex<Option<LogId<u64>>>,
    repairing: watch::Sender<bool>,
}

impl RepairClaim {
    /// A claim as loaded from the Raft state file (`None`: not repairing).
    pub fn new(claim: Option<LogId<u64>>) -> RepairClaim {
        RepairClaim {
            claim: Mutex::new(claim),
            repairing: watch::Sender::new(claim.is_some()),
        }
    }

    /// The last entry the replica held before its log was cut, while it re-syncs.
    pub fn claim(&self) -> Option<LogId<u64>> {
        *crate::sync::lock(&self.claim)
    }

    /// Whether a vote for a candidate whose log ends at `candidate_last` must be refused
    /// (it is older than the claim); the claim, when it must.
    pub fn refuses(&self, candidate_last: Option<&LogId<u64>>) -> Option<LogId<u64>> {
        self.claim().filter(|claim| candidate_last < Some(claim))
    }

    /// Whether a log ending at `last` holds the claim's index again.
    pub fn reached_by(&self, last: Option<&LogId<u64>>) -> bool {
        match (self.claim(), last) {
            (Some(claim), Some(last)) => last.index >= claim.index,
            (Some(_), None) => false,
            (None, _) => true,
        }
    }

    /// Sets the claim (the caller saved it first).
    pub(crate) fn set(&self, claim: LogId<u64>) {
        *crate::sync::lock(&self.claim) = Some(claim);
        self.repairing.send_replace(true);
    }

    /// Drops the claim (the caller saved that first).
    pub(crate) fn clear(&self) {
        *crate::sync::lock(&self.claim) = None;
        self.repairing.send_replace(false);
    }

    /// Keeps `raft` from standing for election while the claim stands, and lets it again once
    /// the claim is dropped (a task; it ends then, or when the storage holding the claim goes).
    pub fn hold_elections(&self, raft: &Raft<TypeConfig>) {
        let mut repairing = self.repairing.subscribe();
        if !*repairing.borrow_and_update() {
            return;
        }
        raft.runtime_config().elect(false);
        let raft = raft.clone();
        tokio::spawn(async move {
            while *repairing.borrow_and_update() {
                if repairing.changed().await.is_err() {
                    return;
                }
            }
            tracing::info!("a damaged log re-synced up to its claim: standing for election again");
            raft.runtime_config().elect(true);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::types::log_id;

    #[test]
    fn a_claim_refuses_older_candidates_until_the_log_reaches_it() {
        let repair = RepairClaim::new(None);
        assert_eq!(repair.refuses(None), None, "no claim: no refusal");
        repair.set(log_id(3, 40));
        for older in [None, Some(log_id(3, 39)), Some(log_id(2, 90))] {
            assert_eq!(repair.refuses(older.as_ref()), Some(log_id(3, 40)));
        }
        for newer in [log_id(3, 40), log_id(3, 41), log_id(4, 12)] {
            assert_eq!(repair.refuses(Some(&newer)), None);
        }
        assert!(!repair.reached_by(Some(&log_id(4, 39))));
        assert!(!repair.reached_by(None));
        assert!(repair.reached_by(Some(&log_id(4, 40))));
        repair.clear();
        assert_eq!(repair.refuses(None), None);
        assert!(repair.reached_by(None));
    }
}
