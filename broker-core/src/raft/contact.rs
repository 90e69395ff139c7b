//! [`LeaderContact`]: when a follower last heard its partition's leader, and the commit the
//! leader told it then, so a follower can tell whether what it applied is fresh enough to
//! serve an offset read (a follower read, as Kafka's KIP-392).
//!
//! Every append the leader sends (heartbeats included, see [`super::HEARTBEAT_MS`]) carries
//! the leader's commit. A follower that accepted one at time `t` carrying commit `c`, and has
//! applied through `c`, holds every record the leader had committed at `t`: what it lacks was
//! committed after `t`. So with `t` at most [`FOLLOWER_READ_MAX_LAG_MS`] ago, a read it
//! serves is at most that far behind the leader's commit. It never serves more than it
//! applied, and it applies only committed entries: a follower read never shows an
//! uncommitted record.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How far behind the leader's commit a follower read may be: the follower must have heard
/// the leader within this many milliseconds. More than three heartbeats (an idle leader
/// sends one every 75 ms, see [`super::HEARTBEAT_MS`]), so a late one on a loaded machine
/// does not send reads to the leader; and the shortest
/// election timeout ([`super::ELECTION_TIMEOUT_MS`]), past which a follower thinks its
/// leader gone anyway.
pub const FOLLOWER_READ_MAX_LAG_MS: u64 = 250;

/// Longest a follower read waits for the follower to apply the commit it last heard of (it
/// applies moments after it hears): one heartbeat. A follower still behind after it is
/// behind the leader's log, and the read goes to the leader.
pub const FOLLOWER_APPLY_WAIT_MS: u64 = super::HEARTBEAT_MS;

/// The value of [`LeaderContact`]'s fields before anything was heard.
const NEVER: u64 = 0;

/// The instant the contact times count from (a monotonic clock: wall-clock steps must not
/// make a stale follower look fresh).
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Microseconds since [`epoch`], plus one so that [`NEVER`] is never a time.
fn now_us() -> u64 {
    u64::try_from(epoch().elapsed().as_micros())
        .unwrap_or(u64::MAX - 1)
        .saturating_add(1)
}

/// What a follower last heard from its partition's leader.
#[derive(Debug, Default)]
pub struct LeaderContact {
    /// When ([`now_us`]), or [`NEVER`].
    heard_at_us: AtomicU64,
    /// The leader's commit then: its index plus one, or [`NEVER`] (nothing committed).
    commit_plus_one: AtomicU64,
}

/// The last contact, read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heard {
    /// How long ago.
    pub ago: Duration,
    /// The commit the leader sent then, or a later one (`None`: nothing committed).
    pub commit: Option<u64>,
}

impl LeaderContact {
    /// Records an append this node accepted from the leader, carrying the leader's commit.
    pub fn record(&self, leader_commit: Option<u64>) {
        let commit = leader_commit.map_or(NEVER, |c| c.saturating_add(1));
        // The commit first: whoever sees the new time sees this commit or a later one.
        self.commit_plus_one.fetch_max(commit, Ordering::Release);
        self.heard_at_us.fetch_max(now_us(), Ordering::Release);
    }

    /// The last contact, or `None` when the leader was never heard.
    pub fn last(&self) -> Option<Heard> {
        let at = self.heard_at_us.load(Ordering::Acquire);
        if at == NEVER {
            return None;
        }
        let commit = self.commit_plus_one.load(Ordering::Acquire);
        Some(Heard {
            ago: Duration::from_micros(now_us().saturating_sub(at)),
            commit: commit.checked_sub(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contact_reads_back_its_commit_and_never_goes_backwards() {
        let contact = LeaderContact::default();
        assert_eq!(contact.last(), None);
        contact.record(Some(7));
        let heard = contact.last().expect("heard");
        assert_eq!(heard.commit, Some(7));
        assert!(heard.ago < Duration::from_secs(60));
        contact.record(Some(3));
        assert_eq!(contact.last().map(|h| h.commit), Some(Some(7)));
        let fresh = LeaderContact::default();
        fresh.record(None);
        assert_eq!(fresh.last().map(|h| h.commit), Some(None));
    }
}
