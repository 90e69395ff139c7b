//! [`RetentionMinutes`]: how many minutes of records a series keeps, within named bounds.

use super::error::HistoryError;

/// The default: 7 days, the history the issue asks for.
pub const DEFAULT_RETENTION_MINUTES: u64 = 7 * 24 * 60;
/// The fewest minutes a setting may keep: one hour, the shortest span the console charts,
/// so that a chart of the last hour never shows holes the retention made.
pub const MIN_RETENTION_MINUTES: u64 = 60;
/// The most minutes a setting may keep: 31 days. The ring takes its whole retention in
/// memory (see [`MinuteRing`](super::MinuteRing)): a month is 3.2 MB per subscription, so a
/// typo of a few extra digits is refused rather than reserving gigabytes per series.
pub const MAX_RETENTION_MINUTES: u64 = 31 * 24 * 60;

/// A valid retention, in minutes: [`MIN_RETENTION_MINUTES`] to [`MAX_RETENTION_MINUTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RetentionMinutes(u64);

impl Default for RetentionMinutes {
    /// [`DEFAULT_RETENTION_MINUTES`].
    fn default() -> Self {
        RetentionMinutes(DEFAULT_RETENTION_MINUTES)
    }
}

impl RetentionMinutes {
    /// `minutes`, if within the bounds.
    pub fn new(minutes: u64) -> Result<Self, HistoryError> {
        if (MIN_RETENTION_MINUTES..=MAX_RETENTION_MINUTES).contains(&minutes) {
            Ok(RetentionMinutes(minutes))
        } else {
            Err(HistoryError::RetentionOutOfRange {
                value: minutes,
                min: MIN_RETENTION_MINUTES,
                max: MAX_RETENTION_MINUTES,
            })
        }
    }

    /// The minutes kept.
    pub const fn get(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retention_accepts_its_bounds_and_refuses_one_past_each() {
        for minutes in [MIN_RETENTION_MINUTES, MAX_RETENTION_MINUTES] {
            assert_eq!(
                RetentionMinutes::new(minutes).map(RetentionMinutes::get),
                Ok(minutes)
            );
        }
        for minutes in [0, MIN_RETENTION_MINUTES - 1, MAX_RETENTION_MINUTES + 1] {
            assert_eq!(
                RetentionMinutes::new(minutes),
                Err(HistoryError::RetentionOutOfRange {
                    value: minutes,
                    min: MIN_RETENTION_MINUTES,
                    max: MAX_RETENTION_MINUTES,
                })
            );
        }
        assert_eq!(RetentionMinutes::default().get(), 10_080);
    }
}
