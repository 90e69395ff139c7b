//! Histograms read from a server's Prometheus text exposition (Wharf's `GET /metrics`): the
//! produce scenarios scrape it when measuring starts and ends and report the difference, so
//! group-commit sizes and fsync times describe the measured window only.
//!
//! Quantiles are interpolated linearly within a bucket, as Prometheus' `histogram_quantile`
//! does, so they are only as fine as the server's buckets.

use crate::client::Connection;

/// Wharf's histogram of produce requests per group commit.
pub const GROUP_COMMIT_REQUESTS: &str = "wharf_group_commit_requests";
/// Wharf's histogram of fsync times, in seconds.
pub const FSYNC_SECONDS: &str = "wharf_fsync_seconds";

/// One unlabelled histogram: cumulative buckets `(upper bound, count)`, sum and count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// `(le, cumulative count)` in increasing `le`, `+Inf` last.
    pub buckets: Vec<(f64, f64)>,
    /// Sum of the observations.
    pub sum: f64,
    /// Number of observations.
    pub count: f64,
}

impl Histogram {
    /// The histogram `name` in `exposition`; `None` when it has no `_count` line.
    pub fn parse(exposition: &str, name: &str) -> Option<Histogram> {
        let bucket_prefix = format!("{name}_bucket{{");
        let mut histogram = Histogram::default();
        let mut counted = false;
        for line in exposition.lines() {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            if let Some(labels) = series.strip_prefix(&bucket_prefix) {
                if let Some(le) = le_of(labels) {
                    histogram.buckets.push((le, value));
                }
            } else if series == format!("{name}_sum") {
                histogram.sum = value;
            } else if series == format!("{name}_count") {
                histogram.count = value;
                counted = true;
            }
        }
        histogram.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        counted.then_some(histogram)
    }

    /// The observations made since `earlier` (bucket by bucket).
    pub fn since(&self, earlier: &Histogram) -> Histogram {
        let before = |le: f64| {
            earlier
                .buckets
                .iter()
                .find(|(bound, _)| *bound == le)
                .map_or(0.0, |(_, count)| *count)
        };
        Histogram {
            buckets: self
                .buckets
                .iter()
                .map(|(le, count)| (*le, (count - before(*le)).max(0.0)))
                .collect(),
            sum: (self.sum - earlier.sum).max(0.0),
            count: (self.count - earlier.count).max(0.0),
        }
    }

    /// The mean observation; `None` without observations.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }

    /// The `q` quantile (0 to 1), interpolated within its bucket; a quantile in the `+Inf`
    /// bucket is the largest finite bound. `None` without observations.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.buckets.last()?.1;
        if total <= 0.0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * total;
        let (mut lower, mut below) = (0.0, 0.0);
        for (le, count) in &self.buckets {
            if *count >= rank && *count > below {
                if le.is_infinite() {
                    return Some(lower);
                }
                return Some(lower + (le - lower) * (rank - below) / (count - below));
            }
            (lower, below) = (*le, *count);
        }
        Some(lower)
    }
}

/// The `le` label's value in a bucket's labels (`le="0.5"}`), `+Inf` included.
fn le_of(labels: &str) -> Option<f64> {
    let start = labels.find("le=\"")? + 4;
    let rest = &labels[start..];
    let text = &rest[..rest.find('"')?];
    match text {
        "+Inf" => Some(f64::INFINITY),
        _ => text.parse().ok(),
    }
}

/// The server's `/metrics` text, or `None` when it has none (the ceiling) or did not answer.
pub async fn scrape(connection: &mut Connection) -> Option<String> {
    let reply = connection.get("/metrics").await.ok()?;
    if !reply.is_success() {
        return None;
    }
    String::from_utf8(reply.body.to_vec()).ok()
}

/// Group-commit and fsync figures of a server between two scrapes.
#[derive(Debug, Clone, PartialEq)]
pub struct WriterFigures {
    /// Group commits in the window.
    pub group_commits: f64,
    /// Mean produce requests per group commit.
    pub requests_per_commit_avg: f64,
    /// Median produce requests per group commit (interpolated).
    pub requests_per_commit_p50: f64,
    /// Fsyncs in the window (0 under `--fsync never`).
    pub fsyncs: f64,
    /// Mean fsync time, ms.
    pub fsync_ms_avg: Option<f64>,
    /// Median fsync time, ms (interpolated).
    pub fsync_ms_p50: Option<f64>,
}

