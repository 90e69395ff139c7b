//! Synthetic probes end to end: a healthy server shows a recent successful round with its
//! latency in `/readyz` and `/metrics` while its probe topic stays out of the API; a probe
//! made to fail (its consumer paused by the test hook) counts the failure, shows it in
//! `/readyz` (still 200), lists the built-in `__wharf.probe` alert, fires a `probe` rule's
//! alert to a real HTTP receiver and resolves both once the probe recovers; bad `probe` rules
//! are refused.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gateway::config::{AlertRaw, RawSettings};
use gateway::governance::probe::{PROBE_TOPIC, ProbeHooks};
use serde_json::{Value, json};

use crate::support::common::{Harness, expect_problem, json_of};
use crate::support::webhook_common::Receiver;

/// The probe interval of these tests: short, so rounds come within a fraction of a second.
const TEST_PROBE_INTERVAL_MS: &str = "100";
/// The alert evaluation tick of these tests.
const TEST_TICK_MS: &str = "50";
/// How long a test waits for a state or an event: generous, for a loaded machine (a failed
/// round takes the probe's 5 s receive timeout).
const LIVENESS: Duration = Duration::from_secs(60);
/// The server secret of these tests.
const SERVER_SECRET: &str = "server-secret-for-probe-tests-0123";

fn settings(hooks: Option<ProbeHooks>) -> RawSettings {
    RawSettings {
        probe_interval_ms: Some(TEST_PROBE_INTERVAL_MS.to_owned()),
        probe_hooks: hooks,
        alerts: AlertRaw {
            webhook_hosts: None,
            secret: Some(SERVER_SECRET.to_owned()),
            tick_ms: Some(TEST_TICK_MS.to_owned()),
        },
        ..RawSettings::default()
    }
}

