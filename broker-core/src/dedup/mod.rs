//! Idempotent produce: the first result of each client-chosen message id, kept for the topic's
//! dedup window in one sled tree per topic, so a retried produce — also after a restart — is
//! answered with the first result instead of being stored twice.
//!
//! The index is derived from the log: a message stored with a client id carries
//! [`crate::message::Record::client_id`] (its first result is its partition, offset and
//! timestamp), and a delayed one's scheduled event carries the record so marked (its first
//! result is its due time). Only the background applier writes the tree (`broker::tables`),
//! with each partition's log position in the same batch; a produce holds its ids in memory
//! ([`RecentIds`]) until the applier has them in sled, and lookups check memory, then sled.
//!
//! Keys: `i` + id → first result; `t` + time + id → nothing, the expiry order; `p` + partition
//! → the log position the tree reflects. Expired entries are swept in bounded steps, so the
//! window costs disk in proportion to the ids produced within it, and memory only for the ids
//! the applier has not yet written.

mod recent;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

pub use recent::{Fence, PartitionProgress, RecentIds, Remembered, STALE_AFTER_MS};

use crate::error::{BrokerError, Result};
use crate::storage::LogPosition;
use crate::sync::lock;

const ID: u8 = b'i';
const TIME: u8 = b't';
/// Most expired ids one sweep removes, so a sweep never holds the retention task for long.
pub const MAX_SWEEP: usize = 10_000;
/// Most ids held in memory until the applier has them in sled: about a second of idempotent
/// produces at 100,000 messages a second while the applier runs every
/// [`crate::derived_position::APPLY_EVERY_MS`], some 20 MiB; past it, produces with ids are refused with
/// `Overloaded` until the applier catches up (a stuck sled must not become unbounded memory).
pub const MAX_UNAPPLIED_IDS: usize = 100_000;

/// Name of the sled tree of a topic incarnation's dedup index.
pub fn tree_name(topic_uid: u64) -> String {
    format!("ids/{topic_uid}")
}

/// What the first produce of an id was answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstResult {
    /// When it was produced, Unix epoch milliseconds.
    pub produced_ms: u64,
    /// Its partition.
    pub partition: u32,
    /// Its offset, if it had one then (not for delayed or fire-and-forget produces).
    pub offset: Option<u64>,
    /// When it is due, for a delayed message.
    pub deliver_at_ms: Option<u64>,
}

/// What a lookup knows of an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Not produced within the window: store it.
    New,
    /// Stored within the window: answer its first result.
    Stored(FirstResult),
    /// A write of it ended with its outcome unknown and may still be stored: neither store
    /// it nor call it stored yet.
    Pending,
}

/// The dedup index of one topic.
#[derive(Debug, Clone)]
pub struct DedupIndex {
    tree: sled::Tree,
    /// Held for map updates and lookups only, never across an await.
    recent: Arc<Mutex<RecentIds>>,
}

impl DedupIndex {
    /// Wraps a topic's dedup tree.
    pub fn new(tree: sled::Tree) -> Self {
        DedupIndex {
            tree,
            recent: Arc::default(),
        }
    }

    /// What is known of `id` produced less than `window_ms` before `now_ms`: from memory,
    /// else from sled.
    pub fn lookup(&self, id: &str, now_ms: u64, window_ms: u64) -> Result<Seen> {
        let first = match lock(&self.recent).get(id) {
            Remembered::First(first) => first,
            Remembered::Pending => return Ok(Seen::Pending),
            Remembered::Nothing => match self.tree.get(key(ID, 0, id))? {
                Some(value) => decode(&value)?,
                None => return Ok(Seen::New),
            },
        };
        Ok(match first.produced_ms.saturating_add(window_ms) > now_ms {
            true => Seen::Stored(first),
            false => Seen::New,
        })
    }

    /// `Overloaded` when memory holds [`MAX_UNAPPLIED_IDS`] until the applier catches up.
    pub fn check_room(&self) -> Result<()> {
        if lock(&self.recent).len() >= MAX_UNAPPLIED_IDS {
            return Err(BrokerError::Overloaded {
                resource: "dedup index (ids not yet applied)",
                retry_after_ms: crate::derived_position::APPLY_EVERY_MS,
            });
        }
        Ok(())
    }

