//! R10, clock skew, against real `wharf` processes: one node's wall clock is skewed through the
//! testing hook `WHARF_TEST_CLOCK_OFFSET_FILE` (a file of signed milliseconds that the node
//! re-reads every 50 ms), and judged by the test's own clock, which is the true one.
//!
//! - Two three-node clusters, node 3 skewed: one starts at +30 s and jumps to -30 s mid-run,
//!   the other starts at -30 s and jumps to +30 s. In each, messages are received with a lease
//!   and delayed messages (`delay_ms`) are produced through the skewed node and through a
//!   correct one, to partitions led by either; then node 3's clock jumps. Counted: delayed
//!   messages delivered more than [`EARLY_TOLERANCE`] before `delay_ms` after their produce
//!   was sent (early), or not within [`LATE_BOUND`] after it (late); leased messages delivered
//!   again, or whose ack failed, before their lease's real end (spurious lease expiries);
//!   partitions whose observed leader changed (the skew and jump alone must not move one).
//! - One single node with HS256 auth and [`LEEWAY_SECS`] leeway, at +30 s then -30 s: a token
//!   expired by the node's clock by less than the leeway is accepted, one expired beyond it
//!   refused with 401 (tokens judged by the system clock instead count as misjudged).
//!
//! One report line, `R10 clock-skew`, with those counts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wharf_reliability::case::CaseLine;
use wharf_reliability::event::{NodeId, Partition};
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};

use crate::cluster::{self, SETTLE_TIMEOUT, http_client, leader_in, three_nodes_with, topic_view};
use crate::serial::serially;

/// The testing hook a node reads its clock offset from (broker_core::clock::OFFSET_FILE_VAR).
const OFFSET_FILE_VAR: &str = "WHARF_TEST_CLOCK_OFFSET_FILE";
/// The skewed node.
const SKEWED: NodeId = 3;
/// The skew, ms: the case's ±30 s.
const SKEW_MS: i64 = 30_000;
/// How much earlier than due a delayed message may arrive (the case's tolerance).
const EARLY_TOLERANCE: Duration = Duration::from_secs(1);
/// How much later than due a delayed message must have arrived: generous for a loaded
/// two-core machine, far below the 60 s a jump would add.
const LATE_BOUND: Duration = Duration::from_secs(10);
/// `delay_ms` of every delayed message: long enough for the jump to happen while it waits.
const DELAY: Duration = Duration::from_secs(5);
/// The lease of the received messages, `ack_timeout_ms`: the jump and the checks fit in it.
const LEASE: Duration = Duration::from_secs(10);
/// When the leased messages are acked, after their receive: after the jump, within the lease.
const ACK_AFTER: Duration = Duration::from_secs(5);
/// When node 3's clock jumps, after the delayed messages were produced.
const JUMP_AFTER: Duration = Duration::from_secs(1);
/// Messages of each kind, keyed `k0`, `k1`…: enough keys that each partition gets some
/// through each entry node.
const MESSAGES: usize = 24;
const TOPIC: &str = "clock";
const PARTITIONS: u32 = 3;
const SUBSCRIPTION: &str = "s";
/// The auth leeway of the JWT node, s.
const LEEWAY_SECS: u64 = 10;
/// How far inside or beyond the leeway the tokens' expiry is, s: whole seconds and the
/// offset file's re-read period cannot blur it.
const TOKEN_MARGIN_SECS: u64 = 4;
/// The JWT node's HS256 secret (at least 32 bytes).
const SECRET: &str = "clock-skew-test-secret-of-32-bytes-or-more";

/// What one cluster run counted.
#[derive(Debug, Default)]
struct Counts {
    delayed: u64,
    early: u64,
    late: u64,
    leases: u64,
    spurious_expiries: u64,
    leader_changes: u64,
    /// (entry node skewed, leader skewed) combinations the delayed messages covered.
    routes: BTreeSet<(bool, bool)>,
}

/// What the JWT run counted.
#[derive(Debug, Default)]
struct TokenCounts {
    checked: u64,
    misjudged: u64,
}

