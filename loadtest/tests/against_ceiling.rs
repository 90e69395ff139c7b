//! The generator end to end against the ceiling app served in-process on 127.0.0.1:0: every
//! HTTP scenario runs, counts its requests, and sees no errors.

use std::time::Duration;

use loadtest::scenario::{ConsumeSpec, E2eSpec, Load, ProduceSpec, consume, e2e, produce};
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
    };
    let m = produce(&load, &spec).await.expect("runs");
    assert!((250..=350).contains(&m.requests), "{m:?}");
    assert!(m.errors.is_empty(), "{:?}", m.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_acks_every_received_message() {
    let load = ceiling().await;
    let spec = ConsumeSpec {
        backlog: 0,
        partitions: 1,
        connections: 2,
        max_messages: 10,
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
