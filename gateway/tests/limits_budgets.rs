//! Budgets at the edge: in-flight produce bytes (503 `overloaded` with `Retry-After`, at
//! once), body size on raw and JSON produce (413), and long-poll slots (429 per principal,
//! 503 global), each on both sides of its bound.

mod common;
mod edge_common;

use std::time::{Duration, Instant};

use common::{Harness, expect_problem};
use edge_common::{status_of, token, with_secret, without_principal_limit};
use gateway::config::{EdgeRaw, RawSettings};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Opens a raw produce of `length` declared bytes and sends only the head, so its bytes stay
/// reserved until the stream is dropped.
async fn hold_produce(address: std::net::SocketAddr, length: usize) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    let head = format!(
        "POST /v1/topics/t/messages HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_in_flight_byte_budget_answers_503_with_retry_after_at_once() {
    let harness = Harness::start_with(without_principal_limit(EdgeRaw {
        max_inflight_produce_bytes: Some("1024".into()),
        ..EdgeRaw::default()
    }))
    .await;
    harness.create_topic(json!({"name": "t"})).await;
    let holder = hold_produce(harness.server.address(), 1000).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let produce = |bytes: usize| {
        harness
            .client
            .post(harness.url("/v1/topics/t/messages"))
            .header("content-type", "text/plain")
            .body("x".repeat(bytes))
            .send()
    };
    assert_eq!(
        produce(24).await.expect("request").status(),
        200,
        "exactly the budget"
    );
    let started = Instant::now();
    let refused = produce(25).await.expect("request");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "refused, not queued"
    );
    assert_eq!(refused.headers()["retry-after"], "1");
    expect_problem(refused, 503, "overloaded").await;
    drop(holder);
    let deadline = Instant::now() + Duration::from_secs(5);
    while produce(25).await.expect("request").status() != 200 {
        assert!(Instant::now() < deadline, "the budget never came back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_and_json_produce_bodies_are_limited_on_both_sides() {
    let harness = Harness::start_with(RawSettings {
        max_body_bytes: Some("1024".into()),
        ..without_principal_limit(EdgeRaw::default())
    })
    .await;
    harness.create_topic(json!({"name": "t"})).await;
    let raw = |bytes: usize| {
        harness
            .client
            .post(harness.url("/v1/topics/t/messages"))
            .header("content-type", "application/octet-stream")
            .body(vec![7u8; bytes])
            .send()
    };
    assert_eq!(raw(1023).await.expect("r").status(), 200, "limit - 1");
    assert_eq!(raw(1024).await.expect("r").status(), 200, "the limit");
    expect_problem(raw(1025).await.expect("r"), 413, "message_too_large").await;
    let address = harness.server.address();
    let chunked = format!(
        "POST /v1/topics/t/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n0\r\n\r\n",
        1100,
        "y".repeat(1100)
    );
    let reply =
        edge_common::raw_exchange(address, chunked.as_bytes(), Duration::from_secs(5)).await;
    assert_eq!(status_of(&reply), 413, "chunked over the limit: {reply}");
    let create = harness
        .client
        .post(harness.url("/v1/topics"))
        .header("content-type", "application/json")
        .body(format!("{{\"name\":\"{}\"}}", "n".repeat(1100)))
        .send()
        .await
        .expect("r");
    expect_problem(create, 413, "message_too_large").await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_slots_are_capped_per_principal_and_globally() {
    let harness = Harness::start_with(with_secret(EdgeRaw {
        max_long_polls: Some("3".into()),
        max_long_polls_per_principal: Some("2".into()),
        principal_requests_per_second: Some("0".into()),
        ..EdgeRaw::default()
    }))
    .await;
    let root = token("root", "admin:*");
    let client = &harness.client;
    let created = client
        .post(harness.url("/v1/topics"))
        .bearer_auth(&root)
        .json(&json!({"name": "t"}))
        .send()
        .await
        .expect("r");
    assert_eq!(created.status(), 201);
    let sub = client
        .post(harness.url("/v1/topics/t/subscriptions"))
        .bearer_auth(&root)
        .json(&json!({"name": "s"}))
        .send()
        .await
        .expect("r");
    assert_eq!(sub.status(), 201);
    let url = harness.url("/v1/topics/t/subscriptions/s/receive");
    let poll = |who: &str, wait_ms: u64| {
        client
            .post(&url)
            .bearer_auth(token(who, "consume:t"))
            .json(&json!({ "wait_ms": wait_ms }))
            .send()
    };
    let a1 = tokio::spawn(poll("a", 3000));
    let a2 = tokio::spawn(poll("a", 3000));
    tokio::time::sleep(Duration::from_millis(300)).await;
    expect_problem(poll("a", 0).await.expect("r"), 429, "rate_limited").await;
    let b1 = tokio::spawn(poll("b", 3000));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let global = poll("c", 0).await.expect("r");
    assert_eq!(global.headers()["retry-after"], "1");
    expect_problem(global, 503, "overloaded").await;
    for task in [a1, a2, b1] {
        assert_eq!(task.await.expect("task").expect("r").status(), 200);
    }
    assert_eq!(
        poll("c", 0).await.expect("r").status(),
        200,
        "slots come back"
    );
    harness.stop().await;
}