#[test]
fn a_skewed_or_jumping_clock_delivers_nothing_early_expires_no_lease_early_and_moves_no_leader() {
    serially(async {
        let started = Instant::now();
        let forward = skewed_cluster_run(-SKEW_MS, SKEW_MS).await;
        eprintln!("start -30 s, jump to +30 s: {forward:?}");
        let backward = skewed_cluster_run(SKEW_MS, -SKEW_MS).await;
        eprintln!("start +30 s, jump to -30 s: {backward:?}");
        let tokens = token_run().await;
        eprintln!("JWT at ±30 s: {tokens:?}");
        let runs = [&forward, &backward];
        let sum = |f: fn(&Counts) -> u64| runs.iter().map(|c| f(c)).sum::<u64>();
        let (delayed, early, late) = (sum(|c| c.delayed), sum(|c| c.early), sum(|c| c.late));
        let (leases, spurious) = (sum(|c| c.leases), sum(|c| c.spurious_expiries));
        let changes = sum(|c| c.leader_changes);
        CaseLine::new("R10", "clock-skew")
            .figure("skew", "node 3 at ±30 s, jumps of ±60 s")
            .must_be_zero("early deliveries > 1 s", early, delayed)
            .must_be_zero("late deliveries > 10 s", late, delayed)
            .must_be_zero("spurious lease expiries", spurious, leases)
            .must_be_zero("leader changes", changes, 2 * u64::from(PARTITIONS))
            .must_be_zero("tokens misjudged", tokens.misjudged, tokens.checked)
            .figure("wall s", started.elapsed().as_secs())
            .record();
        for (name, run) in [("forward jump", &forward), ("backward jump", &backward)] {
            assert!(
                run.routes.len() == 4,
                "{name}: delayed messages covered only (through skewed, led by skewed) {:?}",
                run.routes
            );
            assert!(
                run.leases > 0,
                "{name}: no lease on the skewed node's partition"
            );
        }
        assert_eq!(
            early, 0,
            "delayed messages delivered early: {forward:?} {backward:?}"
        );
        assert_eq!(
            late, 0,
            "delayed messages delivered late: {forward:?} {backward:?}"
        );
        assert_eq!(
            spurious, 0,
            "leases expired early: {forward:?} {backward:?}"
        );
        assert_eq!(changes, 0, "leaders moved: {forward:?} {backward:?}");
        assert_eq!(tokens.misjudged, 0, "tokens misjudged: {tokens:?}");
        assert!(tokens.checked > 0);
    });
}

/// Writes `offset_ms` as the skewed node's clock offset.
fn set_offset(file: &Path, offset_ms: i64) {
    std::fs::write(file, offset_ms.to_string()).expect("writing the clock offset file");
}

