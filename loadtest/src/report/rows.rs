//! The figures of the report: each a median and range over rounds, Wharf's set beside the
//! ceiling it is measured against, and the targets checked against them.

use serde::{Deserialize, Serialize};

use super::ServerRecord;
use crate::scenario::Measurement;

/// A figure over the rounds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Figure {
    /// The median over rounds.
    pub median: f64,
    /// The smallest round's value.
    pub min: f64,
    /// The largest round's value.
    pub max: f64,
    /// `(round, value)` of every round.
    pub rounds: Vec<(u32, f64)>,
}

impl Figure {
    /// The figure of `(round, value)` pairs; `None` when there are none.
    pub fn of(mut rounds: Vec<(u32, f64)>) -> Option<Figure> {
        rounds.sort_by_key(|(round, _)| *round);
        let mut values: Vec<f64> = rounds.iter().map(|(_, v)| *v).collect();
        values.sort_by(f64::total_cmp);
        let median = match values.len() {
            0 => return None,
            n if n % 2 == 1 => values[n / 2],
            n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
        };
        Some(Figure {
            median,
            min: values[0],
            max: values[values.len() - 1],
            rounds,
        })
    }

    fn value_in(&self, round: u32) -> Option<f64> {
        self.rounds
            .iter()
            .find(|(r, _)| *r == round)
            .map(|(_, v)| *v)
    }
}

/// Reads one number out of a measurement.
type Metric = fn(&Measurement) -> f64;

fn req_per_s(m: &Measurement) -> f64 {
    m.req_per_s
}
fn msg_per_s(m: &Measurement) -> f64 {
    m.msg_per_s
}
fn mib_per_s(m: &Measurement) -> f64 {
    m.mib_per_s
}
fn p50_ms(m: &Measurement) -> f64 {
    m.latency.p50_us as f64 / 1000.0
}
fn p99_ms(m: &Measurement) -> f64 {
    m.latency.p99_us as f64 / 1000.0
}
fn e2e(m: &Measurement) -> crate::latency::LatencySummary {
    m.latencies.get("e2e").copied().unwrap_or_default()
}
fn e2e_p50_ms(m: &Measurement) -> f64 {
    e2e(m).p50_us as f64 / 1000.0
}
fn e2e_p99_ms(m: &Measurement) -> f64 {
    e2e(m).p99_us as f64 / 1000.0
}
fn e2e_p999_ms(m: &Measurement) -> f64 {
    e2e(m).p999_us as f64 / 1000.0
}
fn e2e_max_ms(m: &Measurement) -> f64 {
    e2e(m).max_us as f64 / 1000.0
}
fn server_cpu_s(m: &Measurement) -> f64 {
    m.server.map_or(f64::NAN, |s| s.cpu_s)
}
fn server_cpu_cores(m: &Measurement) -> f64 {
    m.server
        .map_or(f64::NAN, |s| s.cpu_s / m.elapsed_s.max(1e-9))
}
fn server_rss_mib(m: &Measurement) -> f64 {
    m.server
        .map_or(f64::NAN, |s| s.rss_peak_kib as f64 / 1024.0)
}

fn named(m: &Measurement, name: &str) -> f64 {
    m.figures.get(name).copied().unwrap_or(f64::NAN)
}
fn lateness_p50_ms(m: &Measurement) -> f64 {
    named(m, "lateness_p50_ms")
}
fn lateness_p99_ms(m: &Measurement) -> f64 {
    named(m, "lateness_p99_ms")
}
fn lateness_p999_ms(m: &Measurement) -> f64 {
    named(m, "lateness_p999_ms")
}
fn lateness_max_ms(m: &Measurement) -> f64 {
    named(m, "lateness_max_ms")
}
fn early(m: &Measurement) -> f64 {
    named(m, "early")
}
fn delay_received(m: &Measurement) -> f64 {
    named(m, "received")
}
fn scheduled(m: &Measurement) -> f64 {
    named(m, "scheduled")
}
fn rss_before_mib(m: &Measurement) -> f64 {
    named(m, "rss_before_mib")
}
fn rss_after_mib(m: &Measurement) -> f64 {
    named(m, "rss_after_mib")
}
fn rss_growth_mib(m: &Measurement) -> f64 {
    named(m, "rss_growth_mib")
}
fn hwm_mib(m: &Measurement) -> f64 {
    named(m, "hwm_mib")
}
fn group_commit_requests_avg(m: &Measurement) -> f64 {
    named(m, "group_commit_requests_avg")
}
fn fsync_ms_p50(m: &Measurement) -> f64 {
    named(m, "fsync_ms_p50")
}
fn delayed_mismatch(m: &Measurement) -> f64 {
    (named(m, "delayed_reported") - named(m, "scheduled")).abs()
}
fn offered_req_per_s(m: &Measurement) -> f64 {
    named(m, "offered_req_per_s")
}
fn not_sent(m: &Measurement) -> f64 {
    named(m, "not_sent")
}
fn share_503(m: &Measurement) -> f64 {
    named(m, "share_503")
}
fn without_retry_after(m: &Measurement) -> f64 {
    named(m, "status_503_without_retry_after")
}
fn resets(m: &Measurement) -> f64 {
    named(m, "resets")
}
fn timeouts(m: &Measurement) -> f64 {
    named(m, "timeouts")
}
fn connect_failed(m: &Measurement) -> f64 {
    named(m, "connect_failed")
}
fn overload_peak_rss_mib(m: &Measurement) -> f64 {
    named(m, "peak_rss_mib")
}

