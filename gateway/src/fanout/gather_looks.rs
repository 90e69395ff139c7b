//! What a node remembers, per subscription, of each other leader's last answer to its
//! gathers ([`crate::fanout::gather`]): when it was asked, and whether it had nothing. Two choices
//! of a gathering round rest on it ([`RemoteLooks::plan`]):
//!
//! - This node's own partitions first, and an answer with what they had at once when every
//!   other leader had nothing at most [`REMOTE_LOOK_MS`] ago: asking them again costs a
//!   round trip per receive (about a millisecond on a quiet cluster, most of a light-load
//!   publish-to-receive time) for what is most likely nothing, and a message that reached
//!   them since waits at most that long, or less if another receive comes up short.
//! - The other leaders of this node's zone first when one was not asked for
//!   [`REMOTE_LOOK_MS`]: a backlog on this node's partitions fills every receive, and
//!   without this turn their partitions would wait until it drained. Leaders in other zones
//!   are asked only for what this zone did not have, as always (nearby consume).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use broker_core::sync::lock;

/// How long an all-empty answer from the other leaders is trusted, and the longest they go
/// unasked while this node's own partitions fill every receive. 50 ms: a tenth of the
/// lease a long-poll client sees as instant, and by A/B (three release nodes, 1,000 msg/s,
/// consumers asking for 100) enough to answer most light-load receives without a remote
/// call (publish-to-receive p50 4.5 → 3.4 ms).
pub(crate) const REMOTE_LOOK_MS: u64 = 50;

/// Subscriptions remembered at once: bounds the map on a node that gathers for very many.
/// When it is full, looks older than [`REMOTE_LOOK_MS`] (which decide nothing any more) are
/// dropped; when it is still full, a new subscription is not remembered and its rounds go
/// as if the other leaders had not been asked lately (their own first).
pub(crate) const MAX_LOOKS: usize = 4_096;

/// How a gathering round goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoundPlan {
    /// This node's partitions, then the other leaders for what is still wanted.
    LocalFirst,
    /// This node's partitions, and an answer with them when they had anything: every other
    /// leader had nothing within [`REMOTE_LOOK_MS`].
    LocalOnlyIfAny,
    /// The other leaders in this node's zone, these (not asked within [`REMOTE_LOOK_MS`])
    /// before the rest, then this node's partitions for what is still wanted, then the
    /// leaders in other zones (nearby consume: those are asked only for what this zone did
    /// not have, in every plan).
    CloseFirst(BTreeSet<u64>),
}

/// One other leader's last answer to a gathering round.
#[derive(Clone, Copy, Debug)]
struct Look {
    at: Instant,
    empty: bool,
}

/// Per subscription (topic, name), each other leader's last answer to a gathering round
/// (at most one per node of the cluster); at most [`MAX_LOOKS`] subscriptions. Its lock is
/// held for one lookup or one insert (see [`broker_core::sync`]).
#[derive(Debug, Default)]
pub struct RemoteLooks {
    looks: Mutex<HashMap<(String, String), BTreeMap<u64, Look>>>,
}

impl RemoteLooks {
    /// How the next gathering round of `topic`'s subscription `sub` goes at `now`, whose
    /// other leaders are `close` (in this node's zone) and `far`.
    pub fn plan(
        &self,
        topic: &str,
        sub: &str,
        close: &[u64],
        far: &[u64],
        now: Instant,
    ) -> RoundPlan {
        let looks = lock(&self.looks);
        let known = looks.get(&(topic.to_owned(), sub.to_owned()));
        let fresh = |node: &u64| {
            known
                .and_then(|nodes| nodes.get(node))
                .filter(|look| now.saturating_duration_since(look.at) < look_span())
                .copied()
        };
        let stale: BTreeSet<u64> = close
            .iter()
            .copied()
            .filter(|node| fresh(node).is_none())
            .collect();
        if !stale.is_empty() {
            RoundPlan::CloseFirst(stale)
        } else if close
            .iter()
            .chain(far)
            .all(|node| fresh(node).is_some_and(|look| look.empty))
        {
            RoundPlan::LocalOnlyIfAny
        } else {
            RoundPlan::LocalFirst
        }
    }

    /// Records the answers of a gathering round asked at `now` of leaders of `topic`'s
    /// subscription `sub`: each node, and whether it had nothing (one lock for the round).
    pub fn record(&self, topic: &str, sub: &str, now: Instant, answers: &[(u64, bool)]) {
        if answers.is_empty() {
            return;
        }
        let mut looks = lock(&self.looks);
        let key = (topic.to_owned(), sub.to_owned());
        if looks.len() >= MAX_LOOKS && !looks.contains_key(&key) {
            looks.retain(|_, nodes| {
                nodes.retain(|_, look| now.saturating_duration_since(look.at) < look_span());
                !nodes.is_empty()
            });
            if looks.len() >= MAX_LOOKS {
                return;
            }
        }
        let nodes = looks.entry(key).or_default();
        for &(node, empty) in answers {
            nodes.insert(node, Look { at: now, empty });
        }
    }

    /// How many subscriptions are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.looks).len()
    }
}

