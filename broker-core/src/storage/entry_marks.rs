//! [`EntryMarks`]: a sparse index from Raft index to file position within one segment, built
//! as entries are scanned, so finding an old entry scans at most [`MARK_EVERY_BYTES`] of
//! frames instead of the segment from its start.
//!
//! Why: openraft reads single old entries at start (a binary search for each term's first
//! entry, `LogIdList::load_log_ids`), and with a scan from the segment's start each read cost
//! the whole segment. In a 330 s soak with 90 terms a restart's replica start grew from 0.2 s
//! to 15 s (debug build), past the harness's 20 s readiness bound in the 10-minute run. Kafka
//! keeps the same shape of index (one entry per `index.interval.bytes`, 4 KiB).

/// Bytes of frames between two marks: a lookup decodes about this much past the nearest mark.
/// Memory is 16 bytes a mark, 256 KiB for a fully scanned 1 GiB of log.
pub(crate) const MARK_EVERY_BYTES: u64 = 4 * 1024;

/// Where one Raft entry's frame starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
    index: u64,
    position: u64,
}

/// Known entry positions of one segment, in order of both index and position (entries are
/// appended in index order). Only ever holds positions of frames the file still has: a cut
/// forgets the marks at or past it.
#[derive(Debug, Default)]
pub(crate) struct EntryMarks {
    marks: Vec<Mark>,
    /// Cuts so far: a scan notes what it found only if no cut came since it began, as a scan
    /// racing a cut may have read frames the cut removed, and a mark of one would outlive it.
    cuts: u64,
}

impl EntryMarks {
    /// Where a forward scan for entry `index` should start: the nearest mark at or before it,
    /// or the segment's start.
    pub(crate) fn scan_start(&self, index: u64) -> u64 {
        let after = self.marks.partition_point(|m| m.index <= index);
        after.checked_sub(1).map_or(0, |i| self.marks[i].position)
    }

    /// The cuts so far: what a scan reads before it reads the file, to note its finds with.
    pub(crate) fn cuts(&self) -> u64 {
        self.cuts
    }

    /// Notes that entry `index`'s frame starts at `position`, found by a scan that began when
    /// [`EntryMarks::cuts`] was `cuts`: ignored when a cut came since; kept when it lies at
    /// least [`MARK_EVERY_BYTES`] past the last mark (or is the first), so marks stay sparse
    /// and ordered. A note behind the last mark is already covered.
    pub(crate) fn note(&mut self, index: u64, position: u64, cuts: u64) {
        if cuts != self.cuts {
            return;
        }
        let keep = match self.marks.last() {
            None => true,
            Some(last) => {
                position >= last.position.saturating_add(MARK_EVERY_BYTES) && index > last.index
            }
        };
        if keep {
            self.marks.push(Mark { index, position });
        }
    }

    /// Forgets the marks of frames at or past `len`: the file was cut there.
    pub(crate) fn cut(&mut self, len: u64) {
        let keep = self.marks.partition_point(|m| m.position < len);
        self.marks.truncate(keep);
        self.cuts += 1;
    }

    /// How many marks it holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.marks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of `size` bytes each, indexes from `first`, noted as a scan would.
    fn scanned(first: u64, count: u64, size: u64) -> EntryMarks {
        let mut marks = EntryMarks::default();
        for i in 0..count {
            marks.note(first + i, i * size, 0);
        }
        marks
    }

    #[test]
    fn an_empty_index_scans_from_the_start() {
        assert_eq!(EntryMarks::default().scan_start(42), 0);
    }

    #[test]
    fn a_lookup_starts_at_the_nearest_mark_at_or_before_the_entry() {
        // 100-byte entries from index 10: marks every 41 entries (4,100 bytes).
        let marks = scanned(10, 1_000, 100);
        assert_eq!(marks.len(), 25);
        for index in 10..1_010 {
            let start = marks.scan_start(index);
            let entry_at = (index - 10) * 100;
            assert!(
                start <= entry_at,
                "index {index}: start {start} past {entry_at}"
            );
            assert!(
                entry_at - start < MARK_EVERY_BYTES + 100,
                "index {index}: scans {} bytes",
                entry_at - start
            );
        }
        // Past the last entry noted: from the last mark.
        assert_eq!(marks.scan_start(5_000), 24 * 4_100);
        // Before the first entry: from the start.
        assert_eq!(marks.scan_start(3), 0);
    }

    #[test]
    fn notes_behind_the_last_mark_or_repeated_change_nothing() {
        let mut marks = scanned(0, 200, 100);
        let before = marks.len();
        for i in 0..200 {
            marks.note(i, i * 100, 0);
        }
        assert_eq!(marks.len(), before);
    }

    #[test]
    fn a_cut_forgets_the_marks_at_or_past_it_and_rescans_rebuild_them() {
        let mut marks = scanned(0, 1_000, 100);
        marks.cut(50_000);
        assert!(marks.scan_start(999) < 50_000);
        assert_eq!(marks.scan_start(999), marks.scan_start(499));
        // The tail is written again with other entries (a re-sync), larger ones.
        for i in 0..100 {
            marks.note(500 + i, 50_000 + i * 1_000, marks.cuts());
        }
        let start = marks.scan_start(590);
        let entry_at = 50_000 + 90 * 1_000;
        assert!(
            start >= 50_000 && entry_at - start <= MARK_EVERY_BYTES + 1_000,
            "{start}"
        );
        marks.cut(0);
        assert_eq!(marks.len(), 0);
        assert_eq!(marks.scan_start(590), 0);
    }

    #[test]
    fn a_note_from_a_scan_that_began_before_a_cut_is_ignored() {
        let mut marks = scanned(0, 100, 100);
        let before = marks.cuts();
        marks.cut(5_000);
        // A scan begun before the cut read entry 90 at 9,000, past the cut: a frame the
        // cut removed, whose position now holds another entry's bytes.
        marks.note(90, 9_000, before);
        assert!(marks.scan_start(95) < 5_000, "{}", marks.scan_start(95));
        // One begun after the cut is kept.
        marks.note(90, 9_000, marks.cuts());
        assert_eq!(marks.scan_start(95), 9_000);
    }

    #[test]
    fn a_large_entry_gets_a_mark_of_its_own() {
        let mut marks = EntryMarks::default();
        marks.note(1, 0, 0);
        marks.note(2, 10_000, 0);
        marks.note(3, 10_100, 0);
        assert_eq!(marks.scan_start(2), 10_000);
        assert_eq!(marks.scan_start(3), 10_000);
    }
}
