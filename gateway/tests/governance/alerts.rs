//! Alerts end to end: rules over the API, a real HTTP receiver started here that gets signed
//! firing and resolved events, receivers that are down or hang while produce goes on, bad
//! rules refused, rules kept across a restart, and one produce error count read by both the
//! alerts and the history.

use std::time::{Duration, Instant};

use gateway::config::{AlertRaw, EdgeRaw, RawSettings};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::support::common::{Harness, expect_problem, json_of, receipts};
use crate::support::edge_common;
use crate::support::webhook_common::Receiver;

/// The evaluation tick of these tests: short, so an alert fires within a fraction of a
/// second of its condition.
const TEST_TICK_MS: &str = "50";
/// How long a test waits for an event or a state: generous, for a loaded machine.
const LIVENESS: Duration = Duration::from_secs(30);
/// The server secret of these tests.
const SERVER_SECRET: &str = "server-secret-for-tests-0123456789";

fn settings(webhook_hosts: Option<&str>) -> RawSettings {
    RawSettings {
        alerts: AlertRaw {
            webhook_hosts: webhook_hosts.map(str::to_owned),
            secret: Some(SERVER_SECRET.to_owned()),
            tick_ms: Some(TEST_TICK_MS.to_owned()),
        },
        ..RawSettings::default()
    }
}

async fn topic_with_subscription(harness: &Harness, topic: &str) {
    harness.create_topic(json!({ "name": topic })).await;
    harness
        .create_subscription(topic, json!({ "name": "workers" }))
        .await;
}

async fn create_rule(harness: &Harness, rule: &Value) -> Value {
    harness.post_ok("/v1/alerts/rules", rule, 201).await
}

