//! Per-minute history end to end: an in-process server whose history clock the test moves
//! (so minutes pass without waiting) and whose sampler samples every few milliseconds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use gateway::config::EdgeRaw;
use gateway::config::RawSettings;
use gateway::governance::history::{HistoryClock, HistoryHooks};
use serde_json::{Value, json};

use crate::support::common::{Harness, expect_problem, json_of, receipts};
use crate::support::edge_common::{token, with_secret};

/// A minute well inside the epoch, so minute starts are easy to read.
const START_MINUTE: u64 = 29_000_000;
const MINUTE_MS: u64 = 60_000;
/// How often the test's sampler samples.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// How long a figure may take to show (a liveness bound, not a performance one).
const SHOW_WITHIN: Duration = Duration::from_secs(30);

fn settings(clock: &Arc<AtomicU64>) -> RawSettings {
    let read = Arc::clone(clock);
    RawSettings {
        history_retention_minutes: Some("60".into()),
        history_hooks: Some(HistoryHooks {
            clock: HistoryClock::new(move || read.load(Ordering::SeqCst)),
            sample_every: SAMPLE_EVERY,
        }),
        ..RawSettings::default()
    }
}

async fn get_json(harness: &Harness, path: &str) -> Value {
    json_of(harness.get(path).await, 200).await
}

