//! A produce's origin across a cluster forward, on three in-process cluster nodes that talk
//! real HTTP to each other and replicate over the real cluster port: a produce sent to a node
//! that does not lead the partition (a raw one, forwarded whole; a JSON batch, sent on as the
//! leader's share) is stored by the leader with the client's principal, the client's address
//! and the node that took it. A `Wharf-Client-Address` a client sends itself is never
//! believed: not through a node that forwards it, not straight to the leader, not even with a
//! claimed `Wharf-Forwarded`. Each client connects from its own loopback address (127.0.0.2,
//! 127.0.0.3) so that its address is not the nodes' (127.0.0.1).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use broker_core::Origin;
use gateway::fanout::forward::{CLIENT_ADDRESS_HEADER, FORWARDED_HEADER};
use serde_json::{Value, json};

use crate::cluster_common::{
    Node, SETTLE, client_from, post_when_ready, start_cluster, stop_cluster,
};
use crate::support::edge_common;

const NODES: u64 = 3;
const TOPIC: &str = "orders";
/// What a client claims as its address; never stored.
const SPOOFED: &str = "192.0.2.66";

fn alice() -> String {
    edge_common::token("alice", "admin:* produce:*")
}

/// The leader of the topic's one partition, once the cluster names one.
async fn leader(http: &reqwest::Client, url: &str) -> u64 {
    let deadline = Instant::now() + SETTLE;
    loop {
        let view: Value = http
            .get(format!("{url}/v1/cluster"))
            .bearer_auth(alice())
            .send()
            .await
            .expect("an answer")
            .json()
            .await
            .unwrap_or(Value::Null);
        let named = view["partitions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["topic"] == TOPIC)
            .and_then(|p| p["leader"].as_u64());
        if let Some(leader) = named {
            return leader;
        }
        assert!(Instant::now() < deadline, "no leader named: {view}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A raw produce of `value` from `http` to `url` with these extra headers; asserts 200.
async fn produce_raw(http: &reqwest::Client, url: &str, value: &str, headers: &[(&str, &str)]) {
    let mut request = http
        .post(format!("{url}/v1/topics/{TOPIC}/messages"))
        .bearer_auth(alice())
        .header("content-type", "text/plain")
        .body(value.to_owned());
    for (name, header_value) in headers {
        request = request.header(*name, *header_value);
    }
    let reply = request.send().await.expect("an answer");
    let status = reply.status().as_u16();
    let body = reply.text().await.unwrap_or_default();
    assert_eq!(status, 200, "produce {value}: {body}");
}

/// Every record the leader stored, as (value, origin), once `count` are there.
async fn stored_origins(leader: &Node, count: usize) -> BTreeMap<String, Option<Origin>> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let read = leader
            .broker
            .read_partition(TOPIC, 0, 0, 100, 0, None)
            .await
            .expect("the leader reads its partition");
        if read.messages.len() >= count || Instant::now() >= deadline {
            return read
                .messages
                .iter()
                .map(|stored| {
                    let record = &stored.record;
                    let value = String::from_utf8_lossy(&record.value).into_owned();
                    (value, record.origin.as_deref().cloned())
                })
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn origin(address: &str, node: u64) -> Option<Origin> {
    Some(Origin {
        principal: Some("alice".into()),
        address: Some(address.parse().expect("an address")),
        node: Some(node),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_stores_the_clients_address_and_the_node_it_came_through_and_no_spoofed_one() {
    let dir = tempfile::tempdir().expect("a folder");
    let nodes = start_cluster(dir.path(), NODES).await;
    let first = client_from("127.0.0.2");
    let second = client_from("127.0.0.3");
    let topic = json!({ "name": TOPIC, "partitions": 1 });
    let (status, body) = post_when_ready(
        &first,
        &alice(),
        &format!("{}/v1/topics", nodes[0].url),
        &topic,
    )
    .await;
    assert_eq!(status, 201, "create the topic: {body}");
    let leader_id = leader(&first, &nodes[0].url).await;
    let leader = nodes
        .iter()
        .find(|n| n.id == leader_id)
        .expect("the leader");
    let via = nodes
        .iter()
        .find(|n| n.id != leader_id)
        .expect("a follower");

    let spoofing = [(CLIENT_ADDRESS_HEADER, SPOOFED)];
    produce_raw(&first, &via.url, "raw through a follower", &spoofing).await;
    let batch = json!({ "messages": [{ "key": "k", "value": "json through a follower" }] });
    let (status, body) = post_when_ready(
        &first,
        &alice(),
        &format!("{}/v1/topics/{TOPIC}/messages", via.url),
        &batch,
    )
    .await;
    assert_eq!(status, 200, "JSON produce through a follower: {body}");
    produce_raw(&second, &leader.url, "straight to the leader", &spoofing).await;
    let via_id = via.id.to_string();
    let claiming = [
        (FORWARDED_HEADER, via_id.as_str()),
        (CLIENT_ADDRESS_HEADER, SPOOFED),
    ];
    produce_raw(&second, &leader.url, "claiming a forward", &claiming).await;

    let stored = stored_origins(leader, 4).await;
    let expected = BTreeMap::from([
        (
            "raw through a follower".to_owned(),
            origin("127.0.0.2", via.id),
        ),
        (
            "json through a follower".to_owned(),
            origin("127.0.0.2", via.id),
        ),
        (
            "straight to the leader".to_owned(),
            origin("127.0.0.3", leader_id),
        ),
        (
            "claiming a forward".to_owned(),
            origin("127.0.0.3", leader_id),
        ),
    ]);
    assert_eq!(stored, expected);
    stop_cluster(nodes).await;
}
