//! Subscriptions: named consumer groups on one topic, each with a lease table per partition.
//!
//! - `config`: what a create request may set and what is stored.
//! - `lease_table`: the pure core of leases, acks and retries ([`LeaseTable`]).
//! - `receipt`: MAC'd receipts ([`ReceiptCodec`]).
//! - `events`: the durable changes of subscription state, as control entries of the
//!   partition log ([`events::SubscriptionEvent`]).
//! - `store`: checkpoints of lease tables in sled ([`SubscriptionStore`]).
//! - `restore`: opening a table: its checkpoint plus the log's events replayed.
//!
//! A change that must survive a crash (ack, nack, dead letter, seek, redrive) is made to the
//! table and queued as an event in the partition log under the table's lock, so the log holds
//! each table's changes in the order they were made; the caller answers once the log has
//! committed it. Leases and extends live in memory and reach the checkpoint, written in the
//! background about once a second; nothing on a request's path waits for sled. On a single
//! node every delivery is also queued as an event (`delivered`, naming its consumer, for the
//! message trace) without waiting for it.

pub mod attempts;
pub mod config;
pub mod events;
pub mod lease_table;
pub mod receipt;
mod restore;
pub mod store;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Mutex, MutexGuard};

use attempts::AttemptCache;
use events::SubscriptionEvent;

pub use config::{
    Filter, Ordering, RetryPolicy, StartPosition, SubscriptionConfig, SubscriptionSpec,
};
pub use lease_table::{Candidate, EntryState, Grant, LeaseTable, TableImage, TablePolicy};
pub use receipt::{ReceiptCodec, ReceiptData};
pub use store::SubscriptionStore;

use crate::error::Result;
use crate::message::Origin;
use crate::storage::{LogPosition, PartitionHandle, PendingAppend};

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
    /// In a cluster, one request at a time makes a table live and gives it its start.
    pub live_turn: tokio::sync::Mutex<()>,
    /// The error text of the last nack of each offset that gave one, for its dead letter.
    last_errors: Mutex<HashMap<(usize, u64), String>>,
    /// Deliveries of recent receive attempt ids.
    attempts: Mutex<AttemptCache>,
    /// Where redrive continues on each partition of the dead-letter topic.
    redrive: Mutex<BTreeMap<u32, u64>>,
    /// The position of each partition's last checkpoint, so an idle one writes nothing.
    checkpointed: Mutex<Vec<Option<LogPosition>>>,
    /// In a cluster: per partition, how far its table follows the log, and whether it is live.
    replicas: Option<Mutex<Vec<ReplicaTable>>>,
    /// Its delivery and settle counters.
    pub(crate) counters: crate::telemetry::SubscriptionCounters,
}

/// In a cluster, what one partition's table is: on the partition's leader it is live (leases
/// are granted from it, and it changes first, its events following it into the log); on every
/// other replica it follows the log, replaying the committed events (derived state, as the
/// checkpoint writes it). A leader's table is never checkpointed: it may hold changes whose
/// events a deposed leader never got committed.
#[derive(Debug, Clone, Copy, Default)]
struct ReplicaTable {
    /// The table reflects every committed event before this position.
    position: LogPosition,
    /// The table has its start (a checkpoint, or the first `sought` event of the log).
    started: bool,
    /// The term in which this node's table became the partition's live one.
    live_term: Option<u64>,
}

/// The attempt number of a first delivery: the one a [`SubscriptionEvent::Delivered`] exists
/// for only to show it in the trace (a restart forgets it, see `restore`).
const FIRST_ATTEMPT: u32 = 1;

/// Nack error texts remembered per subscription: enough for every unacked message of a few
/// partitions; past it, dead letters go without the text.
pub const MAX_REMEMBERED_ERRORS: usize = 10_000;
/// Longest nack error text kept.
pub const MAX_ERROR_LEN: usize = 1_024;