    /// Reserves the ids of records about to be queued (see [`RecentIds`]).
    pub fn reserve<'a>(&self, ids: impl IntoIterator<Item = &'a str>, now_ms: u64) {
        lock(&self.recent).reserve(ids, now_ms);
    }

    /// The writes of reserved `ids` failed: they may still be stored, before `fence`.
    pub fn unresolved<'a>(&self, ids: impl IntoIterator<Item = &'a str>, fence: Fence) {
        let mut recent = lock(&self.recent);
        for id in ids {
            recent.unresolved(id, fence);
        }
    }

    /// Fills in the first results of reserved ids whose writes are durable, until the
    /// applier has derived them from the log into sled.
    pub fn remember(&self, firsts: &[(&str, FirstResult)]) {
        let mut recent = lock(&self.recent);
        for (id, first) in firsts {
            recent.fill(id, *first);
        }
    }

    /// Lets go of reserved ids whose records were never queued.
    pub fn release<'a>(&self, ids: impl IntoIterator<Item = &'a str>) {
        let mut recent = lock(&self.recent);
        for id in ids {
            recent.release(id);
        }
    }

    /// Whether memory holds ids sled may lack: then the log may hold records with client
    /// ids the applier has not yet applied.
    pub fn has_unapplied(&self) -> bool {
        !lock(&self.recent).is_empty()
    }

    /// Lets go of reserved ids whose time is up ([`RecentIds::drop_stale`]); `progress`
    /// tells each partition's figures but how far this index reflects it, read here.
    pub fn drop_stale(&self, now_ms: u64, progress: impl Fn(u32) -> PartitionProgress) {
        let progress = |partition| PartitionProgress {
            indexed: self.position(partition).ok().flatten(),
            ..progress(partition)
        };
        lock(&self.recent).drop_stale(now_ms, progress);
    }

    /// Lets go of `partition`'s pending ids of terms before `term`
    /// ([`RecentIds::drop_fenced_before`]).
    pub fn drop_fenced_before(&self, partition: u32, term: u64) {
        lock(&self.recent).drop_fenced_before(partition, term);
    }

    /// How far into `partition`'s log the tree reflects; `None` before the first apply.
    pub fn position(&self, partition: u32) -> Result<Option<LogPosition>> {
        crate::derived_position::read_position(&self.tree, partition)
    }

    /// Writes one round's first results of `partition`, one at a time
    /// (`derived_position::apply_in_order`), and then the position they reach; then memory
    /// lets go of them. A crash in between leaves the old position: the stretch is applied
    /// again at the next start.
    pub fn apply(
        &self,
        partition: u32,
        firsts: &[(String, FirstResult)],
        position: LogPosition,
    ) -> Result<()> {
        self.write(partition, Vec::new(), firsts, position)
    }

    /// Makes `partition`'s first results in sled `firsts` (a snapshot's; none when this
    /// node drops its replica of the partition), reflecting its log up to `position`: the
    /// partition's ids sled holds that `firsts` lacks are removed first, then `firsts` and the
    /// position are written, as [`DedupIndex::apply`] writes them. Walks the index.
    pub fn replace_partition(
        &self,
        partition: u32,
        firsts: &[(String, FirstResult)],
        position: LogPosition,
    ) -> Result<()> {
        let kept: HashSet<&str> = firsts.iter().map(|(id, _)| id.as_str()).collect();
        let mut removals = Vec::new();
        for (id, first) in self.partition_firsts(partition)? {
            if !kept.contains(id.as_str()) {
                removals.push((key(ID, 0, &id), None));
                removals.push((key(TIME, first.produced_ms, &id), None));
            }
        }
        self.write(partition, removals, firsts, position)
    }

    /// Writes `removals`, then `firsts`, then the position (`derived_position::apply_in_order`), and
    /// lets memory go of `firsts`.
    fn write(
        &self,
        partition: u32,
        mut writes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        firsts: &[(String, FirstResult)],
        position: LogPosition,
    ) -> Result<()> {
        writes.reserve(firsts.len().saturating_mul(2));
        for (id, first) in firsts {
            writes.push((key(ID, 0, id).to_vec(), Some(encode(first).to_vec())));
            writes.push((key(TIME, first.produced_ms, id).to_vec(), Some(Vec::new())));
        }
        crate::derived_position::apply_in_order(&self.tree, writes, partition, position)?;
        let mut recent = lock(&self.recent);
        for (id, first) in firsts {
            recent.applied(id, first.produced_ms);
        }
        Ok(())
    }

    /// The first results sled holds of the ids produced to `partition`: what a snapshot of
    /// the partition carries (`broker::cluster_retention`). Walks the index.
    pub fn partition_firsts(&self, partition: u32) -> Result<Vec<(String, FirstResult)>> {
        let mut firsts = Vec::new();
        for item in self.tree.scan_prefix([ID]) {
            let (key, value) = item?;
            let first = decode(&value)?;
            if first.partition != partition {
                continue;
            }
            let id = key
                .get(1..)
                .and_then(|id| std::str::from_utf8(id).ok())
                .ok_or_else(|| corrupt("id key"))?;
            firsts.push((id.to_owned(), first));
        }
        Ok(firsts)
    }

    /// Removes up to [`MAX_SWEEP`] ids produced `window_ms` or more before `now_ms`; returns
    /// how many it removed.
    pub fn sweep(&self, now_ms: u64, window_ms: u64) -> Result<usize> {
        let horizon = now_ms.saturating_sub(window_ms);
        let mut batch = sled::Batch::default();
        let mut removed = 0;
        for item in self.tree.scan_prefix([TIME]).take(MAX_SWEEP) {
            let (time_key, _) = item?;
            let produced = time_key
                .get(1..9)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes)
                .ok_or_else(|| corrupt("expiry key"))?;
            if produced > horizon {
                break;
            }
            let id = time_key.get(9..).ok_or_else(|| corrupt("expiry key"))?;
            let mut id_key = vec![ID];
            id_key.extend_from_slice(id);
            // A later produce of the same id (after its window) has a newer time key: keep it.
            if let Some(value) = self.tree.get(&id_key)?
                && decode(&value)?.produced_ms == produced
            {
                batch.remove(id_key);
            }
            batch.remove(time_key);
            removed += 1;
        }
        self.tree.apply_batch(batch)?;
        Ok(removed)
    }
}

