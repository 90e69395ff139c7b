//! Latencies in HDR histograms (microseconds, 3 significant figures, up to 10 minutes) and the
//! summary the report keeps of them.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Longest latency recorded as itself; longer ones count as this (10 minutes, past any
/// request timeout the generator allows).
const HIGHEST_US: u64 = 600_000_000;

/// A histogram of latencies.
#[derive(Debug, Clone)]
pub struct Latencies {
    histogram: Histogram<u64>,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies::new()
    }
}

impl Latencies {
    /// An empty histogram.
    pub fn new() -> Latencies {
        // Bounds 1..=HIGHEST_US with 3 significant figures are valid, so this cannot fail.
        let histogram = Histogram::new_with_bounds(1, HIGHEST_US, 3)
            .unwrap_or_else(|_| unreachable!("valid histogram bounds"));
        Latencies { histogram }
    }

    /// Records one latency (clamped to 1 µs ..= 10 minutes).
    pub fn record(&mut self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(HIGHEST_US);
        self.histogram
            .saturating_record(micros.clamp(1, HIGHEST_US));
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Latencies) {
        // Both histograms have the same bounds, so adding cannot fail.
        let _same_bounds = self.histogram.add(&other.histogram);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// Percentiles, mean and maximum.
    pub fn summary(&self) -> LatencySummary {
        let h = &self.histogram;
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            mean_us: h.mean(),
            p50_us: h.value_at_quantile(0.50),
            p90_us: h.value_at_quantile(0.90),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
        }
    }
}

/// What the report keeps of a histogram, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Values recorded.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// Largest value.
    pub max_us: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_the_recorded_values() {
        let mut latencies = Latencies::new();
        for ms in 1..=1000 {
            latencies.record(Duration::from_millis(ms));
        }
        let summary = latencies.summary();
        assert_eq!(summary.count, 1000);
        assert!((499_000..=501_000).contains(&summary.p50_us), "{summary:?}");
        assert!((989_000..=991_000).contains(&summary.p99_us), "{summary:?}");
        assert!(
            (999_000..=1_001_000).contains(&summary.max_us),
            "{summary:?}"
        );
    }

    #[test]
    fn merging_adds_counts_and_extremes() {
        let mut a = Latencies::new();
        let mut b = Latencies::new();
        a.record(Duration::from_micros(10));
        b.record(Duration::from_secs(2));
        a.merge(&b);
        assert_eq!(a.count(), 2);
        assert!(a.summary().max_us >= 1_999_000);
    }

    #[test]
    fn an_empty_histogram_summarises_to_zeros() {
        assert_eq!(Latencies::new().summary(), LatencySummary::default());
    }
}
