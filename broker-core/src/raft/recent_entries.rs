//! [`RecentEntries`]: the entries a replica appended last, kept as they were given, so that
//! the leader's replication reads of the newest entries need no file read.
//!
//! openraft's replication task reads the entries it sends from the log store, once per
//! follower per append: without this, each read went to the blocking pool, read the frames
//! back from the segment file and decoded them, for entries appended a moment before.
//!
//! The cache holds a run of consecutive indexes ending at the newest entry it was given, and
//! answers a range only while the log's last entry is still that newest entry (same index and
//! term): a write that did not go through the log store (a snapshot install resets the log)
//! or one in progress makes the answer come from the file instead, as before.

use std::collections::VecDeque;

use openraft::{Entry, EntryPayload, LogId};

use super::types::TypeConfig;

/// Entries kept at most: more than one append of [`super::MAX_PAYLOAD_ENTRIES`] to each of
/// a few followers, so the entries every follower is sent next are here.
pub const RECENT_ENTRIES: usize = 256;
/// Entry bytes kept at most (the newest entry is kept whatever its size): one joined entry
/// ([`super::MAX_JOINED_BYTES`]), since every replica of every partition keeps its own
/// (four times a partition's tail cache). Under small writes the replication reads
/// entries a moment old, all kept; under large ones a read may miss and go to the file.
pub const RECENT_BYTES: usize = super::MAX_JOINED_BYTES;

/// The newest entries of one replica's log.
#[derive(Debug, Default)]
pub struct RecentEntries {
    entries: VecDeque<Entry<TypeConfig>>,
    bytes: usize,
}

fn size(entry: &Entry<TypeConfig>) -> usize {
    match &entry.payload {
        EntryPayload::Normal(body) => body.len(),
        EntryPayload::Blank | EntryPayload::Membership(_) => 0,
    }
}

impl RecentEntries {
    /// Adds `appended` (consecutive, following the entries kept; otherwise the kept ones are
    /// dropped first), then drops the oldest beyond the bounds.
    pub fn add(&mut self, appended: &[Entry<TypeConfig>]) {
        for entry in appended {
            let follows = self
                .entries
                .back()
                .is_none_or(|last| last.log_id.index + 1 == entry.log_id.index);
            if !follows {
                self.clear();
            }
            self.bytes += size(entry);
            self.entries.push_back(entry.clone());
        }
        while self.entries.len() > RECENT_ENTRIES
            || (self.bytes > RECENT_BYTES && self.entries.len() > 1)
        {
            if let Some(old) = self.entries.pop_front() {
                self.bytes -= size(&old);
            }
        }
    }