/// The figure of `metric` over the rounds of `scenario` against `target`.
pub fn figure(ms: &[Measurement], scenario: &str, target: &str, metric: Metric) -> Option<Figure> {
    Figure::of(
        ms.iter()
            .filter(|m| m.scenario == scenario && m.target == target)
            .map(|m| (m.round, metric(m)))
            .filter(|(_, v)| v.is_finite())
            .collect(),
    )
}

/// One line of the main table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// Wharf's scenario.
    pub scenario: String,
    /// What is measured, with its unit.
    pub metric: String,
    /// Whether more is better (throughput) or less (latency).
    pub higher_is_better: bool,
    /// Wharf's figure.
    pub wharf: Option<Figure>,
    /// What Wharf is set against (`ceiling-http produce-1`, ...), if anything.
    pub against: Option<String>,
    /// That figure.
    pub ceiling: Option<Figure>,
    /// Wharf's median over the other's median.
    pub ratio: Option<f64>,
    /// Per-round ratios, each of two runs back to back.
    pub round_ratios: Vec<f64>,
    /// Median CPU seconds Wharf used while measured.
    pub wharf_cpu_s: Option<f64>,
    /// Median cores Wharf kept busy while measured (CPU seconds over seconds).
    pub wharf_cpu_cores: Option<f64>,
    /// Median CPU seconds the other server used while measured.
    pub ceiling_cpu_s: Option<f64>,
    /// Median cores the other server kept busy while measured.
    pub ceiling_cpu_cores: Option<f64>,
    /// Largest resident memory sampled in Wharf while measured, MiB.
    pub wharf_rss_peak_mib: Option<f64>,
    /// The ceiling cannot run this scenario (no storage, no delays): its column reads "n/a".
    #[serde(default)]
    pub ceiling_not_applicable: bool,
}

struct Side {
    scenario: &'static str,
    target: &'static str,
    metric: Metric,
}

struct RowSpec {
    metric: &'static str,
    higher_is_better: bool,
    wharf: Side,
    against: Option<Side>,
    not_applicable: bool,
}

const fn side(scenario: &'static str, target: &'static str, metric: Metric) -> Side {
    Side {
        scenario,
        target,
        metric,
    }
}