/// A three-node cluster with node 3 at `start_ms`, jumping to `jump_ms` mid-run.
async fn skewed_cluster_run(start_ms: i64, jump_ms: i64) -> Counts {
    let offsets = tempfile::tempdir().expect("a folder for the offset file");
    let offset_file = offsets.path().join("offset-ms");
    set_offset(&offset_file, start_ms);
    let cluster = three_nodes_with(|spec| {
        spec.node_env.push((
            SKEWED,
            OFFSET_FILE_VAR.into(),
            offset_file.display().to_string(),
        ))
    });
    let http = http_client(Duration::from_secs(5));
    let urls: BTreeMap<NodeId, String> = cluster
        .node_ids()
        .into_iter()
        .map(|id| (id, cluster.url(id).expect("a node's URL")))
        .collect();
    let correct = urls[&1].clone();
    let skewed = urls[&SKEWED].clone();
    create_topic(&http, &correct).await;
    let leaders = skewed_leads_one(&cluster, &http, &correct).await;
    let watch = LeaderWatch::start(&cluster, leaders.clone());
    let mut counts = Counts::default();

    // Leases: every plain message is received with a LEASE-long lease.
    for i in 0..MESSAGES {
        let url = if i % 2 == 0 { &skewed } else { &correct };
        produce(&http, url, &format!("plain-{i}"), &format!("k{i}"), None).await;
    }
    let mut leased: BTreeMap<String, (String, Partition)> = BTreeMap::new();
    let leased_at = Instant::now();
    while leased.len() < MESSAGES && leased_at.elapsed() < SETTLE_TIMEOUT {
        for message in receive(&http, &correct).await {
            leased.insert(message.id, (message.receipt, message.partition));
        }
    }
    assert_eq!(
        leased.len(),
        MESSAGES,
        "not every plain message was received"
    );
    counts.leases = leased.len() as u64;

    // Delayed messages, through the skewed node and through a correct one.
    let mut due: BTreeMap<String, (Instant, bool)> = BTreeMap::new();
    let mut routes: BTreeMap<String, (bool, Partition)> = BTreeMap::new();
    for i in 0..MESSAGES {
        let through_skewed = i % 2 == 0;
        let url = if through_skewed { &skewed } else { &correct };
        let value = format!("delayed-{i}");
        let sent = Instant::now();
        let partition = produce(&http, url, &value, &format!("k{}", i + 1), Some(DELAY)).await;
        let led_by_skewed = leaders.get(&partition) == Some(&SKEWED);
        counts.routes.insert((through_skewed, led_by_skewed));
        routes.insert(value.clone(), (through_skewed, partition));
        due.insert(value, (sent + DELAY, false));
    }
    counts.delayed = due.len() as u64;

    // The jump, then deliveries until every delayed message came or LATE_BOUND passed.
    tokio::time::sleep(JUMP_AFTER).await;
    set_offset(&offset_file, jump_ms);
    let mut acked_leases = false;
    let last_due = due
        .values()
        .map(|(at, _)| *at)
        .max()
        .unwrap_or_else(Instant::now);
    while Instant::now() < last_due + LATE_BOUND && due.values().any(|(_, seen)| !seen) {
        if !acked_leases && leased_at.elapsed() >= ACK_AFTER {
            counts.spurious_expiries += ack_leases(&http, &correct, &leased).await;
            acked_leases = true;
        }
        for message in receive(&http, &correct).await {
            let now = Instant::now();
            if let Some((at, seen)) = due.get_mut(&message.id) {
                if !*seen && now + EARLY_TOLERANCE < *at {
                    eprintln!(
                        "{} delivered {:?} early (partition {})",
                        message.id,
                        *at - now,
                        message.partition
                    );
                    counts.early += 1;
                }
                *seen = true;
                ack(&http, &correct, &[message.receipt]).await;
            } else if leased.contains_key(&message.id) && leased_at.elapsed() < LEASE {
                eprintln!(
                    "{} delivered again {:?} into its {LEASE:?} lease (partition {})",
                    message.id,
                    leased_at.elapsed(),
                    message.partition
                );
                counts.spurious_expiries += 1;
            }
        }
    }
    if !acked_leases {
        counts.spurious_expiries += ack_leases(&http, &correct, &leased).await;
    }
    for (value, _) in due.iter().filter(|(_, (_, seen))| !seen) {
        let (through_skewed, partition) = routes[value];
        eprintln!(
            "{value} not delivered (partition {partition}, through the skewed node: {through_skewed})"
        );
        counts.late += 1;
    }
    if counts.late > 0 {
        for id in cluster.node_ids() {
            let view = topic_view(&cluster, id, TOPIC).await;
            eprintln!(
                "node {id}: {}",
                view.map(|v| v["partition_stats"].to_string())
                    .unwrap_or_default()
            );
        }
        let sub = http
            .get(format!(
                "{correct}/v1/topics/{TOPIC}/subscriptions/{SUBSCRIPTION}"
            ))
            .send()
            .await;
        if let Ok(sub) = sub {
            eprintln!("subscription: {:?}", sub.text().await);
        }
    }
    counts.leader_changes = watch.stop().await;
    drop(cluster);
    counts
}

/// Acks every leased message; counts the acks refused (a lease that ended early).
async fn ack_leases(
    http: &reqwest::Client,
    url: &str,
    leased: &BTreeMap<String, (String, Partition)>,
) -> u64 {
    let receipts: Vec<String> = leased.values().map(|(r, _)| r.clone()).collect();
    let acked = ack(http, url, &receipts).await;
    eprintln!("acked {acked} of {} leases", receipts.len());
    receipts.len() as u64 - acked
}

/// Creates the topic (three replicas) and its subscription, with a [`LEASE`] ack timeout,
/// retrying while the cluster still elects its controller.
async fn create_topic(http: &reqwest::Client, url: &str) {
    let topic =
        serde_json::json!({ "name": TOPIC, "partitions": PARTITIONS, "replication_factor": 3 });
    post_until_created(http, &format!("{url}/v1/topics"), &topic).await;
    let subscription = serde_json::json!({
        "name": SUBSCRIPTION,
        "start": "earliest",
        "ack_timeout_ms": LEASE.as_millis() as u64,
        "max_deliveries": 100,
    });
    let subscriptions = format!("{url}/v1/topics/{TOPIC}/subscriptions");
    post_until_created(http, &subscriptions, &subscription).await;
}