impl WriterFigures {
    /// The figures between the `before` and `after` expositions; `None` when either lacks
    /// the group-commit histogram or no group commit happened in between.
    pub fn between(before: &str, after: &str) -> Option<WriterFigures> {
        let window = |name| {
            let earlier = Histogram::parse(before, name).unwrap_or_default();
            Histogram::parse(after, name).map(|later| later.since(&earlier))
        };
        let commits = window(GROUP_COMMIT_REQUESTS)?;
        let fsyncs = window(FSYNC_SECONDS).unwrap_or_default();
        Some(WriterFigures {
            group_commits: commits.count,
            requests_per_commit_avg: commits.mean()?,
            requests_per_commit_p50: commits.quantile(0.5)?,
            fsyncs: fsyncs.count,
            fsync_ms_avg: fsyncs.mean().map(|s| s * 1000.0),
            fsync_ms_p50: fsyncs.quantile(0.5).map(|s| s * 1000.0),
        })
    }

    /// The figures by name, as a measurement stores them.
    pub fn named(&self) -> Vec<(&'static str, f64)> {
        let mut named = vec![
            ("group_commits", self.group_commits),
            ("group_commit_requests_avg", self.requests_per_commit_avg),
            ("group_commit_requests_p50", self.requests_per_commit_p50),
            ("fsyncs", self.fsyncs),
        ];
        named.extend(self.fsync_ms_avg.map(|ms| ("fsync_ms_avg", ms)));
        named.extend(self.fsync_ms_p50.map(|ms| ("fsync_ms_p50", ms)));
        named
    }

    /// One sentence for the report's notes.
    pub fn note(&self) -> String {
        let fsync = match (self.fsync_ms_avg, self.fsync_ms_p50) {
            (Some(avg), Some(p50)) => format!(
                "{:.0} fsyncs, avg {avg:.2} ms, p50 ≈ {p50:.2} ms",
                self.fsyncs
            ),
            _ => "no fsyncs".to_owned(),
        };
        format!(
            "server /metrics over the measured window: {:.0} group commits, avg {:.1} \
             requests each (p50 ≈ {:.1}); {fsync} (p50s interpolated within buckets)",
            self.group_commits, self.requests_per_commit_avg, self.requests_per_commit_p50
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "\
# TYPE wharf_group_commit_requests histogram
wharf_group_commit_requests_bucket{le=\"1\"} 10
wharf_group_commit_requests_bucket{le=\"2\"} 10
wharf_group_commit_requests_bucket{le=\"4\"} 10
wharf_group_commit_requests_bucket{le=\"+Inf\"} 10
wharf_group_commit_requests_sum 10
wharf_group_commit_requests_count 10
";
    const AFTER: &str = "\
# TYPE wharf_group_commit_requests histogram
wharf_group_commit_requests_bucket{le=\"1\"} 10
wharf_group_commit_requests_bucket{le=\"2\"} 20
wharf_group_commit_requests_bucket{le=\"4\"} 30
wharf_group_commit_requests_bucket{le=\"+Inf\"} 30
wharf_group_commit_requests_sum 70
wharf_group_commit_requests_count 30
# TYPE wharf_fsync_seconds histogram
wharf_fsync_seconds_bucket{le=\"0.001\"} 10
wharf_fsync_seconds_bucket{le=\"0.002\"} 20
wharf_fsync_seconds_bucket{le=\"+Inf\"} 20
wharf_fsync_seconds_sum 0.03
wharf_fsync_seconds_count 20
";

    #[test]
    fn figures_cover_only_the_window_between_two_scrapes() {
        let figures = WriterFigures::between(BEFORE, AFTER).expect("figures");
        assert_eq!(figures.group_commits, 20.0);
        assert_eq!(figures.requests_per_commit_avg, 3.0);
        assert_eq!(figures.requests_per_commit_p50, 2.0);
        assert_eq!(figures.fsyncs, 20.0);
        let avg = figures.fsync_ms_avg.expect("fsync avg");
        assert!((avg - 1.5).abs() < 1e-9, "{avg}");
        let p50 = figures.fsync_ms_p50.expect("fsync p50");
        assert!((p50 - 1.0).abs() < 1e-9, "{p50}");
    }

    #[test]
    fn a_quantile_in_the_inf_bucket_is_the_largest_finite_bound() {
        let histogram = Histogram {
            buckets: vec![(1.0, 0.0), (f64::INFINITY, 4.0)],
            sum: 40.0,
            count: 4.0,
        };
        assert_eq!(histogram.quantile(0.5), Some(1.0));
        assert_eq!(Histogram::default().quantile(0.5), None);
    }

    #[test]
    fn a_server_without_the_histograms_has_no_figures() {
        assert_eq!(WriterFigures::between("", "not metrics\n"), None);
        assert_eq!(WriterFigures::between(BEFORE, BEFORE), None);
    }
}
