//! [`ProduceErrors`]: produce requests this node refused or failed, counted per topic and in
//! total, the cumulative counters behind the `produce_errors` kind.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use broker_core::sync::lock;

/// Most topic names counted apart: a refused produce may name a topic that does not exist,
/// so the names come from clients; past this many, new names count only in the total.
pub const MAX_COUNTED_TOPICS: usize = 10_000;

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

    /// Failed produce requests to `topic`, or to any topic with `None`.
    pub fn total(&self, topic: Option<&str>) -> u64 {
        match topic {
            None => self.total.load(Ordering::Relaxed),
            Some(topic) => lock(&self.by_topic).get(topic).copied().unwrap_or(0),
        }
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
}
