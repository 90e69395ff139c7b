//! What schemathesis (RELIABILITY.md's G6, `reliability/schemathesis`) found, each fixed and
//! kept fixed here: integers past int64 accepted, integral floats (`5.0`) refused as integers,
//! a `null` optional body refused, a seek naming a second (`null`) target accepted.

use reqwest::Response;
use serde_json::{Value, json};

use crate::support::common::{Harness, expect_problem, json_of};

/// 2^63: one past the largest int64, which the document promises for these fields.
const PAST_INT64: u64 = 1 << 63;
/// 2^31: one past the largest int32, likewise.
const PAST_INT32: u64 = 1 << 31;

async fn send(harness: &Harness, method: reqwest::Method, path: &str, body: &str) -> Response {
    harness
        .client
        .request(method, harness.url(path))
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("request")
}

async fn post(harness: &Harness, path: &str, body: &str) -> Response {
    send(harness, reqwest::Method::POST, path, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integers_past_int64_or_int32_are_refused_and_int64_max_is_kept() {
    let harness = Harness::start().await;
    for field in [
        json!({"rate_limit": {"bytes_per_second": PAST_INT64}}),
        json!({"rate_limit": {"messages_per_second": PAST_INT32}}),
        json!({"retention_ms": PAST_INT64}),
        json!({"retention_bytes": PAST_INT64}),
    ] {
        let mut create = field.clone();
        create["name"] = json!("big");
        let response = harness.post_json("/v1/topics", &create).await;
        expect_problem(response, 400, "invalid_request").await;
    }
    json_of(harness.get("/v1/topics/big").await, 404).await;
    harness.create_topic(json!({"name": "orders"})).await;
    for patch in [
        json!({"rate_limit": {"bytes_per_second": PAST_INT64}}),
        json!({"rate_limit": {"messages_per_second": PAST_INT32}}),
        json!({"retention_ms": PAST_INT64}),
        json!({"retention_bytes": PAST_INT64}),
    ] {
        let response = send(
            &harness,
            reqwest::Method::PATCH,
            "/v1/topics/orders",
            &patch.to_string(),
        )
        .await;
        expect_problem(response, 400, "invalid_request").await;
    }
    harness
        .create_subscription("orders", json!({"name": "billing"}))
        .await;
    for redrive in [
        json!({"max_messages": PAST_INT64}),
        json!({"messages_per_second": PAST_INT32}),
    ] {
        let response = harness
            .post_json("/v1/topics/orders/subscriptions/billing/redrive", &redrive)
            .await;
        expect_problem(response, 400, "invalid_request").await;
    }
    let seek = harness
        .post_json(
            "/v1/topics/orders/subscriptions/billing/seek",
            &json!({"timestamp_ms": PAST_INT64}),
        )
        .await;
    expect_problem(seek, 400, "invalid_request").await;
    let max = i64::MAX as u64;
    let kept = send(
        &harness,
        reqwest::Method::PATCH,
        "/v1/topics/orders",
        &json!({"rate_limit": {"bytes_per_second": max}, "retention_bytes": max}).to_string(),
    )
    .await;
    let topic = json_of(kept, 200).await;
    assert_eq!(topic["rate_limit"]["bytes_per_second"], json!(max));
    assert_eq!(topic["retention_bytes"], json!(max));
    harness.stop().await;
}

/// JSON Schema counts `5.0` as an integer, so every kind of body takes it as one: the topic
/// create and patch, the subscription create, the produce batch, receive and seek.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integral_floats_are_integers_in_every_kind_of_body() {
    let harness = Harness::start().await;
    let topic = json_of(
        post(
            &harness,
            "/v1/topics",
            r#"{"name": "orders", "partitions": 2.0, "dedup_window_ms": 39916799.0}"#,
        )
        .await,
        201,
    )
    .await;
    assert_eq!(topic["partitions"], json!(2));
    assert_eq!(topic["dedup_window_ms"], json!(39916799));
    let patched = json_of(
        send(
            &harness,
            reqwest::Method::PATCH,
            "/v1/topics/orders",
            r#"{"max_message_bytes": 2048.0}"#,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(patched["max_message_bytes"], json!(2048));
    let subscription = json_of(
        post(
            &harness,
            "/v1/topics/orders/subscriptions",
            r#"{"name": "billing", "ack_timeout_ms": 30000.0}"#,
        )
        .await,
        201,
    )
    .await;
    assert_eq!(subscription["ack_timeout_ms"], json!(30000));
    let produced = json_of(
        post(
            &harness,
            "/v1/topics/orders/messages",
            r#"{"messages": [{"value": "a 1.0 text", "key": "k", "deliver_at_ms": 1.0}]}"#,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(produced["messages"].as_array().map(Vec::len), Some(1));
    let received = json_of(
        post(
            &harness,
            "/v1/topics/orders/subscriptions/billing/receive",
            r#"{"max_messages": 10.0, "wait_ms": 2000.0}"#,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(received["messages"][0]["value"], json!("a 1.0 text"));
    json_of(
        post(
            &harness,
            "/v1/topics/orders/subscriptions/billing/seek",
            r#"{"timestamp_ms": 0.0}"#,
        )
        .await,
        200,
    )
    .await;
    // A fraction is still no integer, and the refusal names the field as sent.
    let problem = expect_problem(
        post(
            &harness,
            "/v1/topics/orders/subscriptions/billing/receive",
            r#"{"wait_ms": 1.5}"#,
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|detail| detail.contains("wait_ms")),
        "{problem}"
    );
    harness.stop().await;
}

/// Receive and redrive take an optional body; `null` is JSON's "none".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_null_body_is_no_body_on_receive_and_redrive() {
    let harness = Harness::start().await;
    harness.create_topic(json!({"name": "orders"})).await;
    harness
        .create_subscription("orders", json!({"name": "billing"}))
        .await;
    harness.produce("orders", vec![json!({"value": "x"})]).await;
    let received = json_of(
        post(
            &harness,
            "/v1/topics/orders/subscriptions/billing/receive",
            "null",
        )
        .await,
        200,
    )
    .await;
    assert_eq!(received["messages"].as_array().map(Vec::len), Some(1));
    let redriven = json_of(
        post(
            &harness,
            "/v1/topics/orders/subscriptions/billing/redrive",
            " null ",
        )
        .await,
        200,
    )
    .await;
    assert_eq!(redriven["redriven"], json!(0));
    harness.stop().await;
}

/// The document says a seek body has exactly one property (`minProperties`/`maxProperties`
/// 1), so a second one is refused even when it is `null`, and `null` is no target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seek_names_exactly_one_target_and_not_null() {
    let harness = Harness::start().await;
    harness.create_topic(json!({"name": "orders"})).await;
    harness
        .create_subscription("orders", json!({"name": "billing"}))
        .await;
    let path = "/v1/topics/orders/subscriptions/billing/seek";
    for body in [
        json!({"to": "earliest", "timestamp_ms": null}),
        json!({"offsets": null, "to": "latest"}),
        json!({"to": null}),
        json!({}),
        json!({"to": "earliest", "timestamp_ms": 5}),
    ] {
        let response = harness.post_json(path, &body).await;
        expect_problem(response, 400, "invalid_request").await;
    }
    json_of(
        harness.post_json(path, &json!({"to": "earliest"})).await,
        200,
    )
    .await;
    let document: Value = serde_json::from_str(gateway::openapi::pretty_json()).expect("json");
    let seek = &document["components"]["schemas"]["SeekRequest"];
    assert_eq!(seek["minProperties"], json!(1), "{seek}");
    assert_eq!(seek["maxProperties"], json!(1), "{seek}");
    harness.stop().await;
}

/// serde reads a struct from an array of its fields in order; the document says object, so
/// an array body or an array in place of an object field is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrays_in_place_of_objects_are_refused() {
    let harness = Harness::start().await;
    harness.create_topic(json!({"name": "orders"})).await;
    harness
        .create_subscription("orders", json!({"name": "billing"}))
        .await;
    for (method, path, body) in [
        (
            reqwest::Method::POST,
            "/v1/topics",
            json!({"name": "other", "rate_limit": [null, null]}),
        ),
        (
            reqwest::Method::PATCH,
            "/v1/topics/orders",
            json!({"rate_limit": [1, 1]}),
        ),
        (
            reqwest::Method::POST,
            "/v1/topics/orders/subscriptions",
            json!({"name": "audit", "retry": [1000]}),
        ),
        (
            reqwest::Method::POST,
            "/v1/topics/orders/subscriptions",
            json!({"name": "audit", "filter": [["a"]]}),
        ),
        (
            reqwest::Method::POST,
            "/v1/topics/orders/subscriptions/billing/redrive",
            json!([null, null]),
        ),
        (
            reqwest::Method::POST,
            "/v1/topics/orders/subscriptions/billing/receive",
            json!([1, 0]),
        ),
        (reqwest::Method::POST, "/v1/topics", json!(["other"])),
    ] {
        let response = send(&harness, method, path, &body.to_string()).await;
        expect_problem(response, 400, "invalid_request").await;
    }
    json_of(harness.get("/v1/topics/other").await, 404).await;
    json_of(
        harness.get("/v1/topics/orders/subscriptions/audit").await,
        404,
    )
    .await;
    // Objects and null still do.
    let topic = json_of(
        send(
            &harness,
            reqwest::Method::PATCH,
            "/v1/topics/orders",
            r#"{"rate_limit": {"messages_per_second": 5}}"#,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(topic["rate_limit"]["messages_per_second"], json!(5));
    harness
        .create_subscription(
            "orders",
            json!({"name": "audit", "retry": null, "filter": {"tags": ["a"]}}),
        )
        .await;
    harness.stop().await;
}
