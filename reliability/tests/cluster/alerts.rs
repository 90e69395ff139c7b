//! Alerts in a real three-process cluster (the `wharf` binary): a rule created through one
//! node is cluster metadata, listed on every node; only the controller leader evaluates it,
//! over the backlog summed from every partition's leader, so a receiver started here gets
//! exactly one signed firing event although three nodes run, then one resolved event once
//! the backlog is consumed; `GET /v1/alerts` on any node answers the evaluator's list; the
//! rule is still there after a node is killed and restarted; a delete through any node
//! removes it everywhere.
//!
//! Every partition is led by a node other than the controller leader, and a consumer
//! receives there only: a `consumer_offline` rule stays quiet while it does (the evaluator
//! gathers the last receive from the node that served it, it saw none itself), fires once
//! it stops, and resolves when it comes back. When the evaluator is killed, another node
//! takes over and fires the still-offline rule once more (it starts afresh), and only it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};

use crate::api_calls::{create_topic, post_when_ready_within};
use crate::serial::CLUSTERS;

const TOPIC: &str = "alerted";
const RULE: &str = "backlog-high";
/// The `consumer_offline` rule, on subscription `slow`.
const OFFLINE_RULE: &str = "slow-offline";
/// Its `for_ms`, the least the kind takes.
const OFFLINE_FOR_MS: u64 = 5_000;
/// How often the test's consumer receives from `slow`.
const CONSUMER_EVERY: Duration = Duration::from_millis(500);
/// The rule's own signing secret, so the receiver can verify every event.
const SECRET: &str = "a-rule-secret-of-the-cluster-test";
const MESSAGES: u64 = 20;
/// The rule's threshold: just below `MESSAGES`, so only the backlog summed over every
/// partition's leader breaches it, not the part one node leads.
const THRESHOLD: u64 = MESSAGES - 1;
/// How long a wait for a state may take: generous, for a loaded two-core machine (rules are
/// evaluated every second).
const LIVENESS: Duration = Duration::from_secs(30);
/// How long after the resolution the receiver is watched for a duplicate: several ticks of
/// every node.
const QUIET: Duration = Duration::from_secs(4);

/// Every post the receiver got: its `Wharf-Signature` and body.
type Posts = Arc<Mutex<Vec<(String, Bytes)>>>;

async fn start_receiver() -> (String, Posts) {
    async fn hook(State(posts): State<Posts>, headers: HeaderMap, body: Bytes) -> StatusCode {
        let signature = headers
            .get("wharf-signature")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        posts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((signature, body));
        StatusCode::NO_CONTENT
    }
    let posts = Posts::default();
    let app = Router::new()
        .route("/hook", post(hook))
        .with_state(Arc::clone(&posts));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the receiver");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{address}/hook"), posts)
}

/// The events received so far, each signature checked (`t=<secs>,v1=<hex HMAC-SHA256 of
/// "<t>.<body>">` keyed by [`SECRET`]).
fn verified_events(posts: &Posts) -> Vec<Value> {
    let posts = posts.lock().unwrap_or_else(|e| e.into_inner()).clone();
    posts
        .iter()
        .map(|(signature, body)| {
            let (t, v1) = signature
                .split_once(',')
                .and_then(|(t, v1)| Some((t.strip_prefix("t=")?, v1.strip_prefix("v1=")?)))
                .unwrap_or_else(|| panic!("a signature header: {signature:?}"));
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(SECRET.as_bytes()).expect("key");
            mac.update(t.as_bytes());
            mac.update(b".");
            mac.update(body);
            let expected: String = mac
                .finalize()
                .into_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(v1, expected, "the signature of {body:?}");
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("clock")
                .as_secs();
            let at: u64 = t.parse().expect("a timestamp");
            assert!(now.abs_diff(at) < 300, "signed at {at}, now {now}");
            serde_json::from_slice(body).expect("a JSON body")
        })
        .collect()
}

