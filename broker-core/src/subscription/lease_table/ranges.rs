//! Settled offsets at or above the ack floor, kept as disjoint half-open ranges so that a
//! long run of acks behind one held message costs one range, not one entry per offset.

use std::collections::{BTreeMap, BTreeSet};

/// A set of offsets as disjoint, non-adjacent half-open ranges `start..end`, with the ranges
/// that changed since the last [`OffsetRanges::take_changes`] (the store writes one key per
/// range).
///
/// Offsets are below `u64::MAX`: a log never gets there.
#[derive(Debug, Clone, Default)]
pub struct OffsetRanges {
    /// `start → end` of each range.
    ranges: BTreeMap<u64, u64>,
    /// Starts of ranges added, changed or removed since the last `take_changes`.
    changed: BTreeSet<u64>,
}

impl OffsetRanges {
    /// Rebuilds the set from stored `(start, end)` ranges, keeping only offsets at or above
    /// `floor`, merging ranges that overlap or touch. Whatever differs from what was stored
    /// is reported as changed, so that the next save brings the store in line.
    pub fn restore(stored: &[(u64, u64)], floor: u64) -> Self {
        let mut set = OffsetRanges::default();
        let mut sorted: Vec<(u64, u64)> = stored
            .iter()
            .map(|&(start, end)| (start.max(floor), end))
            .filter(|&(start, end)| start < end)
            .collect();
        sorted.sort_unstable();
        for (start, end) in sorted {
            match set.ranges.last_key_value().map(|(s, e)| (*s, *e)) {
                Some((last_start, last_end)) if start <= last_end => {
                    set.ranges.insert(last_start, last_end.max(end));
                }
                _ => {
                    set.ranges.insert(start, end);
                }
            }
        }
        let as_stored: BTreeMap<u64, u64> = stored.iter().copied().collect();
        for (start, end) in &as_stored {
            if set.ranges.get(start) != Some(end) {
                set.changed.insert(*start);
            }
        }
        for (start, end) in &set.ranges {
            if as_stored.get(start) != Some(end) {
                set.changed.insert(*start);
            }
        }
        set
    }

    /// Adds `offset`, merging it with the ranges it touches. Returns whether it was new.
    pub fn insert(&mut self, offset: u64) -> bool {
        if self.contains(offset) {
            return false;
        }
        let after = offset.saturating_add(1);
        let start = match self.ranges.range(..offset).next_back() {
            Some((&start, &end)) if end == offset => start,
            _ => offset,
        };
        let end = match self.ranges.remove(&after) {
            Some(end) => {
                self.changed.insert(after);
                end
            }
            None => after,
        };
        self.ranges.insert(start, end);
        self.changed.insert(start);
        true
    }

    /// Whether `offset` is in the set.
    pub fn contains(&self, offset: u64) -> bool {
        self.end_of(offset).is_some()
    }

    /// The end of the range holding `offset`: the first offset after it not in the set.
    pub fn end_of(&self, offset: u64) -> Option<u64> {
        self.ranges
            .range(..=offset)
            .next_back()
            .map(|(_, &end)| end)
            .filter(|&end| offset < end)
    }

    /// Drops every offset below `floor`.
    pub fn remove_below(&mut self, floor: u64) {
        let below: Vec<(u64, u64)> = self
            .ranges
            .range(..floor)
            .map(|(&start, &end)| (start, end))
            .collect();
        for (start, end) in below {
            self.ranges.remove(&start);
            self.changed.insert(start);
            if end > floor {
                self.ranges.insert(floor, end);
                self.changed.insert(floor);
            }
        }
    }

    /// Drops every offset at or past `end`.
    pub fn remove_from(&mut self, end: u64) {
        if let Some((&start, &range_end)) = self.ranges.range(..end).next_back()
            && range_end > end
        {
            self.ranges.insert(start, end);
            self.changed.insert(start);
        }
        let doomed: Vec<u64> = self.ranges.range(end..).map(|(&start, _)| start).collect();
        for start in doomed {
            self.ranges.remove(&start);
            self.changed.insert(start);
        }
    }

