//! [`RequestFigures`]: what the request middleware ([`crate::governance::metrics::track_requests`]) counts
//! per topic for the per-minute history: a small fixed-bucket latency histogram, read and
//! reset by the sampler. (The produce requests that failed are the node's one
//! [`crate::governance::produce_errors::ProduceErrors`], which the alerts read too.) A request costs a
//! read lock on a map and a relaxed atomic add; the map is bounded by [`MAX_TRACKED_TOPICS`]
//! and pruned to the existing topics at every sample.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use broker_core::sync::{read, write};

/// Upper bounds of the latency buckets, ms: 1 ms (a cached read) to 30 s (the longest
/// request timeout a plain request gets). A request slower than the last bound lands in one
/// more bucket, whose percentile is reported as that last bound: a p99 of 30,000 means "at
/// least 30 s".
pub(crate) const LATENCY_BOUNDS_MS: [u64; 14] = [
    1, 2, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000,
];
/// Buckets of a histogram: one per bound and the overflow one.
pub(crate) const LATENCY_BUCKETS: usize = LATENCY_BOUNDS_MS.len() + 1;
/// The most topics counted at once: the map lives as long as the topics, and requests naming
/// topics that do not exist (answered 404, not counted) cannot grow it; past this many
/// topics, a topic not yet in the map is not counted until the next sample prunes it.
pub(crate) const MAX_TRACKED_TOPICS: usize = 10_000;
/// The percentile reported.
const PERCENTILE: f64 = 0.99;

/// Counts of requests per latency bucket.
pub(crate) type LatencyCounts = [u64; LATENCY_BUCKETS];

/// One topic's figures.
#[derive(Debug, Default)]
struct TopicRequests {
    latency: [AtomicU64; LATENCY_BUCKETS],
}

/// Per topic: the latency histogram since the last sample.
#[derive(Debug, Default)]
pub struct RequestFigures {
    topics: RwLock<HashMap<String, Arc<TopicRequests>>>,
}

impl RequestFigures {
    /// Counts a request on `topic` that took `latency_ms`.
    pub fn record(&self, topic: &str, latency_ms: u64) {
        let known = read(&self.topics).get(topic).cloned();
        let figures = match known {
            Some(figures) => figures,
            None => {
                let mut topics = write(&self.topics);
                if topics.len() >= MAX_TRACKED_TOPICS && !topics.contains_key(topic) {
                    return;
                }
                Arc::clone(topics.entry(topic.to_owned()).or_default())
            }
        };
        let bucket = LATENCY_BOUNDS_MS
            .iter()
            .position(|&bound| latency_ms <= bound)
            .unwrap_or(LATENCY_BOUNDS_MS.len());
        figures.latency[bucket].fetch_add(1, Ordering::Relaxed);
    }

    /// `topic`'s latency counts since the last call (reset to zero).
    pub fn take(&self, topic: &str) -> LatencyCounts {
        let Some(figures) = read(&self.topics).get(topic).cloned() else {
            return [0; LATENCY_BUCKETS];
        };
        std::array::from_fn(|i| figures.latency[i].swap(0, Ordering::Relaxed))
    }

    /// Forgets every topic not in `existing`.
    pub fn prune(&self, existing: &HashSet<&str>) {
        write(&self.topics).retain(|topic, _| existing.contains(topic.as_str()));
    }
}

/// The 99th percentile of `counts`, ms: the bound of the bucket holding it (0 with no
/// request).
pub(crate) fn p99_ms(counts: &LatencyCounts) -> u64 {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return 0;
    }
    let rank = ((total as f64) * PERCENTILE).ceil() as u64;
    let mut seen = 0;
    for (bucket, count) in counts.iter().enumerate() {
        seen += count;
        if seen >= rank {
            return LATENCY_BOUNDS_MS[bucket.min(LATENCY_BOUNDS_MS.len() - 1)];
        }
    }
    LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.len() - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_p99_is_the_bound_of_the_bucket_holding_it() {
        let figures = RequestFigures::default();
        for _ in 0..98 {
            figures.record("t", 3);
        }
        figures.record("t", 40);
        figures.record("t", 90_000);
        let counts = figures.take("t");
        assert_eq!(counts.iter().sum::<u64>(), 100);
        assert_eq!(p99_ms(&counts), 50, "the 99th of 100 is the 40 ms one");
        let again = figures.take("t");
        assert_eq!(p99_ms(&again), 0, "taken counts are reset");
        figures.record("t", 90_000);
        assert_eq!(p99_ms(&figures.take("t")), 30_000);
    }

    #[test]
    fn pruning_forgets_topics_that_are_gone() {
        let figures = RequestFigures::default();
        figures.record("a", 1);
        figures.record("b", 1);
        figures.prune(&HashSet::from(["a"]));
        assert_eq!(figures.take("a").iter().sum::<u64>(), 1);
        assert_eq!(figures.take("b").iter().sum::<u64>(), 0);
    }
}