/// Waits until `GET /v1/alerts` lists `rule` (or, with `firing` false, no longer does).
async fn wait_active(harness: &Harness, rule: &str, firing: bool) -> Value {
    let deadline = Instant::now() + LIVENESS;
    loop {
        let list = json_of(harness.get("/v1/alerts").await, 200).await;
        let found = list["alerts"]
            .as_array()
            .expect("alerts")
            .iter()
            .find(|a| a["rule"] == rule)
            .cloned();
        if found.is_some() == firing {
            return found.unwrap_or(Value::Null);
        }
        assert!(
            Instant::now() < deadline,
            "{rule} firing={firing} not seen: {list}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_backlog_rule_posts_a_signed_firing_event_then_a_resolved_one() {
    let receiver = Receiver::start().await;
    let harness = Harness::start_with(settings(None)).await;
    topic_with_subscription(&harness, "orders").await;
    let secret = "per-rule-secret-0123456789";
    let created = create_rule(
        &harness,
        &json!({
            "name": "orders-backlog", "kind": "backlog", "topic": "orders",
            "subscription": "workers", "threshold": 2, "for_ms": 0,
            "webhook_url": receiver.url, "secret": secret,
        }),
    )
    .await;
    assert!(created.get("secret").is_none(), "never shown: {created}");
    assert_eq!(created["threshold"], 2.0);

    harness
        .produce("orders", vec![json!({"value": "a"}), json!({"value": "b"})])
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        wait_active(&harness, "orders-backlog", false).await,
        Value::Null
    );
    harness.produce("orders", vec![json!({"value": "c"})]).await;

    let firing = receiver.next_verified(secret, LIVENESS).await;
    assert_eq!(firing["state"], "firing", "{firing}");
    assert_eq!(firing["rule"], "orders-backlog");
    assert_eq!(firing["kind"], "backlog");
    assert_eq!(firing["value"], 3.0);
    assert_eq!(firing["threshold"], 2.0);
    assert_eq!(firing["subscription"], "workers");
    let active = wait_active(&harness, "orders-backlog", true).await;
    assert_eq!(active["state"], "firing");
    assert_eq!(active["value"], 3.0);
    assert_eq!(active["since_ms"], firing["since_ms"]);

    let messages = harness
        .receive(
            "orders",
            "workers",
            json!({"max_messages": 10, "wait_ms": 0}),
        )
        .await;
    assert_eq!(messages.len(), 3);
    harness.ack("orders", "workers", &receipts(&messages)).await;
    let resolved = receiver.next_verified(secret, LIVENESS).await;
    assert_eq!(resolved["state"], "resolved", "{resolved}");
    assert_eq!(resolved["value"], 0.0);
    assert_eq!(resolved["fired_at_ms"], firing["at_ms"]);
    wait_active(&harness, "orders-backlog", false).await;

    harness
        .produce("orders", vec![json!({"value": "d"}); 3])
        .await;
    let again = receiver.next_verified(secret, LIVENESS).await;
    assert_eq!(again["state"], "firing", "{again}");
    let deleted = harness
        .client
        .delete(harness.url("/v1/topics/orders"))
        .send()
        .await
        .expect("delete topic");
    assert_eq!(deleted.status().as_u16(), 204);
    let gone = receiver.next_verified(secret, LIVENESS).await;
    assert_eq!(
        gone["state"], "resolved",
        "a rule whose topic is gone resolves: {gone}"
    );
    wait_active(&harness, "orders-backlog", false).await;

    let metrics = harness.get("/metrics").await.text().await.expect("metrics");
    assert!(
        metrics.contains("wharf_alert_deliveries_total{outcome=\"delivered\"}"),
        "{metrics}"
    );
    assert!(metrics.contains("wharf_alerts_active{kind=\"backlog\"}"));
    harness.stop().await;
}

#[tokio::test]
async fn a_consumer_offline_rule_fires_when_nobody_receives_and_resolves_when_one_does() {
    let receiver = Receiver::start().await;
    let harness = Harness::start_with(settings(None)).await;
    topic_with_subscription(&harness, "jobs").await;
    create_rule(
        &harness,
        &json!({
            "name": "jobs-offline", "kind": "consumer_offline", "topic": "jobs",
            "subscription": "workers", "for_ms": 5000, "webhook_url": receiver.url,
        }),
    )
    .await;
    harness.produce("jobs", vec![json!({"value": "x"})]).await;

    let firing = receiver.next_verified(SERVER_SECRET, LIVENESS).await;
    assert_eq!(firing["state"], "firing", "{firing}");
    assert_eq!(firing["kind"], "consumer_offline");
    assert_eq!(firing["value"], 1.0, "the backlog");
    assert_eq!(firing["threshold"], Value::Null);
    let held = firing["at_ms"].as_u64().expect("at") - firing["since_ms"].as_u64().expect("since");
    assert!(held >= 5000, "fired after {held} ms");

    let messages = harness
        .receive("jobs", "workers", json!({"max_messages": 10, "wait_ms": 0}))
        .await;
    let resolved = receiver.next_verified(SERVER_SECRET, LIVENESS).await;
    assert_eq!(resolved["state"], "resolved", "{resolved}");
    harness.ack("jobs", "workers", &receipts(&messages)).await;
    harness.stop().await;
}

/// A listener that accepts connections and never answers them.
async fn hanging_receiver() -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (format!("http://{address}/hook"), task)
}

/// A URL on a port nothing listens on.
async fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    drop(listener);
    format!("http://{address}/hook")
}

