//! Metrics: the process-wide Prometheus recorder behind the `metrics` facade, and the
//! middleware that counts and times every request.
//!
//! What `/metrics` serves comes from two places:
//! - the recorder ([`handle`]): the broker's counters and histograms
//!   ([`broker_core::telemetry`]), the request counter and latency histogram recorded by
//!   [`track_requests`], and refused connections;
//! - gauges computed at scrape time from this server's own state (backlogs, open
//!   connections, long-polls), written by [`crate::routes::metrics`].
//!
//! A process has one global recorder, installed by [`install`] before the first broker opens
//! (later calls share it). Several servers in one process (tests) therefore share the
//! recorder's series, while the scrape-time gauges are always their own.
//!
//! Labels are bounded: a request's `route` is its matched route template (never the raw path),
//! `method` is one of the standard methods or `other`, and topic and subscription names are the
//! broker's, bounded by what exists.

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock, RwLock};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use broker_core::sync::{read, write};
use broker_core::telemetry;
use metrics::{
    Counter, Histogram, Unit, counter, describe_counter, describe_gauge, describe_histogram,
    histogram,
};
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

use crate::app::AppState;

/// Requests answered, per `method`, `route` (template) and `status`.
pub(crate) const HTTP_REQUESTS: &str = "wharf_http_requests_total";
/// Time from a request reaching the router to its response head, per `method`, `route` and
/// `status`. Long-polls count their wait; a stream counts until its head is sent.
pub(crate) const HTTP_REQUEST_SECONDS: &str = "wharf_http_request_duration_seconds";
/// Connections refused at accept because `max_connections` were open.
pub(crate) const CONNECTIONS_REFUSED: &str = "wharf_connections_refused_total";
/// Connections closed because the client read nothing of a response for `write_timeout_ms`.
pub(crate) const WRITE_TIMEOUTS: &str = "wharf_write_timeouts_total";
/// In a cluster, time of one Raft RPC to another node, answered or not, per `rpc` (append,
/// vote, snapshot, ...): the network and the peer's share of a commit.
pub(crate) const PEER_RPC_SECONDS: &str = "wharf_peer_rpc_seconds";

/// Alerts firing on this node, per `kind` (`backlog`, `disk`, …), as of the last evaluation.
pub(crate) const ALERTS_ACTIVE: &str = "wharf_alerts_active";
/// Alert webhook posts, per `outcome`: `delivered` (2xx), `failed` (an attempt that will be
/// retried or given up), `gave_up` (retries spent or too old), `dropped` (a full queue).
pub(crate) const ALERT_DELIVERIES: &str = "wharf_alert_deliveries_total";

/// Produce → received time of the synthetic probe's successful rounds (see
/// [`crate::governance::probe`]).
pub(crate) const PROBE_ROUND_TRIP_SECONDS: &str = "wharf_probe_round_trip_seconds";
/// Failed rounds of the synthetic probe, per `step` (`setup`, `produce`, `receive`, `ack`).
pub(crate) const PROBE_FAILURES: &str = "wharf_probe_failures_total";

/// The `route` label of requests no route matched (404s and the like): one value, so probing
/// random paths cannot grow the label set.
pub(crate) const UNMATCHED_ROUTE: &str = "unmatched";

/// Buckets of request latencies and fsync times, in seconds: 0.5 ms (a cached read, an fsync
/// on a fast NVMe disk) up to 10 s (a slow disk, a long-poll's wait lands in `+Inf`).
pub(crate) const LATENCY_BUCKETS_SECONDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Buckets of the stages of a replicated write, in seconds: the latency buckets with three
/// more below 0.5 ms, where a queue wait or an apply usually falls.
pub(crate) const STAGE_BUCKETS_SECONDS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
];
/// Buckets of produce requests per group commit and of writer queue depths: powers of two up
/// to the writer queue's depth ([`broker_core::limits::WRITER_QUEUE_DEPTH`], 256), the most
/// one group can take.
pub(crate) const COUNT_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];
/// Buckets of bytes per group commit: powers of four from 1 KiB to 64 MiB (a full queue of
/// large batches).
pub(crate) const BYTE_BUCKETS: &[f64] = &[
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
];
/// How often the recorder's histogram samples are folded into their buckets between scrapes,
/// so memory stays bounded when nobody scrapes.
pub(crate) const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the Prometheus recorder as the process's global recorder, once; later calls
/// return the same handle. When another recorder is already installed (an embedding
/// program's), the handle renders only what reaches it, and a warning says so.
pub(crate) fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let builder = builder().unwrap_or_else(|error| {
            tracing::error!(%error, "metric buckets rejected; histograms become summaries");
            PrometheusBuilder::new()
        });
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        match metrics::set_global_recorder(recorder) {
            Ok(()) => {
                telemetry::describe();
                describe();
                spawn_upkeep(handle.clone());
            }
            Err(error) => tracing::warn!(%error, "another metrics recorder is installed"),
        }
        handle
    })
}

