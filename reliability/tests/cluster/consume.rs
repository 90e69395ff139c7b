//! Consuming from a real three-process cluster (the `wharf` binary): a
//! subscription created on one node, messages of a three-partition topic (its partitions led
//! by different nodes) produced as one batch on another, which splits it by leader and
//! answers in request order, received on a third, which gathers from every partition's
//! leader, and acked on the first, which sends each receipt to its partition's leader.
//! Nothing is lost and nothing acked comes back, until a seek on any node moves every
//! partition back at its leader. Every node describes a subscription with the same figures,
//! its partitions' leaders' summed.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::harness::{Cluster, ClusterSpec, Endpoint, wharf_binary};

use crate::api_calls::{create_topic, leaders_within, post, post_when_ready_within};
use crate::serial::CLUSTERS;

const TOPIC: &str = "spread";
const MESSAGES: usize = 60;
/// A stream's lease: long enough for an ack to reach its leader on a busy machine, short
/// enough that a message whose ack did not settle it comes back while the test watches.
const STREAM_LEASE_MS: u64 = 6_000;

/// How long a call is asked again while the answer is 503 (the nodes are still registering,
/// or a group is electing).
const READY_WAIT: Duration = Duration::from_secs(15);

/// [`post`], again while the answer is 503, for up to [`READY_WAIT`].
async fn post_when_ready(http: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    post_when_ready_within(http, url, body, READY_WAIT).await
}