    /// Drops every offset.
    pub fn clear(&mut self) {
        self.changed.extend(self.ranges.keys().copied());
        self.ranges.clear();
    }

    /// How many offsets of `start..end` are in the set.
    pub fn count_within(&self, start: u64, end: u64) -> u64 {
        let first = self
            .ranges
            .range(..=start)
            .next_back()
            .map_or(start, |(&first, _)| first);
        self.ranges
            .range(first..end)
            .map(|(&s, &e)| e.min(end).saturating_sub(s.max(start)))
            .sum()
    }

    /// The ranges as `(start, end)`, in order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|(&start, &end)| (start, end))
    }

    /// Number of ranges (not of offsets).
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Takes the ranges changed since the last call: each start with its end now (`None`: no
    /// range starts there any more).
    pub fn take_changes(&mut self) -> Vec<(u64, Option<u64>)> {
        std::mem::take(&mut self.changed)
            .into_iter()
            .map(|start| (start, self.ranges.get(&start).copied()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(offsets: &[u64]) -> OffsetRanges {
        let mut set = OffsetRanges::default();
        for &offset in offsets {
            set.insert(offset);
        }
        set
    }

    #[test]
    fn inserted_offsets_merge_into_the_ranges_they_touch() {
        let set = of(&[5, 7, 6, 1, 2, 9]);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![(1, 3), (5, 8), (9, 10)]
        );
        assert_eq!(set.len(), 3);
        assert!(set.contains(7) && !set.contains(8) && !set.contains(0) && !set.contains(3));
        assert_eq!(set.end_of(5), Some(8));
        assert_eq!(set.end_of(8), None);
    }

    #[test]
    fn removing_from_an_end_trims_the_range_it_cuts_and_drops_later_ones() {
        let mut set = of(&[1, 2, 3, 4, 7, 8]);
        set.take_changes();
        set.remove_from(3);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![(1, 3)]);
        assert_eq!(set.take_changes(), vec![(1, Some(3)), (7, None)]);
    }

    #[test]
    fn inserting_an_offset_twice_changes_nothing() {
        let mut set = of(&[4]);
        set.take_changes();
        assert!(!set.insert(4));
        assert!(set.take_changes().is_empty());
    }

    #[test]
    fn removing_below_a_floor_trims_the_range_it_cuts() {
        let mut set = of(&[1, 2, 5, 6, 7]);
        set.take_changes();
        set.remove_below(6);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![(6, 8)]);
        assert_eq!(set.take_changes(), vec![(1, None), (5, None), (6, Some(8))]);
    }

    #[test]
    fn changes_name_each_start_added_moved_or_removed() {
        let mut set = of(&[3]);
        assert_eq!(set.take_changes(), vec![(3, Some(4))]);
        set.insert(2);
        assert_eq!(set.take_changes(), vec![(2, Some(4)), (3, None)]);
        set.insert(5);
        set.insert(4);
        assert_eq!(set.take_changes(), vec![(2, Some(6)), (5, None)]);
        set.clear();
        assert_eq!(set.take_changes(), vec![(2, None)]);
    }

    #[test]
    fn counting_within_a_span_counts_only_its_offsets() {
        let set = of(&[1, 2, 3, 6, 7, 10]);
        assert_eq!(set.count_within(0, 20), 6);
        assert_eq!(set.count_within(2, 7), 3);
        assert_eq!(set.count_within(4, 6), 0);
        assert_eq!(set.count_within(3, 3), 0);
    }

    #[test]
    fn a_restore_merges_and_trims_and_reports_what_differs_from_the_store() {
        let mut set = OffsetRanges::restore(&[(1, 3), (3, 5), (8, 9), (10, 12)], 2);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![(2, 5), (8, 9), (10, 12)]
        );
        assert_eq!(set.take_changes(), vec![(1, None), (2, Some(5)), (3, None)]);
        let mut same = OffsetRanges::restore(&[(4, 6)], 0);
        assert!(same.take_changes().is_empty());
    }
}
