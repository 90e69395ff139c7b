//! The cluster port's server: Raft RPCs from peers, handed to the broker's groups.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use broker_core::raft::{GroupId, MAX_RPC_BYTES, Rpc, RpcError, RpcHandler};
use tokio::net::TcpListener;

use super::liveness::Liveness;
use super::peer_auth::{AUTH_HEADER, PeerAuth};
use crate::edge::Edge;

/// How long in-flight RPCs get to finish at shutdown: Raft retries whatever is cut off.
pub const CLUSTER_DRAIN_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Clone)]
struct PortState {
    auth: PeerAuth,
    handler: Arc<dyn RpcHandler>,
    liveness: Liveness,
}

/// The cluster port's routes: `POST /cluster/v1/raft/{group}/{rpc}`, each call checked
/// against the cluster secret first (401 without a valid proof), bodies up to
/// [`MAX_RPC_BYTES`]. Answers are the RPC's bytes, or a status and a one-line reason.
pub fn cluster_router(auth: PeerAuth, handler: Arc<dyn RpcHandler>, liveness: Liveness) -> Router {
    Router::new()
        .route("/cluster/v1/raft/{group}/{rpc}", post(raft_rpc))
        .layer(DefaultBodyLimit::max(MAX_RPC_BYTES))
        .with_state(PortState {
            auth,
            handler,
            liveness,
        })
}

/// Serves the cluster port on `listener` until `shutdown`, with the connection cap,
/// keepalive, header-read and write timeouts of a default edge.
pub async fn serve_cluster_port(
    listener: TcpListener,
    auth: PeerAuth,
    handler: Arc<dyn RpcHandler>,
    liveness: Liveness,
    shutdown: impl Future<Output = ()>,
) {
    let edge = Edge::anonymous(MAX_RPC_BYTES);
    let router = cluster_router(auth, handler, liveness);
    crate::accept::serve_connections(listener, router, &edge, shutdown, CLUSTER_DRAIN_TIMEOUT)
        .await;
}

async fn raft_rpc(
    State(state): State<PortState>,
    Path((group, rpc)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let proof = headers.get(AUTH_HEADER).and_then(|v| v.to_str().ok());
    let caller = proof.and_then(|p| state.auth.verify(p, broker_core::clock::now_ms()));
    let Some(caller) = caller else {
        return (StatusCode::UNAUTHORIZED, "no valid cluster proof").into_response();
    };
    state.liveness.heard(caller);
    let (Some(group), Some(rpc)) = (GroupId::from_path(&group), Rpc::parse(&rpc)) else {
        return (StatusCode::NOT_FOUND, "no such group or RPC").into_response();
    };
    match state.handler.handle(group, rpc, body).await {
        Ok(answer) => answer.into_response(),
        Err(error) => {
            tracing::debug!(%error, caller, "cluster RPC refused");
            let status = match error {
                RpcError::UnknownGroup(_) => StatusCode::NOT_FOUND,
                RpcError::Malformed { .. } => StatusCode::BAD_REQUEST,
                RpcError::Unavailable { .. } | RpcError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            };
            (status, error.to_string()).into_response()
        }
    }
}
