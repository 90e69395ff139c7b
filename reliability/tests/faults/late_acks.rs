//! S8, retried control messages, against a real `wharf` process (the Kafka transaction
//! lesson: a control message delayed in the network must not act on what came after it).
//!
//! Every message is received once through a proxy with a short lease; its ack, nack or extend
//! is sent through a second proxy that holds it; the lease ends and the message is delivered
//! again with a new receipt; only then is the held request let through. It must fail with
//! `receipt_invalid`, and the newer delivery must be untouched: acked at once it acks, left
//! alone it comes back once more when its own lease ends. Acks go alone and in batches, nacks
//! ask for a one-minute redelivery delay and extends for a one-minute lease, so that one
//! applied to the newer delivery shows.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::case::CaseLine;
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};

use crate::cluster::http_client;
use crate::holding_proxy::HoldingProxy;
use crate::serial::CLUSTERS;

const TOPIC: &str = "late";
const SUB: &str = "workers";
/// Two partitions, so a batch of receipts spans both.
const PARTITIONS: u32 = 2;
/// Messages, each with one late control request.
const MESSAGES: usize = 50;
/// The first lease, which the held requests outlive: long enough that every message is
/// received before the first of them ends, on a loaded machine.
const FIRST_LEASE_MS: u64 = 2_000;
/// The newer delivery's lease: the late requests land well inside it.
const SECOND_LEASE_MS: u64 = 3_000;
/// The lease of the third delivery, which the test acks: it must not end before the ack.
const LAST_LEASE_MS: u64 = 30_000;
/// The retry backoff after a lease ends, short to keep the test to seconds.
const BACKOFF_MS: u64 = 100;
/// What a late nack or extend asks for: a minute, so one applied to the newer delivery keeps
/// it from coming back within [`COME_BACK_TIMEOUT`].
const LATE_DELAY_MS: u64 = 60_000;
/// Bound on receiving every message of one round of deliveries.
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(15);
/// Bound on a newer delivery coming back after its lease: its lease, the backoff and room.
const COME_BACK_TIMEOUT: Duration = Duration::from_secs(15);
/// Bound on each HTTP call, held ones included (they are held for about two leases).
const CALL_TIMEOUT: Duration = Duration::from_secs(25);
/// Bound on every late request reaching the holding proxy.
const HELD_TIMEOUT: Duration = Duration::from_secs(5);

/// What a late request asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Ack,
    Nack,
    Extend,
}

impl Kind {
    fn path(self) -> &'static str {
        match self {
            Kind::Ack => "ack",
            Kind::Nack => "nack",
            Kind::Extend => "extend",
        }
    }

    /// The reply's count of receipts that took effect.
    fn count_field(self) -> &'static str {
        match self {
            Kind::Ack => "acked",
            Kind::Nack => "nacked",
            Kind::Extend => "extended",
        }
    }

    fn body(self, receipts: &[String]) -> Value {
        match self {
            Kind::Ack => json!({ "receipts": receipts }),
            Kind::Nack => json!({ "receipts": receipts, "delay_ms": LATE_DELAY_MS }),
            Kind::Extend => json!({ "receipts": receipts, "ack_timeout_ms": LATE_DELAY_MS }),
        }
    }
}

/// One late request: its kind and the messages (by index) whose first receipts it carries.
#[derive(Debug, Clone)]
struct LateRequest {
    kind: Kind,
    messages: Vec<usize>,
}

/// The late requests: every fifth message acked alone, two in five acked in batches of four,
/// one in five nacked in pairs, one in five extended in threes.
fn plan_requests() -> Vec<LateRequest> {
    let mut groups: BTreeMap<(Kind, usize), Vec<usize>> = BTreeMap::new();
    let mut alone = 0;
    for message in 0..MESSAGES {
        let (kind, batch) = match message % 5 {
            0 => {
                alone += 1;
                (Kind::Ack, alone)
            }
            1 | 2 => (Kind::Ack, MESSAGES + message / 10),
            3 => (Kind::Nack, message / 10),
            _ => (Kind::Extend, message / 15),
        };
        groups.entry((kind, batch)).or_default().push(message);
    }
    groups
        .into_iter()
        .map(|((kind, _), messages)| LateRequest { kind, messages })
        .collect()
}