fn row_specs() -> Vec<RowSpec> {
    let w = "wharf";
    let http = "ceiling-http";
    let disk = "ceiling-disk";
    let spec = |metric, higher_is_better, wharf, against| RowSpec {
        metric,
        higher_is_better,
        wharf,
        against,
        not_applicable: false,
    };
    // Wharf only: the ceiling has no storage, no delays and no schedule.
    let alone = |metric, higher_is_better, wharf| RowSpec {
        metric,
        higher_is_better,
        wharf,
        against: None,
        not_applicable: true,
    };
    vec![
        spec(
            "req/s",
            true,
            side("produce-1", w, req_per_s),
            Some(side("produce-1", http, req_per_s)),
        ),
        spec(
            "p50 ms",
            false,
            side("produce-1", w, p50_ms),
            Some(side("produce-1", http, p50_ms)),
        ),
        spec(
            "p99 ms",
            false,
            side("produce-1", w, p99_ms),
            Some(side("produce-1", http, p99_ms)),
        ),
        spec(
            "req/s vs 1 KiB append+fdatasync/s",
            true,
            side("produce-1", w, req_per_s),
            Some(side("disk-1k", disk, req_per_s)),
        ),
        spec(
            "msg/s",
            true,
            side("produce-batch", w, msg_per_s),
            Some(side("produce-batch", http, msg_per_s)),
        ),
        spec(
            "MiB/s",
            true,
            side("produce-batch", w, mib_per_s),
            Some(side("disk-100k", disk, mib_per_s)),
        ),
        spec(
            "p99 ms",
            false,
            side("produce-batch", w, p99_ms),
            Some(side("produce-batch", http, p99_ms)),
        ),
        alone(
            "requests per group commit (avg, /metrics)",
            true,
            side("produce-1", w, group_commit_requests_avg),
        ),
        alone(
            "fsync p50 ms (/metrics buckets)",
            false,
            side("produce-1", w, fsync_ms_p50),
        ),
        alone(
            "requests per group commit (avg, /metrics)",
            true,
            side("produce-batch", w, group_commit_requests_avg),
        ),
        alone(
            "fsync p50 ms (/metrics buckets)",
            false,
            side("produce-batch", w, fsync_ms_p50),
        ),
        spec(
            "msg/s",
            true,
            side("consume", w, msg_per_s),
            Some(side("consume", http, msg_per_s)),
        ),
        spec(
            "msg/s vs Wharf produce-batch msg/s",
            true,
            side("consume", w, msg_per_s),
            Some(side("produce-batch", w, msg_per_s)),
        ),
        spec(
            "receive p99 ms",
            false,
            side("consume", w, p99_ms),
            Some(side("consume", http, p99_ms)),
        ),
        spec(
            "publish→receive p50 ms",
            false,
            side("e2e", w, e2e_p50_ms),
            None,
        ),
        spec(
            "publish→receive p99 ms",
            false,
            side("e2e", w, e2e_p99_ms),
            None,
        ),
        spec(
            "publish→receive p99.9 ms",
            false,
            side("e2e", w, e2e_p999_ms),
            None,
        ),
        spec(
            "publish→receive max ms",
            false,
            side("e2e", w, e2e_max_ms),
            None,
        ),
        spec("produce p99 ms", false, side("e2e", w, p99_ms), None),
        spec(
            "receive p50 ms vs empty",
            false,
            side("backlog-full", w, p50_ms),
            Some(side("backlog-empty", w, p50_ms)),
        ),
        spec(
            "receive p99 ms vs empty",
            false,
            side("backlog-full", w, p99_ms),
            Some(side("backlog-empty", w, p99_ms)),
        ),
        alone("messages received", true, side("delay", w, delay_received)),
        alone(
            "received before due (early)",
            false,
            side("delay", w, early),
        ),
        alone("lateness p50 ms", false, side("delay", w, lateness_p50_ms)),
        alone("lateness p99 ms", false, side("delay", w, lateness_p99_ms)),
        alone(
            "lateness p99.9 ms",
            false,
            side("delay", w, lateness_p999_ms),
        ),
        alone("lateness max ms", false, side("delay", w, lateness_max_ms)),
        alone("messages scheduled", true, side("schedule", w, scheduled)),
        alone(
            "schedule produce msg/s",
            true,
            side("schedule", w, msg_per_s),
        ),
        alone("RSS before MiB", false, side("schedule", w, rss_before_mib)),
        alone("RSS after MiB", false, side("schedule", w, rss_after_mib)),
        alone("RSS growth MiB", false, side("schedule", w, rss_growth_mib)),
        alone("peak RSS (VmHWM) MiB", false, side("schedule", w, hwm_mib)),
        alone(
            "stats.delayed − scheduled (absolute)",
            false,
            side("schedule", w, delayed_mismatch),
        ),
        spec(
            "offered req/s (3× the unloaded acked req/s, 1,000 connections)",
            true,
            side("overload", w, offered_req_per_s),
            None,
        ),
        spec(
            "acked req/s vs unloaded",
            true,
            side("overload", w, req_per_s),
            Some(side("overload-unloaded", w, req_per_s)),
        ),
        spec(
            "acked MiB/s vs unloaded",
            true,
            side("overload", w, mib_per_s),
            Some(side("overload-unloaded", w, mib_per_s)),
        ),
        spec(
            "accepted p50 ms vs unloaded",
            false,
            side("overload", w, p50_ms),
            Some(side("overload-unloaded", w, p50_ms)),
        ),
        spec(
            "accepted p99 ms vs unloaded",
            false,
            side("overload", w, p99_ms),
            Some(side("overload-unloaded", w, p99_ms)),
        ),
        spec(
            "503 share of answered",
            false,
            side("overload", w, share_503),
            None,
        ),
        spec(
            "503 without Retry-After",
            false,
            side("overload", w, without_retry_after),
            None,
        ),
        spec(
            "connection resets",
            false,
            side("overload", w, resets),
            None,
        ),
        spec("timeouts", false, side("overload", w, timeouts), None),
        spec(
            "connect failures",
            false,
            side("overload", w, connect_failed),
            None,
        ),
        spec(
            "not sent (no idle connection)",
            false,
            side("overload", w, not_sent),
            None,
        ),
        spec(
            "peak RSS (VmHWM) MiB",
            false,
            side("overload", w, overload_peak_rss_mib),
            None,
        ),
        spec(
            "1 KiB append+fdatasync/s",
            true,
            side("disk-1k", disk, req_per_s),
            None,
        ),
        spec(
            "100 KiB append+fdatasync MiB/s",
            true,
            side("disk-100k", disk, mib_per_s),
            None,
        ),
    ]
}

