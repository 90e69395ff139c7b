//! One call to another node of the cluster on a client's behalf: a JSON body sent to the
//! node's public address with the client's credentials and `Wharf-Forwarded` (so the node
//! serves it itself, one hop), under the forwarding timeouts (`crate::fanout::forward::call`).
//! The produce scatter ([`crate::fanout::scatter`]) and the receive gather, settle and seek scatter
//! ([`crate::fanout::gather`]) all send their parts through [`call_peer`].

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};

use crate::app::AppState;
use crate::fanout::forward::call;

/// What a node answered: its status, headers (less the per-connection ones) and body.
#[derive(Debug)]
pub(crate) struct PeerAnswer {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

/// Why a node gave no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PeerFailure {
    /// This node knows no address for it (not in the cluster metadata, or no cluster).
    #[error("node {node}'s address is not known")]
    NoAddress {
        /// The node.
        node: u64,
    },
    /// The request was never sent (no connection): nothing happened there.
    #[error("node {node} could not be reached: {source}")]
    Unreachable {
        /// The node.
        node: u64,
        /// What failed.
        source: reqwest::Error,
    },
    /// The request may have been taken, but no whole answer came back: its outcome is unknown.
    #[error("node {node} gave no answer: {source}")]
    NoAnswer {
        /// The node.
        node: u64,
        /// What failed.
        source: reqwest::Error,
    },
}

/// Sends the JSON `body` with `method` to `path_and_query` (from `/v1/…`) on node `node`, with
/// the client's `headers`; reads the whole answer.
pub(crate) async fn call_peer(
    state: &AppState,
    headers: &HeaderMap,
    node: u64,
    method: Method,
    path_and_query: &str,
    body: Bytes,
) -> Result<PeerAnswer, PeerFailure> {
    let cluster = state.cluster.as_ref();
    let Some(address) = cluster.and_then(|c| c.public_addr(node)) else {
        return Err(PeerFailure::NoAddress { node });
    };
    let me = cluster.map_or(0, |c| c.node_id());
    let url = format!("http://{address}{path_and_query}");
    let mut headers = headers.clone();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    match call(&url, method, &headers, body, me).await {
        Ok((status, headers, body)) => Ok(PeerAnswer {
            status,
            headers,
            body,
        }),
        Err(source) if source.is_connect() => Err(PeerFailure::Unreachable { node, source }),
        Err(source) => Err(PeerFailure::NoAnswer { node, source }),
    }
}