/// The recorder's handle (installing it if needed).
pub(crate) fn handle() -> &'static PrometheusHandle {
    install()
}

fn builder() -> Result<PrometheusBuilder, BuildError> {
    let full = |name: &str| Matcher::Full(name.to_owned());
    PrometheusBuilder::new()
        .set_buckets_for_metric(full(HTTP_REQUEST_SECONDS), LATENCY_BUCKETS_SECONDS)?
        .set_buckets_for_metric(full(telemetry::FSYNC_SECONDS), LATENCY_BUCKETS_SECONDS)?
        .set_buckets_for_metric(
            full(telemetry::RAFT_COMMIT_SECONDS),
            LATENCY_BUCKETS_SECONDS,
        )?
        .set_buckets_for_metric(full(telemetry::WRITE_STAGE_SECONDS), STAGE_BUCKETS_SECONDS)?
        .set_buckets_for_metric(full(PEER_RPC_SECONDS), LATENCY_BUCKETS_SECONDS)?
        .set_buckets_for_metric(full(PROBE_ROUND_TRIP_SECONDS), LATENCY_BUCKETS_SECONDS)?
        .set_buckets_for_metric(full(telemetry::GROUP_COMMIT_REQUESTS), COUNT_BUCKETS)?
        .set_buckets_for_metric(full(telemetry::WRITER_QUEUE_DEPTH), COUNT_BUCKETS)?
        .set_buckets_for_metric(full(telemetry::GROUP_COMMIT_BYTES), BYTE_BUCKETS)
}