/// Every row whose Wharf figure was measured.
pub fn rows(ms: &[Measurement]) -> Vec<Row> {
    row_specs()
        .into_iter()
        .filter_map(|spec| {
            let wharf = figure(
                ms,
                spec.wharf.scenario,
                spec.wharf.target,
                spec.wharf.metric,
            )?;
            let ceiling = spec
                .against
                .as_ref()
                .and_then(|s| figure(ms, s.scenario, s.target, s.metric));
            let ratio = ceiling
                .as_ref()
                .filter(|c| c.median != 0.0)
                .map(|c| wharf.median / c.median);
            let round_ratios = ceiling.as_ref().map_or_else(Vec::new, |c| {
                wharf
                    .rounds
                    .iter()
                    .filter_map(|(round, v)| {
                        c.value_in(*round).filter(|c| *c != 0.0).map(|c| v / c)
                    })
                    .collect()
            });
            let cpu = |side: &Side| {
                figure(ms, side.scenario, side.target, server_cpu_s).map(|f| f.median)
            };
            let cores = |side: &Side| {
                figure(ms, side.scenario, side.target, server_cpu_cores).map(|f| f.median)
            };
            Some(Row {
                scenario: spec.wharf.scenario.to_owned(),
                metric: spec.metric.to_owned(),
                higher_is_better: spec.higher_is_better,
                wharf_cpu_s: cpu(&spec.wharf),
                wharf_cpu_cores: cores(&spec.wharf),
                ceiling_cpu_s: spec.against.as_ref().and_then(cpu),
                ceiling_cpu_cores: spec.against.as_ref().and_then(cores),
                wharf_rss_peak_mib: figure(
                    ms,
                    spec.wharf.scenario,
                    spec.wharf.target,
                    server_rss_mib,
                )
                .map(|f| f.max),
                against: spec
                    .against
                    .as_ref()
                    .map(|s| format!("{} {}", s.target, s.scenario)),
                wharf: Some(wharf),
                ceiling,
                ratio,
                round_ratios,
                ceiling_not_applicable: spec.not_applicable,
            })
        })
        .collect()
}

/// One of the targets.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetCheck {
    /// The target as the issue states it.
    pub target: String,
    /// The measured figure (a ratio, milliseconds or MiB).
    pub measured: Option<f64>,
    /// `>=` or `<=`.
    pub comparison: String,
    /// The threshold.
    pub threshold: f64,
    /// Met, missed, or `None` when not measured.
    pub met: Option<bool>,
    /// Measured over threshold: how far above or below it.
    pub margin: Option<f64>,
}

pub(super) fn check(
    target: &str,
    measured: Option<f64>,
    at_least: bool,
    threshold: f64,
) -> TargetCheck {
    let met = measured.map(|m| {
        if at_least {
            m >= threshold
        } else {
            m <= threshold
        }
    });
    TargetCheck {
        target: target.to_owned(),
        measured,
        comparison: if at_least { ">=" } else { "<=" }.to_owned(),
        threshold,
        met,
        margin: measured.filter(|_| threshold != 0.0).map(|m| m / threshold),
    }
}

fn sum(figure: &Figure) -> f64 {
    figure.rounds.iter().map(|(_, v)| v).sum()
}

fn ratio(a: Option<Figure>, b: Option<Figure>) -> Option<f64> {
    a.zip(b)
        .filter(|(_, b)| b.median != 0.0)
        .map(|(a, b)| a.median / b.median)
}

