//! The persisted part of a partition's sparse index, in its own `sled::Tree`: where each chunk
//! of batches starts, and the latest time in it (chunks: see `recent`).
//!
//! ```text
//! b'o' base_offset BE          -> segment_base u64 | position u64 | frame_len u32
//!                                 | record_count u32 | max_ts u64        (all LE)
//!                                 (the chunk's first batch; max_ts of the whole chunk)
//! b't' max_ts BE base_offset BE -> ()   only for a chunk that raises the running max timestamp
//! ```
//! The time index keeps the running maximum, so its keys grow with the offsets: the first entry
//! at or past a timestamp names the first chunk that could hold a record that late, whatever
//! order producers' clocks gave. When retention drops old batches the newest of their time
//! entries stays as a floor, so a lookup never skips a surviving batch.
//!
//! The index is a cache of the segment files: sled may lose its unflushed writes on a crash,
//! and recovery rebuilds them from the files. Each persist's entries go in one atomic batch.

use std::path::PathBuf;

use crate::error::{BrokerError, Result};

const OFFSET_PREFIX: u8 = b'o';
const TIME_PREFIX: u8 = b't';
const LOCATION_LEN: usize = 32;

/// Where one batch lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchLocation {
    /// Offset of the batch's first record.
    pub base_offset: u64,
    /// Records in the batch.
    pub record_count: u32,
    /// Base offset of the segment file holding it.
    pub segment_base: u64,
    /// Byte position of the frame in that file.
    pub position: u64,
    /// Bytes of the whole frame.
    pub frame_len: u32,
    /// Largest record timestamp in the batch.
    pub max_ts: u64,
}

impl BatchLocation {
    fn encode(&self) -> [u8; LOCATION_LEN] {
        let mut out = [0; LOCATION_LEN];
        out[..8].copy_from_slice(&self.segment_base.to_le_bytes());
        out[8..16].copy_from_slice(&self.position.to_le_bytes());
        out[16..20].copy_from_slice(&self.frame_len.to_le_bytes());
        out[20..24].copy_from_slice(&self.record_count.to_le_bytes());
        out[24..].copy_from_slice(&self.max_ts.to_le_bytes());
        out
    }

    fn decode(key: &[u8], value: &[u8]) -> Option<BatchLocation> {
        let key: [u8; 9] = key.try_into().ok()?;
        let value: [u8; LOCATION_LEN] = value.try_into().ok()?;
        let u64_at = |at: usize| value[at..at + 8].try_into().ok().map(u64::from_le_bytes);
        let u32_at = |at: usize| value[at..at + 4].try_into().ok().map(u32::from_le_bytes);
        Some(BatchLocation {
            base_offset: u64::from_be_bytes(key[1..].try_into().ok()?),
            segment_base: u64_at(0)?,
            position: u64_at(8)?,
            frame_len: u32_at(16)?,
            record_count: u32_at(20)?,
            max_ts: u64_at(24)?,
        })
    }
}

fn offset_key(offset: u64) -> [u8; 9] {
    let mut key = [OFFSET_PREFIX; 9];
    key[1..].copy_from_slice(&offset.to_be_bytes());
    key
}

fn time_key(ts: u64, base_offset: u64) -> [u8; 17] {
    let mut key = [TIME_PREFIX; 17];
    key[1..9].copy_from_slice(&ts.to_be_bytes());
    key[9..].copy_from_slice(&base_offset.to_be_bytes());
    key
}

fn parse_time_key(key: &[u8]) -> Option<(u64, u64)> {
    let key: [u8; 17] = key.try_into().ok()?;
    let ts = u64::from_be_bytes(key[1..9].try_into().ok()?);
    Some((ts, u64::from_be_bytes(key[9..].try_into().ok()?)))
}

/// Index entries gathered for one atomic apply.
pub(crate) struct StagedEntries {
    batch: sled::Batch,
    running_max_ts: Option<u64>,
}

impl StagedEntries {
    /// Adds the entries of one batch.
    pub(crate) fn add(&mut self, location: &BatchLocation) {
        self.batch
            .insert(&offset_key(location.base_offset), &location.encode());
        if self.running_max_ts.is_none_or(|max| location.max_ts > max) {
            self.batch
                .insert(&time_key(location.max_ts, location.base_offset), &[]);
            self.running_max_ts = Some(location.max_ts);
        }
    }
}

