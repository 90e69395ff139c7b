//! Subscriptions: named consumer groups on one topic, each with a lease table per partition.
//!
//! - `config`: what a create request may set and what is stored.
//! - `lease_table`: the pure core of leases, acks and retries ([`LeaseTable`]).
//! - `receipt`: MAC'd receipts ([`ReceiptCodec`]).
//! - `events`: the durable changes of subscription state, as control entries of the
//!   partition log ([`events::SubscriptionEvent`]).
//! - `store`: persistence of lease tables in sled ([`SubscriptionStore`]).

pub mod attempts;
pub mod config;
pub mod events;
pub mod lease_table;
pub mod receipt;
pub mod store;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Mutex, MutexGuard};

use attempts::AttemptCache;

pub use config::{
    Filter, Ordering, RetryPolicy, StartPosition, SubscriptionConfig, SubscriptionSpec,
};
pub use lease_table::{Candidate, Grant, LeaseTable, TablePolicy};
pub use receipt::{ReceiptCodec, ReceiptData};
pub use store::SubscriptionStore;

use crate::error::Result;

/// A live subscription: its settings, one lease table per partition, and where they persist.
#[derive(Debug)]
pub struct Subscription {
    /// Settings.
    pub config: SubscriptionConfig,
    tables: Vec<Mutex<LeaseTable>>,
    store: SubscriptionStore,
    /// Which partition the next receive looks at first, so partitions share the replies.
    rotation: AtomicUsize,
    /// One mover of dead letters at a time, so none is appended twice.
    pub dead_letter_turn: tokio::sync::Mutex<()>,
    /// One redrive at a time.
    pub redrive_turn: tokio::sync::Mutex<()>,
    /// The error text of the last nack of each offset that gave one, for its dead letter.
    last_errors: Mutex<HashMap<(usize, u64), String>>,
    /// Deliveries of recent receive attempt ids.
    attempts: Mutex<AttemptCache>,
}

/// Nack error texts remembered per subscription: enough for every unacked message of a few
/// partitions; past it, dead letters go without the text.
pub const MAX_REMEMBERED_ERRORS: usize = 10_000;
/// Longest nack error text kept.
pub const MAX_ERROR_LEN: usize = 1_024;

impl Subscription {
    /// Loads (or starts, at `start_offsets`) the tables of every partition.
    pub fn open(
        config: SubscriptionConfig,
        store: SubscriptionStore,
        start_offsets: &[u64],
    ) -> Result<Self> {
        let policy = config.table_policy();
        let mut tables = Vec::with_capacity(start_offsets.len());
        for (partition, start) in (0u32..).zip(start_offsets) {
            let table = match store.load(partition, policy)? {
                Some(table) => table,
                None => {
                    let mut table = LeaseTable::starting_at(*start, policy);
                    table.mark_cursor_dirty();
                    store.save(partition, &mut table)?;
                    table
                }
            };
            tables.push(Mutex::new(table));
        }
        Ok(Subscription {
            config,
            tables,
            store,
            rotation: AtomicUsize::new(0),
            dead_letter_turn: tokio::sync::Mutex::new(()),
            redrive_turn: tokio::sync::Mutex::new(()),
            last_errors: Mutex::new(HashMap::new()),
            attempts: Mutex::new(AttemptCache::default()),
        })
    }

    /// Number of partitions.
    pub fn partitions(&self) -> usize {
        self.tables.len()
    }

    /// Partition numbers in the order the next receive should visit them.
    pub fn visiting_order(&self) -> impl Iterator<Item = usize> + use<> {
        let count = self.tables.len().max(1);
        let first = self.rotation.fetch_add(1, AtomicOrdering::Relaxed) % count;
        (0..count).map(move |i| (first + i) % count)
    }

    /// Runs `change` on a partition's table under its lock and persists what it changed.
    pub fn update<T>(
        &self,
        partition: usize,
        change: impl FnOnce(&mut LeaseTable) -> T,
    ) -> Result<T> {
        let mut table = self.lock(partition);
        let result = change(&mut table);
        self.store.save(partition_number(partition), &mut table)?;
        Ok(result)
    }

    /// Reads a partition's table under its lock, changing nothing.
    pub fn inspect<T>(&self, partition: usize, look: impl FnOnce(&LeaseTable) -> T) -> T {
        look(&self.lock(partition))
    }

    /// Remembers the error text a nack gave for an offset.
    pub fn set_last_error(&self, partition: usize, offset: u64, error: &str) {
        let mut errors = relock(&self.last_errors);
        if errors.len() < MAX_REMEMBERED_ERRORS {
            let text: String = error.chars().take(MAX_ERROR_LEN).collect();
            errors.insert((partition, offset), text);
        }
    }

    /// The error text of an offset's last nack, forgetting it.
    pub fn take_last_error(&self, partition: usize, offset: u64) -> Option<String> {
        relock(&self.last_errors).remove(&(partition, offset))
    }

    /// Where redrive continues on the dead-letter topic's partition.
    pub fn redrive_cursor(&self, partition: usize) -> Result<u64> {
        self.store.redrive_cursor(partition_number(partition))
    }

    /// Moves the redrive cursor of a dead-letter partition.
    pub fn set_redrive_cursor(&self, partition: usize, offset: u64) -> Result<()> {
        self.store
            .set_redrive_cursor(partition_number(partition), offset)
    }

    /// The deliveries an attempt id got, if remembered.
    pub fn remembered_attempt(&self, id: &str) -> Option<Vec<attempts::Remembered>> {
        relock(&self.attempts).get(id).map(<[_]>::to_vec)
    }

    /// Remembers the deliveries an attempt id got.
    pub fn remember_attempt(&self, id: String, deliveries: Vec<attempts::Remembered>) {
        relock(&self.attempts).remember(id, deliveries);
    }

    /// Forgets every attempt id.
    pub fn forget_attempts(&self) {
        relock(&self.attempts).clear();
    }

    fn lock(&self, partition: usize) -> MutexGuard<'_, LeaseTable> {
        // A panic while holding the lock cannot leave the table half-changed in a way the
        // store did not see, so a poisoned lock is still usable.
        self.tables[partition]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn relock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn partition_number(partition: usize) -> u32 {
    u32::try_from(partition).unwrap_or(u32::MAX)
}
