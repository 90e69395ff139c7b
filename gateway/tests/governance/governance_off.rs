//! The message trace and the per-minute history turned off (`trace_index = false`,
//! `history = false`): messages still flow, and the routes that need them answer 501 with
//! their own code; with the defaults the same routes answer 200.

use gateway::config::RawSettings;
use serde_json::json;

use crate::support::common::{Harness, expect_problem, json_of, receipts};

/// The routes the trace serves, and those the history serves, on topic `t` holding the
/// message of id `m-1` and key `k`.
const TRACE_ROUTES: [&str; 2] = ["/v1/topics/t/messages/m-1", "/v1/topics/t/messages?key=k"];
const HISTORY_ROUTES: [&str; 2] = ["/v1/stats/history?topic=t", "/v1/stats/top?by=produced"];

/// Topic `t` with subscription `s`, one message produced, received and acked.
async fn produce_receive_ack(harness: &Harness) {
    harness
        .create_topic(json!({ "name": "t", "partitions": 1 }))
        .await;
    harness
        .create_subscription("t", json!({ "name": "s", "start": "earliest" }))
        .await;
    let produced = harness
        .produce("t", vec![json!({ "id": "m-1", "key": "k", "value": "v" })])
        .await;
    assert_eq!(produced.len(), 1);
    let received = harness
        .receive("t", "s", json!({ "max_messages": 10, "wait_ms": 2000 }))
        .await;
    assert_eq!(received.len(), 1);
    let acked = harness.ack("t", "s", &receipts(&received)).await;
    assert_eq!(acked["acked"], 1, "{acked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_trace_and_history_off_messages_flow_and_their_routes_answer_501() {
    let harness = Harness::start_with(RawSettings {
        trace_index: Some("false".into()),
        history: Some("false".into()),
        ..RawSettings::default()
    })
    .await;
    produce_receive_ack(&harness).await;
    for path in TRACE_ROUTES {
        let problem = expect_problem(harness.get(path).await, 501, "trace_disabled").await;
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("trace_index"), "{path}: {problem}");
    }
    for path in HISTORY_ROUTES {
        let problem = expect_problem(harness.get(path).await, 501, "history_disabled").await;
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("history"), "{path}: {problem}");
    }
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_defaults_the_trace_and_history_routes_answer_200() {
    let harness = Harness::start().await;
    produce_receive_ack(&harness).await;
    for path in TRACE_ROUTES.iter().chain(&HISTORY_ROUTES) {
        json_of(harness.get(path).await, 200).await;
    }
    harness.stop().await;
}
