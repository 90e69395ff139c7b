//! In-process cluster nodes for the gateway tests: each serves the real app on its own
//! public port, talks real HTTP to the others (forwards, gathers) and replicates over the
//! real cluster port, with auth on (`edge_common::with_secret`).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use broker_core::Broker;
use futures_util::future::join_all;
use gateway::cluster::{ClusterPort, start_node};
use gateway::config::{AlertSettings, ClusterArgs, EdgeRaw, RawSettings};
use gateway::governance::alerts::Alerts;
use gateway::governance::alerts::book::RuleBook;
use gateway::http::accept::serve_connections;
use gateway::http::edge::Edge;
use gateway::{AppState, app};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::support::edge_common;
use crate::support::free_port;

/// The secret the nodes share on the cluster port.
pub const CLUSTER_SECRET: &str = "0123456789abcdef0123456789abcdef";
/// Bound on the cluster electing a leader and on every request: generous for a loaded
/// two-core machine running three nodes in one process.
pub const SETTLE: Duration = Duration::from_secs(30);

/// One node: its public URL, its broker (to read what it stored) and what stops it.
pub struct Node {
    /// Its node id (1 for the first).
    pub id: u64,
    /// `http://` and its public address.
    pub url: String,
    /// Its broker.
    pub broker: Arc<Broker>,
    /// Its cluster port.
    pub port: ClusterPort,
    /// Stops its public server.
    pub stop: oneshot::Sender<()>,
    /// Its public server.
    pub serving: JoinHandle<()>,
}

/// Cluster settings for node `id` (1-based) of the nodes whose cluster ports are
/// `cluster_ports`, every one of them an initial voter, sharing [`CLUSTER_SECRET`].
pub fn cluster_args(id: u64, cluster_ports: &[SocketAddr]) -> ClusterArgs {
    let peers: Vec<String> = cluster_ports
        .iter()
        .zip(1..)
        .map(|(port, node)| format!("{node}={port}"))
        .collect();
    ClusterArgs {
        node_id: Some(id.to_string()),
        cluster_listen: Some(cluster_ports[id as usize - 1].to_string()),
        peers: Some(peers.join(",")),
        cluster_secret: Some(CLUSTER_SECRET.into()),
        ..ClusterArgs::default()
    }
}

async fn start(
    id: u64,
    public: TcpListener,
    cluster_ports: &[SocketAddr],
    dir: &std::path::Path,
) -> Node {
    let address = public.local_addr().expect("an address");
    let raw = RawSettings {
        listen: Some(address.to_string()),
        data_dir: Some(dir.join(format!("node-{id}"))),
        cluster: cluster_args(id, cluster_ports),
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

/// Starts `count` nodes (ids 1 to `count`) with their data under `dir`.
pub async fn start_cluster(dir: &std::path::Path, count: u64) -> Vec<Node> {
    let cluster_ports: Vec<SocketAddr> = (0..count).map(|_| free_port()).collect();
    let mut publics = Vec::new();
    for _ in 0..count {
        publics.push(TcpListener::bind("127.0.0.1:0").await.expect("binds"));
    }
    let starts = publics
        .into_iter()
        .zip(1..)
        .map(|(public, id)| start(id, public, &cluster_ports, dir));
    join_all(starts).await
}

/// Stops every node: its public server, cluster port and broker.
pub async fn stop_cluster(nodes: Vec<Node>) {
    let stops = nodes.into_iter().map(|node| async move {
        let _ = node.stop.send(());
        let _ = node.serving.await;
        node.port.shutdown().await;
        node.broker.shutdown().await;
    });
    join_all(stops).await;
}

/// An HTTP client whose connections come from `local` (a loopback address of its own).
pub fn client_from(local: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(local.parse::<IpAddr>().expect("an address"))
        .timeout(SETTLE)
        .no_proxy()
        .build()
        .expect("a client")
}

/// POSTs `body` as `bearer` until it is not a 503 (the cluster still electing), within
/// [`SETTLE`]; returns the status and JSON answer.
pub async fn post_when_ready(
    http: &reqwest::Client,
    bearer: &str,
    url: &str,
    body: &Value,
) -> (u16, Value) {
    let deadline = Instant::now() + SETTLE;
    loop {
        let reply = http
            .post(url)
            .bearer_auth(bearer)
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