/// POSTs `body` to `url` until it is answered 2xx (at most [`SETTLE_TIMEOUT`]).
async fn post_until_created(http: &reqwest::Client, url: &str, body: &serde_json::Value) {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let reply = http.post(url).json(body).send().await;
        match reply {
            Ok(r) if r.status().is_success() => return,
            Ok(r) if Instant::now() > deadline => panic!("{url}: {:?}", r.text().await),
            Err(e) if Instant::now() > deadline => panic!("{url}: {e}"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Waits until every node names a leader for every partition; returns node 1's view.
async fn wait_leaders(cluster: &Cluster) -> BTreeMap<Partition, NodeId> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let mut views = Vec::new();
        for id in cluster.node_ids() {
            let Some(view) = topic_view(cluster, id, TOPIC).await else {
                break;
            };
            let leaders: Option<BTreeMap<Partition, NodeId>> = (0..PARTITIONS)
                .map(|p| leader_in(&view, p).map(|l| (p, l)))
                .collect();
            views.push(leaders);
        }
        if views.len() == cluster.node_ids().len()
            && views.iter().all(|v| v.is_some() && *v == views[0])
            && let Some(leaders) = views[0].clone()
        {
            return leaders;
        }
        assert!(Instant::now() < deadline, "no agreed leaders: {views:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The partitions' leaders once node 3 leads one and a correct node another: if node 3 leads
/// none, the last partition moves to it; if all, the first moves to node 1 (before anything
/// is measured).
async fn skewed_leads_one(
    cluster: &Cluster,
    http: &reqwest::Client,
    url: &str,
) -> BTreeMap<Partition, NodeId> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let leaders = wait_leaders(cluster).await;
        let skewed = leaders.values().filter(|l| **l == SKEWED).count();
        if skewed > 0 && skewed < leaders.len() {
            eprintln!("leaders {leaders:?}");
            return leaders;
        }
        assert!(
            Instant::now() < deadline,
            "node {SKEWED} leads no partition or all: {leaders:?}"
        );
        let (partition, to) = if skewed == 0 {
            (PARTITIONS - 1, SKEWED)
        } else {
            (0, 1)
        };
        let moved = http
            .post(format!(
                "{url}/v1/cluster/partitions/{TOPIC}/{partition}/leader"
            ))
            .json(&serde_json::json!({ "node": to }))
            .send()
            .await
            .map(|r| r.status());
        eprintln!("leaders {leaders:?}: moving partition {partition} to node {to}: {moved:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Produces one message (`ack=all`, its value as its id), retrying an election's 503; returns
/// its partition.
async fn produce(
    http: &reqwest::Client,
    url: &str,
    value: &str,
    key: &str,
    delay: Option<Duration>,
) -> Partition {
    let mut message = serde_json::json!({ "value": value, "key": key, "id": value });
    if let Some(delay) = delay {
        message["delay_ms"] = (delay.as_millis() as u64).into();
    }
    let body = serde_json::json!({ "messages": [message] });
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let reply = http
            .post(format!("{url}/v1/topics/{TOPIC}/messages"))
            .query(&[("ack", "all")])
            .json(&body)
            .send()
            .await;
        if let Ok(reply) = reply
            && reply.status().is_success()
            && let Ok(json) = reply.json::<serde_json::Value>().await
            && let Some(partition) = json["messages"][0]["partition"].as_u64()
        {
            return partition as Partition;
        }
        assert!(
            Instant::now() < deadline,
            "produce of {value} never succeeded"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One received message.
struct Received {
    id: String,
    receipt: String,
    partition: Partition,
}

/// One receive of up to 100 messages, waiting at most half a second, with a [`LEASE`] lease.
/// A call that fails (a timeout on a loaded machine) is repeated with the same `attempt_id`
/// until answered (at most [`SETTLE_TIMEOUT`]), so the messages it leased are not missed.
async fn receive(http: &reqwest::Client, url: &str) -> Vec<Received> {
    let body = serde_json::json!({
        "max_messages": 100,
        "wait_ms": 500,
        "ack_timeout_ms": LEASE.as_millis() as u64,
        "attempt_id": format!("a{}", rand::random::<u64>()),
    });
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let reply = http
            .post(format!(
                "{url}/v1/topics/{TOPIC}/subscriptions/{SUBSCRIPTION}/receive"
            ))
            .json(&body)
            .send()
            .await;
        let json = match reply {
            Ok(reply) if reply.status().is_success() => reply.json::<serde_json::Value>().await,
            Ok(reply) => {
                eprintln!("receive answered {}", reply.status());
                return Vec::new();
            }
            Err(error) => Err(error),
        };
        match json {
            Ok(json) => return received(&json),
            Err(error) if Instant::now() < deadline => eprintln!("receive again: {error}"),
            Err(error) => panic!("receive never answered: {error}"),
        }
    }
}

/// The messages of a receive's answer.
fn received(json: &serde_json::Value) -> Vec<Received> {
    json["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter_map(|m| {
                    Some(Received {
                        id: m["id"].as_str()?.to_owned(),
                        receipt: m["receipt"].as_str()?.to_owned(),
                        partition: m["partition"].as_u64()? as Partition,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Acks `receipts`; returns how many were acked.
async fn ack(http: &reqwest::Client, url: &str, receipts: &[String]) -> u64 {
    let reply = http
        .post(format!(
            "{url}/v1/topics/{TOPIC}/subscriptions/{SUBSCRIPTION}/ack"
        ))
        .json(&serde_json::json!({ "receipts": receipts }))
        .send()
        .await;
    match reply {
        Ok(reply) => {
            let json: serde_json::Value = reply.json().await.unwrap_or_default();
            if let Some(failed) = json["failed"].as_array()
                && !failed.is_empty()
            {
                eprintln!("acks refused: {failed:?}");
            }
            json["acked"].as_u64().unwrap_or(0)
        }
        Err(error) => {
            eprintln!("ack: {error}");
            0
        }
    }
}

/// Polls every partition's leader as node 1 sees it, counting changes from the first view.
struct LeaderWatch {
    stop: Arc<AtomicBool>,
    changes: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl LeaderWatch {
    fn start(cluster: &Cluster, first: BTreeMap<Partition, NodeId>) -> LeaderWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let changes = Arc::new(AtomicU64::new(0));
        let url = cluster.url(1).expect("node 1");
        let (stopped, counted) = (stop.clone(), changes.clone());
        let task = tokio::spawn(async move {
            let http = http_client(cluster::STATUS_TIMEOUT);
            let mut last = first;
            while !stopped.load(Ordering::SeqCst) {
                if let Ok(reply) = http.get(format!("{url}/v1/topics/{TOPIC}")).send().await
                    && let Ok(view) = reply.json::<serde_json::Value>().await
                {
                    for partition in 0..PARTITIONS {
                        if let Some(leader) = leader_in(&view, partition)
                            && last.insert(partition, leader) != Some(leader)
                        {
                            eprintln!("partition {partition}: leader now {leader}");
                            counted.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        LeaderWatch {
            stop,
            changes,
            task,
        }
    }

    async fn stop(self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        let _finished = self.task.await;
        self.changes.load(Ordering::SeqCst)
    }
}

/// The true Unix time, s.
fn true_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An HS256 token expiring at `exp` (Unix s), with every grant.
fn token(exp: u64) -> String {
    let claims = serde_json::json!({ "sub": "clock", "exp": exp, "scope": "admin:*" });
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .expect("a token")
}

/// A single node with HS256 auth, at +30 s then -30 s: at each, a token expired by the
/// node's clock by less than the leeway must be accepted, one beyond it refused.
async fn token_run() -> TokenCounts {
    let offsets = tempfile::tempdir().expect("a folder for the offset file");
    let offset_file = offsets.path().join("offset-ms");
    set_offset(&offset_file, SKEW_MS);
    let mut spec = ClusterSpec::new(wharf_binary(), 1);
    spec.extra_args = vec![
        "--auth-hs256-secret".into(),
        SECRET.into(),
        "--auth-leeway-secs".into(),
        LEEWAY_SECS.to_string(),
    ];
    spec.node_env
        .push((1, OFFSET_FILE_VAR.into(), offset_file.display().to_string()));
    let node = tokio::task::block_in_place(|| Cluster::start(spec)).expect("the JWT node starts");
    let url = node.url(1).expect("its URL");
    let http = http_client(Duration::from_secs(5));
    let mut counts = TokenCounts::default();
    for offset_ms in [SKEW_MS, -SKEW_MS] {
        set_offset(&offset_file, offset_ms);
        // The node reads the file again within 50 ms.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let node_now = true_secs().saturating_add_signed(offset_ms / 1000);
        let within = node_now - (LEEWAY_SECS - TOKEN_MARGIN_SECS);
        let beyond = node_now - (LEEWAY_SECS + TOKEN_MARGIN_SECS);
        for (exp, accepted) in [(within, true), (beyond, false)] {
            let reply = http
                .get(format!("{url}/v1/topics"))
                .bearer_auth(token(exp))
                .send()
                .await
                .expect("the JWT node answers");
            let was_accepted = reply.status().as_u16() != 401;
            counts.checked += 1;
            if was_accepted != accepted {
                eprintln!(
                    "node at {offset_ms:+} ms: token expired {} s ago by its clock answered {}",
                    node_now - exp,
                    reply.status()
                );
                counts.misjudged += 1;
            }
        }
    }
    counts
}
