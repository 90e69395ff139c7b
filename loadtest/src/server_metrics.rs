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
/// Wharf's histogram of the stages of replicated writes, in seconds, labelled `stage`.
pub const WRITE_STAGE_SECONDS: &str = "wharf_write_stage_seconds";
/// The stages of [`WRITE_STAGE_SECONDS`], in the order a write meets them.
pub const WRITE_STAGES: [&str; 5] = [
    "queue",
    "log_append",
    "replicate",
    "follower_append",
    "apply",
];
/// Wharf's counter of appends a follower refused while it took the previous one.
pub const APPENDS_BUSY: &str = "wharf_raft_appends_busy_total";

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
        Histogram::parse_labelled(exposition, name, None)
    }

    /// The series of histogram `name` whose labels hold `label` (one `key="value"` pair;
    /// none: the histogram has no labels but `le`); `None` when it has no `_count` line.
    pub fn parse_labelled(exposition: &str, name: &str, label: Option<&str>) -> Option<Histogram> {
        let bucket_prefix = format!("{name}_bucket{{");
        let (sum_series, count_series) = match label {
            Some(label) => (
                format!("{name}_sum{{{label}}}"),
                format!("{name}_count{{{label}}}"),
            ),
            None => (format!("{name}_sum"), format!("{name}_count")),
        };
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
                let labels = labels.trim_end_matches('}');
                let wanted = label.is_none_or(|l| labels.split(',').any(|item| item == l));
                if wanted && let Some(le) = le_of(labels) {
                    histogram.buckets.push((le, value));
                }
            } else if series == sum_series {
                histogram.sum = value;
            } else if series == count_series {
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

/// The stages of a cluster node's replicated writes between two scrapes (see
/// [`WRITE_STAGE_SECONDS`]): where a produce's time went on the node the load hit.
#[derive(Debug, Clone, PartialEq)]
pub struct StageFigures {
    /// Each stage seen in the window and its observations there.
    pub stages: Vec<(&'static str, Histogram)>,
    /// Appends refused as busy in the window.
    pub appends_busy: f64,
}

impl StageFigures {
    /// The figures between the `before` and `after` expositions; `None` when no stage was
    /// timed in between (a single node, or a server that does not time them).
    pub fn between(before: &str, after: &str) -> Option<StageFigures> {
        let stages: Vec<(&'static str, Histogram)> = WRITE_STAGES
            .into_iter()
            .filter_map(|stage| {
                let label = format!("stage=\"{stage}\"");
                let later = Histogram::parse_labelled(after, WRITE_STAGE_SECONDS, Some(&label))?;
                let earlier = Histogram::parse_labelled(before, WRITE_STAGE_SECONDS, Some(&label))
                    .unwrap_or_default();
                let window = later.since(&earlier);
                (window.count > 0.0).then_some((stage, window))
            })
            .collect();
        if stages.is_empty() {
            return None;
        }
        let busy = |text: &str| counter(text, APPENDS_BUSY).unwrap_or(0.0);
        Some(StageFigures {
            stages,
            appends_busy: (busy(after) - busy(before)).max(0.0),
        })
    }

    /// The figures by name, as a measurement stores them: `stage_<stage>_count`, `_ms_avg`,
    /// `_ms_p50`, `_ms_p99`, and `appends_busy`.
    pub fn named(&self) -> Vec<(String, f64)> {
        let mut named = Vec::new();
        for (stage, histogram) in &self.stages {
            named.push((format!("stage_{stage}_count"), histogram.count));
            let ms = [
                ("avg", histogram.mean()),
                ("p50", histogram.quantile(0.5)),
                ("p99", histogram.quantile(0.99)),
            ];
            for (what, seconds) in ms {
                if let Some(seconds) = seconds {
                    named.push((format!("stage_{stage}_ms_{what}"), seconds * 1000.0));
                }
            }
        }
        named.push(("appends_busy".to_owned(), self.appends_busy));
        named
    }

    /// One sentence for the report's notes.
    pub fn note(&self) -> String {
        let stages: Vec<String> = self
            .stages
            .iter()
            .map(|(stage, h)| {
                let ms =
                    |s: Option<f64>| s.map_or("?".to_owned(), |s| format!("{:.2}", s * 1000.0));
                format!(
                    "{stage} {:.0}× avg {} ms p99 ≈ {} ms",
                    h.count,
                    ms(h.mean()),
                    ms(h.quantile(0.99))
                )
            })
            .collect();
        format!(
            "replicated write stages on this node over the window: {}; {:.0} appends refused busy",
            stages.join(", "),
            self.appends_busy
        )
    }
}

/// The value of the unlabelled counter `name` in `exposition`.
fn counter(exposition: &str, name: &str) -> Option<f64> {
    exposition.lines().find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        (series == name).then(|| value.parse().ok()).flatten()
    })
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

    /// An exposition of two stages: `queue` with `queue_fast` observations under 1 ms and
    /// `queue_slow` between 1 and 10 ms summing to `queue_sum` s, `apply` unchanged at 5, and
    /// `busy` refused appends.
    fn stages(queue_fast: u32, queue_slow: u32, queue_sum: f64, busy: u32) -> String {
        let mut text = String::from("# TYPE wharf_write_stage_seconds histogram\n");
        let name = WRITE_STAGE_SECONDS;
        for (stage, fast, all, sum) in [
            ("queue", queue_fast, queue_fast + queue_slow, queue_sum),
            ("apply", 5, 5, 0.002),
        ] {
            for (le, count) in [("0.001", fast), ("0.01", all), ("+Inf", all)] {
                text += &format!("{name}_bucket{{stage=\"{stage}\",le=\"{le}\"}} {count}\n");
            }
            text += &format!("{name}_sum{{stage=\"{stage}\"}} {sum}\n");
            text += &format!("{name}_count{{stage=\"{stage}\"}} {all}\n");
        }
        text + &format!("{APPENDS_BUSY} {busy}\n")
    }

    #[test]
    fn each_stage_is_read_from_its_own_labelled_series_over_the_window_only() {
        let (before, after) = (stages(2, 0, 0.001, 1), stages(2, 4, 0.021, 4));
        let figures = StageFigures::between(&before, &after).expect("stages");
        // apply saw nothing new in the window: left out.
        assert_eq!(figures.stages.len(), 1, "{figures:?}");
        let (stage, queue) = &figures.stages[0];
        assert_eq!(*stage, "queue");
        assert_eq!(queue.count, 4.0);
        assert!((queue.mean().expect("a mean") - 0.005).abs() < 1e-9);
        // All four new ones fell between 1 and 10 ms: the median interpolates to 5.5 ms.
        let p50 = queue.quantile(0.5).expect("a median");
        assert!((p50 - 0.0055).abs() < 1e-9, "{p50}");
        assert_eq!(figures.appends_busy, 3.0);
        let named = figures.named();
        assert!(
            named.contains(&("stage_queue_count".to_owned(), 4.0)),
            "{named:?}"
        );
        assert!(
            named.iter().any(|(n, _)| n == "stage_queue_ms_p99"),
            "{named:?}"
        );
        assert!(
            !named.iter().any(|(n, _)| n.starts_with("stage_apply")),
            "{named:?}"
        );
        assert_eq!(StageFigures::between(BEFORE, BEFORE), None);
    }
}
