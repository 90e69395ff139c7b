//! Helpers shared by the lease table tests: candidates, a retry policy, a store that follows a
//! table's change lists, and the events a partition log would record for replay.

use std::collections::BTreeMap;

use broker_core::subscription::config::RetryPolicy;
use broker_core::subscription::lease_table::{Candidate, Cursor, Entry, LeaseTable, TablePolicy};

/// Candidates without key, filter or delay at `offsets`.
pub fn plain(offsets: std::ops::Range<u64>) -> Vec<Candidate> {
    offsets
        .map(|offset| Candidate {
            offset,
            key_hash: None,
            wanted: true,
            not_before_ms: 0,
        })
        .collect()
}

/// A store as sled would hold it: the cursor, the entries and the settled ranges, updated
/// from change lists.
#[derive(Default, Clone)]
pub struct FakeStore {
    cursor: Option<Cursor>,
    entries: BTreeMap<u64, Entry>,
    settled: BTreeMap<u64, u64>,
}

impl FakeStore {
    pub fn save(&mut self, table: &mut LeaseTable) {
        let changes = table.take_changes();
        if let Some(cursor) = changes.cursor {
            self.cursor = Some(cursor);
        }
        for (offset, entry) in changes.entries {
            match entry {
                Some(entry) => {
                    self.entries.insert(offset, entry);
                }
                None => assert!(
                    self.entries.remove(&offset).is_some(),
                    "offset {offset}: a removal of an entry the store never held"
                ),
            };
        }
        for (offset, entry) in &self.entries {
            assert_eq!(
                table.entry(*offset).as_ref(),
                Some(entry),
                "offset {offset}: the store's entry differs from the table's after a save"
            );
        }
        for (start, end) in changes.settled {
            match end {
                Some(end) => self.settled.insert(start, end),
                None => self.settled.remove(&start),
            };
        }
    }

    pub fn restore(&self, policy: TablePolicy) -> LeaseTable {
        let cursor = self.cursor.expect("saved at least once");
        let settled: Vec<(u64, u64)> = self.settled.iter().map(|(s, e)| (*s, *e)).collect();
        LeaseTable::restore(
            cursor,
            self.entries.iter().map(|(o, e)| (*o, *e)).collect(),
            &settled,
            policy,
        )
    }
}

/// A change of delivery state as the partition log would record it, for replay.
#[derive(Debug, Clone, Copy)]
pub enum Event {
    Ack(u64),
    Nack {
        offset: u64,
        attempts: u32,
        due_ms: u64,
        key_hash: Option<u64>,
    },
    Attempt {
        offset: u64,
        attempts: u32,
        key_hash: Option<u64>,
    },
    DeadLettered(u64),
}

impl Event {
    pub fn replay(self, table: &mut LeaseTable) {
        match self {
            Event::Ack(offset) => table.replay_ack(offset),
            Event::Nack {
                offset,
                attempts,
                due_ms,
                key_hash,
            } => table.replay_nack(offset, attempts, due_ms, key_hash),
            Event::Attempt {
                offset,
                attempts,
                key_hash,
            } => table.replay_attempt(offset, attempts, key_hash),
            Event::DeadLettered(offset) => table.replay_dead_lettered(offset),
        }
    }
}

pub fn retry() -> RetryPolicy {
    RetryPolicy {
        initial_backoff_ms: 100,
        max_backoff_ms: 1_000,
        multiplier: 2.0,
    }
}