/// Produces `batch` at `url` (again while the answer is 503, as [`post_when_ready`]); the
/// `Wharf-Durability` header and the reply.
async fn produce_batch(http: &reqwest::Client, url: &str, batch: &[Value]) -> (String, Value) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let reply = http
            .post(url)
            .json(&json!({ "messages": batch }))
            .send()
            .await
            .expect("an answer");
        let status = reply.status().as_u16();
        let durability = reply
            .headers()
            .get("wharf-durability")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body: Value = reply.json().await.unwrap_or(Value::Null);
        if status == 200 {
            return (durability, body);
        }
        assert!(
            status == 503 && Instant::now() < deadline,
            "produce: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A three-node cluster with topic [`TOPIC`] (three partitions, not all led by one node) and
/// its subscription `all` from the earliest message.
struct Spread {
    cluster: Cluster,
    /// Node ids and base URLs.
    nodes: Vec<Endpoint>,
    http: reqwest::Client,
}

impl Spread {
    async fn start() -> Self {
        let (cluster, http) = three_nodes(["a", "b", "c"]);
        let nodes = cluster.endpoints();
        let urls: Vec<String> = nodes.iter().map(|e| e.url.clone()).collect();

        create_topic(
            &http,
            &urls[0],
            json!({"name": TOPIC, "partitions": 3}),
            &urls[1],
            &[json!({"name": "all", "start": "earliest", "ack_timeout_ms": 30000})],
            READY_WAIT,
        )
        .await;
        let spread = Spread {
            cluster,
            nodes,
            http,
        };
        // Gathering is what these tests are about: once every partition has a leader, if one
        // node leads all three (elections are independent), move partition 1's leadership
        // away.
        let leaders = spread.leaders().await;
        if leaders.iter().all(|l| *l == leaders[0]) {
            let other = if leaders[0] == 1 { 2 } else { 1 };
            let (status, body) = post_when_ready(
                &spread.http,
                format!("{}/v1/cluster/partitions/{TOPIC}/1/leader", urls[0]),
                json!({ "node": other }),
            )
            .await;
            assert_eq!(status, 200, "move partition 1's leader: {body}");
        }
        spread
    }

    fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|e| e.url.clone()).collect()
    }

    /// Each partition's leader, once every partition has one (up to 15 s).
    async fn leaders(&self) -> Vec<u64> {
        leaders_seen(&self.http, &self.nodes[2].url, TOPIC).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receive_on_any_node_gathers_every_partition_and_acks_reach_their_leaders() {
    let _alone = CLUSTERS.write().await;
    let spread = Spread::start().await;
    let (urls, http) = (spread.urls(), spread.http.clone());

    // One batch whose keys span every partition, to one node: it splits the batch by leader
    // and answers in request order.
    let batch: Vec<Value> = (0..MESSAGES)
        .map(|i| json!({"key": format!("k{i}"), "value": format!("m{i}"), "id": format!("id-{i}")}))
        .collect();
    let produce_url = format!("{}/v1/topics/{TOPIC}/messages", urls[1]);
    // A batch with one bad message (an empty key) is refused whole before any share is
    // sent: had a share been stored (its messages have no ids, so nothing dedups them), its
    // values would be delivered twice below.
    let mut bad: Vec<Value> = (0..MESSAGES)
        .map(|i| json!({"key": format!("k{i}"), "value": format!("m{i}")}))
        .collect();
    bad[MESSAGES - 1] = json!({"key": "", "value": "bad"});
    let (status, body) =
        post_when_ready(&http, produce_url.clone(), json!({ "messages": bad })).await;
    assert_eq!(status, 400, "a batch with a bad message: {body}");
    let (durability, produced) = produce_batch(&http, &produce_url, &batch).await;
    assert!(
        durability.starts_with("replicated"),
        "Wharf-Durability: {durability}"
    );
    let entries = produced["messages"].as_array().expect("messages");
    assert_eq!(entries.len(), MESSAGES, "{produced}");
    let mut placed = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        assert_eq!(
            entry["id"],
            format!("id-{i}"),
            "entry {i} out of order: {produced}"
        );
        let partition = entry["partition"].as_u64().expect("partition");
        let offset = entry["offset"].as_u64().expect("offset");
        placed.push((partition, offset));
    }
    let partitions: BTreeSet<u64> = placed.iter().map(|(p, _)| *p).collect();
    assert_eq!(partitions.len(), 3, "the keys spread over every partition");
    // The same batch again, through another node: every id is a duplicate, answered with its
    // first place.
    let again_url = format!("{}/v1/topics/{TOPIC}/messages", urls[2]);
    let (_, again) = produce_batch(&http, &again_url, &batch).await;
    for (i, entry) in again["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .enumerate()
    {
        assert_eq!(entry["duplicate"], true, "{entry}");
        let place = (entry["partition"].as_u64(), entry["offset"].as_u64());
        assert_eq!(place, (Some(placed[i].0), Some(placed[i].1)), "{entry}");
    }

    let mut seen = BTreeSet::new();
    let mut from = BTreeSet::new();
    let mut receipts = Vec::new();
    let mut receives = 0;
    while seen.len() < MESSAGES && receives < 20 {
        receives += 1;
        // The first receive asks for fewer than there are leaders' messages: the leaders
        // asked at once share it, and never hand out more.
        let max = if receives == 1 { 2 } else { 100 };
        let (status, body) = post(
            &http,
            format!("{}/v1/topics/{TOPIC}/subscriptions/all/receive", urls[2]),
            json!({"max_messages": max, "wait_ms": 2000}),
        )
        .await;
        assert_eq!(status, 200, "receive: {body}");
        let messages = body["messages"].as_array().expect("messages");
        assert!(messages.len() <= max, "asked for {max}: {body}");
        for message in messages {
            let value = message["value"].as_str().expect("value").to_owned();
            eprintln!(
                "receive {receives}: {value} partition {} offset {} attempt {}",
                message["partition"], message["offset"], message["delivery_attempt"]
            );
            assert!(seen.insert(value.clone()), "{value} delivered twice");
            let place = (
                message["partition"].as_u64().expect("partition"),
                message["offset"].as_u64().expect("offset"),
            );
            let index = placed
                .iter()
                .position(|p| *p == place)
                .expect("a produced place");
            assert_eq!(
                value,
                format!("m{index}"),
                "the reply's entry {index} names {place:?}"
            );
            from.insert(message["partition"].as_u64().expect("partition"));
            receipts.push(message["receipt"].as_str().expect("receipt").to_owned());
        }
    }
    assert_eq!(seen.len(), MESSAGES, "after {receives} receives");
    assert_eq!(from.len(), 3, "gathered from every partition");

    let (status, body) = post(
        &http,
        format!("{}/v1/topics/{TOPIC}/subscriptions/all/ack", urls[0]),
        json!({ "receipts": receipts }),
    )
    .await;
    assert_eq!(status, 200, "ack: {body}");
    assert_eq!(body["acked"], MESSAGES, "{body}");
    assert_eq!(body["failed"], json!([]), "{body}");
    // Acking again: every receipt is settled now.
    let (status, body) = post(
        &http,
        format!("{}/v1/topics/{TOPIC}/subscriptions/all/ack", urls[2]),
        json!({ "receipts": receipts }),
    )
    .await;
    assert_eq!(status, 200, "second ack: {body}");
    assert_eq!(body["acked"], 0, "{body}");

    let (status, body) = post(
        &http,
        format!("{}/v1/topics/{TOPIC}/subscriptions/all/receive", urls[1]),
        json!({"max_messages": 100, "wait_ms": 1000}),
    )
    .await;
    assert_eq!(status, 200, "receive: {body}");
    assert_eq!(body["messages"], json!([]), "acked messages came back");

    // A seek on any node moves every partition, each at its leader: everything comes back.
    let (status, body) = post(
        &http,
        format!("{}/v1/topics/{TOPIC}/subscriptions/all/seek", urls[0]),
        json!({"to": "earliest"}),
    )
    .await;
    assert_eq!(status, 200, "seek: {body}");
    assert_eq!(body["positions"], json!({"0": 0, "1": 0, "2": 0}), "{body}");
    let mut again = BTreeSet::new();
    for _ in 0..20 {
        if again.len() == MESSAGES {
            break;
        }
        let (status, body) = post(
            &http,
            format!("{}/v1/topics/{TOPIC}/subscriptions/all/receive", urls[1]),
            json!({"max_messages": 100, "wait_ms": 2000}),
        )
        .await;
        assert_eq!(status, 200, "receive after the seek: {body}");
        for message in body["messages"].as_array().expect("messages") {
            again.insert(message["value"].as_str().expect("value").to_owned());
        }
    }
    assert_eq!(again, seen, "replayed after the seek");
    drop(spread.cluster);
}

/// One SSE `message` event's data: the message's value and receipt, and its partition.
#[derive(Debug)]
struct Streamed {
    value: String,
    receipt: String,
    partition: u64,
}

/// Reads `stream` for up to `wait` (or until the stream ends): the `message` events whose
/// ends arrived, in order. `buffer` holds a part of an event that has not ended yet.
async fn read_events(
    stream: &mut reqwest::Response,
    buffer: &mut String,
    wait: Duration,
) -> Vec<Streamed> {
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;
    while let Ok(chunk) = tokio::time::timeout_at(deadline, stream.chunk()).await {
        let Some(chunk) = chunk.expect("the stream reads") else {
            break;
        };
        buffer.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let mut kind = "message";
            let mut data = String::new();
            for line in event.lines() {
                if let Some(name) = line.strip_prefix("event:") {
                    kind = name.trim_start();
                } else if let Some(text) = line.strip_prefix("data:") {
                    data.push_str(text.trim_start());
                }
            }
            assert_ne!(kind, "error", "the stream failed: {data}");
            if kind != "message" || data.is_empty() {
                continue;
            }
            let message: Value = serde_json::from_str(&data).expect("a JSON message");
            events.push(Streamed {
                value: message["value"].as_str().expect("value").to_owned(),
                receipt: message["receipt"].as_str().expect("receipt").to_owned(),
                partition: message["partition"].as_u64().expect("partition"),
            });
        }
        if !events.is_empty() {
            break;
        }
    }
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_on_any_node_delivers_every_partition_and_acks_on_another_node_settle_it() {
    let _alone = CLUSTERS.write().await;
    let spread = Spread::start().await;
    let (urls, http) = (spread.urls(), spread.http.clone());
    let leaders = spread.leaders().await;
    // The stream's node leads the fewest partitions: at least one is led elsewhere.
    let (index, streamer) = spread
        .nodes
        .iter()
        .enumerate()
        .min_by_key(|(_, e)| leaders.iter().filter(|l| **l == e.node).count())
        .expect("three nodes");
    let led_elsewhere: BTreeSet<u64> = (0..3u64)
        .filter(|p| leaders[*p as usize] != streamer.node)
        .collect();
    assert!(!led_elsewhere.is_empty(), "leaders {leaders:?}");
    let (produce_on, ack_on) = (&urls[(index + 1) % 3], &urls[(index + 2) % 3]);

    // A short lease: a receipt whose ack did not reach its leader comes back while we watch.
    let stream_url = format!(
        "{}/v1/topics/{TOPIC}/subscriptions/all/stream?max_in_flight=10&ack_timeout_ms={STREAM_LEASE_MS}&heartbeat_ms=500",
        streamer.url
    );
    let mut stream = http
        .get(stream_url)
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .expect("the stream opens");
    assert_eq!(stream.status().as_u16(), 200, "stream");

    let batch: Vec<Value> = (0..MESSAGES)
        .map(|i| json!({"key": format!("k{i}"), "value": format!("m{i}"), "id": format!("id-{i}")}))
        .collect();
    produce_batch(
        &http,
        &format!("{produce_on}/v1/topics/{TOPIC}/messages"),
        &batch,
    )
    .await;

    let mut seen = BTreeSet::new();
    let mut from = BTreeSet::new();
    let mut buffer = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.len() < MESSAGES && Instant::now() < deadline {
        let events = read_events(&mut stream, &mut buffer, Duration::from_secs(2)).await;
        let mut receipts = Vec::new();
        let read_at = Instant::now();
        for event in events {
            assert!(
                seen.insert(event.value.clone()),
                "{} delivered twice",
                event.value
            );
            from.insert(event.partition);
            receipts.push(event.receipt);
        }
        if receipts.is_empty() {
            continue;
        }
        let (status, body) = post(
            &http,
            format!("{ack_on}/v1/topics/{TOPIC}/subscriptions/all/ack"),
            json!({ "receipts": receipts }),
        )
        .await;
        assert_eq!(status, 200, "ack: {body}");
        assert_eq!(
            body["acked"],
            receipts.len(),
            "{body} (ack answered {:?} after the events were read)",
            read_at.elapsed()
        );
    }
    assert_eq!(seen.len(), MESSAGES, "streamed within 30 s");
    let expected: BTreeSet<String> = (0..MESSAGES).map(|i| format!("m{i}")).collect();
    assert_eq!(seen, expected);
    assert!(
        from.is_superset(&led_elsewhere),
        "partitions led elsewhere {led_elsewhere:?}, streamed from {from:?}"
    );

    // Past the lease: an ack that had not settled its message would see it again.
    let watch = Duration::from_millis(STREAM_LEASE_MS + 1_000);
    let late = read_events(&mut stream, &mut buffer, watch).await;
    let late: Vec<&str> = late.iter().map(|e| e.value.as_str()).collect();
    assert!(late.is_empty(), "acked messages came back: {late:?}");
    drop(stream);
    let (status, body) = post(
        &http,
        format!(
            "{}/v1/topics/{TOPIC}/subscriptions/all/receive",
            urls[index]
        ),
        json!({"max_messages": 100, "wait_ms": 1000}),
    )
    .await;
    assert_eq!(status, 200, "receive: {body}");
    assert_eq!(body["messages"], json!([]), "acked messages came back");
    drop(spread.cluster);
}

/// Three nodes in `zones`, ready, and a client for them.
fn three_nodes(zones: [&str; 3]) -> (Cluster, reqwest::Client) {
    let cluster = tokio::task::block_in_place(|| {
        let mut spec = ClusterSpec::new(wharf_binary(), 3);
        spec.zones = zones.iter().map(|z| (*z).to_owned()).collect();
        Cluster::start(spec).expect("three nodes start")
    });
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    (cluster, http)
}

/// The leader of each partition of `topic` (in partition order) as node `url` knows it,
/// once all have one (up to 15 s).
async fn leaders_seen(http: &reqwest::Client, url: &str, topic: &str) -> Vec<u64> {
    leaders_within(http, url, topic, Duration::from_secs(15)).await
}

/// Once `topic`'s partitions have leaders, moves partition `p`'s leadership to node
/// `leaders[p]` (through the first of `urls`) and waits until every node sees them so.
async fn lead_partitions(http: &reqwest::Client, urls: &[String], topic: &str, leaders: &[u64]) {
    leaders_seen(http, &urls[0], topic).await;
    for (partition, node) in leaders.iter().enumerate() {
        let (status, body) = post_when_ready(
            http,
            format!(
                "{}/v1/cluster/partitions/{topic}/{partition}/leader",
                urls[0]
            ),
            json!({ "node": node }),
        )
        .await;
        assert_eq!(status, 200, "move partition {partition}'s leader: {body}");
    }
    for url in urls {
        let deadline = Instant::now() + Duration::from_secs(15);
        while leaders_seen(http, url, topic).await != leaders {
            assert!(
                Instant::now() < deadline,
                "{url} never saw the moved leaders"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// An offset read at `url` (again while the answer is 503, for up to 15 s): the node that
/// served it (`Wharf-Served-By`) and the page.
async fn offset_read(http: &reqwest::Client, url: &str) -> (Option<u64>, Value) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let reply = http.get(url).send().await.expect("an answer");
        let status = reply.status().as_u16();
        let served_by = reply
            .headers()
            .get("wharf-served-by")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let body: Value = reply.json().await.unwrap_or(Value::Null);
        if status == 200 {
            return (served_by, body);
        }
        assert!(
            status == 503 && Instant::now() < deadline,
            "offset read: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Zones a, a, b. Partition 0 is led by node 3 (zone b), partition 1 by node 1 (zone a), so
/// node 2 (zone a) leads nothing: its unkeyed messages, raw and batched, go to partition 1
/// (led in its zone, not partition 0 as when zones were ignored), node 3's to partition 0
/// (led there), an offset read of partition 0 on node 2 is served there (an in-sync
/// follower) with the leader's records, a receive on node 2 takes partition 1's first and
/// partition 0's once partition 1 has no more, and a keyed message still goes to its key's
/// partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unkeyed_messages_stay_in_the_producing_nodes_zone() {
    const ZONED: &str = "zoned";
    let _alone = CLUSTERS.write().await;
    let (cluster, http) = three_nodes(["a", "a", "b"]);
    let urls: Vec<String> = cluster.endpoints().into_iter().map(|e| e.url).collect();
    create_topic(
        &http,
        &urls[0],
        json!({"name": ZONED, "partitions": 2}),
        &urls[0],
        &[json!({"name": "near", "start": "earliest"})],
        READY_WAIT,
    )
    .await;
    lead_partitions(&http, &urls, ZONED, &[3, 1]).await;

    let partitions_of = |reply: &Value| -> Vec<u64> {
        reply["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| m["partition"].as_u64().expect("partition"))
            .collect()
    };
    for (node, expected) in [(1usize, 1u64), (2, 1), (3, 0)] {
        let url = format!("{}/v1/topics/{ZONED}/messages", urls[node - 1]);
        for i in 0..4 {
            let reply = http
                .post(&url)
                .header("content-type", "application/octet-stream")
                .body(format!("n{node}-raw-{i}"))
                .send()
                .await
                .expect("an answer");
            assert_eq!(reply.status().as_u16(), 200, "raw produce on node {node}");
            let reply: Value = reply.json().await.expect("json");
            assert_eq!(partitions_of(&reply), [expected], "node {node}: {reply}");
        }
        let batch: Vec<Value> = (0..6)
            .map(|i| json!({"value": format!("n{node}-batch-{i}")}))
            .collect();
        let (_, reply) = produce_batch(&http, &url, &batch).await;
        assert_eq!(partitions_of(&reply), [expected; 6], "node {node}: {reply}");
    }
    // An offset read of partition 0 (led by node 3, zone b) on node 2 (zone a, a follower in
    // sync) is served by node 2 itself, not forwarded to zone b, with the leader's records.
    let read_url = |node: usize| {
        format!(
            "{}/v1/topics/{ZONED}/partitions/0/messages?offset=0&max=1000",
            urls[node - 1]
        )
    };
    let (served_by, from_leader) = offset_read(&http, &read_url(3)).await;
    assert_eq!(served_by, Some(3), "the leader serves its own read");
    assert_eq!(
        from_leader["messages"].as_array().map(Vec::len),
        Some(10),
        "node 3's raw and batched messages: {from_leader}"
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (served_by, page) = offset_read(&http, &read_url(2)).await;
        if served_by == Some(2) && page["messages"] == from_leader["messages"] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node 2 never served the leader's records itself: by {served_by:?}, {page}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A receive on node 2 takes from the leader in its zone (node 1, partition 1) first, and
    // from the other zone's only for what that one did not have.
    let receive_url = format!("{}/v1/topics/{ZONED}/subscriptions/near/receive", urls[1]);
    let (status, body) = post(
        &http,
        receive_url.clone(),
        json!({"max_messages": 10, "wait_ms": 2000}),
    )
    .await;
    assert_eq!(status, 200, "receive: {body}");
    assert_eq!(partitions_of(&body), [1; 10], "nearby first: {body}");
    let mut from_far = 0;
    for _ in 0..10 {
        let (status, body) = post(
            &http,
            receive_url.clone(),
            json!({"max_messages": 100, "wait_ms": 1000}),
        )
        .await;
        assert_eq!(status, 200, "receive: {body}");
        from_far += partitions_of(&body).iter().filter(|p| **p == 0).count();
        if from_far >= 10 {
            break;
        }
    }
    assert!(
        from_far >= 10,
        "the other zone's partition is fallen back to once nearby is empty"
    );

    // A keyed message goes to its key's partition whatever the zone: find a key of each.
    let keyed: Vec<Value> = (0..8)
        .map(|i| json!({"key": format!("k{i}"), "value": "keyed"}))
        .collect();
    let url = format!("{}/v1/topics/{ZONED}/messages", urls[1]);
    let (_, reply) = produce_batch(&http, &url, &keyed).await;
    let spread: BTreeSet<u64> = partitions_of(&reply).into_iter().collect();
    assert_eq!(
        spread.len(),
        2,
        "keys reach both partitions from node 2: {reply}"
    );
    drop(cluster);
}

/// The stats of subscription `sub` of `topic` as node `url` describes it and as it lists it.
async fn described_and_listed(
    http: &reqwest::Client,
    url: &str,
    topic: &str,
    sub: &str,
) -> (Value, Value) {
    let base = format!("{url}/v1/topics/{topic}/subscriptions");
    let get = |url: String| async move {
        let reply = http.get(url).send().await.expect("an answer");
        assert_eq!(reply.status().as_u16(), 200, "describe or list");
        reply.json::<Value>().await.expect("json")
    };
    let described = get(format!("{base}/{sub}")).await;
    let listed = get(base).await;
    let listed = listed["subscriptions"]
        .as_array()
        .and_then(|subs| subs.iter().find(|s| s["name"] == sub))
        .map(|s| s["stats"].clone())
        .unwrap_or(Value::Null);
    (described["stats"].clone(), listed)
}

/// The figures every node must agree on (the oldest unacked age is a moment's).
fn agreed(stats: &Value) -> Value {
    json!({
        "backlog": stats["backlog"],
        "in_flight": stats["in_flight"],
        "delivered": stats["delivered"],
        "acked": stats["acked"],
        "delayed": stats["delayed"],
        "unacked": !stats["oldest_unacked_age_ms"].is_null(),
    })
}

/// Until every node describes and lists the subscription of `topic` named as it with
/// `expected` figures (up to 15 s: an ack's effect reaches the leaders' tables as it commits).
async fn every_node_agrees(http: &reqwest::Client, urls: &[String], topic: &str, expected: Value) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let mut seen = Vec::new();
        for url in urls {
            let (described, listed) = described_and_listed(http, url, topic, topic).await;
            seen.push((url.clone(), agreed(&described), agreed(&listed)));
        }
        if seen
            .iter()
            .all(|(_, d, l)| *d == expected && *l == expected)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "expected {expected} on every node, saw {seen:#?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Three nodes, a topic of three partitions on two replicas each (so each node lacks one
/// partition, and leads some or none): a subscription's figures are each partition's as its
/// leader has them, so every node describes and lists the same backlog, in-flight, delivered,
/// acked and delayed counts, before and after the acks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_describes_a_subscription_with_its_leaders_figures() {
    const COUNTED: &str = "counted";
    const RECEIVED: usize = 20;
    let _alone = CLUSTERS.write().await;
    let spread = Spread::start().await;
    let (urls, http) = (spread.urls(), spread.http.clone());
    create_topic(
        &http,
        &urls[0],
        json!({"name": COUNTED, "partitions": 3, "replication_factor": 2}),
        &urls[1],
        &[json!({"name": COUNTED, "start": "earliest", "ack_timeout_ms": 60000})],
        READY_WAIT,
    )
    .await;
    eprintln!(
        "leaders of {COUNTED}: {:?}",
        leaders_seen(&http, &urls[2], COUNTED).await
    );

    let mut batch: Vec<Value> = (0..MESSAGES)
        .map(|i| json!({"key": format!("k{i}"), "value": format!("m{i}")}))
        .collect();
    batch.push(json!({"key": "k0", "value": "later", "delay_ms": 600_000}));
    produce_batch(
        &http,
        &format!("{}/v1/topics/{COUNTED}/messages", urls[0]),
        &batch,
    )
    .await;

    let mut receipts = Vec::new();
    for _ in 0..20 {
        if receipts.len() >= RECEIVED {
            break;
        }
        let (status, body) = post(
            &http,
            format!(
                "{}/v1/topics/{COUNTED}/subscriptions/{COUNTED}/receive",
                urls[2]
            ),
            json!({"max_messages": RECEIVED - receipts.len(), "wait_ms": 1000}),
        )
        .await;
        assert_eq!(status, 200, "receive: {body}");
        for message in body["messages"].as_array().expect("messages") {
            receipts.push(message["receipt"].as_str().expect("receipt").to_owned());
        }
    }
    assert_eq!(receipts.len(), RECEIVED);
    let received = RECEIVED as u64;
    every_node_agrees(
        &http,
        &urls,
        COUNTED,
        json!({"backlog": MESSAGES, "in_flight": received, "delivered": received,
            "acked": 0, "delayed": 1, "unacked": true}),
    )
    .await;

    let (status, body) = post(
        &http,
        format!(
            "{}/v1/topics/{COUNTED}/subscriptions/{COUNTED}/ack",
            urls[1]
        ),
        json!({ "receipts": receipts }),
    )
    .await;
    assert_eq!(status, 200, "ack: {body}");
    assert_eq!(body["acked"], RECEIVED, "{body}");
    every_node_agrees(
        &http,
        &urls,
        COUNTED,
        json!({"backlog": MESSAGES as u64 - received, "in_flight": 0, "delivered": received,
            "acked": received, "delayed": 1, "unacked": true}),
    )
    .await;
    drop(spread.cluster);
}

/// Zones a, a, b and a partition of two replicas, one in each zone, led in zone b: an offset
/// read on the zone-a node holding no replica is served by the zone-a replica (a follower
/// in sync), not the leader in zone b, with the leader's records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offset_read_goes_to_a_replica_in_the_nodes_zone_before_a_far_leader() {
    const NEAR: &str = "near";
    let _alone = CLUSTERS.write().await;
    let (cluster, http) = three_nodes(["a", "a", "b"]);
    let urls: Vec<String> = cluster.endpoints().into_iter().map(|e| e.url).collect();
    create_topic(
        &http,
        &urls[0],
        json!({"name": NEAR, "partitions": 1, "replication_factor": 2}),
        &urls[0],
        &[],
        READY_WAIT,
    )
    .await;
    leaders_seen(&http, &urls[0], NEAR).await;
    let view: Value = http
        .get(format!("{}/v1/cluster", urls[0]))
        .send()
        .await
        .expect("cluster view")
        .json()
        .await
        .expect("json");
    let replicas: Vec<u64> = view["partitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["topic"] == NEAR)
        .flat_map(|p| p["replicas"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r["node"].as_u64())
        .collect();
    // Placement spreads the two replicas over both zones: node 3 and one of nodes 1, 2.
    assert!(replicas.contains(&3), "replicas {replicas:?}: {view}");
    let near_replica = *replicas
        .iter()
        .find(|n| **n != 3)
        .expect("a replica in zone a");
    let outsider = if near_replica == 1 { 2 } else { 1 };
    let (status, body) = post_when_ready(
        &http,
        format!("{}/v1/cluster/partitions/{NEAR}/0/leader", urls[0]),
        json!({ "node": 3 }),
    )
    .await;
    assert_eq!(status, 200, "move the leader to zone b: {body}");
    let deadline = Instant::now() + Duration::from_secs(15);
    while leaders_seen(&http, &urls[outsider as usize - 1], NEAR).await != [3] {
        assert!(
            Instant::now() < deadline,
            "node {outsider} never saw node 3 lead"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let batch: Vec<Value> = (0..5).map(|i| json!({"value": format!("v{i}")})).collect();
    produce_batch(
        &http,
        &format!("{}/v1/topics/{NEAR}/messages", urls[2]),
        &batch,
    )
    .await;
    let read_url = |node: u64| {
        format!(
            "{}/v1/topics/{NEAR}/partitions/0/messages?offset=0&max=1000",
            urls[node as usize - 1]
        )
    };
    let (served_by, from_leader) = offset_read(&http, &read_url(3)).await;
    assert_eq!(served_by, Some(3));
    assert_eq!(from_leader["messages"].as_array().map(Vec::len), Some(5));
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (served_by, page) = offset_read(&http, &read_url(outsider)).await;
        if served_by == Some(near_replica) && page["messages"] == from_leader["messages"] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node {outsider}'s read was never served by node {near_replica}: by {served_by:?}, {page}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(cluster);
}

/// Zones a, a, a (every leader is near). Node 1 leads partition 0, node 2 partition 1. A
/// backlog on node 1's partition fills every receive on node 1, yet a message that reaches
/// partition 1 is handed out by node 1's receives before that backlog drains: node 1 asks
/// its zone's other leaders first when it has not asked one for 50 ms
/// (`gateway::fanout::gather_looks`). It used to ask them only for what its own partitions left,
/// which with a backlog was nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_on_the_receiving_nodes_partition_starves_no_other_partition() {
    const FAIR: &str = "fair";
    const BACKLOG: usize = 200;
    const ASK: usize = 10;
    let _alone = CLUSTERS.write().await;
    let (cluster, http) = three_nodes(["a", "a", "a"]);
    let urls: Vec<String> = cluster.endpoints().into_iter().map(|e| e.url).collect();
    let (status, body) = post_when_ready(
        &http,
        format!("{}/v1/topics", urls[0]),
        json!({"name": FAIR, "partitions": 2}),
    )
    .await;
    assert_eq!(status, 201, "create topic: {body}");
    lead_partitions(&http, &urls, FAIR, &[1, 2]).await;

    // Which keys go to which partition: a probe before the subscription, which starts after
    // it (and would skip any probe it saw: values are checked below).
    let messages_url = format!("{}/v1/topics/{FAIR}/messages", urls[0]);
    let probe: Vec<Value> = (0..16)
        .map(|i| json!({"key": format!("k{i}"), "value": "probe"}))
        .collect();
    let (_, probed) = produce_batch(&http, &messages_url, &probe).await;
    let key_of = |partition: u64| -> String {
        let placed = probed["messages"].as_array().expect("messages");
        let index = placed
            .iter()
            .position(|m| m["partition"] == partition)
            .unwrap_or_else(|| panic!("no probe key went to partition {partition}: {probed}"));
        format!("k{index}")
    };
    let (status, body) = post_when_ready(
        &http,
        format!("{}/v1/topics/{FAIR}/subscriptions", urls[0]),
        json!({"name": "fair", "start": "latest", "ack_timeout_ms": 60000}),
    )
    .await;
    assert_eq!(status, 201, "create subscription: {body}");
    let backlog: Vec<Value> = (0..BACKLOG)
        .map(|i| json!({"key": key_of(0), "value": format!("local-{i}")}))
        .collect();
    produce_batch(&http, &messages_url, &backlog).await;

    let receive_url = format!("{}/v1/topics/{FAIR}/subscriptions/fair/receive", urls[0]);
    let receive = || async {
        let (status, body) = post(
            &http,
            receive_url.clone(),
            json!({"max_messages": ASK, "wait_ms": 0}),
        )
        .await;
        assert_eq!(status, 200, "receive: {body}");
        let values: Vec<String> = body["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| m["value"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(values.len() <= ASK, "more than asked: {body}");
        values
    };
    // Node 1 learns that node 2's partition is empty, and its own backlog fills the ask.
    let first = receive().await;
    assert!(first.iter().all(|v| v.starts_with("local-")), "{first:?}");
    let mut local = first.len();
    produce_batch(
        &http,
        &messages_url,
        &[json!({"key": key_of(1), "value": "remote"})],
    )
    .await;
    let mut receives = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let values = receive().await;
        receives += 1;
        if values.iter().any(|v| v == "remote") {
            break;
        }
        local += values.iter().filter(|v| v.starts_with("local-")).count();
        assert!(
            local < BACKLOG,
            "partition 1's message waited until node 1's backlog of {BACKLOG} drained \
             ({receives} receives of {ASK}, 20 ms apart)"
        );
    }
    assert!(local < BACKLOG, "handed out only with the backlog drained");
    drop(cluster);
}
