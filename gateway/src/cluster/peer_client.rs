//! [`PeerClient`]: Raft RPCs to other nodes over pooled HTTP, each within its timeout.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use broker_core::raft::{RpcCall, Transport, TransportError, TransportFuture};
use bytes::Bytes;

use super::liveness::Liveness;
use super::peer_auth::{AUTH_HEADER, PeerAuth};

/// Longest wait for a TCP connection to a peer: a peer on the same network answers a SYN in
/// milliseconds; a dead one should cost an election timeout at most.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// Idle pooled connections to a peer close after this.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest refusal reason kept from a peer's answer.
const MAX_REASON_BYTES: usize = 512;

/// Calls other nodes' cluster ports. Clonable; the address book is shared.
#[derive(Clone)]
pub struct PeerClient {
    node_id: u64,
    auth: PeerAuth,
    http: reqwest::Client,
    addresses: Arc<RwLock<BTreeMap<u64, SocketAddr>>>,
    liveness: Liveness,
}

impl PeerClient {
    /// A client for node `node_id`, signing with `auth`, knowing `addresses`; each answer
    /// is noted in `liveness`.
    pub fn new(
        node_id: u64,
        auth: PeerAuth,
        addresses: BTreeMap<u64, SocketAddr>,
        liveness: Liveness,
    ) -> reqwest::Result<PeerClient> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .tcp_keepalive(Duration::from_secs(10))
            .tcp_nodelay(true)
            .user_agent(concat!("wharf-peer/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(PeerClient {
            node_id,
            auth,
            http,
            addresses: Arc::new(RwLock::new(addresses)),
            liveness,
        })
    }

    /// Records (or moves) node `node`'s cluster address.
    pub fn set_address(&self, node: u64, address: SocketAddr) {
        let mut book = self.addresses.write().unwrap_or_else(|e| e.into_inner());
        book.insert(node, address);
    }

    fn address(&self, node: u64) -> Option<SocketAddr> {
        let book = self.addresses.read().unwrap_or_else(|e| e.into_inner());
        book.get(&node).copied()
    }
}

impl Transport for PeerClient {
    fn call(&self, target: u64, call: RpcCall) -> TransportFuture {
        let client = self.clone();
        Box::pin(async move {
            let rpc = call.rpc.as_str();
            let started = std::time::Instant::now();
            let answer = client.send(target, call).await;
            metrics::histogram!(crate::governance::metrics::PEER_RPC_SECONDS, "rpc" => rpc)
                .record(started.elapsed().as_secs_f64());
            answer
        })
    }

    fn learn(&self, node: u64, cluster_addr: &str) {
        match cluster_addr.parse::<SocketAddr>() {
            Ok(address) if self.address(node) != Some(address) => self.set_address(node, address),
            Ok(_) => {}
            Err(_) => tracing::warn!(
                node,
                cluster_addr,
                "a node's cluster address does not parse"
            ),
        }
    }
}

impl PeerClient {
    async fn send(&self, target: u64, call: RpcCall) -> Result<Bytes, TransportError> {
        let address = self
            .address(target)
            .ok_or(TransportError::UnknownNode(target))?;
        let url = format!(
            "http://{address}/cluster/v1/raft/{}/{}",
            call.group.to_path(),
            call.rpc.as_str()
        );
        let proof = self.auth.sign(self.node_id, broker_core::clock::now_ms());
        let timeout_ms = u64::try_from(call.timeout.as_millis()).unwrap_or(u64::MAX);
        let sent = self
            .http
            .post(url)
            .header(AUTH_HEADER, proof)
            .timeout(call.timeout)
            .body(call.body)
            .send()
            .await;
        let response = sent.map_err(|e| failure(target, timeout_ms, &e))?;
        self.liveness.heard(target);
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| failure(target, timeout_ms, &e))?;
        if status.is_success() {
            return Ok(body);
        }
        let reason = String::from_utf8_lossy(&body[..body.len().min(MAX_REASON_BYTES)]);
        Err(TransportError::Refused {
            node: target,
            status: status.as_u16(),
            reason: reason.into_owned(),
        })
    }
}

fn failure(node: u64, ms: u64, error: &reqwest::Error) -> TransportError {
    if error.is_timeout() {
        return TransportError::Timeout { node, ms };
    }
    let reason = error.to_string();
    // Only a failed connect or a request that could not be built proves nothing was sent.
    match error.is_connect() || error.is_builder() {
        true => TransportError::Unreachable { node, reason },
        false => TransportError::Lost { node, reason },
    }
}
