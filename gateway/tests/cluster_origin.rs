//! A produce's origin across a cluster forward, on three in-process cluster nodes that talk
//! real HTTP to each other and replicate over the real cluster port: a produce sent to a node
//! that does not lead the partition (a raw one, forwarded whole; a JSON batch, sent on as the
//! leader's share) is stored by the leader with the client's principal, the client's address
//! and the node that took it. A `Wharf-Client-Address` a client sends itself is never
//! believed: not through a node that forwards it, not straight to the leader, not even with a
//! claimed `Wharf-Forwarded`. Each client connects from its own loopback address (127.0.0.2,
//! 127.0.0.3) so that its address is not the nodes' (127.0.0.1).

mod edge_common;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use broker_core::{Broker, Origin};
use futures_util::future::join_all;
use gateway::accept::serve_connections;
use gateway::alerts::Alerts;
use gateway::alerts::book::RuleBook;
use gateway::cluster::{ClusterPort, start_node};
use gateway::config::{AlertSettings, ClusterArgs, EdgeRaw, RawSettings};
use gateway::edge::Edge;
use gateway::forward::{CLIENT_ADDRESS_HEADER, FORWARDED_HEADER};
use gateway::{AppState, app};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const NODES: u64 = 3;
const TOPIC: &str = "orders";
const CLUSTER_SECRET: &str = "0123456789abcdef0123456789abcdef";
/// What a client claims as its address; never stored.
const SPOOFED: &str = "192.0.2.66";
/// Bound on the cluster electing a leader and on every request: generous for a loaded
/// two-core machine running three nodes in one process.
const SETTLE: Duration = Duration::from_secs(30);

/// One node: its public URL, its broker (to read what it stored) and what stops it.
struct Node {
    id: u64,
    url: String,
    broker: Arc<Broker>,
    port: ClusterPort,
    stop: oneshot::Sender<()>,
    serving: JoinHandle<()>,
}

fn free_port() -> SocketAddr {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    socket.local_addr().expect("its address")
}

async fn start(
    id: u64,
    public: TcpListener,
    cluster_ports: &[SocketAddr],
    dir: &std::path::Path,
) -> Node {
    let address = public.local_addr().expect("an address");
    let peers: Vec<String> = cluster_ports
        .iter()
        .zip(1..)
        .map(|(port, node)| format!("{node}={port}"))
        .collect();
    let raw = RawSettings {
        listen: Some(address.to_string()),
        data_dir: Some(dir.join(format!("node-{id}"))),
        cluster: ClusterArgs {
            node_id: Some(id.to_string()),
            cluster_listen: Some(cluster_ports[id as usize - 1].to_string()),
            peers: Some(peers.join(",")),
            cluster_secret: Some(CLUSTER_SECRET.into()),
            ..ClusterArgs::default()
        },
        ..edge_common::with_secret(EdgeRaw::default())
    };
    let settings = raw.freeze().expect("valid settings");
    let cluster = settings.cluster().expect("cluster settings");
    let started = start_node(&settings, cluster, address)
        .await
        .expect("the node starts");
    let edge = Edge::new(
        settings.auth().clone(),
        settings.edge().clone(),
        settings.max_body_bytes(),
    );
    let state = AppState::clustered(
        Arc::clone(&started.broker),
        edge,
        Arc::clone(&started.port.node),
        started.port.liveness.clone(),
        Arc::new(Alerts::new(&AlertSettings::default(), RuleBook::default())),
    );
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        let edge = Arc::clone(&state.edge);
        let shutdown = async move {
            let _ = stopped.await;
        };
        serve_connections(public, app(state), &edge, shutdown, Duration::from_secs(5)).await;
    });
    Node {
        id,
        url: format!("http://{address}"),
        broker: started.broker,
        port: started.port,
        stop,
        serving,
    }
}

async fn start_cluster(dir: &std::path::Path) -> Vec<Node> {
    let cluster_ports: Vec<SocketAddr> = (0..NODES).map(|_| free_port()).collect();
    let mut publics = Vec::new();
    for _ in 0..NODES {
        publics.push(TcpListener::bind("127.0.0.1:0").await.expect("binds"));
    }
    let starts = publics
        .into_iter()
        .zip(1..)
        .map(|(public, id)| start(id, public, &cluster_ports, dir));
    join_all(starts).await
}

async fn stop_cluster(nodes: Vec<Node>) {
    let stops = nodes.into_iter().map(|node| async move {
        let _ = node.stop.send(());
        let _ = node.serving.await;
        node.port.shutdown().await;
        node.broker.shutdown().await;
    });
    join_all(stops).await;
}

/// An HTTP client whose connections come from `local` (a loopback address of its own).
fn client_from(local: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(local.parse::<IpAddr>().expect("an address"))
        .timeout(SETTLE)
        .no_proxy()
        .build()
        .expect("a client")
}

fn alice() -> String {
    edge_common::token("alice", "admin:* produce:*")
}

/// POSTs `body` to `url` until it is not a 503 (the cluster still electing), within
/// [`SETTLE`]; returns the status and JSON answer.
async fn post_when_ready(http: &reqwest::Client, url: &str, body: &Value) -> (u16, Value) {
    let deadline = Instant::now() + SETTLE;
    loop {
        let reply = http
            .post(url)
            .bearer_auth(alice())
            .json(body)
            .send()
            .await
            .expect("an answer");
        let status = reply.status().as_u16();
        let answer = reply.json().await.unwrap_or(Value::Null);
        if status != 503 || Instant::now() >= deadline {
            return (status, answer);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
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
    let nodes = start_cluster(dir.path()).await;
    let first = client_from("127.0.0.2");
    let second = client_from("127.0.0.3");
    let topic = json!({ "name": TOPIC, "partitions": 1 });
    let (status, body) =
        post_when_ready(&first, &format!("{}/v1/topics", nodes[0].url), &topic).await;
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