#[tokio::test]
async fn receivers_that_are_down_or_hang_do_not_hold_up_produce() {
    let (hanging, hang_task) = hanging_receiver().await;
    let down = closed_port_url().await;
    let harness = Harness::start_with(settings(None)).await;
    topic_with_subscription(&harness, "busy").await;
    for (name, url) in [("to-hanging", &hanging), ("to-down", &down)] {
        create_rule(
            &harness,
            &json!({
                "name": name, "kind": "backlog", "topic": "busy", "subscription": "workers",
                "threshold": 0, "webhook_url": url,
            }),
        )
        .await;
    }
    harness
        .produce("busy", vec![json!({"value": "first"})])
        .await;
    wait_active(&harness, "to-hanging", true).await;
    wait_active(&harness, "to-down", true).await;
    // Deliveries to both are now pending (one hangs up to the webhook timeout, the other is
    // refused and waits for its retry); produce answers all the same.
    for round in 0..40 {
        let produced = tokio::time::timeout(
            Duration::from_secs(10),
            harness.produce("busy", vec![json!({"value": round.to_string()})]),
        )
        .await;
        assert!(
            produced.is_ok(),
            "produce {round} did not answer within 10 s"
        );
    }
    let deadline = Instant::now() + LIVENESS;
    loop {
        let metrics = harness.get("/metrics").await.text().await.expect("metrics");
        if metrics.contains("wharf_alert_deliveries_total{outcome=\"failed\"}") {
            break;
        }
        assert!(Instant::now() < deadline, "no failed delivery counted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let answered = json_of(harness.get("/v1/topics/busy").await, 200).await;
    assert_eq!(answered["name"], "busy");
    hang_task.abort();
    harness.stop().await;
}

#[tokio::test]
async fn bad_rules_are_refused_with_400_and_nothing_is_stored() {
    let harness = Harness::start_with(settings(Some("hooks.example.com"))).await;
    topic_with_subscription(&harness, "orders").await;
    let base = json!({
        "name": "r", "kind": "backlog", "topic": "orders", "subscription": "workers",
        "threshold": 10, "for_ms": 0, "webhook_url": "https://hooks.example.com/wharf",
    });
    let with = |field: &str, value: Value| {
        let mut rule = base.clone();
        rule[field] = value;
        rule
    };
    let bad = [
        with("kind", json!("latency")),
        with("webhook_url", json!("ftp://hooks.example.com/wharf")),
        with("webhook_url", json!("http://127.0.0.1:9/hook")),
        with("topic", json!("no-such-topic")),
        with("subscription", json!("no-such-subscription")),
        with("threshold", json!(-1)),
        with("for_ms", json!(-5)),
        with("secret", json!("short")),
        with("unknown_field", json!(1)),
    ];
    for rule in &bad {
        let response = harness.post_json("/v1/alerts/rules", rule).await;
        expect_problem(response, 400, "invalid_request").await;
    }
    let listed = json_of(harness.get("/v1/alerts/rules").await, 200).await;
    assert_eq!(listed["rules"], json!([]), "nothing stored");

    create_rule(&harness, &base).await;
    let again = harness.post_json("/v1/alerts/rules", &base).await;
    expect_problem(again, 409, "alert_rule_exists").await;
    expect_problem(
        harness.get("/v1/alerts/rules/nope").await,
        404,
        "alert_rule_not_found",
    )
    .await;
    let deleted = harness
        .client
        .delete(harness.url("/v1/alerts/rules/nope"))
        .send()
        .await
        .expect("delete");
    expect_problem(deleted, 404, "alert_rule_not_found").await;
    harness.stop().await;
}

#[tokio::test]
async fn rules_survive_a_restart_and_a_deleted_one_stays_deleted() {
    let data = tempfile::tempdir().expect("temp dir");
    let harness = Harness::start_in(data.path(), settings(None)).await;
    topic_with_subscription(&harness, "orders").await;
    for name in ["kept", "dropped"] {
        create_rule(
            &harness,
            &json!({
                "name": name, "kind": "backlog", "topic": "orders", "subscription": "workers",
                "threshold": 5, "webhook_url": "http://127.0.0.1:9/hook",
                "secret": "restart-secret-0123456789",
            }),
        )
        .await;
    }
    let deleted = harness
        .client
        .delete(harness.url("/v1/alerts/rules/dropped"))
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status().as_u16(), 204);
    harness.stop().await;

    let harness = Harness::start_in(data.path(), settings(None)).await;
    let listed = json_of(harness.get("/v1/alerts/rules").await, 200).await;
    let names: Vec<&str> = listed["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["kept"]);
    let kept = json_of(harness.get("/v1/alerts/rules/kept").await, 200).await;
    assert_eq!(kept["threshold"], 5.0);
    assert!(kept.get("secret").is_none(), "never shown: {kept}");
    harness.stop().await;
}

#[tokio::test]
async fn dead_letters_produce_errors_and_disk_rules_fire_on_their_figures() {
    let receiver = Receiver::start().await;
    let harness = Harness::start_with(settings(None)).await;
    harness.create_topic(json!({ "name": "mail" })).await;
    harness
        .create_subscription("mail", json!({ "name": "senders", "max_deliveries": 1 }))
        .await;
    let rules = [
        json!({"name": "mail-dlq", "kind": "dead_letters", "topic": "mail",
               "subscription": "senders", "threshold": 0, "webhook_url": receiver.url}),
        json!({"name": "mail-errors", "kind": "produce_errors", "topic": "mail",
               "threshold": 0, "webhook_url": receiver.url}),
        json!({"name": "disk-used", "kind": "disk", "threshold": 0, "webhook_url": receiver.url}),
    ];
    for rule in &rules {
        create_rule(&harness, rule).await;
    }
    let disk = receiver.next_verified(SERVER_SECRET, LIVENESS).await;
    assert_eq!(
        (disk["rule"].as_str(), disk["state"].as_str()),
        (Some("disk-used"), Some("firing"))
    );
    let share = disk["value"].as_f64().expect("share");
    assert!(share > 0.0 && share <= 1.0, "{disk}");

    let refused = harness
        .client
        .post(harness.url("/v1/topics/mail/messages"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("produce");
    assert_eq!(refused.status().as_u16(), 400);
    let errors = receiver.next_verified(SERVER_SECRET, LIVENESS).await;
    assert_eq!(errors["rule"], "mail-errors", "{errors}");
    assert_eq!(errors["state"], "firing");
    assert_eq!(errors["value"], 1.0);

    harness
        .produce("mail", vec![json!({"value": "bounce"})])
        .await;
    let messages = harness
        .receive("mail", "senders", json!({"max_messages": 1, "wait_ms": 0}))
        .await;
    let nack = json!({"receipts": receipts(&messages), "error": "smtp down"});
    harness
        .post_ok("/v1/topics/mail/subscriptions/senders/nack", &nack, 200)
        .await;
    let dead = receiver.next_verified(SERVER_SECRET, LIVENESS).await;
    assert_eq!(dead["rule"], "mail-dlq", "{dead}");
    assert_eq!(dead["state"], "firing");
    assert_eq!(dead["value"], 1.0);
    harness.stop().await;
}

#[tokio::test]
async fn alert_routes_need_admin_on_every_topic() {
    let raw = RawSettings {
        alerts: settings(None).alerts,
        ..edge_common::with_secret(EdgeRaw::default())
    };
    let harness = Harness::start_with(raw).await;
    let admin_all = edge_common::token("ops", "admin:*");
    let admin_orders = edge_common::token("team", "admin:orders consume:*");
    let created = harness
        .client
        .post(harness.url("/v1/topics"))
        .bearer_auth(&admin_all)
        .json(&json!({"name": "orders"}))
        .send()
        .await
        .expect("topic");
    assert_eq!(created.status().as_u16(), 201);
    let rule = json!({"name": "disk", "kind": "disk", "threshold": 0.9,
                      "webhook_url": "http://127.0.0.1:9/hook"});
    let send = |token: &str, method: reqwest::Method, path: &str| {
        let request = harness
            .client
            .request(method, harness.url(path))
            .bearer_auth(token);
        request.json(&rule).send()
    };
    for (method, path) in [
        (reqwest::Method::POST, "/v1/alerts/rules"),
        (reqwest::Method::GET, "/v1/alerts/rules"),
        (reqwest::Method::GET, "/v1/alerts/rules/disk"),
        (reqwest::Method::DELETE, "/v1/alerts/rules/disk"),
        (reqwest::Method::GET, "/v1/alerts"),
    ] {
        let refused = send(&admin_orders, method, path).await.expect("request");
        expect_problem(refused, 403, "forbidden").await;
    }
    let answered = send(&admin_all, reqwest::Method::POST, "/v1/alerts/rules")
        .await
        .expect("request");
    json_of(answered, 201).await;
    let listed = send(&admin_all, reqwest::Method::GET, "/v1/alerts/rules")
        .await
        .expect("request");
    assert_eq!(json_of(listed, 200).await["rules"][0]["name"], "disk");
    harness.stop().await;
}

/// The `produce_errors` rule and the history read one count: a produce the edge refuses
/// (a token without the `produce` grant, so the route never runs) fires the rule with 1 and
/// shows as 1 in the topic's history, and a produce the route refuses adds one to both.
#[tokio::test]
async fn a_refused_produce_counts_once_for_the_alert_and_the_history_alike() {
    let receiver = Receiver::start().await;
    let raw = RawSettings {
        alerts: settings(None).alerts,
        ..edge_common::with_secret(EdgeRaw::default())
    };
    let harness = Harness::start_with(raw).await;
    let admin = edge_common::token("ops", "admin:* produce:*");
    let reader = edge_common::token("reader", "consume:*");
    let post = |token: &str, path: &str, body: Value| {
        harness
            .client
            .post(harness.url(path))
            .bearer_auth(token)
            .json(&body)
            .send()
    };
    let created = post(&admin, "/v1/topics", json!({"name": "mail"})).await;
    assert_eq!(created.expect("topic").status().as_u16(), 201);
    // The rules are sampled in name order: once the disk rule's event comes, the produce
    // error rule has its baseline, and what follows counts.
    let rules = [
        json!({"name": "a-disk", "kind": "disk", "threshold": 0, "webhook_url": receiver.url}),
        json!({"name": "mail-errors", "kind": "produce_errors", "topic": "mail",
               "threshold": 0, "webhook_url": receiver.url}),
    ];
    for rule in rules {
        let made = post(&admin, "/v1/alerts/rules", rule).await;
        assert_eq!(made.expect("rule").status().as_u16(), 201);
    }
    let disk = receiver.next_verified(SERVER_SECRET, LIVENESS).await;
    assert_eq!(disk["rule"], "a-disk", "{disk}");

    let batch = json!({"messages": [{"value": "hi"}]});
    let refused = post(&reader, "/v1/topics/mail/messages", batch).await;
    expect_problem(refused.expect("produce"), 403, "forbidden").await;
    let firing = receiver.next_verified(SERVER_SECRET, LIVENESS).await;
    assert_eq!(
        (&firing["rule"], &firing["state"]),
        (&json!("mail-errors"), &json!("firing"))
    );
    assert_eq!(firing["value"], 1.0);
    let bad = json!({"messages": [{"key": "no value"}]});
    let refused = post(&admin, "/v1/topics/mail/messages", bad).await;
    assert_eq!(refused.expect("produce").status().as_u16(), 400);

    let deadline = Instant::now() + LIVENESS;
    loop {
        let history = harness
            .client
            .get(harness.url("/v1/stats/history?topic=mail&minutes=5"))
            .bearer_auth(&admin)
            .send()
            .await
            .expect("history");
        let history = json_of(history, 200).await;
        let errors: u64 = history["points"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|point| point["produce_errors"].as_u64())
            .sum();
        let listed = harness
            .client
            .get(harness.url("/v1/alerts"))
            .bearer_auth(&admin)
            .send()
            .await
            .expect("alerts");
        let listed = json_of(listed, 200).await;
        let value = listed["alerts"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|alert| alert["rule"] == "mail-errors")
            .and_then(|alert| alert["value"].as_f64());
        if errors == 2 && value == Some(2.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "history {history}, alerts {listed}: both should count 2"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    harness.stop().await;
}