/// One partition's index.
#[derive(Debug)]
pub(crate) struct LogIndex {
    tree: sled::Tree,
    dir: PathBuf,
}

impl LogIndex {
    /// Wraps the partition's tree; `dir` names the partition in errors.
    pub(crate) fn new(tree: sled::Tree, dir: PathBuf) -> LogIndex {
        LogIndex { tree, dir }
    }

    /// An empty set of entries that continues the stored running max timestamp.
    pub(crate) fn stage(&self) -> Result<StagedEntries> {
        Ok(StagedEntries {
            batch: sled::Batch::default(),
            running_max_ts: self.running_max_ts()?,
        })
    }

    /// Applies staged entries atomically and starts a new set. Failpoint `index::apply`: the
    /// sled write fails and nothing is applied.
    pub(crate) fn apply(&self, staged: &mut StagedEntries) -> Result<()> {
        fail::fail_point!("index::apply", |_| {
            let failed = std::io::Error::other("injected by the index::apply failpoint");
            Err(sled::Error::Io(failed).into())
        });
        let batch = std::mem::take(&mut staged.batch);
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// The batch holding `offset`, or the last one before it.
    pub(crate) fn batch_at_or_before(&self, offset: u64) -> Result<Option<BatchLocation>> {
        let last = self
            .tree
            .range(offset_key(0)..=offset_key(offset))
            .next_back();
        last.map(|entry| self.location(entry)).transpose()
    }

    /// Batches whose base offset is at least `offset`, in order.
    pub(crate) fn batches_from(
        &self,
        offset: u64,
    ) -> impl DoubleEndedIterator<Item = Result<BatchLocation>> + '_ {
        self.tree
            .range(offset_key(offset)..=offset_key(u64::MAX))
            .map(|entry| self.location(entry))
    }

    fn location(&self, entry: sled::Result<(sled::IVec, sled::IVec)>) -> Result<BatchLocation> {
        let (key, value) = entry?;
        BatchLocation::decode(&key, &value).ok_or_else(|| BrokerError::Corrupt {
            path: self.dir.clone(),
            position: 0,
            reason: format!("index entry {key:?} has {} value bytes", value.len()),
        })
    }

    /// Largest timestamp the time index has seen.
    pub(crate) fn running_max_ts(&self) -> Result<Option<u64>> {
        let last = self.time_entries().next_back().transpose()?;
        Ok(last.map(|(ts, _)| ts))
    }

    /// Base offset of the first batch that may hold a record at or after `ts`: every batch
    /// before it holds only earlier records. `None` if no batch reached `ts`.
    pub(crate) fn first_batch_reaching(&self, ts: u64) -> Result<Option<u64>> {
        let range = time_key(ts, 0)..=time_key(u64::MAX, u64::MAX);
        match self.tree.range(range).next() {
            Some(entry) => Ok(parse_time_key(&entry?.0).map(|(_, base)| base)),
            None => Ok(None),
        }
    }

    /// Largest `max_ts` of the batches with base offsets in `from..to`.
    pub(crate) fn max_ts_between(&self, from: u64, to: u64) -> Result<Option<u64>> {
        let mut max = None;
        for entry in self.tree.range(offset_key(from)..offset_key(to)) {
            let location = self.location(entry)?;
            max = max.max(Some(location.max_ts));
        }
        Ok(max)
    }

    /// Drops every entry of batches at or past `offset` (a truncated tail).
    pub(crate) fn remove_from(&self, offset: u64) -> Result<()> {
        let mut batch = sled::Batch::default();
        for entry in self
            .tree
            .range(offset_key(offset)..=offset_key(u64::MAX))
            .keys()
        {
            batch.remove(entry?);
        }
        for entry in self.time_entries().rev() {
            let (ts, base) = entry?;
            if base < offset {
                break;
            }
            batch.remove(&time_key(ts, base));
        }
        Ok(self.tree.apply_batch(batch)?)
    }