fn key(prefix: u8, time: u64, id: &str) -> Vec<u8> {
    let mut key = vec![prefix];
    if prefix == TIME {
        key.extend_from_slice(&time.to_be_bytes());
    }
    key.extend_from_slice(id.as_bytes());
    key
}

const NONE: u64 = u64::MAX;

fn encode(first: &FirstResult) -> [u8; 28] {
    let mut bytes = [0; 28];
    bytes[..8].copy_from_slice(&first.produced_ms.to_be_bytes());
    bytes[8..12].copy_from_slice(&first.partition.to_be_bytes());
    bytes[12..20].copy_from_slice(&first.offset.unwrap_or(NONE).to_be_bytes());
    bytes[20..].copy_from_slice(&first.deliver_at_ms.unwrap_or(NONE).to_be_bytes());
    bytes
}

fn decode(bytes: &[u8]) -> Result<FirstResult> {
    let u64_at = |at: usize| {
        bytes
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes)
    };
    let partition = bytes
        .get(8..12)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes);
    match (bytes.len(), u64_at(0), partition, u64_at(12), u64_at(20)) {
        (28, Some(produced_ms), Some(partition), Some(offset), Some(deliver_at)) => {
            Ok(FirstResult {
                produced_ms,
                partition,
                offset: (offset != NONE).then_some(offset),
                deliver_at_ms: (deliver_at != NONE).then_some(deliver_at),
            })
        }
        _ => Err(corrupt("entry")),
    }
}