/// Whether the newer delivery of `message` is checked by waiting for it to come back (else by
/// acking it at once). An extend applied to the newer delivery would not stop its ack, so every
/// extended message is checked by waiting.
fn checked_by_coming_back(message: usize, kind: Kind) -> bool {
    kind == Kind::Extend || message % 2 == 1
}

/// POSTs `body` and returns the status and the JSON body (`Null` if it is not JSON).
async fn post(http: &reqwest::Client, url: &str, body: &Value) -> Result<(u16, Value), String> {
    let reply = http
        .post(url)
        .json(body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = reply.status().as_u16();
    Ok((status, reply.json().await.unwrap_or(Value::Null)))
}

async fn post_ok(http: &reqwest::Client, url: &str, body: &Value) -> Value {
    match post(http, url, body).await {
        Ok((200 | 201, reply)) => reply,
        other => panic!("POST {url}: {other:?}"),
    }
}

fn sub_url(base: &str, action: &str) -> String {
    format!("{base}/v1/topics/{TOPIC}/subscriptions/{SUB}/{action}")
}

/// A delivery as the test tracks it.
#[derive(Debug, Clone)]
struct Delivery {
    receipt: String,
    attempt: u64,
    /// When the receive that returned it was sent: its lease ends after this plus the lease.
    asked_at: Instant,
}

/// Receives through `base` with lease `lease_ms` until every message of `wanted` came back,
/// or `timeout` passed; returns each message's delivery (a message delivered twice keeps the
/// later one) and every message delivered that was not wanted.
async fn receive(
    http: &reqwest::Client,
    base: &str,
    wanted: &BTreeSet<usize>,
    lease_ms: u64,
    timeout: Duration,
) -> (BTreeMap<usize, Delivery>, Vec<usize>) {
    let deadline = Instant::now() + timeout;
    let (mut got, mut unwanted) = (BTreeMap::new(), Vec::new());
    while got.len() < wanted.len() && Instant::now() < deadline {
        let asked_at = Instant::now();
        let body = json!({ "max_messages": MESSAGES, "wait_ms": 500, "ack_timeout_ms": lease_ms });
        let Ok((200, reply)) = post(http, &sub_url(base, "receive"), &body).await else {
            continue;
        };
        for message in reply["messages"].as_array().into_iter().flatten() {
            let index = message["value"]
                .as_str()
                .and_then(|v| v.strip_prefix("late-"))
                .and_then(|i| i.parse::<usize>().ok())
                .unwrap_or_else(|| panic!("a message of the test: {message}"));
            let delivery = Delivery {
                receipt: message["receipt"].as_str().expect("receipt").to_owned(),
                attempt: message["delivery_attempt"].as_u64().expect("attempt"),
                asked_at,
            };
            if wanted.contains(&index) {
                got.insert(index, delivery);
            } else {
                unwanted.push(index);
            }
        }
    }
    (got, unwanted)
}

/// A late request, what came back (status and body, or why none) and when.
type LateReply = (LateRequest, Result<(u16, Value), String>, Instant);

/// What the late requests came back with.
#[derive(Debug, Default)]
struct LateOutcome {
    /// Messages whose late request the reply counts as taken effect.
    applied: BTreeSet<usize>,
    /// Messages whose late receipt failed with `receipt_invalid`.
    invalid: u64,
    /// Requests answered other than 200, with what came back.
    unanswered: Vec<String>,
    /// Messages whose late request was answered while their newer lease still held.
    inside_newer_lease: u64,
}

/// Sends every late request through `settles` (held), concurrently; the tasks finish once the
/// proxy lets them through.
fn send_late(
    http: &reqwest::Client,
    settles: &str,
    requests: &[LateRequest],
    first: &BTreeMap<usize, Delivery>,
) -> tokio::task::JoinSet<LateReply> {
    let mut tasks = tokio::task::JoinSet::new();
    for request in requests {
        let receipts: Vec<String> = request
            .messages
            .iter()
            .map(|m| first[m].receipt.clone())
            .collect();
        let (http, request) = (http.clone(), request.clone());
        let url = sub_url(settles, request.kind.path());
        tasks.spawn(async move {
            let reply = post(&http, &url, &request.kind.body(&receipts)).await;
            (request, reply, Instant::now())
        });
    }
    tasks
}

/// Collects the late replies and judges each receipt in them.
async fn late_outcome(
    mut tasks: tokio::task::JoinSet<LateReply>,
    first: &BTreeMap<usize, Delivery>,
    second: &BTreeMap<usize, Delivery>,
) -> LateOutcome {
    let mut outcome = LateOutcome::default();
    while let Some(joined) = tasks.join_next().await {
        let (request, reply, answered_at) = joined.expect("a late request task");
        let reply = match reply {
            Ok((200, reply)) => reply,
            other => {
                outcome.unanswered.push(format!("{request:?}: {other:?}"));
                continue;
            }
        };
        let failed: BTreeMap<&str, &str> = reply["failed"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| Some((f["receipt"].as_str()?, f["code"].as_str()?)))
            .collect();
        let counted = reply[request.kind.count_field()].as_u64();
        if counted != Some((request.messages.len() - failed.len()) as u64) {
            outcome.unanswered.push(format!("{request:?}: {reply}"));
        }
        for message in &request.messages {
            match failed.get(first[message].receipt.as_str()) {
                None => {
                    outcome.applied.insert(*message);
                }
                Some(&"receipt_invalid") => outcome.invalid += 1,
                Some(code) => outcome.unanswered.push(format!("{message}: {code}")),
            }
            let lease = Duration::from_millis(SECOND_LEASE_MS);
            if answered_at < second[message].asked_at + lease {
                outcome.inside_newer_lease += 1;
            }
        }
    }
    outcome
}

/// The node's address, from its URL `http://IP:port`.
fn node_addr(cluster: &Cluster) -> SocketAddr {
    let url = cluster.url(1).expect("node 1");
    url.trim_start_matches("http://")
        .parse()
        .expect("an IP:port URL")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_ack_nack_or_extend_never_settles_the_newer_delivery() {
    let _alone = CLUSTERS.write().await;
    let cluster = tokio::task::block_in_place(|| {
        Cluster::start(ClusterSpec::new(wharf_binary(), 1)).expect("a node starts")
    });
    let node = cluster.url(1).expect("node 1");
    let deliveries = HoldingProxy::start(node_addr(&cluster))
        .await
        .expect("proxy");
    let settles = HoldingProxy::start(node_addr(&cluster))
        .await
        .expect("proxy");
    let http = http_client(CALL_TIMEOUT);
    let topic = json!({ "name": TOPIC, "partitions": PARTITIONS });
    post_ok(&http, &format!("{node}/v1/topics"), &topic).await;
    let subscription = json!({ "name": SUB, "start": "earliest",
        "ack_timeout_ms": FIRST_LEASE_MS, "retry": { "initial_backoff_ms": BACKOFF_MS } });
    let subscriptions = format!("{node}/v1/topics/{TOPIC}/subscriptions");
    post_ok(&http, &subscriptions, &subscription).await;
    let messages: Vec<Value> = (0..MESSAGES)
        .map(|i| json!({ "value": format!("late-{i}") }))
        .collect();
    let produce = format!("{node}/v1/topics/{TOPIC}/messages");
    post_ok(&http, &produce, &json!({ "messages": messages })).await;

    let all: BTreeSet<usize> = (0..MESSAGES).collect();
    let (first, _) = receive(
        &http,
        &deliveries.url(),
        &all,
        FIRST_LEASE_MS,
        RECEIVE_TIMEOUT,
    )
    .await;
    assert_eq!(first.len(), MESSAGES, "every message delivered once");
    assert!(first.values().all(|d| d.attempt == 1), "{first:?}");

    settles.hold();
    let requests = plan_requests();
    let late = send_late(&http, &settles.url(), &requests, &first);
    assert!(
        settles.wait_held(requests.len(), HELD_TIMEOUT).await,
        "{} of {} late requests held at the proxy",
        settles.held(),
        requests.len()
    );
    let held_at = Instant::now();
    let (second, _) = receive(
        &http,
        &deliveries.url(),
        &all,
        SECOND_LEASE_MS,
        RECEIVE_TIMEOUT,
    )
    .await;
    settles.release();
    let held_for = held_at.elapsed();
    assert_eq!(second.len(), MESSAGES, "every message delivered again");
    assert!(second.values().all(|d| d.attempt == 2), "{second:?}");
    let outcome = late_outcome(late, &first, &second).await;

    // The newer deliveries: acked at once, or left to come back when their lease ends.
    let kind_of: BTreeMap<usize, Kind> = requests
        .iter()
        .flat_map(|r| r.messages.iter().map(move |m| (*m, r.kind)))
        .collect();
    let (waited, acked_now): (BTreeSet<usize>, BTreeSet<usize>) = all
        .iter()
        .partition(|m| checked_by_coming_back(**m, kind_of[m]));
    let newer: Vec<&str> = acked_now
        .iter()
        .map(|m| second[m].receipt.as_str())
        .collect();
    let acked = post_ok(&http, &sub_url(&node, "ack"), &json!({ "receipts": newer })).await;
    let mut newer_settled: BTreeSet<usize> = acked_now
        .iter()
        .copied()
        .filter(|m| {
            let receipt = &second[m].receipt;
            reply_failed(&acked, receipt)
        })
        .collect();
    let (third, unexpected) = receive(
        &http,
        &deliveries.url(),
        &waited,
        LAST_LEASE_MS,
        COME_BACK_TIMEOUT,
    )
    .await;
    newer_settled.extend(waited.iter().filter(|m| !third.contains_key(m)));
    let wrong_attempts: Vec<(usize, u64)> = third
        .iter()
        .filter(|(_, d)| d.attempt != 3)
        .map(|(m, d)| (*m, d.attempt))
        .collect();
    let last: Vec<&str> = third.values().map(|d| d.receipt.as_str()).collect();
    let last_acked = if last.is_empty() {
        0
    } else {
        post_ok(&http, &sub_url(&node, "ack"), &json!({ "receipts": last })).await["acked"]
            .as_u64()
            .unwrap_or(0)
    };

    let stats_url = format!("{node}/v1/topics/{TOPIC}/subscriptions/{SUB}");
    let stats: Value = http
        .get(stats_url)
        .send()
        .await
        .expect("subscription stats")
        .json()
        .await
        .expect("stats JSON");
    let applied: BTreeSet<usize> = outcome.applied.union(&newer_settled).copied().collect();
    let per_kind = |kind: Kind| kind_of.values().filter(|k| **k == kind).count();
    CaseLine::new("S8", "late-ack")
        .must_be_zero(
            "late acks applied to a newer lease",
            applied.len() as u64,
            MESSAGES as u64,
        )
        .figure(
            "late requests",
            format!(
                "{} carrying {MESSAGES} receipts ({} in acks, {} in nacks, {} in extends), held {:.1} s",
                requests.len(),
                per_kind(Kind::Ack),
                per_kind(Kind::Nack),
                per_kind(Kind::Extend),
                held_for.as_secs_f64()
            ),
        )
        .figure(
            "answered receipt_invalid",
            format!("{} of {MESSAGES}", outcome.invalid),
        )
        .figure(
            "newer deliveries checked",
            format!(
                "{} acked at once, {} came back",
                acked_now.len(),
                third.len()
            ),
        )
        .record();
    assert!(applied.is_empty(), "late requests applied: {applied:?}");
    assert!(outcome.unanswered.is_empty(), "{:?}", outcome.unanswered);
    assert_eq!(outcome.invalid, MESSAGES as u64, "{outcome:?}");
    assert_eq!(
        outcome.inside_newer_lease, MESSAGES as u64,
        "late requests answered after the newer lease ended: the case was not exercised"
    );
    assert!(wrong_attempts.is_empty(), "{wrong_attempts:?}");
    assert!(
        unexpected.is_empty(),
        "acked messages came back: {unexpected:?}"
    );
    assert_eq!(
        last_acked,
        waited.len() as u64,
        "every third delivery acked"
    );
    assert_eq!(deliveries.held() + settles.held(), 0);
    let stats = &stats["stats"];
    assert_eq!(stats["acked"], MESSAGES, "{stats}");
    assert_eq!(stats["in_flight"], 0, "{stats}");
    assert_eq!(stats["backlog"], 0, "{stats}");
}

/// Whether `reply` (to an ack) lists `receipt` as failed.
fn reply_failed(reply: &Value, receipt: &str) -> bool {
    reply["failed"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|f| f["receipt"] == receipt)
}