    /// Drops the entries at `index` and after (the log is cut there).
    pub fn cut_from(&mut self, index: u64) {
        while self.entries.back().is_some_and(|e| e.log_id.index >= index) {
            if let Some(cut) = self.entries.pop_back() {
                self.bytes -= size(&cut);
            }
        }
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// Entries `from..to`, when every one of them is kept and the log's last entry is
    /// `last` (else `None`: read them from the log).
    pub fn get(
        &self,
        from: u64,
        to: u64,
        last: Option<LogId<u64>>,
    ) -> Option<Vec<Entry<TypeConfig>>> {
        let newest = self.entries.back()?;
        let first = self.entries.front()?.log_id.index;
        if last != Some(newest.log_id) || from < first || to > newest.log_id.index + 1 {
            return None;
        }
        let skip = usize::try_from(from - first).ok()?;
        let take = usize::try_from(to.saturating_sub(from)).ok()?;
        Some(self.entries.iter().skip(skip).take(take).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};

    use super::{RECENT_BYTES, RECENT_ENTRIES, RecentEntries};
    use crate::raft::types::TypeConfig;
    use crate::storage::EntryBody;

    fn id(term: u64, index: u64) -> LogId<u64> {
        LogId::new(CommittedLeaderId::new(term, 1), index)
    }

    fn entry(term: u64, index: u64) -> Entry<TypeConfig> {
        sized(term, index, 10)
    }

    fn sized(term: u64, index: u64, bytes: usize) -> Entry<TypeConfig> {
        let body = EntryBody::meta(index, &Bytes::from(vec![b'x'; bytes])).expect("body");
        Entry {
            log_id: id(term, index),
            payload: EntryPayload::Normal(body),
        }
    }

    fn indexes(entries: Option<Vec<Entry<TypeConfig>>>) -> Option<Vec<u64>> {
        entries.map(|e| e.iter().map(|e| e.log_id.index).collect())
    }

    #[test]
    fn a_range_of_kept_entries_is_answered_while_the_log_ends_where_they_do() {
        let mut recent = RecentEntries::default();
        recent.add(&(5..=9).map(|i| entry(2, i)).collect::<Vec<_>>());
        let last = Some(id(2, 9));
        assert_eq!(indexes(recent.get(6, 9, last)), Some(vec![6, 7, 8]));
        assert_eq!(indexes(recent.get(5, 10, last)), Some(vec![5, 6, 7, 8, 9]));
        assert_eq!(recent.get(4, 10, last), None, "entry 4 is not kept");
        assert_eq!(recent.get(6, 11, last), None, "entry 10 is not in the log");
        assert_eq!(
            recent.get(6, 9, Some(id(2, 12))),
            None,
            "the log grew past what was given here"
        );
        assert_eq!(
            recent.get(6, 9, Some(id(3, 9))),
            None,
            "the log's last entry is another one"
        );
        assert_eq!(recent.get(6, 9, None), None, "the log was emptied");
    }

    #[test]
    fn a_cut_drops_the_entries_from_its_index_and_a_gap_drops_them_all() {
        let mut recent = RecentEntries::default();
        recent.add(&(1..=6).map(|i| entry(1, i)).collect::<Vec<_>>());
        recent.cut_from(4);
        assert_eq!(
            indexes(recent.get(1, 4, Some(id(1, 3)))),
            Some(vec![1, 2, 3])
        );
        recent.add(&[entry(2, 4)]);
        assert_eq!(
            indexes(recent.get(3, 5, Some(id(2, 4)))),
            Some(vec![3, 4]),
            "the new entry 4 follows the kept 3"
        );
        recent.add(&[entry(2, 9)]);
        assert_eq!(recent.get(3, 5, Some(id(2, 9))), None, "kept only from 9");
        assert_eq!(indexes(recent.get(9, 10, Some(id(2, 9)))), Some(vec![9]));
    }

    #[test]
    fn the_oldest_entries_go_beyond_the_bound() {
        let mut recent = RecentEntries::default();
        let count = RECENT_ENTRIES as u64 + 10;
        recent.add(&(1..=count).map(|i| entry(1, i)).collect::<Vec<_>>());
        let last = Some(id(1, count));
        assert_eq!(recent.get(10, count + 1, last), None);
        let kept = recent
            .get(11, count + 1, last)
            .expect("the newest are kept");
        assert_eq!(kept.len(), RECENT_ENTRIES);
    }

    #[test]
    fn the_bytes_kept_stay_within_their_bound_but_the_newest_entry_is_always_kept() {
        let mut recent = RecentEntries::default();
        let third = RECENT_BYTES / 3 + 1;
        recent.add(&(1..=5).map(|i| sized(1, i, third)).collect::<Vec<_>>());
        let last = Some(id(1, 5));
        assert_eq!(
            recent.get(3, 6, last),
            None,
            "three thirds and more do not fit"
        );
        assert_eq!(indexes(recent.get(4, 6, last)), Some(vec![4, 5]));

        recent.add(&[sized(1, 6, 3 * RECENT_BYTES)]);
        assert_eq!(indexes(recent.get(6, 7, Some(id(1, 6)))), Some(vec![6]));
        assert_eq!(recent.get(5, 7, Some(id(1, 6))), None);
    }
}