/// Polls `path` until `done` holds for its answer.
async fn until(harness: &Harness, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + SHOW_WITHIN;
    loop {
        let answer = get_json(harness, path).await;
        if done(&answer) {
            return answer;
        }
        assert!(
            Instant::now() < deadline,
            "{path} never got there: {answer}"
        );
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
}

fn last_point(answer: &Value) -> &Value {
    answer["points"]
        .as_array()
        .and_then(|points| points.last())
        .unwrap_or(&Value::Null)
}

async fn traffic(harness: &Harness) {
    for topic in ["orders", "events"] {
        harness
            .create_topic(json!({ "name": topic, "partitions": 2 }))
            .await;
        harness
            .create_subscription(topic, json!({ "name": "workers" }))
            .await;
    }
    let values = ["aaaa", "bbbb", "cccc"].map(|v| json!({ "value": v }));
    harness.produce("orders", values.to_vec()).await;
    harness
        .produce(
            "events",
            vec![json!({ "value": "xy" }), json!({ "value": "z" })],
        )
        .await;
    let messages = harness
        .receive(
            "orders",
            "workers",
            json!({ "max_messages": 3, "wait_ms": 5000 }),
        )
        .await;
    assert_eq!(messages.len(), 3, "{messages:?}");
    let receipts = receipts(&messages);
    harness.ack("orders", "workers", &receipts[..2]).await;
    let nack = json!({ "receipts": &receipts[2..], "delay_ms": 60_000 });
    let path = "/v1/topics/orders/subscriptions/workers/nack";
    json_of(harness.post_json(path, &nack).await, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_sums_the_current_minute_and_top_ranks_it() {
    let clock = Arc::new(AtomicU64::new(START_MINUTE * MINUTE_MS + 1_000));
    let harness = Harness::start_with(settings(&clock)).await;
    traffic(&harness).await;

    let orders = until(&harness, "/v1/stats/history?topic=orders", |a| {
        last_point(a)["consumed_messages"] == 3
    })
    .await;
    assert_eq!(orders["topic"], "orders");
    assert_eq!(orders["subscription"], Value::Null);
    let points = orders["points"].as_array().expect("points");
    assert_eq!(points.len(), 1, "one minute so far: {orders}");
    let point = &points[0];
    assert_eq!(point["time_ms"], START_MINUTE * MINUTE_MS);
    assert_eq!(point["produced_messages"], 3);
    assert_eq!(point["produced_bytes"], 12);
    assert_eq!(point["consumed_bytes"], 12);
    assert_eq!(point["produce_errors"], 0);
    assert!(point["latency_p99_ms"].as_u64().is_some(), "{point}");

    let path = "/v1/stats/history?topic=orders&subscription=workers&minutes=5";
    let workers = until(&harness, path, |a| last_point(a)["nacks"] == 1).await;
    assert_eq!(workers["subscription"], "workers");
    let point = last_point(&workers);
    assert_eq!(point["delivered_messages"], 3, "{point}");
    assert_eq!(point["acks"], 2);
    assert_eq!(point["dead_letters"], 0);
    let workers = until(&harness, path, |a| last_point(a)["backlog"] == 1).await;
    assert!(last_point(&workers)["backlog_max"].as_u64() >= Some(1));
    let events = until(&harness, "/v1/stats/history?topic=events", |a| {
        last_point(a)["produced_messages"] == 2
    })
    .await;
    assert_eq!(last_point(&events)["produced_bytes"], 3);
    assert_eq!(last_point(&events)["consumed_messages"], 0);

    // A produce refused (a message without a value) counts as a produce error.
    let bad = json!({ "messages": [{ "key": "k" }] });
    let refused = harness.post_json("/v1/topics/events/messages", &bad).await;
    assert_eq!(refused.status(), 400);
    until(&harness, "/v1/stats/history?topic=events", |a| {
        last_point(a)["produce_errors"] == 1
    })
    .await;

    let produced = get_json(&harness, "/v1/stats/top?by=produced").await;
    assert_eq!(produced["by"], "produced");
    assert_eq!(produced["minutes"], 5);
    assert_eq!(
        produced["items"],
        json!([
            { "topic": "orders", "subscription": null, "value": 3 },
            { "topic": "events", "subscription": null, "value": 2 },
        ])
    );
    let backlog = until(&harness, "/v1/stats/top?by=backlog", |a| {
        a["items"][0]["value"] == 2
    })
    .await;
    assert_eq!(
        backlog["items"],
        json!([
            { "topic": "events", "subscription": "workers", "value": 2 },
            { "topic": "orders", "subscription": "workers", "value": 1 },
        ])
    );
    let consumed = get_json(&harness, "/v1/stats/top?by=consumed&limit=1&minutes=1").await;
    assert_eq!(
        consumed["items"],
        json!([{ "topic": "orders", "subscription": "workers", "value": 3 }])
    );

    // The minute ends: its record is final and a new minute starts empty.
    clock.fetch_add(MINUTE_MS, Ordering::SeqCst);
    let orders = until(&harness, "/v1/stats/history?topic=orders", |a| {
        a["points"].as_array().is_some_and(|p| p.len() == 2)
    })
    .await;
    assert_eq!(orders["points"][0]["produced_messages"], 3);
    assert_eq!(orders["points"][1]["produced_messages"], 0);
    assert_eq!(
        orders["points"][1]["time_ms"],
        (START_MINUTE + 1) * MINUTE_MS
    );
    let one = get_json(&harness, "/v1/stats/history?topic=orders&minutes=1").await;
    assert_eq!(one["points"].as_array().map(Vec::len), Some(1), "{one}");
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_parameters_are_400_and_unknown_series_404() {
    let clock = Arc::new(AtomicU64::new(START_MINUTE * MINUTE_MS));
    let harness = Harness::start_with(settings(&clock)).await;
    harness
        .create_topic(json!({ "name": "orders", "partitions": 1 }))
        .await;
    for path in [
        "/v1/stats/history",
        "/v1/stats/history?topic=orders&minutes=0",
        "/v1/stats/history?topic=orders&minutes=1441",
        "/v1/stats/history?topic=orders&minutes=ten",
        "/v1/stats/history?topic=orders&color=red",
        "/v1/stats/top",
        "/v1/stats/top?by=latency",
        "/v1/stats/top?by=produced&limit=0",
        "/v1/stats/top?by=produced&limit=101",
        "/v1/stats/top?by=produced&minutes=1441",
    ] {
        let response = harness.get(path).await;
        assert_eq!(response.status(), 400, "{path}");
        expect_problem(response, 400, "invalid_request").await;
    }
    let response = harness.get("/v1/stats/history?topic=nope").await;
    expect_problem(response, 404, "topic_not_found").await;
    let response = harness
        .get("/v1/stats/history?topic=orders&subscription=nope")
        .await;
    expect_problem(response, 404, "subscription_not_found").await;
    let empty = get_json(&harness, "/v1/stats/top?by=backlog&limit=100&minutes=1440").await;
    assert_eq!(empty["items"], json!([]));
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_the_finished_minutes() {
    let data = tempfile::tempdir().expect("temp dir");
    let clock = Arc::new(AtomicU64::new(START_MINUTE * MINUTE_MS + 5_000));
    let harness = Harness::start_in(data.path(), settings(&clock)).await;
    traffic(&harness).await;
    until(&harness, "/v1/stats/history?topic=orders", |a| {
        last_point(a)["consumed_messages"] == 3
    })
    .await;
    let path = "/v1/stats/history?topic=orders&subscription=workers";
    until(&harness, path, |a| last_point(a)["nacks"] == 1).await;
    clock.fetch_add(MINUTE_MS, Ordering::SeqCst);
    harness
        .produce("orders", vec![json!({ "value": "later" })])
        .await;
    until(&harness, "/v1/stats/history?topic=orders", |a| {
        a["points"][1]["produced_messages"] == 1
    })
    .await;
    harness.stop().await;

    clock.fetch_add(3 * MINUTE_MS, Ordering::SeqCst);
    let harness = Harness::start_in(data.path(), settings(&clock)).await;
    let orders = get_json(&harness, "/v1/stats/history?topic=orders&minutes=10").await;
    let points = orders["points"].as_array().expect("points");
    assert!(points.len() >= 2, "{orders}");
    assert_eq!(points[0]["time_ms"], START_MINUTE * MINUTE_MS);
    assert_eq!(points[0]["produced_messages"], 3);
    assert_eq!(points[0]["consumed_messages"], 3);
    assert_eq!(points[1]["time_ms"], (START_MINUTE + 1) * MINUTE_MS);
    assert_eq!(
        points[1]["produced_messages"], 1,
        "closed at stop: {orders}"
    );
    let path = "/v1/stats/history?topic=orders&subscription=workers&minutes=10";
    let workers = get_json(&harness, path).await;
    assert_eq!(workers["points"][0]["acks"], 2, "{workers}");
    assert_eq!(workers["points"][0]["nacks"], 1, "{workers}");
    assert!(data.path().join("history/orders/topic.hist").is_file());
    assert!(data.path().join("history/orders/s.workers.hist").is_file());
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_ranks_only_the_topics_the_token_may_read() {
    let clock = Arc::new(AtomicU64::new(START_MINUTE * MINUTE_MS));
    let raw = RawSettings {
        history_hooks: settings(&clock).history_hooks,
        ..with_secret(EdgeRaw::default())
    };
    let harness = Harness::start_with(raw).await;
    let admin = token("ops", "admin:*");
    for topic in ["orders.a", "billing.b"] {
        let create = harness
            .client
            .post(harness.url("/v1/topics"))
            .bearer_auth(&admin)
            .json(&json!({ "name": topic }))
            .send()
            .await
            .expect("request");
        json_of(create, 201).await;
        let produce = harness
            .client
            .post(harness.url(&format!("/v1/topics/{topic}/messages")))
            .bearer_auth(&admin)
            .json(&json!({ "messages": [{ "value": "v" }] }))
            .send()
            .await
            .expect("request");
        json_of(produce, 200).await;
    }
    let get = |path: &'static str, bearer: String| {
        let request = harness.client.get(harness.url(path)).bearer_auth(bearer);
        async move { request.send().await.expect("request") }
    };
    let deadline = Instant::now() + SHOW_WITHIN;
    loop {
        let all = json_of(get("/v1/stats/top?by=produced", admin.clone()).await, 200).await;
        if all["items"]
            .as_array()
            .is_some_and(|items| items.len() == 2)
        {
            break;
        }
        assert!(Instant::now() < deadline, "{all}");
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    let reader = token("reader", "consume:orders.*");
    let mine = json_of(get("/v1/stats/top?by=produced", reader.clone()).await, 200).await;
    assert_eq!(
        mine["items"],
        json!([{ "topic": "orders.a", "subscription": null, "value": 1 }])
    );
    let theirs = get("/v1/stats/history?topic=billing.b", reader.clone()).await;
    expect_problem(theirs, 403, "forbidden").await;
    let producer = token("writer", "produce:orders.*");
    let refused = get("/v1/stats/history?topic=orders.a", producer).await;
    expect_problem(refused, 403, "forbidden").await;
    json_of(get("/v1/stats/history?topic=orders.a", reader).await, 200).await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_counts_in_its_minute() {
    let clock = Arc::new(AtomicU64::new(START_MINUTE * MINUTE_MS));
    let harness = Harness::start_with(settings(&clock)).await;
    harness
        .create_topic(json!({ "name": "jobs", "partitions": 1 }))
        .await;
    harness
        .create_subscription("jobs", json!({ "name": "once", "max_deliveries": 1 }))
        .await;
    harness.produce("jobs", vec![json!({ "value": "j" })]).await;
    let messages = harness
        .receive(
            "jobs",
            "once",
            json!({ "max_messages": 1, "wait_ms": 5000 }),
        )
        .await;
    let nack = json!({ "receipts": receipts(&messages) });
    let path = "/v1/topics/jobs/subscriptions/once/nack";
    json_of(harness.post_json(path, &nack).await, 200).await;
    let path = "/v1/stats/history?topic=jobs&subscription=once";
    let answer = until(&harness, path, |a| last_point(a)["dead_letters"] == 1).await;
    let point = last_point(&answer);
    assert_eq!(point["nacks"], 1, "{point}");
    assert_eq!(point["delivered_messages"], 1, "{point}");
    harness.stop().await;
}
