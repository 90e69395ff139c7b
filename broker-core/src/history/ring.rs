//! [`MinuteRing`]: the records of one series for its last [`RetentionMinutes`], in a slot per
//! minute number, and the range query over them.
//!
//! # Memory
//! A ring takes `retention × size_of::<record>()` bytes at its first record, and never more:
//!
//! | series | record | default retention (10,080 minutes) | per 1,000 series |
//! |---|---|---|---|
//! | topic ([`TopicRing`]) | 64 B: minute + 5 counters + 1 gauge (last, max), 8 B each | 645,120 B (630 KiB) | 645.1 MB (615 MiB) |
//! | subscription ([`SubscriptionRing`]) | 72 B: minute + 4 counters + 2 gauges (last, max) | 725,760 B (708.75 KiB) | 725.8 MB (692 MiB) |
//!
//! plus 48 B for the ring itself and 128 B for the series'
//! [`MinuteAggregator`](super::MinuteAggregator). The figures are the types' sizes, checked by a test;
//! at [`MAX_RETENTION_MINUTES`](super::retention::MAX_RETENTION_MINUTES) (31 days) a
//! subscription's ring is 3,214,080 B.

use super::MAX_MINUTE;
use super::error::HistoryError;
use super::record::{GaugeMinute, MinuteRecord, SubscriptionMinute, TopicMinute};
use super::retention::RetentionMinutes;

/// The widest range [`MinuteRing::range`] answers: a day of minutes. A chart draws one point
/// per minute on a screen about that many pixels wide, and a day of a subscription's records
/// is under 100 KB in memory and a few hundred KB of JSON; longer spans are asked a day at a
/// time.
pub const MAX_QUERY_MINUTES: u64 = 24 * 60;

/// A topic's ring.
pub type TopicRing = MinuteRing<{ TopicMinute::COUNTERS }, { TopicMinute::GAUGES }>;
/// A subscription's ring.
pub type SubscriptionRing =
    MinuteRing<{ SubscriptionMinute::COUNTERS }, { SubscriptionMinute::GAUGES }>;

/// The marker of a slot that holds no record: no record names a minute past [`MAX_MINUTE`].
const EMPTY_MINUTE: u64 = u64::MAX;

/// The records of one series for the last `retention` minutes up to the newest it holds.
/// The record of minute `m` sits in slot `m % retention`, so a minute with no record stays
/// empty and a record evicts the one `retention` minutes older.
///
/// Invariant: every slot is empty or holds a record whose minute maps to it; the minutes kept
/// are `newest + 1 - retention ..= newest`, and a slot holding an older minute counts as empty.
#[derive(Debug, Clone)]
pub struct MinuteRing<const C: usize, const G: usize> {
    retention: RetentionMinutes,
    /// Empty until the first record, then `retention` slots.
    slots: Vec<MinuteRecord<C, G>>,
    /// The newest minute recorded.
    newest: Option<u64>,
}

impl<const C: usize, const G: usize> MinuteRing<C, G> {
    /// An empty ring keeping `retention` minutes; it takes its memory at the first record.
    pub fn new(retention: RetentionMinutes) -> Self {
        MinuteRing {
            retention,
            slots: Vec::new(),
            newest: None,
        }
    }

    /// The minutes it keeps.
    pub fn retention(&self) -> RetentionMinutes {
        self.retention
    }

    /// The newest minute recorded, if any.
    pub fn newest_minute(&self) -> Option<u64> {
        self.newest
    }

    /// The oldest minute kept, if any record was stored.
    pub fn oldest_kept(&self) -> Option<u64> {
        self.newest
            .map(|newest| (newest + 1).saturating_sub(self.retention.get()))
    }

    /// Stores `record`, replacing any record of its minute and evicting the one `retention`
    /// minutes older. Refuses a record older than the oldest minute kept (it would evict a
    /// newer one) and one that breaks [`MinuteRecord::check`].
    pub fn insert(&mut self, record: MinuteRecord<C, G>) -> Result<(), HistoryError> {
        if record.minute > MAX_MINUTE {
            return Err(HistoryError::MinuteOutOfRange {
                minute: record.minute,
                max: MAX_MINUTE,
            });
        }
        if let Some(oldest_kept) = self.oldest_kept().filter(|&oldest| record.minute < oldest) {
            return Err(HistoryError::MinuteExpired {
                minute: record.minute,
                oldest_kept,
            });
        }
        debug_assert_eq!(record.check(), Ok(()));
        if self.slots.is_empty() {
            self.slots = vec![empty_slot(); self.slot_count()];
        }
        let slot = self.slot_of(record.minute);
        self.slots[slot] = record;
        self.newest = self.newest.max(Some(record.minute));
        Ok(())
    }

    /// The record of `minute`, if kept.
    pub fn get(&self, minute: u64) -> Option<&MinuteRecord<C, G>> {
        let oldest = self.oldest_kept()?;
        if minute < oldest || Some(minute) > self.newest {
            return None;
        }
        let record = self.slots.get(self.slot_of(minute))?;
        (record.minute == minute).then_some(record)
    }

    /// The records kept of minutes `from_minute` up to, not including, `to_minute`, oldest
    /// first; absent minutes are skipped. Refuses a reversed range and one wider than
    /// [`MAX_QUERY_MINUTES`].
    pub fn range(
        &self,
        from_minute: u64,
        to_minute: u64,
    ) -> Result<impl Iterator<Item = &MinuteRecord<C, G>>, HistoryError> {
        let minutes = to_minute
            .checked_sub(from_minute)
            .ok_or(HistoryError::RangeReversed {
                from: from_minute,
                to: to_minute,
            })?;
        if minutes > MAX_QUERY_MINUTES {
            return Err(HistoryError::RangeTooWide {
                minutes,
                max: MAX_QUERY_MINUTES,
            });
        }
        Ok(self.present(from_minute, to_minute))
    }

    /// The records kept of minutes `from..to`, unchecked: the caller bounds the range.
    pub(super) fn present(
        &self,
        from: u64,
        to: u64,
    ) -> impl DoubleEndedIterator<Item = &MinuteRecord<C, G>> {
        let start = from.max(self.oldest_kept().unwrap_or(u64::MAX));
        let end = to.min(self.newest.map_or(0, |newest| newest + 1));
        (start..end.max(start)).filter_map(|minute| self.get(minute))
    }

    /// Bytes a ring of `retention` takes once it holds a record.
    pub const fn memory_bytes(retention: RetentionMinutes) -> usize {
        retention.get() as usize * size_of::<MinuteRecord<C, G>>() + size_of::<Self>()
    }

    /// Bytes this ring takes now: its slots as allocated and the ring itself; 0 slots
    /// before its first record, and never more than [`MinuteRing::memory_bytes`] of its
    /// retention.
    pub fn allocated_bytes(&self) -> usize {
        self.slots.capacity() * size_of::<MinuteRecord<C, G>>() + size_of::<Self>()
    }

    fn slot_count(&self) -> usize {
        usize::try_from(self.retention.get()).unwrap_or(usize::MAX)
    }

    fn slot_of(&self, minute: u64) -> usize {
        (minute % self.retention.get()) as usize
    }
}

fn empty_slot<const C: usize, const G: usize>() -> MinuteRecord<C, G> {
    MinuteRecord {
        minute: EMPTY_MINUTE,
        counters: [0; C],
        gauges: [GaugeMinute::default(); G],
    }
}

#[cfg(test)]
mod tests;
