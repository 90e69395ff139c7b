//! The message trace on a cluster with more nodes than the replication factor: three
//! in-process nodes and a topic of three partitions with one replica each, so every node
//! lacks some partitions. Keyed messages are produced across the partitions and some are
//! received and acked; then every node is asked for every message by id (as an admin and as
//! a consume-only token) and for every key, and each answers as the partition's holder does:
//! the same partition, offset, subscription states and events, principals for the admin
//! only. An unknown id is a 404 from every node; with a holder's public port down, a lookup
//! there is a 503, never a false 404.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cluster_common::{
    Node, SETTLE, client_from, post_when_ready, start_cluster, stop_cluster,
};
use crate::support::edge_common::token;

const NODES: u64 = 3;
const TOPIC: &str = "orders";
const PARTITIONS: u32 = 3;
const KEYS: usize = 6;
const MESSAGES: usize = 12;
/// Messages received and acked on `billing`; the others stay pending.
const ACKED: usize = 5;

/// The key of the `index`th message: [`KEYS`] keys in turn.
fn key_of(index: usize) -> String {
    format!("k{}", index % KEYS)
}

fn admin() -> String {
    token("ops", "admin:*")
}

fn shop() -> String {
    token("shop", &format!("produce:{TOPIC}"))
}

fn worker() -> String {
    token("worker", &format!("consume:{TOPIC}"))
}

async fn get_as(http: &reqwest::Client, bearer: &str, url: &str) -> (u16, Value) {
    let reply = http
        .get(url)
        .bearer_auth(bearer)
        .send()
        .await
        .expect("an answer");
    let status = reply.status().as_u16();
    (status, reply.json().await.unwrap_or(Value::Null))
}