impl Subscription {
    /// Opens the tables of every partition: each from its checkpoint (or at its start offset,
    /// for a new subscription), clamped to its log's end and brought up to date by replaying
    /// the log's events from the checkpoint. `replicated`: the logs are Raft logs of a cluster
    /// (see `ReplicaTable`). Blocking: it reads the logs' tails.
    pub fn open(
        config: SubscriptionConfig,
        store: SubscriptionStore,
        start_offsets: &[u64],
        logs: &[PartitionHandle],
        replicated: bool,
    ) -> Result<Self> {
        let mut tables = Vec::with_capacity(logs.len());
        let mut replicas = Vec::with_capacity(logs.len());
        let mut last_errors = HashMap::new();
        let mut redrive = BTreeMap::new();
        for ((partition, start), log) in (0u32..).zip(start_offsets).zip(logs) {
            let restored =
                restore::restore_partition(&config, &store, partition, *start, log, replicated)?;
            replicas.push(ReplicaTable {
                position: restored.position,
                started: restored.started,
                live_term: None,
            });
            for (offset, error) in restored.errors {
                last_errors.insert((partition as usize, offset), error);
            }
            for (dead_letter_partition, next) in restored.redrive {
                let cursor: &mut u64 = redrive.entry(dead_letter_partition).or_default();
                *cursor = (*cursor).max(next);
            }
            tables.push(Mutex::new(restored.table));
        }
        for (dead_letter_partition, next) in store.redrive_cursors()? {
            let cursor: &mut u64 = redrive.entry(dead_letter_partition).or_default();
            *cursor = (*cursor).max(next);
        }
        Ok(Subscription {
            config,
            tables,
            store,
            rotation: AtomicUsize::new(0),
            dead_letter_turn: tokio::sync::Mutex::new(()),
            redrive_turn: tokio::sync::Mutex::new(()),
            live_turn: tokio::sync::Mutex::new(()),
            last_errors: Mutex::new(last_errors),
            attempts: Mutex::new(AttemptCache::default()),
            redrive: Mutex::new(redrive),
            checkpointed: Mutex::new(vec![None; logs.len()]),
            replicas: replicated.then(|| Mutex::new(replicas)),
            counters: crate::telemetry::SubscriptionCounters::default(),
        })
    }

    /// Whether its tables follow Raft logs (a cluster).
    pub fn is_replicated(&self) -> bool {
        self.replicas.is_some()
    }

    fn replica(&self, partition: usize) -> ReplicaTable {
        self.replicas
            .as_ref()
            .and_then(|r| crate::sync::lock(r).get(partition).copied())
            .unwrap_or_default()
    }

    fn set_replica(&self, partition: usize, change: impl FnOnce(&mut ReplicaTable)) {
        if let Some(replicas) = &self.replicas
            && let Some(replica) = crate::sync::lock(replicas).get_mut(partition)
        {
            change(replica);
        }
    }

    /// In a cluster, the term in which this node's table of `partition` became live (this
    /// node led the partition then); `None` while it follows the log.
    pub fn live_term(&self, partition: usize) -> Option<u64> {
        self.replica(partition).live_term
    }

    /// In a cluster, whether the table of `partition` has its start.
    pub fn started(&self, partition: usize) -> bool {
        self.replica(partition).started
    }

    /// In a cluster, makes the table of `partition` live for `term`: a table that was live in
    /// another term is rebuilt from its checkpoint first (it may hold changes a deposed leader
    /// never committed), then it replays the log's committed events, every one before this
    /// term's first entry included. The caller has seen this term's first entry applied.
    /// Returns whether the table has its start. Blocking.
    pub fn make_live(&self, partition: usize, term: u64, log: &PartitionHandle) -> Result<bool> {
        let mut table = self.lock(partition);
        match self.replica(partition).live_term {
            Some(live) if live == term => return Ok(self.replica(partition).started),
            Some(_) => self.rebuild(partition, &mut table, log)?,
            None => {}
        }
        self.replay_into(partition, &mut table, log)?;
        self.set_replica(partition, |r| r.live_term = Some(term));
        Ok(self.replica(partition).started)
    }

    /// In a cluster, records that the live table of `partition` has its start (its leader
    /// appended the `sought` event).
    pub fn mark_started(&self, partition: usize) {
        self.set_replica(partition, |r| r.started = true);
    }

