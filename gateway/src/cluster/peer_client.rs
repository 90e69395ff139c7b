//! [`PeerClient`]: Raft RPCs to other nodes, each within its timeout, over one peer
//! connection per node ([`super::peer_connection`]), opened on the first call and again after
//! it ends; to a node that does not upgrade (an earlier version), one HTTP request per call.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use broker_core::raft::{RpcCall, Transport, TransportError, TransportFuture};
use bytes::Bytes;
use tokio::time::Instant;

use super::liveness::Liveness;
use super::peer_auth::PeerAuth;
use super::peer_connection::Connection;
use super::peer_http::HttpCalls;

/// Longest wait for a connection to a peer (TCP and the upgrade): a peer on the same
/// network answers in milliseconds; a dead one should cost an election timeout at most.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// After a failed connect, calls to that node fail at once for this long instead of each
/// trying again: Raft's backoff sends again 50–200 ms later, and a dead node would otherwise
/// cost every waiting call its own connect.
const RECONNECT_PAUSE: Duration = Duration::from_millis(25);
/// How long a node that answered the upgrade 404 is called over HTTP before the upgrade is
/// tried again (it may have been upgraded meanwhile).
const HTTP_ONLY_FOR: Duration = Duration::from_secs(60);

/// Calls other nodes' cluster ports. Clonable; the address book and connections are shared.
#[derive(Clone)]
pub struct PeerClient {
    node_id: u64,
    auth: PeerAuth,
    addresses: Arc<RwLock<BTreeMap<u64, SocketAddr>>>,
    links: Arc<Mutex<BTreeMap<u64, Arc<Link>>>>,
    http: HttpCalls,
    liveness: Liveness,
}

/// The connection to one node, as far as it goes.
#[derive(Default)]
struct Link {
    /// Held while connecting, so concurrent callers share one attempt.
    slot: tokio::sync::Mutex<Slot>,
}

#[derive(Default)]
enum Slot {
    #[default]
    Idle,
    Open {
        connection: Arc<Connection>,
        address: SocketAddr,
    },
    Failed {
        at: Instant,
        address: SocketAddr,
        error: TransportError,
    },
    /// The node answered the upgrade 404 at `at`.
    HttpOnly { at: Instant, address: SocketAddr },
}

/// How a call goes to a node.
enum Route {
    Connection(Arc<Connection>),
    Http(SocketAddr),
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
        Ok(PeerClient {
            node_id,
            auth,
            addresses: Arc::new(RwLock::new(addresses)),
            links: Arc::default(),
            http: HttpCalls::new()?,
            liveness,
        })
    }

    /// Records (or moves) node `node`'s cluster address; a connection to its old address is
    /// replaced on the next call.
    pub fn set_address(&self, node: u64, address: SocketAddr) {
        let mut book = self.addresses.write().unwrap_or_else(|e| e.into_inner());
        book.insert(node, address);
    }

    fn address(&self, node: u64) -> Option<SocketAddr> {
        let book = self.addresses.read().unwrap_or_else(|e| e.into_inner());
        book.get(&node).copied()
    }

    fn link(&self, node: u64) -> Arc<Link> {
        let mut links = self.links.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(links.entry(node).or_default())
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
        let deadline = Instant::now() + call.timeout;
        match self.route(target, deadline, &call).await? {
            Route::Connection(connection) => connection.call(&call, deadline).await,
            Route::Http(address) => {
                let proof = self.auth.sign(self.node_id, broker_core::clock::now_ms());
                let call = RpcCall {
                    timeout: deadline.saturating_duration_since(Instant::now()),
                    ..call
                };
                let answer = self.http.call(target, address, &proof, call).await;
                if !matches!(answer, Err(TransportError::Unreachable { .. })) {
                    self.liveness.heard(target);
                }
                answer
            }
        }
    }

    /// The open connection to `target`, opened now if there is none (or HTTP, for a node
    /// that does not upgrade).
    async fn route(
        &self,
        target: u64,
        deadline: Instant,
        call: &RpcCall,
    ) -> Result<Route, TransportError> {
        let address = self
            .address(target)
            .ok_or(TransportError::UnknownNode(target))?;
        let link = self.link(target);
        let timeout = || TransportError::Timeout {
            node: target,
            ms: u64::try_from(call.timeout.as_millis()).unwrap_or(u64::MAX),
        };
        let mut slot = tokio::time::timeout_at(deadline, link.slot.lock())
            .await
            .map_err(|_| timeout())?;
        match &*slot {
            Slot::Open {
                connection,
                address: at,
            } if *at == address && connection.is_open() => {
                return Ok(Route::Connection(Arc::clone(connection)));
            }
            Slot::HttpOnly { at, address: to }
                if *to == address && at.elapsed() < HTTP_ONLY_FOR =>
            {
                return Ok(Route::Http(address));
            }
            Slot::Failed {
                at,
                address: to,
                error,
            } if *to == address && at.elapsed() < RECONNECT_PAUSE => return Err(error.clone()),
            _ => {}
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timeout());
        }
        let proof = self.auth.sign(self.node_id, broker_core::clock::now_ms());
        let opened = Connection::open(
            target,
            address,
            &proof,
            CONNECT_TIMEOUT.min(left),
            self.liveness.clone(),
        )
        .await;
        let at = Instant::now();
        let (slot_now, route) = match opened {
            Ok(connection) => {
                let route = Route::Connection(Arc::clone(&connection));
                (
                    Slot::Open {
                        connection,
                        address,
                    },
                    Ok(route),
                )
            }
            Err(TransportError::Refused { status: 404, .. }) => {
                tracing::info!(
                    node = target,
                    "a node does not upgrade; calling it over HTTP"
                );
                (Slot::HttpOnly { at, address }, Ok(Route::Http(address)))
            }
            Err(error) => {
                let failed = Slot::Failed {
                    at,
                    address,
                    error: error.clone(),
                };
                (failed, Err(error))
            }
        };
        *slot = slot_now;
        route
    }
}