/// The one replica of each partition of the topic, once every partition has a leader.
async fn holders(http: &reqwest::Client, url: &str) -> Vec<u64> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let (_, view) = get_as(http, &admin(), &format!("{url}/v1/cluster")).await;
        let partitions: Vec<&Value> = view["partitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["topic"] == TOPIC)
            .collect();
        let led: Vec<u64> = partitions
            .iter()
            .filter_map(|p| p["leader"].as_u64())
            .collect();
        if led.len() == PARTITIONS as usize {
            for partition in &partitions {
                let replicas = partition["replicas"].as_array().expect("replicas");
                assert_eq!(replicas.len(), 1, "one replica each: {view}");
                assert_eq!(replicas[0]["node"], partition["leader"], "{view}");
            }
            return led;
        }
        assert!(Instant::now() < deadline, "no leaders named: {view}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Receives and acks `count` messages of `billing` (received through one node, acked
/// through another); returns their ids.
async fn receive_and_ack(http: &reqwest::Client, nodes: &[Node], count: usize) -> BTreeSet<String> {
    let path = format!("/v1/topics/{TOPIC}/subscriptions/billing");
    let mut acked = BTreeSet::new();
    let deadline = Instant::now() + SETTLE;
    while acked.len() < count {
        assert!(Instant::now() < deadline, "received only {acked:?}");
        let ask = json!({"max_messages": count - acked.len(), "wait_ms": 1000});
        let url = format!("{}{path}/receive", nodes[1].url);
        let (status, got) = post_when_ready(http, &worker(), &url, &ask).await;
        assert_eq!(status, 200, "receive: {got}");
        let messages = got["messages"].as_array().expect("messages");
        let receipts: Vec<&Value> = messages.iter().map(|m| &m["receipt"]).collect();
        if receipts.is_empty() {
            continue;
        }
        let url = format!("{}{path}/ack", nodes[2].url);
        let (status, reply) =
            post_when_ready(http, &worker(), &url, &json!({"receipts": receipts})).await;
        assert_eq!(status, 200, "ack: {reply}");
        assert_eq!(reply["acked"], receipts.len(), "{reply}");
        acked.extend(
            messages
                .iter()
                .map(|m| m["id"].as_str().expect("an id").to_owned()),
        );
    }
    acked
}

fn billing(trace: &Value) -> &Value {
    trace["subscriptions"]
        .as_array()
        .and_then(|subs| subs.iter().find(|s| s["name"] == "billing"))
        .unwrap_or(&Value::Null)
}

fn kinds(sub: &Value) -> Vec<&str> {
    sub["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["kind"].as_str())
        .collect()
}

/// The trace of `id` from the node at `url` as `bearer`, once its `billing` state is
/// `state` (events are written without waiting for them), within [`SETTLE`].
async fn trace_when(
    http: &reqwest::Client,
    url: &str,
    bearer: &str,
    id: &str,
    state: &str,
) -> Value {
    let url = format!("{url}/v1/topics/{TOPIC}/messages/{id}");
    let deadline = Instant::now() + SETTLE;
    loop {
        let (status, trace) = get_as(http, bearer, &url).await;
        let settled = match state {
            "acked" => kinds(billing(&trace)) == ["delivered", "acked"],
            _ => kinds(billing(&trace)).is_empty(),
        };
        if status == 200 && billing(&trace)["state"] == state && settled {
            return trace;
        }
        assert!(
            Instant::now() < deadline,
            "{url} never answered {id} as {state}: {status} {trace:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_answers_a_lookup_by_id_or_key_as_the_partitions_holder_does() {
    let dir = tempfile::tempdir().expect("a folder");
    let mut nodes = start_cluster(dir.path(), NODES).await;
    let http = client_from("127.0.0.2");
    let topic = json!({"name": TOPIC, "partitions": PARTITIONS, "replication_factor": 1});
    let url = format!("{}/v1/topics", nodes[0].url);
    let (status, body) = post_when_ready(&http, &admin(), &url, &topic).await;
    assert_eq!(status, 201, "create the topic: {body}");
    let url = format!("{}/v1/topics/{TOPIC}/subscriptions", nodes[0].url);
    let sub = json!({"name": "billing", "start": "earliest"});
    let (status, body) = post_when_ready(&http, &admin(), &url, &sub).await;
    assert_eq!(status, 201, "create the subscription: {body}");
    let holder_of = holders(&http, &nodes[0].url).await;

    let batch: Vec<Value> = (0..MESSAGES)
        .map(|i| json!({"id": format!("m-{i}"), "key": key_of(i), "value": i.to_string()}))
        .collect();
    let url = format!("{}/v1/topics/{TOPIC}/messages", nodes[0].url);
    let (status, body) = post_when_ready(&http, &shop(), &url, &json!({"messages": batch})).await;
    assert_eq!(status, 200, "produce: {body}");
    let produced: BTreeMap<String, (u64, u64)> = body["messages"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|m| {
            let at = (
                m["partition"].as_u64().expect("a partition"),
                m["offset"].as_u64().expect("an offset"),
            );
            (m["id"].as_str().expect("an id").to_owned(), at)
        })
        .collect();
    assert_eq!(produced.len(), MESSAGES, "{body}");
    let acked = receive_and_ack(&http, &nodes, ACKED).await;

    for (id, (partition, offset)) in &produced {
        let holder = holder_of[*partition as usize];
        let state = if acked.contains(id) {
            "acked"
        } else {
            "pending"
        };
        let mut answers = Vec::new();
        for node in &nodes {
            let trace = trace_when(&http, &node.url, &admin(), id, state).await;
            assert_eq!(trace["message"]["id"], id.as_str(), "{trace:#}");
            assert_eq!(
                trace["produced"]["partition"], *partition,
                "node {}: {trace:#}",
                node.id
            );
            assert_eq!(
                trace["produced"]["offset"], *offset,
                "node {}: {trace:#}",
                node.id
            );
            assert_eq!(trace["produced"]["principal"], "shop", "{trace:#}");
            assert_eq!(trace["produced"]["client_addr"], "127.0.0.2", "{trace:#}");
            answers.push((node.id, trace));
        }
        let (_, held) = answers
            .iter()
            .find(|(node, _)| *node == holder)
            .expect("the holder answered");
        for (node, trace) in &answers {
            assert_eq!(trace, held, "node {node} and holder {holder} on {id}");
        }

        for node in &nodes {
            let trace = trace_when(&http, &node.url, &worker(), id, state).await;
            assert_eq!(trace["produced"]["offset"], *offset, "{trace:#}");
            assert_eq!(trace["produced"]["principal"], Value::Null, "{trace:#}");
            assert_eq!(trace["produced"]["client_addr"], Value::Null, "{trace:#}");
            let consumers: Vec<&Value> = billing(&trace)["events"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| &e["consumer"]["principal"])
                .collect();
            assert!(
                consumers.iter().all(|p| p.is_null()),
                "node {}: {trace:#}",
                node.id
            );
        }
    }

    for key in (0..KEYS).map(key_of) {
        let mut expected: Vec<(String, u64, u64)> = (0..MESSAGES)
            .filter(|i| key_of(*i) == key)
            .map(|i| {
                let id = format!("m-{i}");
                let (partition, offset) = produced[&id];
                (id, partition, offset)
            })
            .collect();
        expected.sort_by_key(|(_, _, offset)| std::cmp::Reverse(*offset));
        for node in &nodes {
            for limit in [10, 1] {
                let url = format!(
                    "{}/v1/topics/{TOPIC}/messages?key={key}&limit={limit}",
                    node.url
                );
                let (status, answer) = get_as(&http, &worker(), &url).await;
                assert_eq!(status, 200, "node {} key {key}: {answer}", node.id);
                let listed: Vec<(String, u64, u64)> = answer["messages"]
                    .as_array()
                    .expect("messages")
                    .iter()
                    .map(|m| {
                        let id = m["id"].as_str().expect("an id").to_owned();
                        (
                            id,
                            m["partition"].as_u64().expect("p"),
                            m["offset"].as_u64().expect("o"),
                        )
                    })
                    .collect();
                let wanted: Vec<_> = expected.iter().take(limit).cloned().collect();
                assert_eq!(listed, wanted, "node {} key {key} limit {limit}", node.id);
            }
        }
    }

    for node in &nodes {
        let url = format!("{}/v1/topics/{TOPIC}/messages/no-such-message", node.url);
        let (status, problem) = get_as(&http, &admin(), &url).await;
        assert_eq!(status, 404, "node {}: {problem}", node.id);
        assert_eq!(problem["code"], "message_not_found", "{problem}");
    }

    // A holder whose public port is down: the others cannot say the message is not there.
    let (id, (partition, _)) = produced.iter().next().expect("a message");
    let holder = holder_of[*partition as usize];
    let at = nodes
        .iter()
        .position(|n| n.id == holder)
        .expect("the holder");
    let down = nodes.remove(at);
    let _ = down.stop.send(());
    let _ = down.serving.await;
    for node in &nodes {
        let url = format!("{}/v1/topics/{TOPIC}/messages/{id}", node.url);
        let (status, problem) = get_as(&http, &admin(), &url).await;
        assert_eq!(
            status, 503,
            "node {} with holder {holder} down: {problem}",
            node.id
        );
        assert_eq!(problem["code"], "not_leader", "{problem}");
    }
    stop_cluster(nodes).await;
    down.port.shutdown().await;
    down.broker.shutdown().await;
}
