//! One peer connection per node pair: many calls in flight on it, each answered by id; a
//! connection cut under a call loses that call and the next call connects again; a peer
//! gone silent is given up within the silence limit; a stopped port ends its connections.
//! A node that does not upgrade (an earlier version) is called one HTTP request per call.
//! A proxy between client and port counts the connections and cuts or freezes them.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use broker_core::raft::{Rpc, RpcCall, Transport, TransportError};
use bytes::Bytes;
use futures_util::future::join_all;
use gateway::cluster::{AUTH_HEADER, PEER_PATH, PeerAuth};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::cluster_port::{SECRET, call, client, partition, start_port};

/// A TCP proxy to one address.
struct Proxy {
    address: SocketAddr,
    accepted: Arc<AtomicUsize>,
    /// While true, the connections it carries stay open and move no byte.
    frozen: watch::Sender<bool>,
    /// Each increment closes the connections it carries (new ones flow).
    cuts: watch::Sender<u64>,
}

impl Proxy {
    async fn to(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let address = listener.local_addr().expect("address");
        let accepted = Arc::new(AtomicUsize::new(0));
        let (frozen, cuts) = (watch::Sender::new(false), watch::Sender::new(0));
        let (count, freezes, cutting) = (Arc::clone(&accepted), frozen.clone(), cuts.clone());
        tokio::spawn(async move {
            while let Ok((mut near, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let (mut frozen, mut cut) = (freezes.subscribe(), cutting.subscribe());
                tokio::spawn(async move {
                    let Ok(mut far) = TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut near, &mut far) => return,
                        _ = cut.changed() => return,
                        _ = frozen.wait_for(|frozen| *frozen) => {}
                    }
                    let _ = cut.changed().await;
                });
            }
        });
        Proxy {
            address,
            accepted,
            frozen,
            cuts,
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Closes the connections it carries; new ones flow.
    fn cut(&self) {
        self.frozen.send_replace(false);
        self.cuts.send_modify(|cuts| *cuts += 1);
    }
}

/// A first call to node 2, answered: the connection is open.
async fn first_call(peers: &impl Transport) {
    let first = peers.call(2, call(partition(), b"first", 5_000)).await;
    assert!(first.is_ok(), "the first call failed: {first:?}");
}

fn body_call(body: String, timeout: Duration) -> RpcCall {
    RpcCall {
        group: partition(),
        rpc: Rpc::Write,
        body: Bytes::from(body),
        timeout,
    }
}

#[tokio::test]
async fn many_calls_share_one_connection_and_each_gets_its_own_answer() {
    let (port, _stop) = start_port().await;
    let proxy = Proxy::to(port).await;
    let peers = client(SECRET, BTreeMap::from([(2, proxy.address)]));
    let calls = (0..300).map(|i| {
        let peers = peers.clone();
        async move {
            let answer = peers
                .call(2, body_call(format!("call {i}"), Duration::from_secs(20)))
                .await;
            (i, answer)
        }
    });
    for (i, answer) in join_all(calls).await {
        let expected = format!("orders:2/write/call {i}");
        assert_eq!(answer, Ok(Bytes::from(expected)));
    }
    assert_eq!(proxy.accepted(), 1, "300 concurrent calls, one connection");
}

#[tokio::test]
async fn a_call_cut_off_after_it_went_out_is_lost_and_the_next_call_connects_again() {
    let (port, _stop) = start_port().await;
    let proxy = Proxy::to(port).await;
    let peers = client(SECRET, BTreeMap::from([(2, proxy.address)]));
    first_call(&peers).await;
    let slow = {
        let peers = peers.clone();
        tokio::spawn(async move { peers.call(2, call(partition(), b"slow", 10_000)).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.cut();
    let cut = slow.await.expect("joins");
    assert!(
        matches!(cut, Err(TransportError::Lost { node: 2, .. })),
        "a call the peer may have acted on is lost, not unreachable: {cut:?}"
    );
    let again = peers.call(2, call(partition(), b"again", 5_000)).await;
    assert_eq!(again, Ok(Bytes::from_static(b"orders:2/append/again")));
    assert_eq!(proxy.accepted(), 2);
}

#[tokio::test]
async fn a_peer_gone_silent_is_given_up_within_the_silence_limit() {
    let (port, _stop) = start_port().await;
    let proxy = Proxy::to(port).await;
    let peers = client(SECRET, BTreeMap::from([(2, proxy.address)]));
    first_call(&peers).await;
    proxy.frozen.send_replace(true);
    let started = Instant::now();
    // Longer than the silence limit (3 s) and its look (every 1 s): the connection ends
    // first, and the call with it.
    let frozen = peers.call(2, call(partition(), b"x", 20_000)).await;
    let took = started.elapsed();
    assert!(
        matches!(frozen, Err(TransportError::Lost { node: 2, .. })),
        "{frozen:?}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    proxy.cut();
    let again = peers.call(2, call(partition(), b"again", 5_000)).await;
    assert_eq!(again, Ok(Bytes::from_static(b"orders:2/append/again")));
}

#[tokio::test]
async fn a_stopped_port_ends_its_peer_connections() {
    let (port, stop) = start_port().await;
    let peers = client(SECRET, BTreeMap::from([(2, port)]));
    first_call(&peers).await;
    stop.send(()).expect("the port is serving");
    // The open connection must not outlive the port: the node behind it is stopped.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match peers.call(2, call(partition(), b"x", 1_000)).await {
            Err(TransportError::Unreachable { .. } | TransportError::Lost { .. }) => break,
            other => assert!(
                Instant::now() < deadline,
                "still answered after the stop: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_peer_path_takes_only_an_upgrade_with_a_proof() {
    let (port, _stop) = start_port().await;
    let http = reqwest::Client::new();
    let url = format!("http://{port}{PEER_PATH}");
    let anonymous = http.post(&url).send().await.expect("answers");
    assert_eq!(anonymous.status(), 401);
    let proof = PeerAuth::new(SECRET).sign(1, broker_core::clock::now_ms());
    let plain = http
        .post(&url)
        .header(AUTH_HEADER, proof)
        .send()
        .await
        .expect("answers");
    assert_eq!(plain.status(), 426, "a proof without the upgrade");
}

/// An earlier version's cluster port: one call per HTTP request, no upgrade.
async fn start_http_only_port() -> SocketAddr {
    async fn echo(
        axum::extract::Path((group, rpc)): axum::extract::Path<(String, String)>,
        body: Bytes,
    ) -> Vec<u8> {
        [format!("http {group}/{rpc}/").as_bytes(), &body].concat()
    }
    let router =
        axum::Router::new().route("/cluster/v1/raft/{group}/{rpc}", axum::routing::post(echo));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    address
}

#[tokio::test]
async fn a_node_that_does_not_upgrade_is_called_one_http_request_per_call() {
    let address = start_http_only_port().await;
    let peers = client(SECRET, BTreeMap::from([(2, address)]));
    for body in [&b"one"[..], b"two"] {
        let answer = peers.call(2, call(partition(), body, 5_000)).await;
        let expected = [&b"http orders:2/append/"[..], body].concat();
        assert_eq!(answer, Ok(Bytes::from(expected)));
    }
}
