//! Checkpoints of lease tables in sled: one tree per subscription incarnation, a cursor key per
//! partition, an entry key per unacked offset, a key per range of settled offsets above the
//! floor, the log position each partition's checkpoint covers (`p`) and the redrive cursors
//! (`r`). Each checkpoint writes its changes as one atomic sled batch, so a cursor never moves
//! without the entries, ranges and position it implies.
//!
//! Tables saved before settled offsets were kept as ranges hold an entry in state 3 for each
//! one; they load as settled, and the load rewrites them as ranges.

use crate::error::{BrokerError, Result};
use crate::storage::LogPosition;
use crate::subscription::lease_table::{
    Cursor, Entry, EntryState, LeaseTable, TableChanges, TableImage, TablePolicy,
};

const CURSOR_PREFIX: u8 = b'c';
const REDRIVE_PREFIX: u8 = b'r';
const ENTRY_PREFIX: u8 = b'e';
const SETTLED_PREFIX: u8 = b's';
const POSITION_PREFIX: u8 = b'p';
/// The state tag of a settled offset in tables saved before settled ranges.
const LEGACY_SETTLED_TAG: u8 = 3;

/// The sled tree of one subscription's delivery state.
#[derive(Debug, Clone)]
pub struct SubscriptionStore {
    tree: sled::Tree,
}

/// Name of the sled tree holding a subscription incarnation's state.
pub fn tree_name(subscription_uid: u64) -> String {
    format!("sub/{subscription_uid}")
}

impl SubscriptionStore {
    /// Wraps a subscription's tree.
    pub fn new(tree: sled::Tree) -> Self {
        SubscriptionStore { tree }
    }

    /// The stored table of `partition`, or `None` if the partition has no cursor yet.
    pub fn load(&self, partition: u32, policy: TablePolicy) -> Result<Option<LeaseTable>> {
        let Some(cursor) = self.tree.get(cursor_key(partition))? else {
            return Ok(None);
        };
        let cursor = decode_cursor(&cursor).ok_or_else(|| corrupt("cursor", partition))?;
        let mut entries = Vec::new();
        let mut legacy = Vec::new();
        for item in self.tree.scan_prefix(entry_prefix(partition)) {
            let (key, value) = item?;
            let offset = u64_at(&key, 5).ok_or_else(|| corrupt("entry key", partition))?;
            match decode_entry(&value).ok_or_else(|| corrupt("entry", partition))? {
                Stored::Unsettled(entry) => entries.push((offset, entry)),
                Stored::Settled => legacy.push(offset),
            }
        }
        let mut settled: Vec<(u64, u64)> = legacy
            .iter()
            .map(|&offset| (offset, offset.saturating_add(1)))
            .collect();
        for item in self.tree.scan_prefix(settled_prefix(partition)) {
            let (key, value) = item?;
            let start = u64_at(&key, 5).ok_or_else(|| corrupt("settled key", partition))?;
            let end = Some(&value[..])
                .filter(|v| v.len() == 8)
                .and_then(|v| u64_at(v, 0))
                .ok_or_else(|| corrupt("settled range", partition))?;
            settled.push((start, end));
        }
        let table = LeaseTable::restore(cursor, entries, &settled, policy);
        if !legacy.is_empty() {
            self.rewrite_legacy(partition, &legacy, &table)?;
        }
        Ok(Some(table))
    }

    /// Replaces the settled entries of a table saved before settled ranges by its ranges.
    fn rewrite_legacy(&self, partition: u32, legacy: &[u64], table: &LeaseTable) -> Result<()> {
        let mut batch = sled::Batch::default();
        for offset in legacy {
            batch.remove(&entry_key(partition, *offset)[..]);
        }
        for (start, end) in table.settled().iter() {
            batch.insert(&settled_key(partition, start)[..], &end.to_be_bytes()[..]);
        }
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Where redrive continues on each dead-letter partition, as of the last checkpoint.
    pub fn redrive_cursors(&self) -> Result<Vec<(u32, u64)>> {
        let mut cursors = Vec::new();
        for item in self.tree.scan_prefix([REDRIVE_PREFIX]) {
            let (key, value) = item?;
            let partition = key
                .get(1..5)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_be_bytes)
                .ok_or_else(|| corrupt("redrive key", 0))?;
            let offset = u64_at(&value, 0).ok_or_else(|| corrupt("redrive cursor", partition))?;
            cursors.push((partition, offset));
        }
        Ok(cursors)
    }

