//! The cluster port's server: Raft RPCs from peers, handed to the broker's groups, and the
//! alert evaluator's asks for this node's figures.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use broker_core::Broker;
use broker_core::raft::{GroupId, MAX_RPC_BYTES, Rpc, RpcError, RpcHandler};
use tokio::net::TcpListener;

use super::liveness::Liveness;
use super::peer_auth::{AUTH_HEADER, PeerAuth};
use crate::governance::alerts::Alerts;
use crate::governance::alerts::cluster_figures::{ALERT_FIGURES_PATH, FiguresAsk, node_figures};
use crate::http::edge::Edge;

/// How long in-flight RPCs get to finish at shutdown: Raft retries whatever is cut off.
pub const CLUSTER_DRAIN_TIMEOUT: Duration = Duration::from_secs(1);

/// Where the cluster port finds this node's alerts once the server has made them (the port
/// serves before the broker opens); until then alert figures are answered 503.
pub type AlertsSlot = Arc<OnceLock<(Arc<Broker>, Arc<Alerts>)>>;

#[derive(Clone)]
struct PortState {
    auth: PeerAuth,
    handler: Arc<dyn RpcHandler>,
    liveness: Liveness,
    alerts: AlertsSlot,
}

/// The cluster port's routes: `POST /cluster/v1/raft/{group}/{rpc}`, and `POST`
/// [`ALERT_FIGURES_PATH`] (this node's figures for the alert evaluator, see
/// [`crate::governance::alerts::cluster_figures`]), each call checked against the cluster secret first
/// (401 without a valid proof), bodies up to [`MAX_RPC_BYTES`]. Answers are the RPC's bytes
/// (the figures' JSON), or a status and a one-line reason.
pub fn cluster_router(
    auth: PeerAuth,
    handler: Arc<dyn RpcHandler>,
    liveness: Liveness,
    alerts: AlertsSlot,
) -> Router {
    Router::new()
        .route("/cluster/v1/raft/{group}/{rpc}", post(raft_rpc))
        .route(ALERT_FIGURES_PATH, post(alert_figures))
        .layer(DefaultBodyLimit::max(MAX_RPC_BYTES))
        .with_state(PortState {
            auth,
            handler,
            liveness,
            alerts,
        })
}

/// Serves the cluster port on `listener` until `shutdown`, with the connection cap,
/// keepalive, header-read and write timeouts of a default edge.
pub async fn serve_cluster_port(
    listener: TcpListener,
    auth: PeerAuth,
    handler: Arc<dyn RpcHandler>,
    liveness: Liveness,
    alerts: AlertsSlot,
    shutdown: impl Future<Output = ()>,
) {
    let edge = Edge::anonymous(MAX_RPC_BYTES);
    let router = cluster_router(auth, handler, liveness, alerts);
    crate::http::accept::serve_connections(
        listener,
        router,
        &edge,
        shutdown,
        CLUSTER_DRAIN_TIMEOUT,
    )
    .await;
}

/// The calling node, if `headers` carry a valid proof (noted as heard from).
fn caller(state: &PortState, headers: &HeaderMap) -> Option<u64> {
    let proof = headers.get(AUTH_HEADER).and_then(|v| v.to_str().ok());
    let caller = proof.and_then(|p| state.auth.verify(p, broker_core::clock::now_ms()))?;
    state.liveness.heard(caller);
    Some(caller)
}

async fn alert_figures(
    State(state): State<PortState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if caller(&state, &headers).is_none() {
        return (StatusCode::UNAUTHORIZED, "no valid cluster proof").into_response();
    }
    let ask: FiguresAsk = match serde_json::from_slice(&body) {
        Ok(ask) => ask,
        Err(error) => return (StatusCode::BAD_REQUEST, error.to_string()).into_response(),
    };
    let Some((broker, alerts)) = state.alerts.get() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "alerts not started yet").into_response();
    };
    axum::Json(node_figures(broker, alerts, &ask).await).into_response()
}

async fn raft_rpc(
    State(state): State<PortState>,
    Path((group, rpc)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(caller) = caller(&state, &headers) else {
        return (StatusCode::UNAUTHORIZED, "no valid cluster proof").into_response();
    };
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