fn spawn_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("wharf-metrics-upkeep".to_owned())
        .spawn(move || {
            loop {
                std::thread::sleep(UPKEEP_INTERVAL);
                handle.run_upkeep();
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the metrics upkeep thread");
    }
}

fn describe() {
    describe_counter!(
        HTTP_REQUESTS,
        Unit::Count,
        "Requests answered, by method, route template and status."
    );
    describe_histogram!(
        HTTP_REQUEST_SECONDS,
        Unit::Seconds,
        "Time to the response head, by method, route template and status."
    );
    describe_histogram!(
        PEER_RPC_SECONDS,
        Unit::Seconds,
        "In a cluster: time of one Raft RPC to another node, by rpc."
    );
    describe_counter!(
        CONNECTIONS_REFUSED,
        Unit::Count,
        "Connections refused at accept because max_connections were open."
    );
    describe_counter!(
        WRITE_TIMEOUTS,
        Unit::Count,
        "Connections closed because the client read nothing of a response for write_timeout_ms."
    );
    describe_gauge!(
        ALERTS_ACTIVE,
        Unit::Count,
        "Alerts firing on this node, by kind."
    );
    describe_histogram!(
        PROBE_ROUND_TRIP_SECONDS,
        Unit::Seconds,
        "Produce to received time of the synthetic probe's successful rounds."
    );
    describe_counter!(
        PROBE_FAILURES,
        Unit::Count,
        "Failed rounds of the synthetic probe, by step (setup, produce, receive, ack)."
    );
    describe_counter!(
        ALERT_DELIVERIES,
        Unit::Count,
        "Alert webhook posts, by outcome (delivered, failed, gave_up, dropped)."
    );
}

/// Counts and times every request by method, matched route template and status (the
/// outermost layer but the request id and tracing, so the edge's refusals count too); a
/// request on a topic (a `/v1/topics/{topic}` route, less long-polls, streams and offset
/// reads) also goes to the per-minute history's figures (when the history is kept), and a
/// failed produce to the node's one produce error count
/// ([`crate::governance::produce_errors::ProduceErrors`]).
pub(crate) async fn track_requests(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let route = request.extensions().get::<MatchedPath>().cloned();
    let method = method_label(request.method());
    let topic = route
        .as_ref()
        .and_then(|route| history_topic(request.method(), route.as_str(), &request));
    let started = Instant::now();
    let response = next.run(request).await;
    let route = route.as_ref().map_or(UNMATCHED_ROUTE, MatchedPath::as_str);
    let status = response.status();
    let (requests, seconds) = request_series(method, route, status.as_u16());
    requests.increment(1);
    let elapsed = started.elapsed();
    seconds.record(elapsed.as_secs_f64());
    if let Some((topic, produce)) = topic
        && status != StatusCode::NOT_FOUND
    {
        if state.history.is_on() {
            let latency_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
            state.history.requests.record(&topic, latency_ms);
        }
        if produce && !status.is_success() {
            state.history.produce_errors.count(&topic);
        }
    }
    response
}

/// The topic a request counts for in the per-minute history, and whether it is a produce:
/// a route under `/v1/topics/{topic}` that the client sent (a request forwarded by another
/// node was counted there), except the ones that wait by design (a receive's long-poll, a
/// stream, an offset read), whose time is not latency.
fn history_topic(method: &Method, route: &str, request: &Request) -> Option<(String, bool)> {
    const WAITING: [&str; 3] = ["/receive", "/stream", "/partitions/{partition}/messages"];
    let rest = route.strip_prefix("/v1/topics/{topic}")?;
    if WAITING.iter().any(|tail| rest.ends_with(tail))
        || request
            .headers()
            .contains_key(crate::fanout::forward::FORWARDED_HEADER)
    {
        return None;
    }
    let segments = crate::auth::policy::segments(request.uri().path());
    let topic = segments.get(2)?.clone();
    Some((topic, method == Method::POST && rest == "/messages"))
}

/// The request counter and latency histogram of one method, route and status.
type RequestSeries = (Counter, Histogram);

/// Registered request series by method and status, then route, so a request costs a map
/// lookup instead of the recorder's (which builds and hashes its labels each time). Bounded
/// as the labels are: eight methods, the statuses the server answers, the route templates
/// and [`UNMATCHED_ROUTE`].
static REQUEST_SERIES: LazyLock<RwLock<SeriesByLabels>> = LazyLock::new(RwLock::default);

/// Series by (method, status), then by route.
type SeriesByLabels = HashMap<(&'static str, u16), HashMap<Box<str>, RequestSeries>>;

fn request_series(method: &'static str, route: &str, status: u16) -> RequestSeries {
    let known = read(&REQUEST_SERIES)
        .get(&(method, status))
        .and_then(|routes| routes.get(route))
        .cloned();
    known.unwrap_or_else(|| {
        let labels = [
            ("method", method.to_owned()),
            ("route", route.to_owned()),
            ("status", status.to_string()),
        ];
        let made = (
            counter!(HTTP_REQUESTS, &labels),
            histogram!(HTTP_REQUEST_SECONDS, &labels),
        );
        write(&REQUEST_SERIES)
            .entry((method, status))
            .or_default()
            .entry(route.into())
            .or_insert(made)
            .clone()
    })
}

/// The standard methods by name, anything else (extension methods) as `other`.
fn method_label(method: &Method) -> &'static str {
    static KNOWN: [Method; 7] = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::HEAD,
        Method::OPTIONS,
    ];
    KNOWN
        .iter()
        .find(|known| *known == method)
        .map_or("other", Method::as_str)
}

/// Counts one connection refused at accept.
pub(crate) fn connection_refused() {
    counter!(CONNECTIONS_REFUSED).increment(1);
}

/// Counts one connection closed by its write timeout.
pub(crate) fn write_timed_out() {
    counter!(WRITE_TIMEOUTS).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_methods_share_one_label() {
        assert_eq!(method_label(&Method::POST), "POST");
        let odd = Method::from_bytes(b"BREW").expect("an extension method");
        assert_eq!(method_label(&odd), "other");
    }

    #[test]
    fn every_bucket_list_is_non_empty_and_increasing() {
        for buckets in [
            LATENCY_BUCKETS_SECONDS,
            STAGE_BUCKETS_SECONDS,
            COUNT_BUCKETS,
            BYTE_BUCKETS,
        ] {
            assert!(!buckets.is_empty());
            assert!(buckets.windows(2).all(|pair| pair[0] < pair[1]));
        }
        assert_eq!(
            COUNT_BUCKETS.last().copied(),
            Some(broker_core::limits::WRITER_QUEUE_DEPTH as f64)
        );
    }
}