fn corrupt(what: &str) -> BrokerError {
    BrokerError::Corrupt {
        path: "metadata".into(),
        position: 0,
        reason: format!("undecodable {what} in the dedup index"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> DedupIndex {
        let db = sled::Config::new().temporary(true).open().expect("sled");
        DedupIndex::new(db.open_tree("ids").expect("tree"))
    }

    fn record(index: &DedupIndex, firsts: &[(&str, FirstResult)]) {
        let owned: Vec<(String, FirstResult)> = firsts
            .iter()
            .map(|(id, f)| ((*id).to_owned(), *f))
            .collect();
        index
            .apply(0, &owned, LogPosition::default())
            .expect("apply");
    }

    fn first(produced_ms: u64) -> FirstResult {
        FirstResult {
            produced_ms,
            partition: 2,
            offset: Some(7),
            deliver_at_ms: None,
        }
    }

    /// An index holding `a` and `c` of partition 2 and `b` of partition 3 (returned).
    fn ids_in_two_partitions() -> (DedupIndex, FirstResult) {
        let index = index();
        let mut elsewhere = first(20);
        elsewhere.partition = 3;
        record(
            &index,
            &[("a", first(10)), ("b", elsewhere), ("c", first(30))],
        );
        (index, elsewhere)
    }

    #[test]
    fn a_partitions_first_results_are_those_of_its_ids_only() {
        let (index, _) = ids_in_two_partitions();
        let mut firsts = index.partition_firsts(2).expect("firsts");
        firsts.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(
            firsts,
            vec![("a".to_owned(), first(10)), ("c".to_owned(), first(30))]
        );
        assert_eq!(index.partition_firsts(3).expect("firsts").len(), 1);
    }

    #[test]
    fn replacing_a_partitions_ids_drops_its_others_and_keeps_other_partitions() {
        let (index, elsewhere) = ids_in_two_partitions();
        let moved_on = LogPosition {
            segment_base: 0,
            position: 99,
        };
        index
            .replace_partition(2, &[("c".to_owned(), first(30))], moved_on)
            .expect("replace");
        assert_eq!(index.lookup("a", 10, 1_000).expect("lookup"), Seen::New);
        assert_eq!(
            index.lookup("b", 20, 1_000).expect("lookup"),
            Seen::Stored(elsewhere)
        );
        assert_eq!(
            index.lookup("c", 30, 1_000).expect("lookup"),
            Seen::Stored(first(30))
        );
        assert_eq!(index.position(2).expect("position"), Some(moved_on));
        index
            .replace_partition(2, &[], LogPosition::default())
            .expect("replace");
        assert!(index.partition_firsts(2).expect("firsts").is_empty());
        assert_eq!(index.partition_firsts(3).expect("firsts").len(), 1);
        assert_eq!(
            index.sweep(u64::MAX, 0).expect("sweep"),
            1,
            "b's expiry key only"
        );
    }

    #[test]
    fn an_id_is_remembered_for_its_window_and_not_a_millisecond_longer() {
        let index = index();
        record(&index, &[("a", first(1_000))]);
        assert_eq!(
            index.lookup("a", 1_999, 1_000).expect("lookup"),
            Seen::Stored(first(1_000))
        );
        assert_eq!(index.lookup("a", 2_000, 1_000).expect("lookup"), Seen::New);
        assert_eq!(index.lookup("b", 1_000, 1_000).expect("lookup"), Seen::New);
    }

    #[test]
    fn a_sweep_removes_expired_ids_only() {
        let index = index();
        record(&index, &[("old", first(1_000)), ("new", first(5_000))]);
        assert_eq!(index.sweep(6_000, 2_000).expect("sweep"), 1);
        assert_eq!(
            index.lookup("old", 1_500, 1_000_000).expect("lookup"),
            Seen::New
        );
        assert!(matches!(
            index.lookup("new", 6_000, 2_000).expect("lookup"),
            Seen::Stored(_)
        ));
    }

    #[test]
    fn a_result_without_an_offset_round_trips() {
        let index = index();
        let delayed = FirstResult {
            offset: None,
            deliver_at_ms: Some(9_000),
            ..first(1_000)
        };
        record(&index, &[("d", delayed)]);
        assert_eq!(
            index.lookup("d", 1_000, 10).expect("lookup"),
            Seen::Stored(delayed)
        );
    }

    #[test]
    fn an_id_remembered_in_memory_is_found_before_sled_has_it_and_after() {
        let index = index();
        index.reserve(["a"], 1_000);
        assert!(index.has_unapplied());
        assert_eq!(
            index.lookup("a", 1_000, 10).expect("lookup"),
            Seen::Pending,
            "reserved, not yet written: a lookup (by a produce holding its claim) must not store it"
        );
        index.remember(&[("a", first(1_000))]);
        assert_eq!(
            index.lookup("a", 1_000, 10).expect("lookup"),
            Seen::Stored(first(1_000))
        );
        record(&index, &[("a", first(1_000))]);
        assert!(!index.has_unapplied(), "sled has it now");
        assert_eq!(
            index.lookup("a", 1_000, 10).expect("lookup"),
            Seen::Stored(first(1_000))
        );
        assert_eq!(
            index.position(0).expect("position"),
            Some(LogPosition::default())
        );
    }
}
