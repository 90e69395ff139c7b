//! The generator end to end against the ceiling app served in-process on 127.0.0.1:0: every
//! HTTP scenario runs, counts its requests, and sees no errors; the overload scenario's two
//! measurements make their rows, targets and section of the report.

use std::time::Duration;

use loadtest::report::{self, Machine, Record, RunInfo};
use loadtest::scenario::{
    ConsumeSpec, E2eSpec, Load, OverloadSpec, ProduceSpec, consume, e2e, overload, produce,
};
use loadtest::target::Target;

async fn ceiling() -> Load {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, loadtest::ceiling::app()).await });
    Load {
        target: Target::parse(&format!("http://{address}")).expect("loopback target"),
        target_name: "ceiling-http".to_owned(),
        round: 1,
        timeout: Duration::from_secs(5),
        duration: Duration::from_millis(300),
        warmup: Duration::from_millis(50),
        max_requests: 100_000,
        server_pid: Some(std::process::id()),
        node_pids: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_produce_counts_requests_and_messages() {
    let load = ceiling().await;
    let spec = ProduceSpec {
        scenario: "produce-batch".to_owned(),
        batch: 100,
        partitions: 1,
        connections: 4,
        rate_per_s: None,
        topic: None,
        partition: None,
    };
    let m = produce(&load, &spec).await.expect("runs");
    assert!(m.requests > 10, "{m:?}");
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    assert_eq!(m.messages, m.requests * 100);
    assert_eq!(m.latency.count, m.requests);
    assert!(m.server.is_some_and(|s| s.rss_peak_kib > 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_produce_keeps_the_asked_rate() {
    let load = ceiling().await;
    let spec = ProduceSpec {
        scenario: "produce-1".to_owned(),
        batch: 1,
        partitions: 1,
        connections: 4,
        rate_per_s: Some(1000.0),
        topic: None,
        partition: None,
    };
    let m = produce(&load, &spec).await.expect("runs");
    assert!((250..=350).contains(&m.requests), "{m:?}");
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    let gap = m
        .figures
        .get("max_gap_ms")
        .copied()
        .expect("an open loop reports its gap");
    assert!(
        gap > 0.0 && gap < 100.0,
        "{gap} ms without a reply at 1,000 req/s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_acks_every_received_message() {
    let load = ceiling().await;
    let spec = ConsumeSpec {
        backlog: 0,
        partitions: 1,
        connections: 2,
        max_messages: 10,
        settle: Duration::ZERO,
        fill_limit: Duration::from_secs(5),
    };
    let m = consume(&load, &spec).await.expect("runs");
    assert!(m.requests > 0, "{m:?}");
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    assert_eq!(m.messages, m.requests * 10);
    assert!(m.latencies.contains_key("ack"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_runs_producers_and_consumers_to_the_end() {
    let load = ceiling().await;
    let spec = E2eSpec {
        rate_per_s: 200.0,
        producers: 2,
        consumers: 1,
        max_messages: 10,
        partitions: 1,
    };
    let m = e2e(&load, &spec).await.expect("runs");
    assert!((40..=80).contains(&m.requests), "{m:?}");
    assert!(!m.errors.contains_key("not_received"), "{:?}", m.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_offers_a_multiple_of_the_unloaded_rate_and_reports_every_outcome() {
    let load = Load {
        target_name: "wharf".to_owned(),
        ..ceiling().await
    };
    let spec = OverloadSpec {
        connections: 50,
        unloaded_connections: 2,
        factor: 3.0,
        batch: 10,
        value_bytes: 1024,
        partitions: 4,
    };
    let run = overload(&load, &spec).await.expect("runs");
    let (unloaded, overloaded) = (&run.unloaded, &run.overloaded);
    assert!(unloaded.req_per_s > 0.0, "{unloaded:?}");
    assert!(overloaded.errors.is_empty(), "{:?}", overloaded.errors);
    let figure = |name: &str| overloaded.figures.get(name).copied();
    let offered = figure("offered_req_per_s").expect("offered");
    assert!(
        (offered - 3.0 * unloaded.req_per_s).abs() < 1e-6,
        "{offered}"
    );
    assert_eq!(figure("accepted"), Some(overloaded.requests as f64));
    assert_eq!(figure("resets"), Some(0.0));
    assert_eq!(figure("share_503"), Some(0.0));
    assert!(figure("peak_rss_mib").is_some_and(|mib| mib > 0.0));
    assert_eq!(overloaded.latency.count, overloaded.requests);
    let records = [run.unloaded.clone(), run.overloaded.clone()]
        .map(|m| Record::Measurement(Box::new(m)))
        .to_vec();
    let report = report::build(RunInfo::default(), Machine::default(), records);
    let acked = report
        .rows
        .iter()
        .find(|row| row.scenario == "overload" && row.metric == "acked req/s vs unloaded")
        .expect("acked row");
    assert!(acked.ratio.is_some_and(|ratio| ratio > 0.0), "{acked:?}");
    let resets = report
        .targets
        .iter()
        .find(|t| t.target.starts_with("overload: no connection resets"))
        .expect("resets target");
    assert_eq!(resets.met, Some(true));
    let markdown = report::markdown(&report);
    assert!(markdown.contains("## Overload outcomes"), "{markdown}");
    assert!(
        markdown.contains("| overload | 503 share of answered |"),
        "{markdown}"
    );
}
