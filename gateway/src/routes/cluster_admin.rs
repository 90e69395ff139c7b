//! Cluster administration, under `/v1/cluster/…`, needing `admin:*`: move a partition's
//! leader, rebalance leaders, drain a node, remove a node.
//!
//! Each runs at the controller leader (another node answers `not_leader` and the forwarding
//! layer sends the request there), checks its input against the cluster metadata first, and
//! changes nothing when it refuses. A single node is not a cluster: 409 `not_clustered` (the
//! request is well formed; the node's state refuses it).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use broker_core::cluster_node::ClusterNode;

use crate::api::PartitionPath;
use crate::api::cluster_admin::{
    DrainView, LeaderView, MoveLeaderRequest, NodePath, RebalanceView,
};
use crate::app::AppState;
use crate::http::extract::{JsonBody, PathParams};
use crate::http::problem::{ApiError, Problem};

/// The node's cluster part, or 409 `not_clustered` on a single node.
fn cluster(state: &AppState) -> Result<&Arc<ClusterNode>, ApiError> {
    state.cluster.as_ref().ok_or(ApiError::NotClustered)
}

/// Move a partition's leader to another replica.
///
/// Answered once the node leads the partition (at most about 5 s; a move takes about a
/// second). A node leading it already is answered as it is. The other replicas hold their
/// heartbeats and elections for a bounded time while the node campaigns; no committed
/// message is lost. A move to a node other than the partition's preferred leader (its first
/// replica) lasts until automatic preferred-leader election hands it back, once the
/// preferred leader has been live and caught up for the server's
/// `preferred_leader_after_ms` (0 keeps manual moves).
#[utoipa::path(post, path = "/v1/cluster/partitions/{topic}/{partition}/leader",
    tag = "cluster", params(PartitionPath), request_body = MoveLeaderRequest,
    responses(
        (status = 200, description = "The node leads the partition", body = LeaderView),
        (status = 400, description = "A malformed path or body (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token's scope lacks `admin:*` (`forbidden`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic (`topic_not_found`), partition \
            (`partition_not_found`) or node (`node_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The node holds no replica of the partition \
            (`not_a_replica`), or this node runs alone (`not_clustered`)", body = Problem,
            content_type = "application/problem+json"),
        (status = 415, description = "Not JSON (`unsupported_media_type`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The node did not come to lead in time \
            (`replication_timeout`), or the controller has no leader (`not_leader`); see \
            `Retry-After`", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn move_leader(
    State(state): State<AppState>,
    PathParams(path): PathParams<PartitionPath>,
    JsonBody(request): JsonBody<MoveLeaderRequest>,
) -> Result<Json<LeaderView>, ApiError> {
    let moved = cluster(&state)?
        .move_leader(&path.topic, path.partition, request.node)
        .await?;
    Ok(Json(moved.into()))
}

/// Rebalance partition leaders.
///
/// Moves each partition's leadership to its preferred replica (the placement spreads those
/// over nodes and zones), or off a draining node, one move after another; answers with the
/// moves made and those that failed.
#[utoipa::path(post, path = "/v1/cluster/rebalance", tag = "cluster",
    responses(
        (status = 200, description = "The moves made and failed", body = RebalanceView),
        (status = 403, description = "The token's scope lacks `admin:*` (`forbidden`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "This node runs alone (`not_clustered`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The controller has no leader (`not_leader`); see \
            `Retry-After`", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn rebalance(
    State(state): State<AppState>,
) -> Result<Json<RebalanceView>, ApiError> {
    Ok(Json(cluster(&state)?.rebalance().await?.into()))
}

/// Drain a node.
///
/// Marks the node `draining` (it takes no new replicas), moves the partition leaderships it
/// holds to other replicas, then moves each of its replicas to another active node (the new
/// node joins the partition's group, catches up, and replaces it among the voters). A move
/// that fails is listed in `leaders.failed` (its reason starts with `replica move`) and the
/// node keeps that replica (`replicas_kept`); draining again retries it.
#[utoipa::path(post, path = "/v1/cluster/nodes/{node}/drain", tag = "cluster",
    params(NodePath),
    responses(
        (status = 200, description = "The node drains; the leaderships moved", body = DrainView),
        (status = 400, description = "A malformed node id (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token's scope lacks `admin:*` (`forbidden`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such node (`node_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "It is the last active node (`last_node`), or fewer \
            active nodes than a topic's replication factor would be left \
            (`too_few_active_nodes`), or this node runs alone (`not_clustered`)", body = Problem,
            content_type = "application/problem+json"),
        (status = 503, description = "The controller has no leader (`not_leader`) or did not \
            commit in time (`replication_timeout`); see `Retry-After`",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn drain_node(
    State(state): State<AppState>,
    PathParams(path): PathParams<NodePath>,
) -> Result<Json<DrainView>, ApiError> {
    Ok(Json(cluster(&state)?.drain_node(path.node).await?.into()))
}

/// Remove a node.
///
/// Takes the node out of the controller's voters and the cluster metadata. Only a node no
/// partition's placement names can go: drain it first, which moves its replicas away;
/// otherwise the answer is 409 `node_holds_replicas`.
#[utoipa::path(delete, path = "/v1/cluster/nodes/{node}", tag = "cluster", params(NodePath),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "A malformed node id (`invalid_request`)", body = Problem,
            content_type = "application/problem+json"),
        (status = 403, description = "The token's scope lacks `admin:*` (`forbidden`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such node (`node_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A placement names the node (`node_holds_replicas`), it \
            is the last node or voter (`last_node`), or too few active nodes would be left \
            (`too_few_active_nodes`), or this node runs alone (`not_clustered`)", body = Problem,
            content_type = "application/problem+json"),
        (status = 503, description = "The controller has no leader (`not_leader`), did not \
            commit in time (`replication_timeout`), or the node to remove led it and has just \
            handed the leadership to another voter (`not_leader` naming it); see \
            `Retry-After`", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn remove_node(
    State(state): State<AppState>,
    PathParams(path): PathParams<NodePath>,
) -> Result<StatusCode, ApiError> {
    cluster(&state)?.remove_node(path.node).await?;
    Ok(StatusCode::NO_CONTENT)
}
