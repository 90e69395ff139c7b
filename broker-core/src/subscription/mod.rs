//! Subscriptions: named consumer groups on one topic, each with a lease table per partition.
//!
//! - `config`: what a create request may set and what is stored.
//! - `lease_table`: the pure core of leases, acks and retries ([`LeaseTable`]).
//! - `receipt`: MAC'd receipts ([`ReceiptCodec`]).
//! - `store`: persistence of lease tables in sled ([`SubscriptionStore`]).

pub mod config;
pub mod lease_table;
pub mod receipt;
pub mod store;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

pub use config::{RetryPolicy, StartPosition, SubscriptionConfig, SubscriptionSpec};
pub use lease_table::{Grant, LeaseTable};
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
}

impl Subscription {
    /// Loads (or starts, at `start_offsets`) the tables of every partition.
    pub fn open(
        config: SubscriptionConfig,
        store: SubscriptionStore,
        start_offsets: &[u64],
    ) -> Result<Self> {
        let mut tables = Vec::with_capacity(start_offsets.len());
        for (partition, start) in (0u32..).zip(start_offsets) {
            let table = match store.load(partition)? {
                Some(table) => table,
                None => {
                    let mut table = LeaseTable::starting_at(*start);
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
        })
    }

    /// Number of partitions.
    pub fn partitions(&self) -> usize {
        self.tables.len()
    }

    /// Partition numbers in the order the next receive should visit them.
    pub fn visiting_order(&self) -> impl Iterator<Item = usize> + use<> {
        let count = self.tables.len().max(1);
        let first = self.rotation.fetch_add(1, Ordering::Relaxed) % count;
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

    fn lock(&self, partition: usize) -> MutexGuard<'_, LeaseTable> {
        // A panic while holding the lock cannot leave the table half-changed in a way the
        // store did not see, so a poisoned lock is still usable.
        self.tables[partition]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn partition_number(partition: usize) -> u32 {
    u32::try_from(partition).unwrap_or(u32::MAX)
}
