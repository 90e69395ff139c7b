//! Rate limits over real HTTP: per topic (messages and bytes, batched or not, every spelling
//! of the topic's path in one bucket) and per principal.

mod common;
mod edge_common;

use std::time::{Duration, Instant};

use common::{Harness, expect_problem, json_of};
use gateway::config::{EdgeRaw, RawSettings};
use serde_json::json;

fn settings(burst_ms: &str, principal_rps: &str) -> RawSettings {
    RawSettings {
        edge: EdgeRaw {
            rate_limit_burst_ms: Some(burst_ms.into()),
            principal_requests_per_second: Some(principal_rps.into()),
            ..EdgeRaw::default()
        },
        ..RawSettings::default()
    }
}

/// What one producer saw, in messages and value bytes.
#[derive(Debug, Default, Clone, Copy)]
struct Driven {
    /// Admitted in all.
    admitted: (u64, u64),
    /// Admitted before the last refusal was sent, and when (since the start) it was sent.
    before_last_refusal: Option<((u64, u64), Duration)>,
    /// From the start until the last answer.
    elapsed: Duration,
}

/// Produces batches of `batch` messages of `value_bytes` at `offered_per_second` messages/s for
/// `duration`, one request at a time. Every refusal must be a 429 `rate_limited` with
/// `Retry-After` and `RateLimit-Limit`.
async fn drive(
    harness: &Harness,
    topic: &str,
    batch: usize,
    value_bytes: usize,
    offered_per_second: u64,
    duration: Duration,
) -> Driven {
    let url = harness.url(&format!("/v1/topics/{topic}/messages"));
    let body = json!({ "messages": vec![json!({ "value": "v".repeat(value_bytes) }); batch] });
    let gap = Duration::from_secs_f64(batch as f64 / offered_per_second as f64);
    let mut ticker = tokio::time::interval(gap);
    let started = Instant::now();
    let (mut messages, mut bytes) = (0, 0);
    let mut before_last_refusal = None;
    while started.elapsed() < duration {
        ticker.tick().await;
        let sent_at = started.elapsed();
        let response = harness
            .client
            .post(&url)
            .json(&body)
            .send()
            .await
            .expect("request");
        match response.status().as_u16() {
            200 => {
                messages += batch as u64;
                bytes += (batch * value_bytes) as u64;
            }
            429 => {
                before_last_refusal = Some(((messages, bytes), sent_at));
                let headers = response.headers().clone();
                assert!(headers.contains_key("retry-after"), "{headers:?}");
                assert!(headers.contains_key("ratelimit-limit"), "{headers:?}");
                expect_problem(response, 429, "rate_limited").await;
            }
            other => panic!(
                "{topic}: unexpected {other}: {}",
                response.text().await.unwrap_or_default()
            ),
        }
    }
    Driven {
        admitted: (messages, bytes),
        before_last_refusal,
        elapsed: started.elapsed(),
    }
}

/// Checks what the server controls, in one unit (`pick`: messages or bytes) with `limit` per
/// second and `request` units per request: it never admits more than the limit over the time
/// the client spent (within 10%, plus the 50 ms burst and one request), and it refuses only an
/// empty bucket: whatever it had admitted when it refused the last time is the limit over the
/// time until then (within 10%, less one request). A client that offers less than the limit
/// at the end of the run (a busy machine) moves neither bound.
fn check(name: &str, driven: Driven, pick: fn((u64, u64)) -> u64, limit: u64, request: u64) {
    let rate = limit as f64;
    let ceiling = rate * driven.elapsed.as_secs_f64() * 1.10 + rate * 0.05 + request as f64;
    let admitted = pick(driven.admitted);
    assert!(
        admitted as f64 <= ceiling,
        "{name}: {admitted} admitted over the limit ({ceiling:.0}): {driven:?}"
    );
    let Some((then, at)) = driven.before_last_refusal else {
        panic!("{name}: five times the limit offered and nothing refused: {driven:?}");
    };
    let floor = rate * at.as_secs_f64() * 0.90 - request as f64;
    assert!(
        pick(then) as f64 >= floor,
        "{name}: refused with only {} admitted by {at:?} (at least {floor:.0}): {driven:?}",
        pick(then)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_times_a_topics_limit_is_admitted_within_ten_percent() {
    let harness = Harness::start_with(settings("50", "0")).await;
    harness
        .create_topic(json!({"name": "single", "rate_limit": {"messages_per_second": 40}}))
        .await;
    harness
        .create_topic(json!({"name": "batched", "rate_limit": {"messages_per_second": 200}}))
        .await;
    harness
        .create_topic(json!({"name": "bytes", "rate_limit": {"bytes_per_second": 20000}}))
        .await;
    let duration = Duration::from_secs(2);
    let (single, batched, bytes) = tokio::join!(
        drive(&harness, "single", 1, 10, 200, duration),
        drive(&harness, "batched", 10, 10, 1000, duration),
        drive(&harness, "bytes", 4, 250, 400, duration),
    );
    check("single", single, |(m, _)| m, 40, 1);
    check("batched", batched, |(m, _)| m, 200, 10);
    check("bytes", bytes, |(_, b)| b, 20000, 1000);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spelling_of_a_topic_path_spends_the_same_bucket() {
    let harness = Harness::start_with(settings("1000", "0")).await;
    harness
        .create_topic(json!({"name": "a-b", "rate_limit": {"messages_per_second": 3}}))
        .await;
    let produce = |path: &'static str| harness.client.post(harness.url(path)).body("x").send();
    for path in [
        "/v1/topics/a-b/messages",
        "/v1/topics/a%2Db/messages",
        "/v1/topics/%61-b/messages",
    ] {
        assert_eq!(
            produce(path).await.expect("request").status(),
            200,
            "{path}"
        );
    }
    expect_problem(
        produce("/v1/topics/a%2db/messages").await.expect("request"),
        429,
        "rate_limited",
    )
    .await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_set_by_patch_applies_and_shows_in_the_topic() {
    let harness = Harness::start_with(settings("1000", "0")).await;
    harness.create_topic(json!({"name": "t"})).await;
    let patched = harness
        .client
        .patch(harness.url("/v1/topics/t"))
        .json(&json!({"rate_limit": {"messages_per_second": 2}}))
        .send()
        .await
        .expect("request");
    let topic = json_of(patched, 200).await;
    assert_eq!(topic["rate_limit"]["messages_per_second"], 2);
    let url = harness.url("/v1/topics/t/messages");
    let batch = |n: usize| json!({ "messages": vec![json!({"value": "x"}); n] });
    assert_eq!(
        harness
            .client
            .post(&url)
            .json(&batch(2))
            .send()
            .await
            .expect("r")
            .status(),
        200,
        "the limit"
    );
    let refused = harness
        .client
        .post(&url)
        .json(&batch(1))
        .send()
        .await
        .expect("r");
    expect_problem(refused, 429, "rate_limited").await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_gets_its_requests_per_second_and_not_one_more() {
    let harness = Harness::start_with(settings("1000", "5")).await;
    for n in 0..5 {
        assert_eq!(harness.get("/v1/topics").await.status(), 200, "request {n}");
    }
    let refused = harness.get("/v1/topics").await;
    let retry_after: u64 = refused.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("secs");
    assert!(retry_after >= 1);
    expect_problem(refused, 429, "rate_limited").await;
    assert_eq!(
        harness.get("/healthz").await.status(),
        200,
        "probes are never limited"
    );
    harness.stop().await;
}
