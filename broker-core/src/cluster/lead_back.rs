//! Automatic preferred-leader election (Kafka's `auto.leader.rebalance.enable`): a partition
//! led by a node other than its preferred leader (the first replica of its placement, which
//! placement spreads evenly over nodes and zones) goes back to it once that node is Active,
//! live and caught up, and has stayed so for a while. Without it, every failover leaves its
//! partitions on the survivors for good, and one node ends up leading most of the cluster.
//!
//! The partition's leader decides, from what it alone knows first-hand: its followers' lag
//! (openraft's replication metrics) and when it last heard each node. [`LeadBack`] is the
//! pure part, fed the partitions a node leads and asked which are due; the caller moves
//! them (the leadership transfer, which waits for the target to hold the whole log).
//!
//! A move stops the partition's writes for about one leader lease (half a second), so a
//! move is made only after [`LeadBack`]'s `after` of steady health, and a move that failed
//! waits that long again before the next try.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::state::ClusterState;

/// Most entries the preferred leader may lag and still count as caught up: one append's
/// worth ([`crate::raft::MAX_PAYLOAD_ENTRIES`]), which a steady produce keeps in flight;
/// the transfer then waits for the rest with the partition's writes held.
pub const CAUGHT_UP_ENTRIES: u64 = 32;

/// A partition this node leads, as [`LeadBack::due`] needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Led {
    /// Its topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// How many entries each follower lags this node's log (a follower never heard from
    /// is missing).
    pub lag: BTreeMap<u64, u64>,
}

/// A partition to hand back to its preferred leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandBack {
    /// Its topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// Its preferred leader, the target.
    pub to: u64,
}

/// Which partitions this node leads are due to go back to their preferred leaders: each
/// partition's preferred leader must have been fit (see [`LeadBack::due`]) at every look for
/// `after`.
#[derive(Debug)]
pub struct LeadBack {
    after: Duration,
    fit_since: BTreeMap<(String, u32), Instant>,
}

impl LeadBack {
    /// A policy that hands a partition back after its preferred leader was fit for `after`.
    pub fn new(after: Duration) -> LeadBack {
        LeadBack {
            after,
            fit_since: BTreeMap::new(),
        }
    }

    /// One look at `now`: of the partitions this node (`me`) leads, those whose preferred
    /// leader has been fit at every look since at least `after` ago. Fit: another node,
    /// Active in `state`, `live` (heard from lately), lagging at most [`CAUGHT_UP_ENTRIES`].
    /// Internal topics (`__wharf.`) are left to their own keepers. A partition returned is
    /// forgotten, so whether its move worked or not, it is due again only after another
    /// `after` (a failed move is not retried in a loop).
    pub fn due(
        &mut self,
        state: &ClusterState,
        me: u64,
        led: &[Led],
        live: impl Fn(u64) -> bool,
        now: Instant,
    ) -> Vec<HandBack> {
        let mut due = Vec::new();
        let mut seen = BTreeSet::new();
        for partition in led {
            if crate::names::is_internal(&partition.topic) {
                continue;
            }
            let Some(to) = fit_preferred(state, me, partition, &live) else {
                continue;
            };
            let key = (partition.topic.clone(), partition.partition);
            let since = *self.fit_since.entry(key.clone()).or_insert(now);
            if now.saturating_duration_since(since) >= self.after {
                self.fit_since.remove(&key);
                due.push(HandBack {
                    topic: partition.topic.clone(),
                    partition: partition.partition,
                    to,
                });
            } else {
                seen.insert(key);
            }
        }
        // Whatever was not fit at this look starts over.
        self.fit_since.retain(|key, _| seen.contains(key));
        due
    }
}

/// The preferred leader of `led`, when it is fit to take the partition back.
fn fit_preferred(
    state: &ClusterState,
    me: u64,
    led: &Led,
    live: &impl Fn(u64) -> bool,
) -> Option<u64> {
    let placement = state
        .topic(&led.topic)?
        .placement
        .get(led.partition as usize)?;
    let preferred = placement.preferred_leader()?;
    let active = state.node(preferred).is_some_and(|n| n.is_active());
    let caught_up = led
        .lag
        .get(&preferred)
        .is_some_and(|lag| *lag <= CAUGHT_UP_ENTRIES);
    (preferred != me && active && live(preferred) && caught_up).then_some(preferred)
}