    /// Drops the entries of batches before `offset` (deleted segments), keeping the newest of
    /// their time entries as the floor for lookups.
    pub(crate) fn remove_below(&self, offset: u64) -> Result<()> {
        let mut batch = sled::Batch::default();
        for entry in self.tree.range(offset_key(0)..offset_key(offset)).keys() {
            batch.remove(entry?);
        }
        let mut below = Vec::new();
        for entry in self.time_entries() {
            let (ts, base) = entry?;
            if base >= offset {
                break;
            }
            below.push(time_key(ts, base));
        }
        below.pop();
        for key in below {
            batch.remove(&key);
        }
        Ok(self.tree.apply_batch(batch)?)
    }

    /// Drops every entry.
    pub(crate) fn clear(&self) -> Result<()> {
        self.remove_from(0)?;
        let mut batch = sled::Batch::default();
        for entry in self.time_entries() {
            let (ts, base) = entry?;
            batch.remove(&time_key(ts, base));
        }
        Ok(self.tree.apply_batch(batch)?)
    }

    fn time_entries(&self) -> impl DoubleEndedIterator<Item = Result<(u64, u64)>> + '_ {
        self.tree
            .range(time_key(0, 0)..=time_key(u64::MAX, u64::MAX))
            .keys()
            .map(|key| {
                let key = key?;
                parse_time_key(&key).ok_or_else(|| BrokerError::Corrupt {
                    path: self.dir.clone(),
                    position: 0,
                    reason: format!("time index key {key:?} is malformed"),
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> LogIndex {
        let db = sled::Config::new().temporary(true).open().expect("sled");
        LogIndex::new(db.open_tree("p").expect("tree"), PathBuf::from("p"))
    }

    fn location(base_offset: u64, record_count: u32, max_ts: u64) -> BatchLocation {
        BatchLocation {
            base_offset,
            record_count,
            segment_base: 0,
            position: base_offset * 100,
            frame_len: 100,
            max_ts,
        }
    }

    fn add_all(index: &LogIndex, batches: &[BatchLocation]) {
        let mut staged = index.stage().expect("stage");
        batches.iter().for_each(|b| staged.add(b));
        index.apply(&mut staged).expect("apply");
    }

    #[test]
    fn a_location_round_trips_and_is_found_by_any_of_its_offsets() {
        let index = index();
        add_all(&index, &[location(0, 3, 10), location(3, 2, 20)]);
        let found = index.batch_at_or_before(4).expect("read");
        assert_eq!(found, Some(location(3, 2, 20)));
        assert_eq!(
            index.batch_at_or_before(2).expect("read"),
            Some(location(0, 3, 10))
        );
    }

    #[test]
    fn the_time_index_finds_the_first_batch_that_reaches_a_timestamp_despite_clock_skew() {
        let index = index();
        add_all(
            &index,
            &[location(0, 1, 100), location(1, 1, 50), location(2, 1, 120)],
        );
        assert_eq!(index.first_batch_reaching(40).expect("read"), Some(0));
        assert_eq!(index.first_batch_reaching(101).expect("read"), Some(2));
        assert_eq!(index.first_batch_reaching(121).expect("read"), None);
        assert_eq!(index.running_max_ts().expect("read"), Some(120));
    }

    #[test]
    fn removing_below_keeps_the_newest_dropped_time_entry_as_a_floor() {
        let index = index();
        add_all(
            &index,
            &[
                location(0, 1, 100),
                location(1, 1, 110),
                location(2, 1, 50),
                location(3, 1, 120),
            ],
        );
        index.remove_below(2).expect("remove");
        assert_eq!(index.batch_at_or_before(1).expect("read"), None);
        assert_eq!(index.first_batch_reaching(40).expect("read"), Some(1));
        assert_eq!(index.first_batch_reaching(111).expect("read"), Some(3));
    }

    #[test]
    fn removing_from_an_offset_drops_later_batches_and_their_time_entries() {
        let index = index();
        add_all(
            &index,
            &[location(0, 2, 10), location(2, 2, 20), location(4, 1, 30)],
        );
        index.remove_from(2).expect("remove");
        assert_eq!(index.batches_from(0).count(), 1);
        assert_eq!(index.running_max_ts().expect("read"), Some(10));
        index.clear().expect("clear");
        assert_eq!(index.running_max_ts().expect("read"), None);
        assert_eq!(index.batches_from(0).count(), 0);
    }
}
