//! [`HttpCalls`]: one RPC per HTTP request (`POST /cluster/v1/raft/{group}/{rpc}`), for a
//! node that answers the peer connection's upgrade with 404: a node of an earlier version,
//! during a rolling upgrade.

use std::net::SocketAddr;
use std::time::Duration;

use broker_core::raft::{RpcCall, TransportError};
use bytes::Bytes;

use super::peer_auth::AUTH_HEADER;
use super::peer_client::CONNECT_TIMEOUT;

/// Idle pooled connections to a peer close after this.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest refusal reason kept from a peer's answer.
const MAX_REASON_BYTES: usize = 512;

/// Pooled HTTP calls to peers.
#[derive(Clone)]
pub(super) struct HttpCalls {
    http: reqwest::Client,
}

impl HttpCalls {
    /// A pool with the peer connection's connect timeout.
    pub(super) fn new() -> reqwest::Result<HttpCalls> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .tcp_keepalive(Duration::from_secs(10))
            .tcp_nodelay(true)
            .user_agent(concat!("wharf-peer/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(HttpCalls { http })
    }

    /// Sends `call` to node `target` at `address` with `proof`, within its timeout.
    pub(super) async fn call(
        &self,
        target: u64,
        address: SocketAddr,
        proof: &str,
        call: RpcCall,
    ) -> Result<Bytes, TransportError> {
        let url = format!(
            "http://{address}/cluster/v1/raft/{}/{}",
            call.group.to_path(),
            call.rpc.as_str()
        );
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
