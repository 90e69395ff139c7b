//! The cluster port's server: peer connections and Raft RPCs from peers, handed to the
//! broker's groups, and the alert evaluator's asks for this node's figures.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use broker_core::Broker;
use broker_core::raft::{GroupId, MAX_RPC_BYTES, Rpc, RpcHandler};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::liveness::Liveness;
use super::peer_auth::{AUTH_HEADER, PeerAuth};
use super::peer_session::{PEER_PATH, PEER_PROTOCOL, refusal_status, serve_session};
use crate::governance::alerts::Alerts;
use crate::governance::alerts::cluster_figures::{ALERT_FIGURES_PATH, FiguresAsk, node_figures};
use crate::http::edge::Edge;
use crate::http::io_timeout::WriteTimeout;

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
    /// Turns true when the port shuts down: peer sessions end.
    stopping: watch::Receiver<bool>,
}

/// The cluster port's routes: `POST` [`PEER_PATH`] (a peer connection, see
/// [`super::peer_session`]), `POST /cluster/v1/raft/{group}/{rpc}` (one RPC per request, for
/// callers that do not upgrade), and `POST` [`ALERT_FIGURES_PATH`] (this node's figures for
/// the alert evaluator, see [`crate::governance::alerts::cluster_figures`]), each call
/// checked against the cluster secret first (401 without a valid proof), bodies up to
/// [`MAX_RPC_BYTES`]. Answers are the RPC's bytes (the figures' JSON), or a status and a
/// one-line reason.
fn cluster_router(state: PortState) -> Router {
    Router::new()
        .route(PEER_PATH, post(open_session))
        .route("/cluster/v1/raft/{group}/{rpc}", post(raft_rpc))
        .route(ALERT_FIGURES_PATH, post(alert_figures))
        .layer(DefaultBodyLimit::max(MAX_RPC_BYTES))
        .with_state(state)
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
    let (stop_sessions, stopping) = watch::channel(false);
    let router = cluster_router(PortState {
        auth,
        handler,
        liveness,
        alerts,
        stopping,
    });
    let shutdown = async {
        shutdown.await;
        stop_sessions.send_replace(true);
    };
    crate::http::accept::serve_connections(
        listener,
        router,
        &edge,
        shutdown,
        CLUSTER_DRAIN_TIMEOUT,
    )
    .await;
    // Every session holds a receiver until it has ended.
    let _ = tokio::time::timeout(CLUSTER_DRAIN_TIMEOUT, stop_sessions.closed()).await;
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

/// Upgrades a peer's connection to [`PEER_PROTOCOL`] and serves it as a session.
async fn open_session(State(state): State<PortState>, mut request: Request) -> Response {
    let Some(caller) = caller(&state, request.headers()) else {
        return (StatusCode::UNAUTHORIZED, "no valid cluster proof").into_response();
    };
    let upgrade = request.headers().get(header::UPGRADE);
    if upgrade.and_then(|v| v.to_str().ok()) != Some(PEER_PROTOCOL) {
        let reason = format!("this path takes `upgrade: {PEER_PROTOCOL}`");
        return (StatusCode::UPGRADE_REQUIRED, reason).into_response();
    }
    let upgrading = hyper::upgrade::on(&mut request);
    let PortState {
        handler,
        liveness,
        stopping,
        ..
    } = state;
    tokio::spawn(async move {
        let upgraded = match upgrading.await {
            Ok(upgraded) => upgraded,
            Err(error) => return tracing::debug!(%error, caller, "a peer's upgrade failed"),
        };
        // The accept loop's socket: the session reads and writes it directly, with timeouts
        // of its own.
        match upgraded.downcast::<TokioIo<WriteTimeout<TcpStream>>>() {
            Ok(parts) => {
                let stream = parts.io.into_inner().into_inner();
                serve_session(stream, parts.read_buf, caller, handler, liveness, stopping).await;
            }
            Err(_) => tracing::error!("an upgraded peer connection is not the accepted socket"),
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, PEER_PROTOCOL)
        .body(Body::empty())
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
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
            let status = StatusCode::from_u16(refusal_status(&error))
                .unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            (status, error.to_string()).into_response()
        }
    }
}
