//! Liveness and readiness probes.

use axum::Json;
use axum::extract::State;

use crate::api::health::HealthStatus;
use crate::app::AppState;
use crate::http::problem::{ApiError, Problem};

/// Liveness.
///
/// 200 while the process serves HTTP.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "The process is alive", body = HealthStatus)))]
pub(crate) async fn healthz() -> Json<HealthStatus> {
    Json(HealthStatus {
        status: "ok",
        probe: None,
    })
}

/// Readiness.
///
/// 200 once storage is open (in a cluster: and the controller has a leader and this node is
/// registered); 503 `not_leader` until then, and `shutting_down` while the server drains
/// before stopping, so load balancers stop sending it work. The 200 body carries the
/// synthetic probe's last outcome (`probe`): its time, latency and failures in a row. A
/// failing probe does not make the node unready: its usual causes (a full disk's reserve, a
/// stuck disk) hit every node alike, and taking them all out of rotation would stop the
/// consumers that drain them; the `probe` alert kind and `wharf_probe_failures_total` say
/// it instead.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses(
        (status = 200, description = "Storage is open; the node takes work (with the probe's last outcome)", body = HealthStatus),
        (status = 503, description = "The server is shutting down (`shutting_down`), or in a cluster has not joined yet (`not_leader`)", body = Problem,
            content_type = "application/problem+json"),
    ))]
pub(crate) async fn readyz(State(state): State<AppState>) -> Result<Json<HealthStatus>, ApiError> {
    if state.is_draining() {
        return Err(ApiError::Draining);
    }
    if let Some(cluster) = &state.cluster
        && !cluster.ready()
    {
        return Err(broker_core::BrokerError::NotLeader {
            what: "cluster metadata".into(),
            leader: cluster.controller_leader(),
        }
        .into());
    }
    Ok(Json(HealthStatus {
        status: "ready",
        probe: Some(state.probe.status()),
    }))
}