/// `nodes` with those in `first` moved to the front, each part in its order.
pub(crate) fn stale_first(nodes: &[u64], first: &BTreeSet<u64>) -> Vec<u64> {
    let (mut front, back): (Vec<u64>, Vec<u64>) =
        nodes.iter().copied().partition(|node| first.contains(node));
    front.extend(back);
    front
}

fn look_span() -> Duration {
    Duration::from_millis(REMOTE_LOOK_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn set(nodes: &[u64]) -> BTreeSet<u64> {
        nodes.iter().copied().collect()
    }

    #[test]
    fn unasked_leaders_are_asked_first() {
        let looks = RemoteLooks::default();
        let now = Instant::now();
        assert_eq!(
            looks.plan("t", "s", &[2, 3], &[], now),
            RoundPlan::CloseFirst(set(&[2, 3]))
        );
        looks.record("t", "s", now, &[(2, true)]);
        assert_eq!(
            looks.plan("t", "s", &[2, 3], &[], now),
            RoundPlan::CloseFirst(set(&[3]))
        );
        assert_eq!(stale_first(&[2, 3, 4], &set(&[3])), vec![3, 2, 4]);
    }

    #[test]
    fn all_empty_looks_are_trusted_for_their_span_then_the_others_go_first() {
        let looks = RemoteLooks::default();
        let start = Instant::now();
        looks.record("t", "s", start, &[(2, true)]);
        looks.record("t", "s", start + ms(10), &[(3, true)]);
        let plan = |at| looks.plan("t", "s", &[2, 3], &[], at);
        assert_eq!(plan(start + ms(10)), RoundPlan::LocalOnlyIfAny);
        assert_eq!(
            plan(start + ms(REMOTE_LOOK_MS - 1)),
            RoundPlan::LocalOnlyIfAny
        );
        let due = start + ms(REMOTE_LOOK_MS);
        assert_eq!(plan(due), RoundPlan::CloseFirst(set(&[2])));
        // Another subscription of the topic, or the same name on another topic, is apart;
        // so is a leader that was not asked.
        let remotes_first = RoundPlan::CloseFirst(set(&[2, 3]));
        assert_eq!(looks.plan("t", "other", &[2, 3], &[], start), remotes_first);
        assert_eq!(looks.plan("u", "s", &[2, 3], &[], start), remotes_first);
        let four = looks.plan("t", "s", &[2, 3, 4], &[], start + ms(10));
        assert_eq!(four, RoundPlan::CloseFirst(set(&[4])));
    }

    #[test]
    fn leaders_in_other_zones_never_go_first_but_must_be_empty_to_be_skipped() {
        let looks = RemoteLooks::default();
        let start = Instant::now();
        looks.record("t", "s", start, &[(2, true)]);
        // Zone b's leader 3 was never asked: this zone's empty look is not enough.
        assert_eq!(
            looks.plan("t", "s", &[2], &[3], start),
            RoundPlan::LocalFirst
        );
        looks.record("t", "s", start, &[(3, true)]);
        assert_eq!(
            looks.plan("t", "s", &[2], &[3], start),
            RoundPlan::LocalOnlyIfAny
        );
        looks.record("t", "s", start, &[(3, false)]);
        assert_eq!(
            looks.plan("t", "s", &[2], &[3], start),
            RoundPlan::LocalFirst
        );
    }

    #[test]
    fn a_leader_that_had_messages_is_asked_after_this_nodes_own() {
        let looks = RemoteLooks::default();
        let start = Instant::now();
        looks.record("t", "s", start, &[(2, true)]);
        looks.record("t", "s", start, &[(3, true)]);
        looks.record("t", "s", start + ms(1), &[(3, false)]);
        let plan = looks.plan("t", "s", &[2, 3], &[], start + ms(2));
        assert_eq!(plan, RoundPlan::LocalFirst);
    }

    #[test]
    fn a_full_map_drops_stale_looks_and_never_grows_past_its_bound() {
        let looks = RemoteLooks::default();
        let start = Instant::now();
        for n in 0..MAX_LOOKS {
            looks.record("t", &format!("s{n}"), start, &[(2, true)]);
        }
        assert_eq!(looks.len(), MAX_LOOKS);
        // Still fresh: a new one is not remembered, the old ones keep theirs.
        let soon = start + ms(1);
        looks.record("t", "new", soon, &[(2, true)]);
        assert_eq!(looks.len(), MAX_LOOKS);
        let unknown = RoundPlan::CloseFirst(set(&[2]));
        assert_eq!(looks.plan("t", "new", &[2], &[], soon), unknown);
        assert_eq!(
            looks.plan("t", "s0", &[2], &[], soon),
            RoundPlan::LocalOnlyIfAny
        );
        // An update of one already remembered still lands.
        looks.record("t", "s0", start + ms(2), &[(2, false)]);
        assert_eq!(
            looks.plan("t", "s0", &[2], &[], soon),
            RoundPlan::LocalFirst
        );
        // Once they are stale, they make room.
        let later = start + ms(REMOTE_LOOK_MS + 1);
        looks.record("t", "new", later, &[(2, true)]);
        assert_eq!(looks.len(), 2);
        assert_eq!(
            looks.plan("t", "new", &[2], &[], later),
            RoundPlan::LocalOnlyIfAny
        );
    }
}
