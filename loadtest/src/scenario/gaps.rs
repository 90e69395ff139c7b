//! [`SuccessGaps`]: the longest time a run went without a successful reply, across all its
//! connections: what a client sees of a failover (requests keep failing or hanging until a
//! new leader answers).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// Success times of a run, as microseconds since its measured window opened, kept as the
/// latest one and the longest gap so far: constant memory, whatever the rate.
#[derive(Debug, Clone)]
pub struct SuccessGaps {
    since: Instant,
    inner: Arc<Gaps>,
}

#[derive(Debug, Default)]
struct Gaps {
    last_us: AtomicU64,
    longest_us: AtomicU64,
}

impl SuccessGaps {
    /// Gaps counted from `since` (the window's start counts as a success, so a run that
    /// starts with an outage shows it).
    pub fn new(since: Instant) -> SuccessGaps {
        SuccessGaps {
            since,
            inner: Arc::default(),
        }
    }

    /// A successful reply came at `at`.
    pub fn success(&self, at: Instant) {
        let now = micros(at.saturating_duration_since(self.since));
        let last = self.inner.last_us.fetch_max(now, Ordering::Relaxed);
        if now > last {
            self.inner
                .longest_us
                .fetch_max(now - last, Ordering::Relaxed);
        }
    }

    /// The longest gap, the time from the last success to `end` included (the window's end).
    pub fn longest(&self, end: Instant) -> Duration {
        self.success(end);
        Duration::from_micros(self.inner.longest_us.load(Ordering::Relaxed))
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_gap_is_between_consecutive_successes_whatever_their_order() {
        let start = Instant::now();
        let gaps = SuccessGaps::new(start);
        let at = |ms| start + Duration::from_millis(ms);
        for ms in [5, 10, 15, 1_200, 1_205, 20] {
            gaps.success(at(ms));
        }
        assert_eq!(gaps.longest(at(1_210)), Duration::from_millis(1_185));
    }

    #[test]
    fn an_outage_at_either_end_of_the_window_counts() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let late_start = SuccessGaps::new(start);
        late_start.success(at(700));
        assert_eq!(late_start.longest(at(710)), Duration::from_millis(700));
        let early_end = SuccessGaps::new(start);
        early_end.success(at(10));
        assert_eq!(early_end.longest(at(900)), Duration::from_millis(890));
    }
}
