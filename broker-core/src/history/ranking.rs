//! [`top`]: the series ranked by a figure over the last minutes (`GET /v1/stats/top`).
//!
//! - [`RankBy::Produced`] and [`RankBy::Consumed`] rank topics by the messages produced to
//!   or delivered from them, summed over the window.
//! - [`RankBy::Backlog`] ranks subscriptions by their backlog at the newest minute of the
//!   window that has a record.
//!
//! A series with no record in the window, or without the figure, is left out; equal values
//! are ordered by name, so the answer does not depend on the order the series come in.

use super::error::HistoryError;
use super::record::{SubscriptionGauge, TopicCounter};
use super::ring::{MAX_QUERY_MINUTES, SubscriptionRing, TopicRing};

/// The narrowest window: one minute.
pub const MIN_WINDOW_MINUTES: u64 = 1;
/// The widest window: the widest range a ring answers ([`MAX_QUERY_MINUTES`], a day), so a
/// ranking reads at most that many slots per series: 1.4 million for 1,000 series.
pub const MAX_WINDOW_MINUTES: u64 = MAX_QUERY_MINUTES;
/// The most series a ranking returns: a table on one screen of the console.
pub const MAX_TOP_N: usize = 100;

/// The figure series are ranked by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RankBy {
    /// A subscription's backlog, at the newest minute of the window.
    Backlog,
    /// A topic's produced messages, summed over the window.
    Produced,
    /// A topic's consumed (delivered) messages, summed over the window.
    Consumed,
}

impl RankBy {
    /// Its name in the API's `by` parameter.
    pub const fn name(self) -> &'static str {
        match self {
            RankBy::Backlog => "backlog",
            RankBy::Produced => "produced",
            RankBy::Consumed => "consumed",
        }
    }
}

/// A valid ranking request: what to rank by, over how many minutes, how many series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankingQuery {
    by: RankBy,
    window_minutes: u64,
    n: usize,
}

impl RankingQuery {
    /// The top `n` series by `by` over the last `window_minutes`; refuses a window outside
    /// [`MIN_WINDOW_MINUTES`]`..=`[`MAX_WINDOW_MINUTES`] and `n` outside `1..=`[`MAX_TOP_N`].
    pub fn new(by: RankBy, window_minutes: u64, n: usize) -> Result<Self, HistoryError> {
        if !(MIN_WINDOW_MINUTES..=MAX_WINDOW_MINUTES).contains(&window_minutes) {
            return Err(HistoryError::WindowOutOfRange {
                value: window_minutes,
                min: MIN_WINDOW_MINUTES,
                max: MAX_WINDOW_MINUTES,
            });
        }
        if !(1..=MAX_TOP_N).contains(&n) {
            return Err(HistoryError::TopOutOfRange {
                value: n,
                min: 1,
                max: MAX_TOP_N,
            });
        }
        Ok(RankingQuery {
            by,
            window_minutes,
            n,
        })
    }

    /// What the series are ranked by.
    pub fn by(&self) -> RankBy {
        self.by
    }

    /// The minutes the window spans.
    pub fn window_minutes(&self) -> u64 {
        self.window_minutes
    }

    /// The most series returned.
    pub fn n(&self) -> usize {
        self.n
    }
}

/// One series of a ranking and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranked<'a> {
    /// The series' name, as the caller gave it.
    pub name: &'a str,
    /// Its value: messages, or the backlog.
    pub value: u64,
}

/// A series that can be ranked.
pub trait Rankable {
    /// The series' value by `by` over minutes `from_minute..to_minute` (at most
    /// [`MAX_WINDOW_MINUTES`] wide), or `None` when it has no such figure or no record in
    /// the window.
    fn rank_value(&self, by: RankBy, from_minute: u64, to_minute: u64) -> Option<u64>;
}

impl Rankable for TopicRing {
    fn rank_value(&self, by: RankBy, from_minute: u64, to_minute: u64) -> Option<u64> {
        let counter = match by {
            RankBy::Produced => TopicCounter::ProducedMessages,
            RankBy::Consumed => TopicCounter::ConsumedMessages,
            RankBy::Backlog => return None,
        };
        let mut records = self.present(from_minute, to_minute).peekable();
        records.peek()?;
        Some(
            records
                .map(|record| record.counter(counter))
                .fold(0, u64::saturating_add),
        )
    }
}

impl Rankable for SubscriptionRing {
    fn rank_value(&self, by: RankBy, from_minute: u64, to_minute: u64) -> Option<u64> {
        match by {
            RankBy::Backlog => self
                .present(from_minute, to_minute)
                .next_back()
                .map(|record| record.gauge(SubscriptionGauge::Backlog).last),
            RankBy::Produced | RankBy::Consumed => None,
        }
    }
}

/// The top `query.n()` of `series` (name, ring) by `query.by()` over the `window_minutes`
/// ending with `through_minute` (the last complete minute), highest value first, equal
/// values by name.
pub fn top<'a, R: Rankable + 'a>(
    series: impl IntoIterator<Item = (&'a str, &'a R)>,
    query: &RankingQuery,
    through_minute: u64,
) -> Vec<Ranked<'a>> {
    let to_minute = through_minute.saturating_add(1);
    let from_minute = to_minute.saturating_sub(query.window_minutes);
    let mut ranked: Vec<Ranked<'a>> = series
        .into_iter()
        .filter_map(|(name, ring)| {
            let value = ring.rank_value(query.by, from_minute, to_minute)?;
            Some(Ranked { name, value })
        })
        .collect();
    ranked.sort_unstable_by(|a, b| b.value.cmp(&a.value).then_with(|| a.name.cmp(b.name)));
    ranked.truncate(query.n);
    ranked
}

#[cfg(test)]
mod tests;
