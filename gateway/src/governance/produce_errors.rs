//! [`ProduceErrors`]: produce requests this node took from clients and answered with an
//! error, counted per topic and in total since the node started. One counter, fed once per
//! request by the request middleware ([`crate::governance::metrics::track_requests`]: after the edge and
//! any forward, so a refusal by the edge counts, and a produce forwarded to another node
//! counts here, on the node the client sent it to, with the leader's answer), read by the
//! per-minute history (each topic's `produce_errors`) and by the alerts' `produce_errors`
//! kind. A produce answered 404 (no such topic) is not counted: the names would come from
//! clients.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use broker_core::sync::lock;

/// Most topics counted apart. A topic is counted from its first error and forgotten when
/// the history's sampler finds it gone ([`ProduceErrors::prune`]); past this many, a topic
/// not yet counted counts only in the total until a prune makes room.
pub(crate) const MAX_COUNTED_TOPICS: usize = 10_000;

/// Cumulative counts of failed produce requests since the node started.
#[derive(Debug, Default)]
pub struct ProduceErrors {
    total: AtomicU64,
    by_topic: Mutex<HashMap<String, u64>>,
}

impl ProduceErrors {
    /// Counts one failed produce request to `topic`.
    pub fn count(&self, topic: &str) {
        self.total.fetch_add(1, Ordering::Relaxed);
        let mut by_topic = lock(&self.by_topic);
        if let Some(count) = by_topic.get_mut(topic) {
            *count += 1;
        } else if by_topic.len() < MAX_COUNTED_TOPICS {
            by_topic.insert(topic.to_owned(), 1);
        }
    }

    /// Failed produce requests to `topic` since it was first counted, or to any topic since
    /// the node started with `None`.
    pub fn total(&self, topic: Option<&str>) -> u64 {
        match topic {
            None => self.total.load(Ordering::Relaxed),
            Some(topic) => lock(&self.by_topic).get(topic).copied().unwrap_or(0),
        }
    }

    /// Forgets every topic not in `existing` (its count starts again from 0 if a topic of
    /// that name is made again); the total keeps them.
    pub fn prune(&self, existing: &HashSet<&str>) {
        lock(&self.by_topic).retain(|topic, _| existing.contains(topic.as_str()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_topic_and_in_total() {
        let errors = ProduceErrors::default();
        errors.count("a");
        errors.count("a");
        errors.count("b");
        assert_eq!(errors.total(Some("a")), 2);
        assert_eq!(errors.total(Some("c")), 0);
        assert_eq!(errors.total(None), 3);
    }

    #[test]
    fn pruning_forgets_topics_that_are_gone_but_not_their_part_of_the_total() {
        let errors = ProduceErrors::default();
        errors.count("a");
        errors.count("b");
        errors.prune(&HashSet::from(["a"]));
        assert_eq!(errors.total(Some("a")), 1);
        assert_eq!(errors.total(Some("b")), 0);
        assert_eq!(errors.total(None), 2);
        errors.count("b");
        assert_eq!(errors.total(Some("b")), 1, "counted again from 0");
    }

    #[test]
    fn past_the_topic_bound_new_topics_count_in_the_total_only() {
        let errors = ProduceErrors::default();
        for n in 0..MAX_COUNTED_TOPICS {
            errors.count(&format!("t{n}"));
        }
        errors.count("one-too-many");
        errors.count("t0");
        assert_eq!(errors.total(Some("one-too-many")), 0);
        assert_eq!(errors.total(Some("t0")), 2);
        assert_eq!(errors.total(None), MAX_COUNTED_TOPICS as u64 + 2);
    }
}