/// The targets, each met or missed (or unmeasured).
pub fn targets(ms: &[Measurement], servers: &[ServerRecord]) -> Vec<TargetCheck> {
    let w = "wharf";
    let peak_rss_mib = servers
        .iter()
        .filter(|s| s.target == w)
        .map(|s| s.hwm_kib as f64 / 1024.0)
        .chain(
            ms.iter()
                .filter(|m| m.target == w)
                .map(server_rss_mib)
                .filter(|v| v.is_finite()),
        )
        .reduce(f64::max);
    vec![
        check(
            "produce-1 (64 connections) req/s ≥ 50% of ceiling-http",
            ratio(
                figure(ms, "produce-1", w, req_per_s),
                figure(ms, "produce-1", "ceiling-http", req_per_s),
            ),
            true,
            0.5,
        ),
        check(
            "produce-batch MiB/s ≥ 50% of ceiling-disk (100 KiB appends)",
            ratio(
                figure(ms, "produce-batch", w, mib_per_s),
                figure(ms, "disk-100k", "ceiling-disk", mib_per_s),
            ),
            true,
            0.5,
        ),
        check(
            "consume msg/s ≥ 50% of produce-batch msg/s",
            ratio(
                figure(ms, "consume", w, msg_per_s),
                figure(ms, "produce-batch", w, msg_per_s),
            ),
            true,
            0.5,
        ),
        check(
            "e2e at 1,000 msg/s: p99 ≤ 5 ms",
            figure(ms, "e2e", w, e2e_p99_ms).map(|f| f.median),
            false,
            5.0,
        ),
        check(
            "e2e at 1,000 msg/s: p50 ≤ 1 ms",
            figure(ms, "e2e", w, e2e_p50_ms).map(|f| f.median),
            false,
            1.0,
        ),
        check(
            "backlog: receive p99 with the full backlog ≤ 1.2 × empty",
            ratio(
                figure(ms, "backlog-full", w, p99_ms),
                figure(ms, "backlog-empty", w, p99_ms),
            ),
            false,
            1.2,
        ),
        check("peak RSS ≤ 256 MiB", peak_rss_mib, false, 256.0),
        check(
            "delay: lateness p99 ≤ 10 ms (worst round)",
            figure(ms, "delay", w, lateness_p99_ms).map(|f| f.max),
            false,
            10.0,
        ),
        check(
            "delay: no message received before it is due (all rounds)",
            figure(ms, "delay", w, early).map(|f| sum(&f)),
            false,
            0.0,
        ),
        check(
            &format!(
                "schedule: RSS growth < 100 MiB for 1,000,000 messages a day ahead (this run: {})",
                figure(ms, "schedule", w, scheduled)
                    .map_or_else(|| "none".to_owned(), |f| format!("{:.0}", f.max))
            ),
            figure(ms, "schedule", w, rss_growth_mib).map(|f| f.max),
            false,
            100.0,
        ),
        check(
            "schedule: subscription stats.delayed = messages scheduled",
            figure(ms, "schedule", w, delayed_mismatch).map(|f| f.max),
            false,
            0.0,
        ),
        check(
            "overload (3× the sustained rate, 1,000 connections): peak RSS ≤ 256 MiB (worst round)",
            figure(ms, "overload", w, overload_peak_rss_mib).map(|f| f.max),
            false,
            256.0,
        ),
        check(
            "overload: no connection resets (all rounds)",
            figure(ms, "overload", w, resets).map(|f| sum(&f)),
            false,
            0.0,
        ),
        check(
            "overload: acked req/s ≥ 0.8 × unloaded",
            ratio(
                figure(ms, "overload", w, req_per_s),
                figure(ms, "overload-unloaded", w, req_per_s),
            ),
            true,
            0.8,
        ),
        check(
            "overload: every 503 carries Retry-After (503s without it, all rounds)",
            figure(ms, "overload", w, without_retry_after).map(|f| sum(&f)),
            false,
            0.0,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_has_the_median_and_range_of_its_rounds() {
        let figure = Figure::of(vec![(2, 30.0), (1, 10.0), (3, 20.0)]).expect("figure");
        assert_eq!((figure.median, figure.min, figure.max), (20.0, 10.0, 30.0));
        assert_eq!(figure.rounds[0], (1, 10.0));
        let even = Figure::of(vec![(1, 1.0), (2, 3.0)]).expect("figure");
        assert_eq!(even.median, 2.0);
        assert_eq!(Figure::of(Vec::new()), None);
    }

    #[test]
    fn checks_compare_in_the_stated_direction() {
        assert_eq!(check("t", Some(0.6), true, 0.5).met, Some(true));
        assert_eq!(check("t", Some(0.4), true, 0.5).met, Some(false));
        assert_eq!(check("t", Some(6.0), false, 5.0).met, Some(false));
        assert_eq!(check("t", None, false, 5.0).met, None);
    }
}