    /// In a cluster, on a replica that does not lead `partition` (any more): a table live in
    /// term `was_live` is rebuilt from its checkpoint, then the table replays the committed
    /// events it has not seen and is checkpointed once it has its start. A table that became
    /// live in another term meanwhile is left alone. Blocking.
    pub fn follow(
        &self,
        partition: usize,
        was_live: Option<u64>,
        log: &PartitionHandle,
    ) -> Result<()> {
        let mut table = self.lock(partition);
        let replica = self.replica(partition);
        if replica.live_term != was_live {
            return Ok(());
        }
        if replica.live_term.is_some() {
            self.rebuild(partition, &mut table, log)?;
        }
        self.replay_into(partition, &mut table, log)?;
        let replica = self.replica(partition);
        if !replica.started {
            return Ok(());
        }
        let changes = table.take_changes();
        drop(table);
        self.save(partition, changes, replica.position)
    }

    /// In a cluster, the table of `partition` as the committed log makes it at `until` or
    /// later, for a snapshot of the log ending there: its checkpoint replayed up to `until`,
    /// or, when the checkpoint is past `until` (a leader checkpoints its committed log before
    /// retention asks for a snapshot, so it usually is), the checkpoint as it is. The live
    /// table is untouched. A replica installing it receives the events after `until` again
    /// and replays them over it (see `restore::clamp_to_surviving_log`). `None` while it has
    /// no start there. Blocking.
    pub fn snapshot_table(
        &self,
        partition: usize,
        log: &PartitionHandle,
        until: LogPosition,
    ) -> Result<Option<TableImage>> {
        let restored = restore::restore_partition_until(
            &self.config,
            &self.store,
            partition_number(partition),
            log.start_offset(),
            log,
            true,
            until,
        )?;
        Ok(restored.started.then(|| restored.table.image()))
    }

    /// In a cluster, on a leader of `partition`: checkpoints the table the committed log
    /// makes (not the live one, which may hold changes not committed yet), so retention can
    /// delete the log before it. Blocking.
    pub fn checkpoint_committed(&self, partition: usize, log: &PartitionHandle) -> Result<()> {
        let mut restored = restore::restore_partition(
            &self.config,
            &self.store,
            partition_number(partition),
            log.start_offset(),
            log,
            true,
        )?;
        if !restored.started {
            return Ok(());
        }
        self.save(partition, restored.table.take_changes(), restored.position)
    }

    /// In a cluster, after a snapshot replaced the log of `partition`: the table becomes
    /// `image` (none: no start yet; it follows the new log from its start), checkpointed at
    /// the new log's start, and follows the log from there. Blocking.
    pub fn install_snapshot_table(
        &self,
        partition: usize,
        image: Option<&TableImage>,
        log: &PartitionHandle,
    ) -> Result<()> {
        let mut table = self.lock(partition);
        self.replace_table(partition, &mut table, image, log.start_offset())?;
        self.replay_into(partition, &mut table, log)
    }

    /// In a cluster, when this node drops its replica of `partition`: the table starts
    /// afresh, with no start, at `next_offset` (the offset the emptied log starts at), and
    /// nothing of it stays in sled; it replays nothing (its log is about to be emptied), and
    /// follows the log from its start once a replica is seated here again. Blocking.
    pub fn drop_table(&self, partition: usize, next_offset: u64) -> Result<()> {
        let mut table = self.lock(partition);
        self.replace_table(partition, &mut table, None, next_offset)
    }

    /// Makes `table`, the table of `partition` (under its lock), `image` (none: a fresh table
    /// at `start_offset` with no start) at the log's start, in sled and in memory.
    fn replace_table(
        &self,
        partition: usize,
        table: &mut LeaseTable,
        image: Option<&TableImage>,
        start_offset: u64,
    ) -> Result<()> {
        let start = LogPosition::default();
        self.store
            .replace(partition_number(partition), image, start)?;
        if let Some(image) = image {
            *table = LeaseTable::restore(
                image.cursor,
                image.entries.clone(),
                &image.settled,
                self.config.table_policy(),
            );
        } else {
            *table = LeaseTable::starting_at(start_offset, self.config.table_policy());
        }
        table.take_changes();
        self.set_replica(partition, |r| {
            *r = ReplicaTable {
                position: start,
                started: image.is_some(),
                live_term: None,
            };
        });
        if let Some(slot) = crate::sync::lock(&self.checkpointed).get_mut(partition) {
            *slot = image.map(|_| start);
        }
        Ok(())
    }

