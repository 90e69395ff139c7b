//! Where the newest entries of a replicated partition's Raft log lie: a run of consecutive
//! indexes with each entry's frame position and offsets, kept in memory so the writer can
//! publish up to an applied index, cut a conflicting tail and serve replication reads without
//! scanning files. Older entries are found by scanning (see `partition_log::raft`).

use std::collections::VecDeque;

use super::codec::BatchKind;
use super::view::LogPosition;

/// Entries the tail keeps at or below the applied index: enough for followers a few thousand
/// entries behind to be served from memory positions (a slower one costs a scan of files), at
/// about 64 bytes an entry.
pub(crate) const RAFT_TAIL_KEEP: u64 = 4_096;

/// One entry's place in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryLocation {
    /// Its Raft index.
    pub index: u64,
    /// Its Raft term.
    pub term: u64,
    /// What it carries.
    pub kind: BatchKind,
    /// Offset of its first message (of a control or Raft entry: of the next message).
    pub base_offset: u64,
    /// One past its last message offset.
    pub next_offset: u64,
    /// Where its frame starts.
    pub at: LogPosition,
    /// Bytes of its frame.
    pub frame_len: u64,
}

impl EntryLocation {
    /// The place of the entry whose frame, with this header, starts at `at`.
    pub(crate) fn of(
        header: &super::codec::BatchHeader,
        at: LogPosition,
        frame_len: u64,
    ) -> Option<Self> {
        Some(EntryLocation {
            index: header.raft_index?,
            term: header.leader_epoch,
            kind: header.kind,
            base_offset: header.base_offset,
            next_offset: header.next_offset(),
            at,
            frame_len,
        })
    }

    /// The position right after its frame.
    pub fn end(&self) -> LogPosition {
        LogPosition {
            segment_base: self.at.segment_base,
            position: self.at.position + self.frame_len,
        }
    }
}

/// Consecutive entries, oldest first. Invariant: indexes increase by one, offsets and
/// positions never go back.
#[derive(Debug, Default)]
pub(crate) struct RaftTail {
    entries: VecDeque<EntryLocation>,
    /// The last intact entry recovery found beyond a bad frame it cut: the log held it,
    /// so it is damage, not a write torn by a crash, and the cut lost entries the replica
    /// may have acknowledged.
    cut_beyond: Option<EntryLocation>,
}

impl RaftTail {
    /// Records the last intact entry beyond a bad frame recovery cut.
    pub(crate) fn note_cut_beyond(&mut self, entry: EntryLocation) {
        self.cut_beyond = Some(entry);
    }

    /// The last intact entry recovery found beyond the bad frame it cut, if it found one.
    pub(crate) fn cut_beyond(&self) -> Option<EntryLocation> {
        self.cut_beyond
    }

    /// Notes an entry written after the last one. A gap in indexes starts the run afresh:
    /// the tail only holds consecutive ones.
    pub(crate) fn push(&mut self, entry: EntryLocation) {
        if self.last().is_some_and(|l| l.index + 1 != entry.index) {
            self.entries.clear();
        }
        self.entries.push_back(entry);
        self.check_invariants();
    }

    /// The entry at `index`, if the tail holds it.
    pub(crate) fn get(&self, index: u64) -> Option<EntryLocation> {
        let first = self.entries.front()?.index;
        let at = usize::try_from(index.checked_sub(first)?).ok()?;
        self.entries.get(at).copied()
    }

    /// The newest entry.
    pub(crate) fn last(&self) -> Option<EntryLocation> {
        self.entries.back().copied()
    }

    /// Drops every entry at or after `index` (a conflicting tail was cut).
    pub(crate) fn cut_from(&mut self, index: u64) {
        while self.entries.back().is_some_and(|e| e.index >= index) {
            self.entries.pop_back();
        }
    }

    /// Drops entries more than [`RAFT_TAIL_KEEP`] below `applied`.
    pub(crate) fn forget_below_applied(&mut self, applied: u64) {
        let keep_from = applied.saturating_sub(RAFT_TAIL_KEEP);
        while self.entries.front().is_some_and(|e| e.index < keep_from) {
            self.entries.pop_front();
        }
    }

    fn check_invariants(&self) {
        if cfg!(debug_assertions) {
            for (a, b) in self.entries.iter().zip(self.entries.iter().skip(1)) {
                debug_assert_eq!(a.index + 1, b.index, "Raft tail indexes not consecutive");
                debug_assert!(
                    a.next_offset == b.base_offset,
                    "Raft tail offsets not contiguous"
                );
                debug_assert!(a.end() <= b.at, "Raft tail positions went back");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64, base_offset: u64, count: u64, position: u64) -> EntryLocation {
        EntryLocation {
            index,
            term: 1,
            kind: if count == 0 {
                BatchKind::Meta
            } else {
                BatchKind::Messages
            },
            base_offset,
            next_offset: base_offset + count,
            at: LogPosition {
                segment_base: 0,
                position,
            },
            frame_len: 10,
        }
    }

    #[test]
    fn entries_are_found_by_index_and_a_cut_drops_the_conflicting_tail() {
        let mut tail = RaftTail::default();
        tail.push(entry(5, 0, 0, 0));
        tail.push(entry(6, 0, 3, 10));
        tail.push(entry(7, 3, 2, 20));
        assert_eq!(tail.get(6).map(|e| e.next_offset), Some(3));
        assert_eq!(tail.get(4), None);
        assert_eq!(tail.get(8), None);
        tail.cut_from(7);
        assert_eq!(tail.last().map(|e| e.index), Some(6));
        tail.push(entry(7, 3, 1, 20));
        assert_eq!(tail.get(7).map(|e| e.next_offset), Some(4));
    }

    #[test]
    fn a_gap_in_indexes_starts_the_run_afresh() {
        let mut tail = RaftTail::default();
        tail.push(entry(1, 0, 1, 0));
        tail.push(entry(9, 1, 1, 10));
        assert_eq!(tail.get(1), None);
        assert_eq!(tail.get(9).map(|e| e.base_offset), Some(1));
    }

    #[test]
    fn entries_far_below_the_applied_index_are_forgotten() {
        let mut tail = RaftTail::default();
        for i in 0..10 {
            tail.push(entry(i + 1, i, 1, i * 10));
        }
        tail.forget_below_applied(RAFT_TAIL_KEEP + 5);
        assert_eq!(tail.get(4), None);
        assert_eq!(tail.get(5).map(|e| e.index), Some(5));
    }
}