/// `/readyz`'s `probe` once `check` accepts it (asserting 200 every time).
async fn wait_probe(harness: &Harness, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + LIVENESS;
    loop {
        let ready = json_of(harness.get("/readyz").await, 200).await;
        assert_eq!(ready["status"], "ready", "{ready}");
        if check(&ready["probe"]) {
            return ready["probe"].clone();
        }
        assert!(Instant::now() < deadline, "{what} not seen: {ready}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The value of the sample `series` (name and labels exactly as rendered) in `/metrics`,
/// 0 when absent.
async fn metric(harness: &Harness, series: &str) -> f64 {
    let response = harness.get("/metrics").await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.expect("metrics text");
    text.lines()
        .filter_map(|line| line.strip_prefix(series))
        .filter_map(|rest| rest.strip_prefix(' '))
        .filter_map(|value| value.trim().parse::<f64>().ok())
        .next()
        .unwrap_or(0.0)
}

#[tokio::test]
async fn a_healthy_server_shows_recent_successful_rounds_and_hides_its_probe_topic() {
    let harness = Harness::start_with(settings(None)).await;
    let started_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    let probe = wait_probe(&harness, "a successful round", |probe| {
        probe["state"] == "ok"
    })
    .await;
    assert_eq!(probe["interval_ms"], 100);
    assert_eq!(probe["consecutive_failures"], 0);
    assert!(probe["last_error"].is_null(), "{probe}");
    let latency = probe["last_latency_ms"].as_f64().expect("a latency");
    assert!(latency > 0.0, "{probe}");
    let last = probe["last_success_at_ms"].as_u64().expect("a time");
    assert!(last + 1_000 >= started_ms, "recent: {probe}");

    assert!(metric(&harness, "wharf_probe_round_trip_seconds_count").await >= 1.0);
    assert!(metric(&harness, "wharf_probe_round_trip_seconds_sum").await > 0.0);

    // The probe topic exists but is not part of the API.
    let topics = json_of(harness.get("/v1/topics").await, 200).await;
    assert!(!topics.to_string().contains(PROBE_TOPIC), "{topics}");
    let path = format!("/v1/topics/{PROBE_TOPIC}");
    expect_problem(harness.get(&path).await, 404, "topic_not_found").await;
    let deleted = harness
        .client
        .delete(harness.url(&path))
        .send()
        .await
        .expect("request");
    expect_problem(deleted, 404, "topic_not_found").await;
    let produce = harness
        .post_json(
            &format!("{path}/messages"),
            &json!({"messages": [{"value": "x"}]}),
        )
        .await;
    expect_problem(produce, 404, "topic_not_found").await;
    let create = harness
        .post_json("/v1/topics", &json!({"name": PROBE_TOPIC}))
        .await;
    expect_problem(create, 400, "invalid_request").await;
    // Still probing after all that.
    let before = metric(&harness, "wharf_probe_round_trip_seconds_count").await;
    let deadline = Instant::now() + LIVENESS;
    while metric(&harness, "wharf_probe_round_trip_seconds_count").await <= before {
        assert!(Instant::now() < deadline, "no round after the refusals");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    harness.stop().await;
}

#[tokio::test]
async fn a_failing_probe_is_counted_shown_in_readyz_and_alerts_until_it_recovers() {
    let receiver = Receiver::start().await;
    let hooks = ProbeHooks::default();
    let harness = Harness::start_with(settings(Some(hooks.clone()))).await;
    wait_probe(&harness, "a successful round", |probe| {
        probe["state"] == "ok"
    })
    .await;
    let rule = json!({
        "name": "probe-down", "kind": "probe", "for_ms": 500, "webhook_url": receiver.url,
    });
    let created = harness.post_ok("/v1/alerts/rules", &rule, 201).await;
    assert_eq!(created["kind"], "probe");
    assert!(created["threshold"].is_null(), "{created}");
    let failures_series = "wharf_probe_failures_total{step=\"receive\"}";
    let failures_before = metric(&harness, failures_series).await;

    hooks.pause_consumer(true);
    let firing = receiver.next_verified(SERVER_SECRET, LIVENESS).await;
    assert_eq!(firing["state"], "firing", "{firing}");
    assert_eq!(firing["rule"], "probe-down");
    assert_eq!(firing["kind"], "probe");
    assert!(firing["value"].as_f64().expect("value") >= 1.0, "{firing}");
    assert!(firing["topic"].is_null(), "{firing}");

    let probe = wait_probe(&harness, "a failed round", |probe| {
        probe["state"] == "failing"
    })
    .await;
    assert!(
        probe["consecutive_failures"].as_u64().expect("count") >= 1,
        "{probe}"
    );
    let error = probe["last_error"].as_str().expect("an error");
    assert!(error.starts_with("receive:"), "{probe}");
    assert!(
        probe["last_at_ms"].as_u64() > probe["last_success_at_ms"].as_u64(),
        "{probe}"
    );
    assert!(metric(&harness, failures_series).await > failures_before);
    let active = json_of(harness.get("/v1/alerts").await, 200).await;
    let listed = active["alerts"]
        .as_array()
        .expect("alerts")
        .iter()
        .find(|a| a["rule"] == "probe-down")
        .cloned()
        .unwrap_or_else(|| panic!("probe-down not active: {active}"));
    assert_eq!(listed["kind"], "probe");
    let builtin = active["alerts"]
        .as_array()
        .expect("alerts")
        .iter()
        .find(|a| a["rule"] == "__wharf.probe")
        .cloned()
        .unwrap_or_else(|| panic!("the built-in probe alert is not active: {active}"));
    assert_eq!(builtin["kind"], "probe");
    assert!(
        builtin["value"].as_f64().expect("value") >= 1.0,
        "{builtin}"
    );
    assert!(
        builtin["since_ms"].as_u64() <= listed["since_ms"].as_u64(),
        "{active}"
    );
    // The gauge is the process's, and other tests' servers set it too: wait to see ours.
    let deadline = Instant::now() + LIVENESS;
    while metric(&harness, "wharf_alerts_active{kind=\"probe\"}").await < 2.0 {
        assert!(
            Instant::now() < deadline,
            "the probe alerts' gauge never showed 2"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    hooks.pause_consumer(false);
    let resolved = receiver.next_verified(SERVER_SECRET, LIVENESS).await;
    assert_eq!(resolved["state"], "resolved", "{resolved}");
    assert_eq!(resolved["value"], 0.0);
    assert_eq!(resolved["fired_at_ms"], firing["at_ms"]);
    let probe = wait_probe(&harness, "a recovered round", |probe| {
        probe["state"] == "ok"
    })
    .await;
    assert_eq!(probe["consecutive_failures"], 0);
    let deadline = Instant::now() + LIVENESS;
    loop {
        let active = json_of(harness.get("/v1/alerts").await, 200).await;
        if active["alerts"] == json!([]) {
            break;
        }
        assert!(Instant::now() < deadline, "alerts still active: {active}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    harness.stop().await;
}

#[tokio::test]
async fn probe_rules_take_no_topic_subscription_or_threshold() {
    let harness = Harness::start_with(settings(None)).await;
    let base = json!({"name": "p", "kind": "probe", "webhook_url": "http://127.0.0.1:9/hook"});
    let with = |field: &str, value: Value| {
        let mut rule = base.clone();
        rule[field] = value;
        rule
    };
    harness.create_topic(json!({"name": "orders"})).await;
    for bad in [
        with("topic", json!("orders")),
        with("subscription", json!("workers")),
        with("threshold", json!(1)),
        with("for_ms", json!(86_400_001u64)),
    ] {
        let refused = harness.post_json("/v1/alerts/rules", &bad).await;
        expect_problem(refused, 400, "invalid_request").await;
    }
    let rules = json_of(harness.get("/v1/alerts/rules").await, 200).await;
    assert_eq!(rules["rules"], json!([]), "nothing stored");
    harness.post_ok("/v1/alerts/rules", &base, 201).await;
    harness.stop().await;
}
