//! Retry-safe receive: the deliveries each `attempt_id` got, so a client that lost a receive
//! response can repeat it and get the same messages with the same receipts (SQS's
//! `ReceiveRequestAttemptId`). Kept in memory, bounded; a restart forgets them, and the
//! messages come back once their leases end.

use std::collections::{HashMap, VecDeque};

/// Attempt ids remembered per subscription; the oldest is forgotten first.
pub const MAX_ATTEMPT_IDS: usize = 1_000;
/// Longest attempt id.
pub const MAX_ATTEMPT_ID_LEN: usize = 128;

/// One delivery as an attempt remembers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remembered {
    /// Partition.
    pub partition: u32,
    /// Offset.
    pub offset: u64,
    /// The lease it was granted under.
    pub lease: u64,
    /// Which delivery it was.
    pub attempt: u32,
}

/// The deliveries of recent attempt ids of one subscription.
#[derive(Debug, Default)]
pub struct AttemptCache {
    by_id: HashMap<String, Vec<Remembered>>,
    order: VecDeque<String>,
}

impl AttemptCache {
    /// What `id` got, if it is remembered.
    pub fn get(&self, id: &str) -> Option<&[Remembered]> {
        self.by_id.get(id).map(Vec::as_slice)
    }

    /// Remembers what `id` got, forgetting the oldest id past [`MAX_ATTEMPT_IDS`].
    pub fn remember(&mut self, id: String, deliveries: Vec<Remembered>) {
        if self.by_id.insert(id.clone(), deliveries).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > MAX_ATTEMPT_IDS {
            if let Some(oldest) = self.order.pop_front() {
                self.by_id.remove(&oldest);
            }
        }
    }

    /// Forgets every attempt (after a seek, leases are gone).
    pub fn clear(&mut self) {
        self.by_id.clear();
        self.order.clear();
    }
}

/// Whether an attempt id is 1 to [`MAX_ATTEMPT_ID_LEN`] printable ASCII characters.
pub fn valid_attempt_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_ATTEMPT_ID_LEN && id.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_attempt_is_forgotten_past_the_bound() {
        let mut cache = AttemptCache::default();
        for i in 0..=MAX_ATTEMPT_IDS {
            cache.remember(format!("a{i}"), Vec::new());
        }
        assert!(cache.get("a0").is_none());
        assert!(cache.get("a1").is_some());
        assert!(cache.get(&format!("a{MAX_ATTEMPT_IDS}")).is_some());
    }

    #[test]
    fn attempt_ids_are_printable_ascii_up_to_128() {
        assert!(valid_attempt_id(&"a".repeat(128)));
        assert!(!valid_attempt_id(&"a".repeat(129)));
        assert!(!valid_attempt_id(""));
        assert!(!valid_attempt_id("a b"));
    }
}