    /// Replaces a partition's table with its checkpoint replayed to the log's end.
    fn rebuild(
        &self,
        partition: usize,
        table: &mut LeaseTable,
        log: &PartitionHandle,
    ) -> Result<()> {
        let start = table.cursor().ack_floor;
        let restored = restore::restore_partition(
            &self.config,
            &self.store,
            partition_number(partition),
            start,
            log,
            true,
        )?;
        *table = restored.table;
        self.take_restored(partition, restored.errors, restored.redrive);
        self.set_replica(partition, |r| {
            *r = ReplicaTable {
                position: restored.position,
                started: restored.started,
                live_term: None,
            };
        });
        Ok(())
    }

    /// Replays into `table` the committed events of `partition` it has not seen.
    fn replay_into(
        &self,
        partition: usize,
        table: &mut LeaseTable,
        log: &PartitionHandle,
    ) -> Result<()> {
        let replica = self.replica(partition);
        let mut restored = restore::Restored {
            table: std::mem::take(table),
            errors: Vec::new(),
            redrive: BTreeMap::new(),
            position: replica.position,
            started: replica.started,
        };
        let replayed = restore::replay_events(
            &self.config,
            partition_number(partition),
            log,
            &mut restored,
        );
        *table = restored.table;
        replayed?;
        self.take_restored(partition, restored.errors, restored.redrive);
        self.set_replica(partition, |r| {
            r.position = restored.position;
            r.started = restored.started;
        });
        Ok(())
    }

    /// Keeps the error texts and redrive positions a replay found.
    fn take_restored(
        &self,
        partition: usize,
        errors: Vec<(u64, String)>,
        redrive: BTreeMap<u32, u64>,
    ) {
        for (offset, error) in errors {
            self.set_last_error(partition, offset, &error);
        }
        let mut cursors = crate::sync::lock(&self.redrive);
        for (dead_letter_partition, next) in redrive {
            let cursor = cursors.entry(dead_letter_partition).or_default();
            *cursor = (*cursor).max(next);
        }
    }

    /// Writes what changed in a partition's table since its last checkpoint, with `position`,
    /// to sled: a restart replays the log from there. `position` must be read from the log
    /// before this is called, so every event before it is already in the table. Blocking.
    pub fn checkpoint(&self, partition: usize, position: LogPosition) -> Result<()> {
        let changes = self.lock(partition).take_changes();
        self.save(partition, changes, position)
    }

    fn save(
        &self,
        partition: usize,
        changes: lease_table::TableChanges,
        position: LogPosition,
    ) -> Result<()> {
        let unmoved = crate::sync::lock(&self.checkpointed).get(partition) == Some(&Some(position));
        if unmoved && changes.is_empty() {
            return Ok(());
        }
        let redrive: Vec<(u32, u64)> = crate::sync::lock(&self.redrive)
            .iter()
            .map(|(p, o)| (*p, *o))
            .collect();
        self.store
            .save_checkpoint(partition_number(partition), changes, position, &redrive)?;
        if let Some(slot) = crate::sync::lock(&self.checkpointed).get_mut(partition) {
            *slot = Some(position);
        }
        Ok(())
    }

