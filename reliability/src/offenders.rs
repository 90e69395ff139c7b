//! [`Offenders`]: a count and the first few cases behind it.

use serde::Serialize;

/// How many offenders a counter keeps: enough to start a diagnosis from the history, few enough
/// that a summary of a run with thousands of anomalies stays readable.
pub const FIRST_OFFENDERS: usize = 10;

/// A count of anomalies of one kind, with the first [`FIRST_OFFENDERS`] of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Offenders<T> {
    /// How many were found.
    pub count: u64,
    /// The first ones found, in the order the check met them.
    pub first: Vec<T>,
}

impl<T> Default for Offenders<T> {
    fn default() -> Self {
        Self {
            count: 0,
            first: Vec::new(),
        }
    }
}

impl<T> Offenders<T> {
    /// Counts `offender`, keeping it if fewer than [`FIRST_OFFENDERS`] are kept.
    pub fn push(&mut self, offender: T) {
        self.count += 1;
        if self.first.len() < FIRST_OFFENDERS {
            self.first.push(offender);
        }
    }

    /// `count` offenders, of which `offenders` yields the first ones (only the first
    /// [`FIRST_OFFENDERS`] are taken), for a count computed without walking every case.
    pub fn counted(count: u64, offenders: impl IntoIterator<Item = T>) -> Self {
        Self {
            count,
            first: offenders.into_iter().take(FIRST_OFFENDERS).collect(),
        }
    }

    /// Whether none were found.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

impl<T> FromIterator<T> for Offenders<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut offenders = Self::default();
        for offender in iter {
            offenders.push(offender);
        }
        offenders
    }
}
