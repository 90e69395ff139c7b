//! Budgets at the edge: the memory budget of request bodies (503 `overloaded` with
//! `Retry-After`, at once, the body charged before it is read) and of answers (receives that
//! may wait, wait for room; one that may not is refused), body size on raw and JSON produce
//! (413), and long-poll slots (429 per principal, 503 global), each on both sides of its
//! bound.

use std::time::{Duration, Instant};

use gateway::config::{EdgeRaw, RawSettings};
use gateway::limits::MIN_MAX_MEMORY_BYTES;
use gateway::limits::memory::REQUEST_BYTES_HELD_PER_BODY_BYTE;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::support::common::{Harness, expect_problem};
use crate::support::edge_common::{self, status_of, token, with_secret, without_principal_limit};

/// Opens a raw produce of `length` declared bytes and sends only the head, so its charge
/// stays taken until the stream is dropped.
async fn hold_produce(address: std::net::SocketAddr, length: usize) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    let head = format!(
        "POST /v1/topics/t/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_memory_budget_answers_503_with_retry_after_at_once() {
    let budget = MIN_MAX_MEMORY_BYTES;
    let harness = Harness::start_with(without_principal_limit(EdgeRaw {
        max_memory_bytes: Some(budget.to_string()),
        ..EdgeRaw::default()
    }))
    .await;
    harness.create_topic(json!({"name": "t"})).await;
    let held = 400_000;
    let holder = hold_produce(harness.server.address(), held).await;
    // What is left, in body bytes: each body byte is charged REQUEST_BYTES_HELD_PER_BODY_BYTE.
    let fits =
        (budget - held * REQUEST_BYTES_HELD_PER_BODY_BYTE) / REQUEST_BYTES_HELD_PER_BODY_BYTE;
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
        produce(fits).await.expect("request").status(),
        200,
        "exactly the budget"
    );
    let started = Instant::now();
    let refused = produce(fits + 1).await.expect("request");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "refused, not queued"
    );
    assert_eq!(refused.headers()["retry-after"], "1");
    expect_problem(refused, 503, "overloaded").await;
    // With the rest held too, even a small ack=none produce (its body is not charged, but
    // its records wait for the writer after the reply) is refused.
    let rest = hold_produce(harness.server.address(), fits).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let detached = harness
        .client
        .post(harness.url("/v1/topics/t/messages?ack=none"))
        .header("content-type", "text/plain")
        .body("x".repeat(1000))
        .send()
        .await
        .expect("request");
    expect_problem(detached, 503, "overloaded").await;
    drop(rest);
    drop(holder);
    let deadline = Instant::now() + Duration::from_secs(5);
    while produce(fits + 1).await.expect("request").status() != 200 {
        assert!(Instant::now() < deadline, "the budget never came back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receives_wait_for_room_in_a_spent_memory_budget_and_only_a_non_waiting_one_is_refused() {
    let harness = Harness::start_with(without_principal_limit(EdgeRaw {
        max_memory_bytes: Some(MIN_MAX_MEMORY_BYTES.to_string()),
        ..EdgeRaw::default()
    }))
    .await;
    harness.create_topic(json!({"name": "t"})).await;
    const SUBSCRIPTIONS: usize = 20;
    for i in 0..SUBSCRIPTIONS {
        let sub = json!({"name": format!("s{i}"), "start": "earliest"});
        harness.create_subscription("t", sub).await;
    }
    let value = "v".repeat(64 * 1024);
    let messages: Vec<_> = (0..10).map(|_| json!({"value": value})).collect();
    harness.produce("t", messages).await;

    // A held body takes the whole budget: a receive that may not wait is refused at once, one
    // that waits holds nothing, and gets its messages once the room is back.
    let holder = hold_produce(harness.server.address(), MIN_MAX_MEMORY_BYTES).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let receive = |sub: String, wait_ms: u64| {
        harness
            .client
            .post(harness.url(&format!("/v1/topics/t/subscriptions/{sub}/receive")))
            .json(&json!({"max_messages": 10, "wait_ms": wait_ms}))
            .send()
    };
    let refused = receive("s0".into(), 0).await.expect("request");
    assert_eq!(refused.headers()["retry-after"], "1");
    expect_problem(refused, 503, "overloaded").await;
    let waiting = tokio::spawn(receive("s0".into(), 10_000));
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(holder);
    let answer = waiting.await.expect("task").expect("request");
    assert_eq!(answer.status(), 200);
    let answer: serde_json::Value = answer.json().await.expect("json");
    assert!(!answer["messages"].as_array().expect("messages").is_empty());

    // Many receives at once share the budget: each answer gets room, none is refused.
    let all: Vec<_> = (1..SUBSCRIPTIONS)
        .map(|i| tokio::spawn(receive(format!("s{i}"), 10_000)))
        .collect();
    for (i, one) in (1..).zip(all) {
        let answer = one.await.expect("task").expect("request");
        assert_eq!(answer.status(), 200, "s{i}");
        let answer: serde_json::Value = answer.json().await.expect("json");
        assert!(
            !answer["messages"].as_array().expect("messages").is_empty(),
            "s{i}"
        );
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
        "POST /v1/topics/t/messages HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n0\r\n\r\n",
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