    /// The log position the last checkpoint of `partition` covers: a restart replays the
    /// partition log from there. `None` before the first checkpoint.
    pub fn position(&self, partition: u32) -> Result<Option<LogPosition>> {
        let Some(value) = self.tree.get(position_key(partition))? else {
            return Ok(None);
        };
        match (u64_at(&value, 0), u64_at(&value, 8), value.len()) {
            (Some(segment_base), Some(position), 16) => Ok(Some(LogPosition {
                segment_base,
                position,
            })),
            _ => Err(corrupt("checkpoint position", partition)),
        }
    }

    /// Writes a table's changes since its last checkpoint, the position they cover and the
    /// redrive cursors, as one atomic batch: after a crash the store holds some checkpoint
    /// whole, never a table without the position it goes with.
    pub fn save_checkpoint(
        &self,
        partition: u32,
        changes: TableChanges,
        position: LogPosition,
        redrive: &[(u32, u64)],
    ) -> Result<()> {
        let mut batch = changes_batch(partition, changes);
        let mut at = [0; 16];
        at[..8].copy_from_slice(&position.segment_base.to_be_bytes());
        at[8..].copy_from_slice(&position.position.to_be_bytes());
        batch.insert(&position_key(partition)[..], &at[..]);
        for (dead_letter_partition, offset) in redrive {
            batch.insert(
                &redrive_key(*dead_letter_partition)[..],
                &offset.to_be_bytes()[..],
            );
        }
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Writes the changes a table reports, atomically.
    pub fn save(&self, partition: u32, table: &mut LeaseTable) -> Result<()> {
        let changes = table.take_changes();
        if changes.is_empty() {
            return Ok(());
        }
        self.tree.apply_batch(changes_batch(partition, changes))?;
        Ok(())
    }
}

impl SubscriptionStore {
    /// Replaces everything stored of `partition`'s table by `image` (nothing: the partition
    /// has no checkpoint) at log position `position`, as one atomic batch. A replica does this
    /// when a snapshot replaced its log. Blocking.
    pub fn replace(
        &self,
        partition: u32,
        image: Option<&TableImage>,
        position: LogPosition,
    ) -> Result<()> {
        let mut batch = sled::Batch::default();
        for prefix in [entry_prefix(partition), settled_prefix(partition)] {
            for item in self.tree.scan_prefix(prefix) {
                let (key, _) = item?;
                batch.remove(key);
            }
        }
        batch.remove(&cursor_key(partition)[..]);
        batch.remove(&position_key(partition)[..]);
        if let Some(image) = image {
            batch.insert(
                &cursor_key(partition)[..],
                &encode_cursor(&image.cursor)[..],
            );
            for (offset, entry) in &image.entries {
                batch.insert(&entry_key(partition, *offset)[..], &encode_entry(entry)[..]);
            }
            for (start, end) in &image.settled {
                batch.insert(&settled_key(partition, *start)[..], &end.to_be_bytes()[..]);
            }
            let mut at = [0; 16];
            at[..8].copy_from_slice(&position.segment_base.to_be_bytes());
            at[8..].copy_from_slice(&position.position.to_be_bytes());
            batch.insert(&position_key(partition)[..], &at[..]);
        }
        self.tree.apply_batch(batch)?;
        Ok(())
    }
}

/// The sled batch writing a table's changes.
fn changes_batch(partition: u32, changes: TableChanges) -> sled::Batch {
    let mut batch = sled::Batch::default();
    if let Some(cursor) = changes.cursor {
        batch.insert(&cursor_key(partition)[..], &encode_cursor(&cursor)[..]);
    }
    for (offset, entry) in changes.entries {
        let key = entry_key(partition, offset);
        match entry {
            Some(entry) => batch.insert(&key[..], &encode_entry(&entry)[..]),
            None => batch.remove(&key[..]),
        }
    }
    for (start, end) in changes.settled {
        let key = settled_key(partition, start);
        match end {
            Some(end) => batch.insert(&key[..], &end.to_be_bytes()[..]),
            None => batch.remove(&key[..]),
        }
    }
    batch
}

fn position_key(partition: u32) -> [u8; 5] {
    let mut key = [POSITION_PREFIX; 5];
    key[1..].copy_from_slice(&partition.to_be_bytes());
    key
}

fn corrupt(what: &str, partition: u32) -> BrokerError {
    BrokerError::Corrupt {
        path: "metadata".into(),
        position: u64::from(partition),
        reason: format!("undecodable subscription {what} of partition {partition}"),
    }
}

fn cursor_key(partition: u32) -> [u8; 5] {
    let mut key = [CURSOR_PREFIX; 5];
    key[1..].copy_from_slice(&partition.to_be_bytes());
    key
}

fn redrive_key(partition: u32) -> [u8; 5] {
    let mut key = [REDRIVE_PREFIX; 5];
    key[1..].copy_from_slice(&partition.to_be_bytes());
    key
}

fn entry_prefix(partition: u32) -> [u8; 5] {
    let mut key = [ENTRY_PREFIX; 5];
    key[1..].copy_from_slice(&partition.to_be_bytes());
    key
}

fn entry_key(partition: u32, offset: u64) -> [u8; 13] {
    offset_key(entry_prefix(partition), offset)
}

fn settled_prefix(partition: u32) -> [u8; 5] {
    let mut key = [SETTLED_PREFIX; 5];
    key[1..].copy_from_slice(&partition.to_be_bytes());
    key
}

fn settled_key(partition: u32, start: u64) -> [u8; 13] {
    offset_key(settled_prefix(partition), start)
}

fn offset_key(prefix: [u8; 5], offset: u64) -> [u8; 13] {
    let mut key = [0; 13];
    key[..5].copy_from_slice(&prefix);
    key[5..].copy_from_slice(&offset.to_be_bytes());
    key
}

const CURSOR_FIELDS: usize = 7;
const ENTRY_BYTES: usize = 4 + 1 + 8 + 8 + 1 + 8;

fn encode_cursor(cursor: &Cursor) -> [u8; CURSOR_FIELDS * 8] {
    let fields = [
        cursor.ack_floor,
        cursor.next_offset,
        cursor.delivered,
        cursor.redelivered,
        cursor.acked,
        cursor.filtered,
        cursor.dead_lettered,
    ];
    let mut bytes = [0; CURSOR_FIELDS * 8];
    for (chunk, field) in bytes.chunks_exact_mut(8).zip(fields) {
        chunk.copy_from_slice(&field.to_be_bytes());
    }
    bytes
}

fn decode_cursor(bytes: &[u8]) -> Option<Cursor> {
    if bytes.len() != CURSOR_FIELDS * 8 {
        return None;
    }
    let field = |i: usize| u64_at(bytes, i * 8);
    Some(Cursor {
        ack_floor: field(0)?,
        next_offset: field(1)?,
        delivered: field(2)?,
        redelivered: field(3)?,
        acked: field(4)?,
        filtered: field(5)?,
        dead_lettered: field(6)?,
    })
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    bytes
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
}

fn encode_entry(entry: &Entry) -> [u8; ENTRY_BYTES] {
    let (tag, a, b) = match entry.state {
        EntryState::InFlight { deadline_ms, lease } => (1, deadline_ms, lease),
        EntryState::Waiting { due_ms } => (2, due_ms, 0),
        EntryState::Blocked { not_before_ms } => (4, not_before_ms, 0),
        EntryState::DeadLettering => (5, 0, 0),
    };
    let mut bytes = [0; ENTRY_BYTES];
    bytes[..4].copy_from_slice(&entry.attempts.to_be_bytes());
    bytes[4] = tag;
    bytes[5..13].copy_from_slice(&a.to_be_bytes());
    bytes[13..21].copy_from_slice(&b.to_be_bytes());
    bytes[21] = u8::from(entry.key_hash.is_some());
    bytes[22..].copy_from_slice(&entry.key_hash.unwrap_or(0).to_be_bytes());
    bytes
}

/// What an entry key holds.
enum Stored {
    Unsettled(Entry),
    /// A settled offset, as tables saved before settled ranges kept them.
    Settled,
}

fn decode_entry(bytes: &[u8]) -> Option<Stored> {
    if bytes.len() != ENTRY_BYTES {
        return None;
    }
    let attempts = u32::from_be_bytes(bytes[..4].try_into().ok()?);
    let (a, b) = (u64_at(bytes, 5)?, u64_at(bytes, 13)?);
    let state = match bytes[4] {
        1 => EntryState::InFlight {
            deadline_ms: a,
            lease: b,
        },
        2 => EntryState::Waiting { due_ms: a },
        LEGACY_SETTLED_TAG => return Some(Stored::Settled),
        4 => EntryState::Blocked { not_before_ms: a },
        5 => EntryState::DeadLettering,
        _ => return None,
    };
    let key_hash = match bytes[21] {
        0 => None,
        1 => Some(u64_at(bytes, 22)?),
        _ => return None,
    };
    Some(Stored::Unsettled(Entry {
        attempts,
        key_hash,
        state,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subscription::config::RetryPolicy;
    use crate::subscription::lease_table::Candidate;

    fn store() -> SubscriptionStore {
        let db = sled::Config::new().temporary(true).open().expect("sled");
        SubscriptionStore::new(db.open_tree("s").expect("tree"))
    }

    fn same(loaded: &LeaseTable, table: &LeaseTable) {
        assert_eq!(loaded.cursor(), table.cursor());
        assert_eq!(loaded.counts(1_001, 20), table.counts(1_001, 20));
        assert_eq!(loaded.next_wake(), table.next_wake());
        assert_eq!(loaded.unacked(), table.unacked());
        assert_eq!(
            loaded.settled().iter().collect::<Vec<_>>(),
            table.settled().iter().collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_saved_table_loads_back_identically() {
        let store = store();
        let policy = TablePolicy {
            ordered_by_key: true,
            max_deliveries: 3,
        };
        assert!(store.load(0, policy).expect("load").is_none());
        let mut table = LeaseTable::starting_at(5, policy);
        let mut lease = 0;
        let fresh: Vec<Candidate> = (5..20)
            .map(|offset| Candidate {
                offset,
                key_hash: Some(offset % 3),
                wanted: offset != 6,
                not_before_ms: 0,
            })
            .collect();
        let grants = table.grant(1_000, 3, 0, &fresh, 500, &RetryPolicy::default(), || {
            lease += 1;
            lease
        });
        table
            .ack(grants[1].offset, grants[1].lease, 1_001)
            .expect("ack");
        table.replay_ack(12);
        store.save(0, &mut table).expect("save");
        assert_eq!(
            table.settled().iter().collect::<Vec<_>>(),
            vec![(6, 8), (12, 13)],
            "the filtered 6 and the acked 7 are one range; 12 was settled by replay"
        );
        let loaded = store.load(0, policy).expect("load").expect("present");
        same(&loaded, &table);
        table
            .ack(grants[0].offset, grants[0].lease, 1_001)
            .expect("ack");
        store.save(0, &mut table).expect("save");
        same(
            &store.load(0, policy).expect("load").expect("present"),
            &table,
        );
    }

    #[test]
    fn a_table_saved_with_settled_entries_loads_them_as_ranges() {
        let store = store();
        let policy = TablePolicy::default();
        let cursor = Cursor {
            ack_floor: 10,
            next_offset: 14,
            ..Cursor::default()
        };
        let waiting = Entry {
            attempts: 1,
            key_hash: None,
            state: EntryState::Waiting { due_ms: 0 },
        };
        let mut settled = encode_entry(&waiting);
        settled[4] = LEGACY_SETTLED_TAG;
        store
            .tree
            .insert(cursor_key(0), &encode_cursor(&cursor)[..])
            .expect("cursor");
        store
            .tree
            .insert(entry_key(0, 10), &encode_entry(&waiting)[..])
            .expect("entry");
        for offset in [11, 12, 13] {
            store
                .tree
                .insert(entry_key(0, offset), &settled[..])
                .expect("settled");
        }
        let table = store.load(0, policy).expect("load").expect("present");
        assert_eq!(table.settled().iter().collect::<Vec<_>>(), vec![(11, 14)]);
        assert_eq!(table.unacked(), 1);
        let reloaded = store.load(0, policy).expect("load").expect("present");
        assert_eq!(
            reloaded.settled().iter().collect::<Vec<_>>(),
            vec![(11, 14)]
        );
        assert_eq!(
            store.tree.scan_prefix(entry_prefix(0)).count(),
            1,
            "the settled entries were rewritten as a range"
        );
    }
}
