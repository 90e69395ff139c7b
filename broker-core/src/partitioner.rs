//! Which partition a message goes to: a stable hash of its key, or round-robin without one.

use std::sync::atomic::{AtomicU32, Ordering};

/// FNV-1a 32-bit: stable across versions, platforms and restarts (std's hasher is not).
pub fn key_hash(key: &str) -> u32 {
    key.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// FNV-1a 64-bit of a key: identifies a key in ordered subscriptions' lease tables, where a
/// 32-bit hash would make unrelated keys wait for each other too often.
pub fn key_hash64(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Picks partitions for one topic.
#[derive(Debug, Default)]
pub struct Partitioner {
    next: AtomicU32,
}

impl Partitioner {
    /// The partition for a message with this key among `partitions`; an unkeyed one goes to
    /// one of `preferred` when it names any (in a cluster: the partitions this node leads),
    /// in turn.
    pub fn choose_among(&self, key: Option<&str>, partitions: u32, preferred: &[u32]) -> u32 {
        match (key, preferred.len()) {
            (None, n) if n > 0 => {
                let turn = self.next.fetch_add(1, Ordering::Relaxed) as usize;
                preferred[turn % n]
            }
            _ => self.choose(key, partitions),
        }
    }

    /// The partition for a message with this key among `partitions`.
    pub fn choose(&self, key: Option<&str>, partitions: u32) -> u32 {
        let partitions = partitions.max(1);
        match key {
            Some(key) => key_hash(key) % partitions,
            None => self.next.fetch_add(1, Ordering::Relaxed) % partitions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_always_maps_to_the_same_partition() {
        let p = Partitioner::default();
        let first = p.choose(Some("customer-42"), 7);
        for _ in 0..10 {
            assert_eq!(p.choose(Some("customer-42"), 7), first);
        }
        assert_eq!(key_hash("a"), 0xe40c_292c, "FNV-1a reference value changed");
    }

    #[test]
    fn unkeyed_messages_cycle_through_partitions() {
        let p = Partitioner::default();
        let seen: Vec<u32> = (0..6).map(|_| p.choose(None, 3)).collect();
        assert_eq!(seen, vec![0, 1, 2, 0, 1, 2]);
    }
}