fn states(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["state"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// POSTs `body`, retrying 503 answers (no leader yet) for up to [`LIVENESS`].
async fn post_when_ready(http: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    post_when_ready_within(http, url, body, LIVENESS).await
}

async fn get(http: &reqwest::Client, url: String) -> (u16, Value) {
    match http.get(&url).send().await {
        Ok(reply) => {
            let status = reply.status().as_u16();
            (status, reply.json().await.unwrap_or(Value::Null))
        }
        Err(_) => (0, Value::Null),
    }
}

/// Waits until `check` holds for node `url`'s answer to `GET path`.
async fn wait_for(http: &reqwest::Client, url: &str, path: &str, check: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + LIVENESS;
    loop {
        let (status, answer) = get(http, format!("{url}{path}")).await;
        if status == 200 && check(&answer) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{url}{path} never got there: {status} {answer}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn lists_rule(answer: &Value) -> bool {
    answer["rules"]
        .as_array()
        .is_some_and(|rules| rules.iter().any(|r| r["name"] == RULE))
}

fn lists_alert(answer: &Value) -> bool {
    answer["alerts"]
        .as_array()
        .is_some_and(|alerts| alerts.iter().any(|a| a["rule"] == RULE))
}

/// The controller leader and each partition's leader, once every partition has one.
async fn leaders(http: &reqwest::Client, url: &str) -> (u64, Vec<u64>) {
    let deadline = Instant::now() + LIVENESS;
    loop {
        let (_, view) = get(http, format!("{url}/v1/cluster")).await;
        let mut seen: Vec<(u64, u64)> = view["partitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["topic"] == TOPIC)
            .filter_map(|p| Some((p["partition"].as_u64()?, p["leader"].as_u64()?)))
            .collect();
        seen.sort_unstable();
        if let Some(controller) = view["controller"]["leader"].as_u64()
            && seen.len() == 3
        {
            return (controller, seen.into_iter().map(|(_, l)| l).collect());
        }
        assert!(Instant::now() < deadline, "no leaders: {view}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Moves every partition's leadership off the controller leader (the evaluator) to one other
/// node; returns the controller leader's id and that node's: whatever lives only on a
/// partition's leader or on the node that served a receive must then be gathered from there.
async fn lead_elsewhere(http: &reqwest::Client, url: &str) -> (u64, u64) {
    let (controller, led) = leaders(http, url).await;
    let other = if controller == 1 { 2 } else { 1 };
    for (partition, leader) in led.iter().enumerate() {
        if *leader == other {
            continue;
        }
        let (status, body) = post_when_ready(
            http,
            format!("{url}/v1/cluster/partitions/{TOPIC}/{partition}/leader"),
            json!({ "node": other }),
        )
        .await;
        assert_eq!(status, 200, "move partition {partition}'s leader: {body}");
    }
    // The view shows a move once the new leader has reported itself.
    let deadline = Instant::now() + LIVENESS;
    loop {
        let (controller_now, led) = leaders(http, url).await;
        assert_eq!(controller_now, controller, "the controller leader stayed");
        if led.iter().all(|l| *l == other) {
            return (controller, other);
        }
        assert!(
            Instant::now() < deadline,
            "the leaders never moved: {led:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Receives one message from `slow` through `url` every [`CONSUMER_EVERY`] (never acked:
/// its lease ends and it comes again), until the task is aborted.
fn consume_slowly(http: reqwest::Client, url: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let _ = http
                .post(format!(
                    "{url}/v1/topics/{TOPIC}/subscriptions/slow/receive"
                ))
                .json(&json!({ "max_messages": 1, "wait_ms": 0, "ack_timeout_ms": 1000 }))
                .send()
                .await;
            tokio::time::sleep(CONSUMER_EVERY).await;
        }
    })
}

fn of_rule(events: &[Value], rule: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["rule"] == rule)
        .cloned()
        .collect()
}

/// Waits until the receiver holds `count` events of `rule`.
async fn wait_events(posts: &Posts, rule: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + LIVENESS;
    loop {
        let events = of_rule(&verified_events(posts), rule);
        if events.len() >= count {
            return events;
        }
        assert!(
            Instant::now() < deadline,
            "{count} events never came: {events:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_node_evaluates_a_rule_every_node_lists_and_it_survives_a_restart() {
    let _alone = CLUSTERS.write().await;
    let mut cluster: Cluster = tokio::task::block_in_place(|| {
        Cluster::start(ClusterSpec::new(wharf_binary(), 3)).expect("three nodes start")
    });
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    let endpoints = cluster.endpoints();
    let urls: Vec<String> = endpoints.iter().map(|e| e.url.clone()).collect();
    create_topic(
        &http,
        &urls[0],
        json!({"name": TOPIC, "partitions": 3}),
        &urls[0],
        &[
            json!({"name": "workers", "start": "earliest"}),
            json!({"name": "slow", "start": "earliest"}),
        ],
        LIVENESS,
    )
    .await;
    let (evaluator, leader) = lead_elsewhere(&http, &urls[0]).await;
    let leader_url = endpoints
        .iter()
        .find(|e| e.node == leader)
        .map(|e| e.url.clone())
        .expect("the leader's URL");
    let consumer = consume_slowly(http.clone(), leader_url.clone());

    let (hook, posts) = start_receiver().await;
    let rule = json!({
        "name": RULE, "kind": "backlog", "topic": TOPIC, "subscription": "workers",
        "threshold": THRESHOLD, "for_ms": 0, "webhook_url": hook, "secret": SECRET,
    });
    let (status, body) =
        post_when_ready(&http, format!("{}/v1/alerts/rules", urls[1]), rule.clone()).await;
    assert_eq!(status, 201, "create the rule on one node: {body}");
    assert!(
        body.get("secret").is_none(),
        "the secret is never shown: {body}"
    );
    for url in &urls {
        wait_for(&http, url, "/v1/alerts/rules", lists_rule).await;
    }
    let (status, body) =
        post_when_ready(&http, format!("{}/v1/alerts/rules", urls[2]), rule.clone()).await;
    assert_eq!(status, 409, "the same name through another node: {body}");
    assert_eq!(body["code"], "alert_rule_exists", "{body}");
    let offline = json!({
        "name": OFFLINE_RULE, "kind": "consumer_offline", "topic": TOPIC, "subscription": "slow",
        "for_ms": OFFLINE_FOR_MS, "webhook_url": hook, "secret": SECRET,
    });
    let (status, body) =
        post_when_ready(&http, format!("{}/v1/alerts/rules", urls[0]), offline).await;
    assert_eq!(status, 201, "create the consumer_offline rule: {body}");

    let batch: Vec<Value> = (0..MESSAGES)
        .map(|i| json!({ "key": format!("k{i}"), "value": "v" }))
        .collect();
    let (status, body) = post_when_ready(
        &http,
        format!("{}/v1/topics/{TOPIC}/messages", urls[2]),
        json!({ "messages": batch }),
    )
    .await;
    assert_eq!(status, 200, "produce: {body}");
    let produced = Instant::now();

    let events = wait_events(&posts, RULE, 1).await;
    assert_eq!(events[0]["state"], "firing", "{events:?}");
    assert_eq!(events[0]["rule"], RULE, "{events:?}");
    assert_eq!(
        events[0]["value"].as_f64(),
        Some(MESSAGES as f64),
        "the backlog summed over the partitions' leaders: {events:?}"
    );
    for url in &urls {
        wait_for(&http, url, "/v1/alerts", lists_alert).await;
    }

    // Consume everything (received through one node, acked through another), so the backlog
    // the evaluator sums falls to 0.
    let deadline = Instant::now() + LIVENESS;
    let mut acked = 0;
    while acked < MESSAGES {
        assert!(Instant::now() < deadline, "only {acked} messages consumed");
        let (status, body) = post_when_ready(
            &http,
            format!(
                "{}/v1/topics/{TOPIC}/subscriptions/workers/receive",
                urls[0]
            ),
            json!({ "max_messages": 100, "wait_ms": 1000 }),
        )
        .await;
        assert_eq!(status, 200, "receive: {body}");
        let receipts: Vec<Value> = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| m["receipt"].clone())
            .collect();
        if receipts.is_empty() {
            continue;
        }
        let (status, answer) = post_when_ready(
            &http,
            format!("{}/v1/topics/{TOPIC}/subscriptions/workers/ack", urls[1]),
            json!({ "receipts": receipts }),
        )
        .await;
        assert_eq!(status, 200, "ack: {answer}");
        acked += receipts.len() as u64;
    }
    let events = wait_events(&posts, RULE, 2).await;
    assert_eq!(
        states(&events),
        ["firing", "resolved"],
        "one firing then one resolved event: {events:?}"
    );
    tokio::time::sleep(QUIET).await;
    let events = of_rule(&verified_events(&posts), RULE);
    assert_eq!(
        states(&events),
        ["firing", "resolved"],
        "no node sent a duplicate: {events:?}"
    );
    assert!(
        events
            .iter()
            .all(|e| e["node"].as_u64().is_some_and(|n| n != leader)),
        "the controller leader, not the partitions' leader, sent them: {events:?}"
    );
    for url in &urls {
        wait_for(&http, url, "/v1/alerts", |a| !lists_alert(a)).await;
    }

    // The consumer has received through the partitions' leader all along, for longer than
    // `for_ms` (and two ticks) since the backlog appeared: the evaluator saw that receive
    // there, or the rule would have fired by now.
    let waited = Duration::from_millis(OFFLINE_FOR_MS) + Duration::from_secs(2);
    tokio::time::sleep(waited.saturating_sub(produced.elapsed())).await;
    let quiet = of_rule(&verified_events(&posts), OFFLINE_RULE);
    assert!(
        quiet.is_empty(),
        "a consumer that receives is not offline: {quiet:?}"
    );
    consumer.abort();
    let events = wait_events(&posts, OFFLINE_RULE, 1).await;
    assert_eq!(
        states(&events),
        ["firing"],
        "offline once it stopped: {events:?}"
    );
    let consumer = consume_slowly(http.clone(), leader_url.clone());
    let events = wait_events(&posts, OFFLINE_RULE, 2).await;
    assert_eq!(
        states(&events),
        ["firing", "resolved"],
        "back once it receives again: {events:?}"
    );
    consumer.abort();

    // The rule is cluster metadata: a node killed and restarted still lists it.
    // The consumer stops for good: the evaluator fires again. Then it is killed: another
    // node leads the controller and evaluates, starting afresh (its own `for_ms`), so it
    // fires once more; the rules are cluster metadata, so the killed node, restarted, still
    // lists them.
    let events = wait_events(&posts, OFFLINE_RULE, 3).await;
    assert_eq!(
        states(&events),
        ["firing", "resolved", "firing"],
        "{events:?}"
    );
    let evaluator_url = endpoints
        .iter()
        .find(|e| e.node == evaluator)
        .map(|e| e.url.clone())
        .expect("the evaluator's URL");
    tokio::task::block_in_place(|| cluster.kill9(evaluator).expect("kill the evaluator"));
    let events = wait_events(&posts, OFFLINE_RULE, 4).await;
    assert_eq!(
        states(&events),
        ["firing", "resolved", "firing", "firing"],
        "{events:?}"
    );
    let successor = events[3]["node"].as_u64().expect("a node");
    assert_ne!(successor, evaluator, "a new evaluator: {events:?}");
    tokio::task::block_in_place(|| {
        cluster
            .restart(evaluator)
            .expect("the killed node starts again")
    });
    tokio::time::sleep(QUIET).await;
    let events = of_rule(&verified_events(&posts), OFFLINE_RULE);
    assert_eq!(
        events.len(),
        4,
        "one evaluator after the change: {events:?}"
    );
    for url in &urls {
        wait_for(&http, url, "/v1/alerts", |a| {
            a["alerts"]
                .as_array()
                .is_some_and(|alerts| alerts.iter().any(|a| a["rule"] == OFFLINE_RULE))
        })
        .await;
    }
    wait_for(
        &http,
        &evaluator_url,
        &format!("/v1/alerts/rules/{RULE}"),
        |r| r["name"] == RULE && r["threshold"].as_f64() == Some(THRESHOLD as f64),
    )
    .await;

    // A delete through any node removes it everywhere.
    let reply = http
        .delete(format!("{}/v1/alerts/rules/{RULE}", urls[2]))
        .send()
        .await
        .expect("an answer");
    assert_eq!(reply.status().as_u16(), 204, "delete");
    for url in &urls {
        wait_for(&http, url, "/v1/alerts/rules", |a| !lists_rule(a)).await;
    }
    drop(cluster);
}
