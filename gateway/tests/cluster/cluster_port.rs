//! The cluster port and the peer client: RPC bytes travel between nodes holding the cluster
//! secret; everything else is refused, and every call ends within its timeout.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use broker_core::raft::{
    GroupId, HandlerFuture, Rpc, RpcCall, RpcError, RpcHandler, Transport, TransportError,
};
use bytes::Bytes;
use gateway::cluster::{AlertsSlot, Liveness, PeerAuth, PeerClient, serve_cluster_port};

/// The secret of the port and its callers.
pub(crate) const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

/// Echoes the body for partition groups, refuses the controller, and takes its time when
/// the body says `slow`.
pub(crate) struct Echo;

impl RpcHandler for Echo {
    fn handle(&self, group: GroupId, rpc: Rpc, body: Bytes) -> HandlerFuture {
        Box::pin(async move {
            if body.as_ref() == b"slow" {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            match group {
                GroupId::Controller => Err(RpcError::UnknownGroup("__controller".into())),
                GroupId::Partition { topic, partition } => {
                    let echo = format!("{topic}:{partition}/{}/", rpc.as_str());
                    Ok(Bytes::from([echo.as_bytes(), &body].concat()))
                }
            }
        })
    }
}

/// A cluster port answering with [`Echo`], and what stops it.
pub(crate) async fn start_port() -> (std::net::SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let address = listener.local_addr().expect("address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_cluster_port(
        listener,
        PeerAuth::new(SECRET),
        Arc::new(Echo),
        Liveness::default(),
        AlertsSlot::default(),
        async move {
            let _ = stopped.await;
        },
    ));
    (address, stop)
}

/// A peer client of node 1 with `secret`, knowing `peers`.
pub(crate) fn client(secret: &[u8], peers: BTreeMap<u64, std::net::SocketAddr>) -> PeerClient {
    PeerClient::new(1, PeerAuth::new(secret), peers, Liveness::default()).expect("client")
}

/// An append of `body` to `group`.
pub(crate) fn call(group: GroupId, body: &'static [u8], timeout_ms: u64) -> RpcCall {
    RpcCall {
        group,
        rpc: Rpc::Append,
        body: Bytes::from_static(body),
        timeout: Duration::from_millis(timeout_ms),
    }
}

/// Partition 2 of `orders`.
pub(crate) fn partition() -> GroupId {
    GroupId::Partition {
        topic: "orders".into(),
        partition: 2,
    }
}

#[tokio::test]
async fn a_peer_with_the_secret_gets_the_groups_answer() {
    let (address, _stop) = start_port().await;
    let peers = client(SECRET, BTreeMap::from([(2, address)]));
    let answer = peers.call(2, call(partition(), b"entries", 5_000)).await;
    assert_eq!(answer, Ok(Bytes::from_static(b"orders:2/append/entries")));
    let refused = peers.call(2, call(GroupId::Controller, b"x", 5_000)).await;
    assert!(
        matches!(refused, Err(TransportError::Refused { status: 404, .. })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_caller_without_the_secret_is_refused_before_any_group_sees_it() {
    let (address, _stop) = start_port().await;
    let stranger = client(
        b"another secret, thirty-two bytes long",
        BTreeMap::from([(2, address)]),
    );
    let answer = stranger.call(2, call(partition(), b"entries", 5_000)).await;
    assert!(
        matches!(answer, Err(TransportError::Refused { status: 401, .. })),
        "{answer:?}"
    );
    let plain = reqwest::Client::new()
        .post(format!("http://{address}/cluster/v1/raft/orders:2/append"))
        .body("entries")
        .send()
        .await
        .expect("answers");
    assert_eq!(plain.status(), 401, "no proof header");
}

#[tokio::test]
async fn every_call_ends_within_its_timeout_whatever_the_peer_does() {
    let (address, _stop) = start_port().await;
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let dead_address = dead.local_addr().expect("address");
    drop(dead);
    let peers = client(SECRET, BTreeMap::from([(2, address), (3, dead_address)]));
    let started = std::time::Instant::now();
    let slow = peers.call(2, call(partition(), b"slow", 300)).await;
    assert!(
        matches!(slow, Err(TransportError::Timeout { node: 2, ms: 300 })),
        "{slow:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "took {:?}",
        started.elapsed()
    );
    let unreachable = peers.call(3, call(partition(), b"x", 1_000)).await;
    assert!(
        matches!(
            unreachable,
            Err(TransportError::Unreachable { node: 3, .. })
        ),
        "{unreachable:?}"
    );
    let unknown = peers.call(9, call(partition(), b"x", 1_000)).await;
    assert_eq!(unknown, Err(TransportError::UnknownNode(9)));
}
