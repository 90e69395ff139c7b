//! [`MinuteAggregator`]: samples of a series' cumulative counters and instantaneous gauges,
//! taken at any time, into one [`MinuteRecord`] per minute.

use super::error::HistoryError;
use super::minute_of;
use super::record::{MinuteRecord, SubscriptionMinute, TopicMinute};

/// A topic's aggregator.
pub type TopicAggregator = MinuteAggregator<{ TopicMinute::COUNTERS }, { TopicMinute::GAUGES }>;
/// A subscription's aggregator.
pub type SubscriptionAggregator =
    MinuteAggregator<{ SubscriptionMinute::COUNTERS }, { SubscriptionMinute::GAUGES }>;

/// Turns samples of one series into one record per minute.
///
/// - A counter's record value is its increase within the minute: the increase between two
///   consecutive samples is counted in the minute of the later one, so the records of a
///   series add up to the counter's whole increase however the samples fall. A total below
///   the previous one means the counter restarted (a recreated topic, a reopened
///   subscription): it counts from zero, so the increase is the new total. The first sample
///   is the baseline and counts nothing.
/// - A gauge's record value is its last and largest sample within the minute.
/// - A minute with no sample has no record (a gap): the increase over it is counted in the
///   next sampled minute.
#[derive(Debug, Clone)]
pub struct MinuteAggregator<const C: usize, const G: usize> {
    /// The previous sample's time and counter totals.
    previous: Option<(u64, [u64; C])>,
    /// The minute being filled: the previous sample's.
    open: Option<MinuteRecord<C, G>>,
}

impl<const C: usize, const G: usize> Default for MinuteAggregator<C, G> {
    fn default() -> Self {
        MinuteAggregator {
            previous: None,
            open: None,
        }
    }
}

impl<const C: usize, const G: usize> MinuteAggregator<C, G> {
    /// No sample yet.
    pub fn new() -> Self {
        MinuteAggregator::default()
    }

    /// Takes the counters' cumulative `totals` and the `gauges`' values at steady `now_ms`.
    /// Returns the previous minute's record when this sample is the first of a later minute:
    /// the record is then final. Fails, changing nothing, on a sample older than the
    /// previous one.
    pub fn observe(
        &mut self,
        now_ms: u64,
        totals: [u64; C],
        gauges: [u64; G],
    ) -> Result<Option<MinuteRecord<C, G>>, HistoryError> {
        let increases = match self.previous {
            Some((previous_ms, _)) if now_ms < previous_ms => {
                return Err(HistoryError::SampleOutOfOrder {
                    previous_ms,
                    now_ms,
                });
            }
            Some((_, previous)) => increases_since(previous, totals),
            None => [0; C],
        };
        let minute = minute_of(now_ms);
        let closed = self.open.take_if(|open| open.minute != minute);
        let open = self
            .open
            .get_or_insert_with(|| MinuteRecord::starting(minute, gauges));
        for (gauge, value) in open.gauges.iter_mut().zip(gauges) {
            gauge.observe(value);
        }
        for (counter, increase) in open.counters.iter_mut().zip(increases) {
            *counter = counter.saturating_add(increase);
        }
        debug_assert_eq!(open.check(), Ok(()));
        self.previous = Some((now_ms, totals));
        Ok(closed)
    }

    /// The minute being filled, not yet final: the console may show it as the current one.
    pub fn open_minute(&self) -> Option<&MinuteRecord<C, G>> {
        self.open.as_ref()
    }

    /// Takes the minute being filled as it stands, when no sample will follow (the series is
    /// deleted, the node stops). A later sample starts a new record, its increase counted
    /// from the last sample taken; if it falls in the same minute, that record is a second
    /// one for the minute, which replaces this one in a [`MinuteRing`](super::MinuteRing).
    pub fn close(&mut self) -> Option<MinuteRecord<C, G>> {
        self.open.take()
    }
}

/// Each counter's increase from `previous` to `totals`, a total that went down counting from
/// zero.
fn increases_since<const C: usize>(previous: [u64; C], totals: [u64; C]) -> [u64; C] {
    let mut increases = totals;
    for (increase, before) in increases.iter_mut().zip(previous) {
        if *increase >= before {
            *increase -= before;
        }
    }
    increases
}

#[cfg(test)]
mod tests;