    /// The position of the partition's last checkpoint in this run: its state before it is
    /// in sled. `None` before the first.
    pub fn checkpointed(&self, partition: usize) -> Option<LogPosition> {
        crate::sync::lock(&self.checkpointed)
            .get(partition)
            .copied()
            .flatten()
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

    /// Runs `change` on a partition's table under its lock: for changes that need not survive
    /// a crash (leases, extends, first deliveries), which reach the next checkpoint.
    pub fn update<T>(&self, partition: usize, change: impl FnOnce(&mut LeaseTable) -> T) -> T {
        change(&mut self.lock(partition))
    }

    /// Runs `change` on a partition's table under its lock and queues the events it returns
    /// in the partition's log, in the order of the table's changes; the caller awaits the
    /// returned append before it answers. The log's queue place is taken first, so a full
    /// queue ([`crate::BrokerError::Overloaded`]) changes nothing.
    pub fn change_durably<T>(
        &self,
        partition: usize,
        log: &PartitionHandle,
        change: impl FnOnce(&mut LeaseTable) -> (T, Vec<SubscriptionEvent>),
    ) -> Result<(T, Option<PendingAppend>)> {
        let slot = log.reserve_control()?;
        let mut table = self.lock(partition);
        let (result, events) = change(&mut table);
        let pending = (!events.is_empty())
            .then(|| slot.send(events.iter().map(SubscriptionEvent::encode).collect()));
        Ok((result, pending))
    }

    /// [`Subscription::update`] for a receive by `consumer`. On a single node, every grant
    /// `change` returns is queued in the log as [`SubscriptionEvent::Delivered`] without
    /// waiting (when the queue has room): the message trace's delivery, and from the second
    /// attempt on the attempt count, so `max_deliveries` survives a restart; losing one costs
    /// a delivery missing from the trace, or at most an extra delivery. With `traced` false
    /// (the trace is off) a first attempt is not queued: it is there for the trace only, and
    /// a restart forgets it anyway. In a cluster every
    /// grant is recorded as [`SubscriptionEvent::Leased`], and the caller awaits the returned
    /// append before it hands the messages out: its commit proves this node still led the
    /// partition when it granted them (a deposed leader's table may show as waiting what the
    /// new leader has since delivered and had acked), and the next leader then holds them for
    /// their lease.
    pub fn grant(
        &self,
        partition: usize,
        log: &PartitionHandle,
        consumer: Option<&Origin>,
        traced: bool,
        change: impl FnOnce(&mut LeaseTable) -> Vec<Grant>,
    ) -> Result<(Vec<Grant>, Option<PendingAppend>)> {
        if self.is_replicated() {
            let slot = log.reserve_control()?;
            let mut table = self.lock(partition);
            let grants = change(&mut table);
            let events: Vec<bytes::Bytes> = grants
                .iter()
                .filter_map(|g| self.lease_event(&table, g.offset, consumer))
                .collect();
            // Sent under the table's lock, so the log keeps this table's order of changes.
            let pending = (!events.is_empty()).then(|| slot.send(events));
            return Ok((grants, pending));
        }
        let mut table = self.lock(partition);
        let grants = change(&mut table);
        let events: Vec<bytes::Bytes> = grants
            .iter()
            .filter(|g| traced || g.attempt > FIRST_ATTEMPT)
            .map(|g| {
                SubscriptionEvent::Delivered {
                    subscription: self.config.uid,
                    offset: g.offset,
                    attempts: g.attempt,
                    key_hash: table.entry(g.offset).and_then(|e| e.key_hash),
                    consumer: consumer.cloned(),
                }
                .encode()
            })
            .collect();
        // Queued under the table's lock, so the log keeps this table's order of changes (a
        // delivery before the ack or nack of it).
        if !events.is_empty()
            && let Ok(slot) = log.reserve_control()
        {
            slot.send_detached(events);
        }
        Ok((grants, None))
    }

    /// In a cluster, records the leases of `offsets` (after an extend by `consumer`) in the
    /// log, so a new leader holds them as long; the caller awaits the append before it
    /// answers. Nothing on a single node.
    pub fn record_leases(
        &self,
        partition: usize,
        log: &PartitionHandle,
        offsets: &[u64],
        consumer: Option<&Origin>,
    ) -> Result<Option<PendingAppend>> {
        if !self.is_replicated() || offsets.is_empty() {
            return Ok(None);
        }
        let slot = log.reserve_control()?;
        let table = self.lock(partition);
        let events: Vec<bytes::Bytes> = offsets
            .iter()
            .filter_map(|offset| self.lease_event(&table, *offset, consumer))
            .collect();
        Ok((!events.is_empty()).then(|| slot.send(events)))
    }

    /// The `leased` event of an offset in flight, leased (or extended) by `consumer`.
    fn lease_event(
        &self,
        table: &LeaseTable,
        offset: u64,
        consumer: Option<&Origin>,
    ) -> Option<bytes::Bytes> {
        let entry = table.entry(offset)?;
        let lease_table::EntryState::InFlight { deadline_ms, lease } = entry.state else {
            return None;
        };
        let event = SubscriptionEvent::Leased {
            subscription: self.config.uid,
            offset,
            attempts: entry.attempts,
            lease,
            deadline_ms,
            key_hash: entry.key_hash,
            consumer: consumer.cloned(),
        };
        Some(event.encode())
    }

    /// In a cluster, lets go of what a live table changed since the last call: a leader's
    /// table is never checkpointed, and its change record would otherwise only grow.
    pub fn discard_changes(&self, partition: usize) {
        drop(self.lock(partition).take_changes());
    }

    /// Reads a partition's table under its lock, changing nothing.
    pub fn inspect<T>(&self, partition: usize, look: impl FnOnce(&LeaseTable) -> T) -> T {
        look(&self.lock(partition))
    }

    /// Remembers the error text a nack gave for an offset.
    pub fn set_last_error(&self, partition: usize, offset: u64, error: &str) {
        let mut errors = crate::sync::lock(&self.last_errors);
        if errors.len() < MAX_REMEMBERED_ERRORS {
            let text: String = error.chars().take(MAX_ERROR_LEN).collect();
            errors.insert((partition, offset), text);
        }
    }

    /// The error text of an offset's last nack, forgetting it.
    pub fn take_last_error(&self, partition: usize, offset: u64) -> Option<String> {
        crate::sync::lock(&self.last_errors).remove(&(partition, offset))
    }

    /// Where redrive continues on the dead-letter topic's partition.
    pub fn redrive_cursor(&self, partition: usize) -> u64 {
        crate::sync::lock(&self.redrive)
            .get(&partition_number(partition))
            .copied()
            .unwrap_or(0)
    }

    /// In a cluster, learns the redrive cursor of dead-letter partition `partition` from
    /// `log`, that partition's own log (where a cluster keeps it, so it follows the
    /// partition's leadership), keeping the furthest known; returns it. Blocking: reads the
    /// log's control entries.
    pub fn learn_redrive_cursor(&self, partition: usize, log: &PartitionHandle) -> Result<u64> {
        let dead_letter_partition = partition_number(partition);
        let found = restore::redrive_cursor_in(&self.config, dead_letter_partition, log)?;
        let mut redrive = crate::sync::lock(&self.redrive);
        let cursor = redrive.entry(dead_letter_partition).or_default();
        *cursor = (*cursor).max(found.unwrap_or(0));
        Ok(*cursor)
    }

    /// Moves the redrive cursor of a dead-letter partition, recording it in `log` (on a single
    /// node a partition of the subscription's own topic; in a cluster the dead-letter
    /// partition itself); await the returned append before answering.
    pub fn set_redrive_cursor(
        &self,
        partition: usize,
        offset: u64,
        log: &PartitionHandle,
    ) -> Result<PendingAppend> {
        let slot = log.reserve_control()?;
        let mut redrive = crate::sync::lock(&self.redrive);
        let dead_letter_partition = partition_number(partition);
        redrive.insert(dead_letter_partition, offset);
        let event = SubscriptionEvent::Redriven {
            subscription: self.config.uid,
            dead_letter_partition,
            next_offset: offset,
        };
        Ok(slot.send(vec![event.encode()]))
    }

    /// The deliveries an attempt id got, if remembered.
    pub fn remembered_attempt(&self, id: &str) -> Option<Vec<attempts::Remembered>> {
        crate::sync::lock(&self.attempts).get(id).map(<[_]>::to_vec)
    }

    /// Remembers the deliveries an attempt id got.
    pub fn remember_attempt(&self, id: String, deliveries: Vec<attempts::Remembered>) {
        crate::sync::lock(&self.attempts).remember(id, deliveries);
    }

    /// Forgets every attempt id.
    pub fn forget_attempts(&self) {
        crate::sync::lock(&self.attempts).clear();
    }

    fn lock(&self, partition: usize) -> MutexGuard<'_, LeaseTable> {
        // Not `crate::sync::lock`'s single-step rule: a table changes in several steps. A
        // panic inside it is a bug (its invariant checks catch those in tests); serving on is
        // still right, because the log, not the table, is the truth: the worst a bent table
        // does is deliver again, and a restart rebuilds it from the log.
        self.tables[partition]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn partition_number(partition: usize) -> u32 {
    u32::try_from(partition).unwrap_or(u32::MAX)
}
